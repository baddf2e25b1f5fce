package promotion

// The confirmation prompt as a person meets it: act in a real
// pseudo-terminal (its controlling terminal), answered y, n, interrupted
// with Ctrl-C, and with a diff longer than the terminal, paged.

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// openPTY returns a new pseudo-terminal's master and slave, 24 × 80.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.IoctlSetWinsize(int(m.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 24, Col: 80}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(); s.Close() })
	return m, s
}

// A terminal session is act running on a pseudo-terminal.
type terminal struct {
	t      *testing.T
	master *os.File
	cmd    *exec.Cmd
	mu     sync.Mutex
	out    bytes.Buffer
	grew   chan struct{} // a token after out grows, for waitFor
	done   chan error
}

// startTerminal runs act args in w on a new pseudo-terminal, without a
// pager (PAGER empty).
func startTerminal(t *testing.T, w *world, args ...string) *terminal {
	return startTerminalEnv(t, w, []string{"PAGER="}, args...)
}

// startTerminalEnv is startTerminal with env added to act's environment.
func startTerminalEnv(t *testing.T, w *world, env []string, args ...string) *terminal {
	master, slave := openPTY(t)
	c := exec.Command("act", args...)
	c.Env = append(append(os.Environ(), "ACT_HOME="+w.home, "ACT_POLICY="+w.policy, "XDG_STATE_HOME=", "NO_COLOR=1", "TERM=xterm", "LESS="), env...)
	c.Dir = filepath.Dir(w.home)
	c.Stdin, c.Stdout, c.Stderr = slave, slave, slave
	c.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close() // the child has it
	term := &terminal{t: t, master: master, cmd: c, grew: make(chan struct{}, 1), done: make(chan error, 1)}
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			term.mu.Lock()
			term.out.Write(buf[:n])
			term.mu.Unlock()
			select {
			case term.grew <- struct{}{}:
			default: // a token is already there
			}
			if err != nil {
				return
			}
		}
	}()
	go func() { term.done <- c.Wait() }()
	return term
}

// waitFor waits until the terminal shows s, looking again each time act
// writes; it fails after two minutes (a liveness bound, not a speed one).
func (term *terminal) waitFor(s string) {
	term.t.Helper()
	term.waitForMatch(regexp.MustCompile(regexp.QuoteMeta(s)))
}

// waitForMatch is waitFor for what re matches.
func (term *terminal) waitForMatch(re *regexp.Regexp) {
	term.t.Helper()
	deadline := time.After(2 * time.Minute)
	for !re.MatchString(term.screen()) {
		select {
		case <-term.grew:
		case <-deadline:
			term.t.Fatalf("hung: the terminal never showed %q; it shows:\n%s", re, term.screen())
		}
	}
}

func (term *terminal) screen() string {
	term.mu.Lock()
	defer term.mu.Unlock()
	return term.out.String()
}

func (term *terminal) send(s string) {
	term.t.Helper()
	if _, err := term.master.Write([]byte(s)); err != nil {
		term.t.Fatal(err)
	}
}

// exit waits for act to end and returns its exit code, or -signal.
func (term *terminal) exit() int {
	term.t.Helper()
	select {
	case err := <-term.done:
		var ee *exec.ExitError
		switch {
		case err == nil:
			return 0
		case errors.As(err, &ee):
			if ws := ee.Sys().(syscall.WaitStatus); ws.Signaled() {
				return -int(ws.Signal())
			}
			return ee.ExitCode()
		}
		term.t.Fatal(err)
	case <-time.After(2 * time.Minute): // a liveness bound
		term.cmd.Process.Kill()
		term.t.Fatalf("hung: act did not end; the terminal shows:\n%s", term.screen())
	}
	return 0
}

const ptyDelete = `action_type: FILE_DELETE
effects: {filesystem: {create: [], modify: [], delete: [$P/old.txt]}, network: false, system_state_change: false}
operation: {paths: [$P/old.txt]}
`

