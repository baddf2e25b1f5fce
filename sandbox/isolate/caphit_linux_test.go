package isolate

import "testing"

// A fork refused by RLIMIT_NPROC returns EAGAIN instead of killing
// anything: a fork bomb's shells may all give up on their own before the
// wall clock. The run must still be named as stopped by the process cap,
// and only when the command failed and said so.
func TestCapHitAfterRefusedFork(t *testing.T) {
	noCgroup := &cgroupV1{}
	for _, c := range []struct {
		name   string
		exit   int
		stderr string
		procs  int64
		cg     *cgroupV1
		want   Cap
	}{
		{"dash gives up", 2, "b: 1: Cannot fork\n", 64, noCgroup, CapProcs},
		{"bash gives up", 1, "bash: fork: retry: Resource temporarily unavailable\n", 64, noCgroup, CapProcs},
		{"succeeded anyway", 0, "b: 1: Cannot fork\n", 64, noCgroup, ""},
		{"no process cap", 2, "b: 1: Cannot fork\n", 0, noCgroup, ""},
		{"unrelated failure", 2, "no such file\n", 64, noCgroup, ""},
		{"pids cgroup in force", 2, "b: 1: Cannot fork\n", 64, &cgroupV1{pids: t.TempDir()}, ""},
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
