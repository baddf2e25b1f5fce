package state

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// helperEnv selects the role a re-executed test binary plays; see
// TestHelperProcess.
const helperEnv = "ACT_STATE_TEST_HELPER"

// TestHelperProcess is not a test: re-executed by the tests below with
// helperEnv set, it plays one contending act process.
//
//	contend ROOT LOG ID N: N times, take the lock, append "begin ID i",
//	    wait a little, append "end ID i", release.
//	hold ROOT: take the lock, print "locked", and hold it until its
//	    standard input ends (or it is killed).
func TestHelperProcess(t *testing.T) {
	args := strings.Fields(os.Getenv(helperEnv))
	if len(args) == 0 {
		t.Skip("helper process only")
	}
	if err := helper(args); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	os.Exit(0)
}

func helper(args []string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	d := Dir{Root: args[1]}
	switch args[0] {
	case "contend":
		n, _ := strconv.Atoi(args[4])
		for i := range n {
			unlock, err := d.Lock(ctx)
			if err != nil {
				return err
			}
			if err := appendLine(args[2], fmt.Sprintf("begin %s %d", args[3], i)); err != nil {
				return err
			}
			// Not a wait for anything: the locked section is made longer
			// so that a lock that let an intruder in would show it.
			time.Sleep(200 * time.Microsecond)
			if err := appendLine(args[2], fmt.Sprintf("end %s %d", args[3], i)); err != nil {
				return err
			}
			if err := unlock(); err != nil {
				return err
			}
		}
		return nil
	case "hold":
		if _, err := d.Lock(ctx); err != nil {
			return err
		}
		fmt.Println("locked")
		_, err := io.Copy(io.Discard, os.Stdin)
		return err
	}
	return fmt.Errorf("unknown helper %q", args[0])
}

func appendLine(name, line string) error {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(line + "\n"); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func helperCmd(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), helperEnv+"="+strings.Join(args, " "))
	cmd.Stderr = os.Stderr
	return cmd
}

func TestLayout(t *testing.T) {
	d := Dir{Root: "/s"}
	for got, want := range map[string]string{
		d.Plans():            "/s/plans",
		d.Journal():          "/s/journal",
		d.JournalFile("a-1"): "/s/journal/a-1.journal",
		d.Backups():          "/s/backups",
		d.Audit():            "/s/audit",
		d.LockFile():         "/s/lock",
		// docs/state.md's names, each from the one method that makes it.
		d.Plan("p1"):             "/s/plans/p1",
		d.PlanRecord("p1"):       "/s/plans/p1/plan.json",
		d.Upper("p1"):            "/s/plans/p1/layer/upper",
		d.GCLayer("p1"):          "/s/plans/.gc-p1.layer",
		d.Adopt("p1"):            "/s/plans/p1/adopt",
		d.AdoptCopy("p1", 3):     "/s/plans/p1/adopt/3",
		d.Hooks():                "/s/hooks",
		d.HookNote("ab12"):       "/s/hooks/ab12",
		d.Caches():               "/s/caches",
		d.Cache("go/pkg/mod"):    "/s/caches/go%2Fpkg%2Fmod",
		d.ActionFile("a-1"):      "/s/actions/a-1.json",
		d.AttemptsFile("a-1"):    "/s/attempts/a-1.json",
		d.CooldownFile("k"):      "/s/cooldowns/k.json",
		d.Backup("a-1", "apply"): "/s/backups/a-1/apply",
		d.PolicyFile():           "/s/policy.yaml",
	} {
		if got != want {
			t.Errorf("got %s, want %s", got, want)
		}
	}
}

// TestLockProcesses runs several processes that each take the lock many
// times and log begin/end around the locked section into one shared file:
// the log must be strict begin/end pairs of the same process, never
// interleaved, and complete.
func TestLockProcesses(t *testing.T) {
	const procs, rounds = 6, 15
	root := filepath.Join(t.TempDir(), "state") // Lock creates it
	log := filepath.Join(t.TempDir(), "log")
	var cmds []*exec.Cmd
	for p := range procs {
		cmd := helperCmd(t, "contend", root, log, "p"+strconv.Itoa(p), strconv.Itoa(rounds))
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	for _, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("helper: %v", err)
		}
	}
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) != 2*procs*rounds {
		t.Fatalf("log has %d lines, want %d", len(lines), 2*procs*rounds)
	}
	next := map[string]int{}
	for i := 0; i < len(lines); i += 2 {
		var id string
		var n int
		if _, err := fmt.Sscanf(lines[i], "begin %s %d", &id, &n); err != nil {
			t.Fatalf("line %d: %q: want a begin line", i+1, lines[i])
		}
		if want := fmt.Sprintf("end %s %d", id, n); lines[i+1] != want {
			t.Fatalf("line %d: %q after %q: locked sections interleaved", i+2, lines[i+1], lines[i])
		}
		if n != next[id] {
			t.Fatalf("line %d: %s round %d, want %d", i+1, id, n, next[id])
		}
		next[id]++
	}
	if st, err := os.Stat(root); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("state dir: %v, %v; want mode 0700", st, err)
	}
}

// TestLockWaitsAndTimesOut: a second Lock in the same process waits for the
// first and gives up with the context's error.
func TestLockWaitsAndTimesOut(t *testing.T) {
	d := Dir{Root: t.TempDir()}
	unlock, err := d.Lock(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := d.Lock(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second Lock = %v, want DeadlineExceeded", err)
	}
	cctx, ccancel := context.WithCancel(context.Background())
	ccancel()
	if _, err := d.Lock(cctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Lock with cancelled context = %v, want Canceled", err)
	}
	if err := unlock(); err != nil {
		t.Fatal(err)
	}
	if err := unlock(); err != nil {
		t.Fatalf("second unlock: %v", err)
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), time.Second)
	defer cancel2()
	unlock, err = d.Lock(ctx2)
	if err != nil {
		t.Fatalf("Lock after unlock: %v", err)
	}
	unlock()
}

// TestLockReleasedOnKill: a holder killed with SIGKILL never leaves the
// state directory locked.
func TestLockReleasedOnKill(t *testing.T) {
	d := Dir{Root: t.TempDir()}
	cmd := helperCmd(t, "hold", d.Root)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	in, err := cmd.StdinPipe() // held open: the helper holds the lock till killed
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "locked\n" {
		t.Fatalf("helper said %q, %v", line, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	if _, err := d.Lock(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock while another process holds it = %v, want DeadlineExceeded", err)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	ctx2, cancel2 := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel2()
	unlock, err := d.Lock(ctx2)
	if err != nil {
		t.Fatalf("Lock after the holder was killed: %v", err)
	}
	unlock()
}