func TestConfirmAtTerminal(t *testing.T) {
	const id = "44444444-5555-4666-8777-888888888888"
	tree := map[string]string{"old.txt": "old\n", "keep.txt": "k\n"}
	question := "Apply plan "

	t.Run("yes", func(t *testing.T) {
		w := newWorld(t, "", id, tree, ptyDelete)
		term := startTerminal(t, w, "apply", w.descriptor)
		term.waitFor("[y/N] ")
		if !strings.Contains(term.screen(), "- delete file "+filepath.Join(w.root, "old.txt")) {
			t.Fatalf("the diff was not shown before the question:\n%s", term.screen())
		}
		term.send("y\n")
		if code := term.exit(); code != 0 {
			t.Fatalf("exit %d:\n%s", code, term.screen())
		}
		if _, err := os.Lstat(filepath.Join(w.root, "old.txt")); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("old.txt is still there (%v)", err)
		}
		if !strings.Contains(readFile(t, filepath.Join(w.home, "actions", id+".json")), `"via":"terminal"`) {
			t.Fatal("the approval is not recorded as a terminal answer")
		}
	})
	t.Run("no", func(t *testing.T) {
		w := newWorld(t, "", id, tree, ptyDelete)
		before := snapshot(t, w.root)
		term := startTerminal(t, w, "apply", w.descriptor)
		term.waitFor(question)
		term.send("n\n")
		if code := term.exit(); code != 7 {
			t.Fatalf("exit %d, want 7:\n%s", code, term.screen())
		}
		w.requireTree("original", before)
		// A no denies the plan: nothing waits for a person.
		if r := w.ok(0, "pending"); strings.Contains(r.stdout, id) {
			t.Fatalf("the refused plan is pending:\n%s", r)
		}
		if r := w.ok(0, "--json", "history", "--state", "denied"); !strings.Contains(r.stdout, id) {
			t.Fatalf("the refused plan is not denied:\n%s", r)
		}
	})
	t.Run("ctrl-c", func(t *testing.T) {
		w := newWorld(t, "", id, tree, ptyDelete)
		before := snapshot(t, w.root)
		term := startTerminal(t, w, "apply", w.descriptor)
		term.waitFor(question)
		term.send("\x03")
		if code := term.exit(); code != -int(syscall.SIGINT) && code != 130 && code != 7 {
			t.Fatalf("exit %d after Ctrl-C:\n%s", code, term.screen())
		}
		w.requireTree("original", before)
		w.settled()
	})
	t.Run("long-diff-paged", func(t *testing.T) {
		if _, err := exec.LookPath("less"); err != nil {
			t.Skip("less is not installed")
		}
		var content strings.Builder
		for i := range 100 {
			fmt.Fprintf(&content, "line %d\\n", i)
		}
		ops := fmt.Sprintf(`action_type: FILE_WRITE
effects: {filesystem: {create: [$P/long.txt], modify: [], delete: []}, network: false, system_state_change: false}
operation: {path: $P/long.txt, content: "%s"}
`, content.String())
		w := newWorld(t, "", id, tree, ops)
		// The descriptor asks for a person itself.
		d := readFile(t, w.descriptor)
		must(t, os.WriteFile(w.descriptor, []byte(strings.Replace(d, `confirmation: {required: false, reason: ""`, `confirmation: {required: true, reason: "a long file"`, 1)), 0o644))
		term := startTerminalEnv(t, w, []string{"PAGER=less -R"}, "apply", w.descriptor)
		term.waitFor("+line 0")
		if strings.Contains(term.screen(), "[y/N]") {
			t.Fatalf("the question came before the diff was read:\n%s", term.screen())
		}
		term.send("q")
		term.waitFor(question)
		term.send("y\n")
		if code := term.exit(); code != 0 {
			t.Fatalf("exit %d:\n%s", code, term.screen())
		}
		if got := readFile(t, filepath.Join(w.root, "long.txt")); !strings.Contains(got, "line 99\n") {
			t.Fatalf("long.txt = %.40q", got)
		}
	})
}

func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	must(t, err)
	return string(b)
}

