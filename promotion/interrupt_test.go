package promotion

// Ctrl-C during a dry run (docs/lifecycle.md, "Interrupted"): act says so,
// removes what it made (the sandbox and its cgroups, the part-made plan
// directory), counts no run, and exits 130.

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/act-project/act/internal/cgroupfs"
	"github.com/act-project/act/sandbox/isolate"
)

func TestInterruptPlan(t *testing.T) {
	if err := isolate.Available(); err != nil {
		t.Skipf("no sandbox here: %v", err)
	}
	const id = "55555555-6666-4777-8888-999999999999"
	// A sleep of this run's own length: another go test beside this one
	// runs this test too, and its sleep is not this one's.
	nap := fmt.Sprintf("37.%09d", time.Now().UnixNano()%1e9)
	w := newWorld(t, "", id, map[string]string{"keep.txt": "k\n"}, `action_type: COMMAND_EXECUTION
effects: {filesystem: {create: [$P/started], modify: [], delete: []}, network: false, system_state_change: false}
operation: {argv: [sh, -c, "test -e go && exit 0; : > started; sleep `+nap+`"], workdir: $P}
`)
	sleepers := func() []int { return sleepers(nap) }
	d := readFile(t, w.descriptor)
	must(t, os.WriteFile(w.descriptor, []byte(strings.Replace(d, "max_duration_ms: 10000", "max_duration_ms: 60000", 1)), 0o644))

	c := exec.Command("act", "plan", w.descriptor)
	c.Env = append(os.Environ(), "ACT_HOME="+w.home, "ACT_POLICY="+w.policy, "XDG_STATE_HOME=", "NO_COLOR=1", "TERM=dumb")
	c.Dir = filepath.Dir(w.home)
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	must(t, c.Start())
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()

	// The command runs once its sleep does. The bounds here are liveness
	// bounds, not speed ones: act ending on its own, after the sleep, would
	// end with another code and message than checked below.
	deadline := time.Now().Add(2 * time.Minute)
	for len(sleepers()) == 0 {
		if time.Now().After(deadline) {
			c.Process.Kill()
			t.Fatalf("hung: the command never started:\n%s%s", out.String(), errb.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	must(t, c.Process.Signal(os.Interrupt))
	var err error
	select {
	case err = <-done:
	case <-time.After(2 * time.Minute):
		c.Process.Kill()
		t.Fatalf("hung: act did not end after SIGINT:\n%s", errb.String())
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("act plan interrupted: %v, want exit 130\n%s%s", err, out.String(), errb.String())
	}
	if want := "act: interrupted: the dry run was stopped; nothing was promoted, the run does not count\n"; errb.String() != want {
		t.Errorf("stderr = %q, want %q", errb.String(), want)
	}
	if out.Len() != 0 {
		t.Errorf("stdout = %q, want nothing", out.String())
	}
	// Nothing left: no plan directory, no sandbox process, no cgroup.
	ents, _ := os.ReadDir(filepath.Join(w.home, "plans"))
	for _, e := range ents {
		t.Errorf("left in the plans: %s", e.Name())
	}
	if pids := sleepers(); len(pids) > 0 {
		t.Errorf("the sandboxed sleep still runs: pids %v", pids)
	}
	if own, err := cgroupfs.Own(); err == nil {
		prefix := fmt.Sprintf("act-sandbox-%d-", c.Process.Pid)
		for _, dir := range own {
			ents, _ := os.ReadDir(dir)
			for _, e := range ents {
				if strings.HasPrefix(e.Name(), prefix) {
					t.Errorf("cgroup left: %s", filepath.Join(dir, e.Name()))
				}
			}
		}
	}
	// The run did not count: max_runs is 1, and a plan may still run.
	must(t, os.WriteFile(filepath.Join(w.root, "go"), nil, 0o644))
	w.ok(0, "plan", w.descriptor)
	w.ok(0, "audit", "verify")
}

// sleepers are the processes running "sleep NAP".
func sleepers(nap string) []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		var pid int
		if _, err := fmt.Sscanf(e.Name(), "%d", &pid); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && string(b) == "sleep\x00"+nap+"\x00" {
			pids = append(pids, pid)
		}
	}
	return pids
}
