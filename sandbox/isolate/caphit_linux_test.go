package isolate

import (
	"errors"
	"syscall"
	"testing"
)

// A fork refused by RLIMIT_NPROC returns EAGAIN instead of killing
// anything: a fork bomb's shells may all give up on their own before the
// wall clock. The run must still be named as stopped by the process cap,
// and only when the command failed and said so.
func TestCapHitAfterRefusedFork(t *testing.T) {
	noCgroup := &cgroups{}
	for _, c := range []struct {
		name   string
		exit   int
		stderr string
		procs  int64
		cg     *cgroups
		want   Cap
	}{
		{"dash gives up", 2, "b: 1: Cannot fork\n", 64, noCgroup, CapProcs},
		{"bash gives up", 1, "bash: fork: retry: Resource temporarily unavailable\n", 64, noCgroup, CapProcs},
		{"succeeded anyway", 0, "b: 1: Cannot fork\n", 64, noCgroup, ""},
		{"no process cap", 2, "b: 1: Cannot fork\n", 0, noCgroup, ""},
		{"unrelated failure", 2, "no such file\n", 64, noCgroup, ""},
		{"pids cgroup in force", 2, "b: 1: Cannot fork\n", 64, &cgroups{pids: t.TempDir()}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := &Result{ExitCode: c.exit, Stderr: []byte(c.stderr)}
			hit := capHitAfter(res, Limits{}, c.procs, c.cg, rlimits{}, map[Cap]string{}, nil)
			var got Cap
			if hit != nil {
				got = hit.Cap
			}
			if got != c.want {
				t.Fatalf("cap named %q, want %q (hit %+v)", got, c.want, hit)
			}
		})
	}
}

// Without Landlock a host FIFO would take the command's writes: act must
// refuse to run rather than run without it.
func TestLandlockRequired(t *testing.T) {
	for _, c := range []struct {
		abi   int
		errno syscall.Errno
		ok    bool
	}{
		{0, syscall.ENOSYS, false},
		{0, syscall.EOPNOTSUPP, false},
		{0, 0, false},
		{1, 0, true},
		{7, 0, true},
	} {
		err := landlockRequired(c.abi, c.errno)
		if (err == nil) != c.ok || (err != nil && !errors.Is(err, ErrUnavailable)) {
			t.Errorf("landlockRequired(%d, %v) = %v, want ok=%v or ErrUnavailable", c.abi, c.errno, err, c.ok)
		}
	}
	if err := landlockAvailable(); err != nil {
		t.Skipf("this kernel lacks Landlock, so no sandbox test can run here: %v", err)
	}
}