// TestPagerAtTerminal: act show of a plan longer than the terminal goes
// through $PAGER (the person quits it with q); with PAGER=cat, or empty,
// it is printed whole; piped it is never paged (every other test).
func TestPagerAtTerminal(t *testing.T) {
	if _, err := exec.LookPath("less"); err != nil {
		t.Skip("less is not installed")
	}
	const id = "44444444-5555-4666-8777-888888888889"
	var content strings.Builder
	for i := range 100 {
		fmt.Fprintf(&content, "line %d\\n", i)
	}
	w := newWorld(t, "", id, map[string]string{"keep.txt": "k\n"}, fmt.Sprintf(`action_type: FILE_WRITE
effects: {filesystem: {create: [$P/long.txt], modify: [], delete: []}, network: false, system_state_change: false}
operation: {path: $P/long.txt, content: "%s"}
`, content.String()))
	pid := w.plan()

	t.Run("less", func(t *testing.T) {
		term := startTerminalEnv(t, w, []string{"PAGER=less -R"}, "show", pid)
		term.waitFor("+line 0")
		if strings.Contains(term.screen(), "State: planned") {
			t.Fatalf("the end of the plan was shown at once, not paged:\n%s", term.screen())
		}
		term.send("q")
		if code := term.exit(); code != 0 {
			t.Fatalf("exit %d:\n%s", code, term.screen())
		}
	})
	for _, pager := range []string{"cat", ""} {
		t.Run("PAGER="+pager, func(t *testing.T) {
			term := startTerminalEnv(t, w, []string{"PAGER=" + pager}, "show", pid)
			if code := term.exit(); code != 0 {
				t.Fatalf("exit %d:\n%s", code, term.screen())
			}
			term.waitFor("State: planned")
			term.waitFor("Intent: Change the project.")
		})
	}
}

// TestStreamAtTerminal: on a terminal, act plan shows a sandboxed
// command's output while it runs, after the time elapsed, not only once
// it ends. The command sleeps until the test, having seen its first line,
// ends the sleep, two seconds later: its second line comes at least two
// seconds into the run, however loaded the machine.
func TestStreamAtTerminal(t *testing.T) {
	const id = "44444444-5555-4666-8777-88888888888a"
	token := fmt.Sprintf("%d.%06d", 3600+time.Now().UnixNano()%1000, time.Now().UnixNano()%1_000_000)
	w := newWorld(t, "", id, map[string]string{"keep.txt": "k\n"}, `action_type: COMMAND_EXECUTION
effects: {filesystem: {create: [], modify: [], delete: []}, network: false, system_state_change: false}
operation: {argv: [sh, -c, "echo step-one; { sleep `+token+`; } 2>/dev/null; echo step-two"], workdir: $P}
`)
	// A wall clock cap the test does not reach: the test ends the sleep.
	d := readFile(t, w.descriptor)
	must(t, os.WriteFile(w.descriptor, []byte(strings.Replace(d, "max_duration_ms: 10000", "max_duration_ms: 120000", 1)), 0o644))
	term := startTerminal(t, w, "plan", w.descriptor)
	term.waitForMatch(regexp.MustCompile(`act: \[[0-9]+s\] step-one`))
	if strings.Contains(term.screen(), "step-two") || strings.Contains(term.screen(), "Plan id:") {
		t.Fatalf("the output was shown only once the command ended:\n%s", term.screen())
	}
	time.Sleep(2 * time.Second) // not a wait for anything: the time the next line must show
	killed := false
	for deadline := time.Now().Add(2 * time.Minute); !killed && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		for _, pid := range processesWithArg(token) {
			killed = syscall.Kill(pid, syscall.SIGKILL) == nil || killed
		}
	}
	if !killed {
		t.Fatalf("hung: the command's sleep was never there to end:\n%s", term.screen())
	}
	if code := term.exit(); code != 0 {
		t.Fatalf("exit %d:\n%s", code, term.screen())
	}
	term.waitForMatch(regexp.MustCompile(`act: \[([2-9]|[1-9][0-9]+)s\] step-two`))
}

// processesWithArg lists host processes that have arg in their command line.
func processesWithArg(arg string) []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if slices.Contains(strings.Split(string(b), "\x00"), arg) {
			pids = append(pids, pid)
		}
	}
	return pids
}
