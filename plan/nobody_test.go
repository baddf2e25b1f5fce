package plan

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/act-project/act/internal/cgrouptest"
	"github.com/act-project/act/sandbox"
)

// nobodyDir makes a fresh directory an ordinary user may use, removed when
// t ends, for [runAsNobody]. It skips t unless it runs as root with
// setpriv(1) available.
func nobodyDir(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("not root: the test itself runs as an ordinary user")
	}
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skip("setpriv (util-linux) is not installed: cannot switch to an ordinary user")
	}
	dir, err := os.MkdirTemp("", "act-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		makeRemovable(dir)
		os.RemoveAll(dir)
	})
	mustDo(t, os.Chmod(dir, 0o777))
	return dir
}

// runAsNobody runs the test named name again in a copy of this test binary
// as uid and gid 65534, in dir (also its TMPDIR and HOME), with env added
// to the environment, and returns its output. A failing child fails t.
// The child runs in a memory cgroup delegated to uid 65534, as a user's
// delegated session would: without one act refuses commands with a memory
// cap (docs/sandbox-process.md). Where none can be made it skips t.
func runAsNobody(t *testing.T, dir, name string, env ...string) []byte {
	t.Helper()
	prefix, remove, err := cgrouptest.Delegate(65534, 65534)
	if err != nil {
		t.Skipf("cannot give uid 65534 a memory cgroup, without which its commands are refused: %v", err)
	}
	defer remove()
	return runAsNobodyIn(t, prefix, dir, name, env...)
}

// runAsNobodyIn is runAsNobody with the argv prefix the child runs under
// (none: no delegated cgroup).
func runAsNobodyIn(t *testing.T, prefix []string, dir, name string, env ...string) []byte {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The test binary's own directory may be closed to nobody.
	bin := filepath.Join(dir, "plan.test")
	// A hard link where it can be: a copy written here while another
	// test's goroutine forks may still be open for writing in that child
	// when it is run ("text file busy").
	if os.Link(exe, bin) != nil {
		mustDo(t, sandbox.CopyTree(exe, bin))
	}
	mustDo(t, os.Chmod(bin, 0o755))
	args := append(append([]string{"--reuid=65534", "--regid=65534", "--clear-groups", "--"}, prefix...), bin, "-test.run=^"+name+"$", "-test.count=1")
	if testing.Verbose() {
		args = append(args, "-test.v")
	}
	cmd := exec.Command("setpriv", args...)
	cmd.Dir = dir
	drop := map[string]bool{"TMPDIR": true, "HOME": true, "GOCOVERDIR": true}
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		drop[name] = true
	}
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); !drop[name] {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(append(cmd.Env, "TMPDIR="+dir, "HOME="+dir), env...)
	output, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s as nobody: %v\n%s", name, err, output)
	}
	if testing.Verbose() {
		t.Logf("%s as nobody:\n%s", name, output)
	}
	return output
}
