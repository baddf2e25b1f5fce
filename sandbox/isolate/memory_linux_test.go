package isolate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/act-project/act/internal/cgrouptest"
)

// TestMemoryCapRootWithoutCgroup: where no memory cgroup is writable the
// memory cap is refused, saying what is missing, for root and for an
// ordinary user whose policy demands a total cap; an ordinary user's is
// otherwise RLIMIT_AS per process, named as not a total cap.
func TestMemoryCapRootWithoutCgroup(t *testing.T) {
	_, _, err := enforcement(Limits{MemoryMB: 128}, DefaultMaxProcs, &cgroups{}, 0)
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "no writable memory cgroup") ||
		!strings.Contains(err.Error(), "Delegate=yes") {
		t.Fatalf("root without a memory cgroup: %v", err)
	}
	_, _, err = enforcement(Limits{MemoryMB: 128, MemoryTotal: true}, DefaultMaxProcs, &cgroups{}, 65534)
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "no writable memory cgroup, and the policy demands a total memory cap") {
		t.Fatalf("an ordinary user without a memory cgroup, total demanded: %v", err)
	}
	if _, _, err := enforcement(Limits{}, DefaultMaxProcs, &cgroups{}, 0); err != nil {
		t.Errorf("no memory cap, yet refused: %v", err)
	}
	if os.Geteuid() != 0 {
		return
	}
	// End to end, as root with no cgroup: refused before the command
	// runs, and the sandbox built for it ends.
	requireIsolation(t)
	makeCgroups = func(Limits, int64) *cgroups { return &cgroups{} }
	defer func() { makeCgroups = newCgroups }()
	sc := newScope(t, t.TempDir(), nil)
	res, err := Run(context.Background(), Spec{Argv: []string{"sh", "-c", "touch ran"}, Env: pathEnv, Workdir: sc.Path,
		Scopes: []Scope{sc}, Limits: Limits{MemoryMB: 64, WallMs: 5000}})
	if !errors.Is(err, ErrUnavailable) || res != nil {
		t.Fatalf("Run as root without a memory cgroup: %v, %v", res, err)
	}
	t.Log(err)
	if _, err := os.Stat(filepath.Join(sc.Upper, "ran")); err == nil {
		t.Error("the command ran")
	}
	// The same command with a cgroup writes its file (the check above
	// would see it).
	makeCgroups = newCgroups
	if res, err := Run(context.Background(), Spec{Argv: []string{"sh", "-c", "touch ran"}, Env: pathEnv, Workdir: sc.Path,
		Scopes: []Scope{sc}, Limits: Limits{MemoryMB: 64, WallMs: 5000}}); err != nil || res.ExitCode != 0 {
		t.Fatalf("Run with a cgroup: %v, %v", res, err)
	}
	if _, err := os.Stat(filepath.Join(sc.Upper, "ran")); err != nil {
		t.Errorf("with a cgroup the command did not write its file: %v", err)
	}
	// Without a memory cap the same sandbox runs.
	res, err = Run(context.Background(), Spec{Argv: []string{"true"}, Env: pathEnv, Limits: Limits{WallMs: 5000}})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("Run without a memory cap: %v, %v", res, err)
	}
}

// TestMemoryChoice: the memory cap's mechanism by what is writable here,
// who runs act and what the policy demands.
func TestMemoryChoice(t *testing.T) {
	v1, v2 := &cgroups{memory: "/m"}, &cgroups{memory: "/m", v2: true}
	for _, c := range []struct {
		name  string
		cg    *cgroups
		uid   int
		total bool
		want  string // the mechanism, or "refused"
		as    int64
	}{
		{"v1, user", v1, 1000, false, "cgroup v1 memory.limit_in_bytes", 0},
		{"v1, user, total", v1, 1000, true, "cgroup v1 memory.limit_in_bytes", 0},
		{"v2 delegated, user, total", v2, 1000, true, "cgroup v2 memory.max (a delegated cgroup)", 0},
		{"v2 delegated, root", v2, 0, false, "cgroup v2 memory.max (a delegated cgroup)", 0},
		{"none, user", &cgroups{}, 1000, false, MemoryPerProcess, 128 << 20},
		{"none, user, total", &cgroups{}, 1000, true, "refused", 0},
		{"none, root", &cgroups{}, 0, false, "refused", 0},
	} {
		enf, rl, err := enforcement(Limits{MemoryMB: 128, MemoryTotal: c.total}, DefaultMaxProcs, c.cg, c.uid)
		got := enf[CapMemory]
		if err != nil {
			got = "refused"
		}
		if got != c.want || rl.as != c.as {
			t.Errorf("%s: %q (RLIMIT_AS %d), want %q (%d); %v", c.name, got, rl.as, c.want, c.as, err)
		}
		if c.as > 0 && (enf[CapProcs] != "RLIMIT_NPROC" || rl.nproc != DefaultMaxProcs) {
			t.Errorf("%s: the per-process memory cap without a process count: %q, %d", c.name, enf[CapProcs], rl.nproc)
		}
	}
}

// TestMemoryAttack: the memory cap holds for all the command's processes
// together, memfd and SysV memory included, where a memory cgroup's OOM
// killer stops the attack (cgrouptest.MemoryAttack) and the cap is named.
// Where no memory cgroup is writable (uid 65534 here, by TestAsNobody) the
// cap is RLIMIT_AS per process, named as not a total cap: it holds each
// of the attack's processes below the cap (one alone is stopped and the
// cap named), not their sum; with a total cap demanded the command is
// refused before it runs. In a delegated cgroup (by TestDelegatedCgroupV1)
// the cgroup must hold it.
func TestMemoryAttack(t *testing.T) {
	requireIsolation(t)
	py := lookPathEnv(t, "python3")
	delegated := os.Getenv("ACT_ISOLATE_TEST_DELEGATED") != ""
	l := Limits{MemoryMB: 128, DiskMB: 8, WallMs: 30_000}
	res, err := Run(context.Background(), Spec{Argv: []string{py, "-c", cgrouptest.MemoryAttack}, Env: pathEnv, Limits: l})
	if err != nil {
		t.Fatal(err)
	}
	mech := res.Enforcement[CapMemory]
	t.Logf("memory: %s\nstdout: %s\nstderr: %.500s\ncap: %v", mech, res.Stdout, res.Stderr, res.CapHit)
	if delegated && mech != "cgroup v1 memory.limit_in_bytes" {
		t.Fatalf("in a delegated memory cgroup the memory cap is held by %q", mech)
	}
	if mech != MemoryPerProcess {
		if res.CapHit == nil || res.CapHit.Cap != CapMemory || !strings.HasPrefix(res.CapHit.Mechanism, "cgroup") {
			t.Fatalf("under %s the attack ended with exit %d, cap %v:\n%s", mech, res.ExitCode, res.CapHit, res.Stdout)
		}
		return
	}
	// Per process: each child holds less than the cap (its address
	// space includes python itself), the ten together more.
	var held, children, kids int
	if _, err := fmt.Sscanf(string(res.Stdout[bytes.Index(res.Stdout, []byte("held ")):]), "held %d MiB: %d in %d children", &held, &children, &kids); err != nil {
		t.Fatalf("the attack's report: %v\n%s", err, res.Stdout)
	}
	if kids != 10 || children >= kids*128 {
		t.Errorf("%d children held %d MiB under RLIMIT_AS of 128 MiB each", kids, children)
	}
	// One process asking for more than the cap is refused, and the cap
	// is named with its mechanism.
	res, err = Run(context.Background(), Spec{Argv: []string{py, "-c", "b = bytearray(512 << 20)"}, Env: pathEnv, Limits: l})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode == 0 || res.CapHit == nil || res.CapHit.Cap != CapMemory || !strings.HasPrefix(res.CapHit.Mechanism, MemoryPerProcess) {
		t.Fatalf("512 MiB in one process under RLIMIT_AS of 128 MiB: exit %d, cap %v\n%s", res.ExitCode, res.CapHit, res.Stderr)
	}
	t.Log(res.CapHit)
	// A total cap demanded: refused before the command runs.
	l.MemoryTotal = true
	_, err = Run(context.Background(), Spec{Argv: []string{py, "-c", cgrouptest.MemoryAttack}, Env: pathEnv, Limits: l})
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "the policy demands a total memory cap") {
		t.Fatalf("a total memory cap without a memory cgroup: %v", err)
	}
}

// TestDelegatedCgroupV1: an ordinary user whose own memory cgroup is
// delegated to it (its directory is the user's, as cgcreate -a/-t makes
// it) gets the sandbox's memory cgroup there. Root makes such a cgroup
// below its own, and runs TestMemoryAttack as uid 65534 in it.
func TestDelegatedCgroupV1(t *testing.T) {
	if os.Getenv("ACT_ISOLATE_TEST_DELEGATED") != "" || os.Getenv("ACT_ISOLATE_TEST_NOBODY") != "" {
		t.Skip("in the child")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to delegate a cgroup")
	}
	prefix, remove, err := cgrouptest.Delegate(65534, 65534)
	if err != nil {
		t.Skip(err)
	}
	defer remove()
	// The child moves itself into the delegated cgroup, as a user's
	// session would be started in it, then runs the test.
	out := asNobody(t, prefix, "ACT_ISOLATE_TEST_DELEGATED=1", "^TestMemoryAttack$")
	if !bytes.Contains(out, []byte("--- PASS: TestMemoryAttack")) {
		t.Errorf("TestMemoryAttack did not pass as uid 65534 in %s", prefix[3])
	}
}

// TestPrepareV2: a delegated cgroup v2 directory (faked with plain files)
// is used only when it is the user's, has the memory controller and holds
// act alone; act then moves itself into the "act" leaf and enables memory
// for the sandboxes' cgroups. (Whether the kernel then enforces memory.max
// is not testable on this host, whose memory controller is in cgroup v1.)
func TestPrepareV2(t *testing.T) {
	const uid, pid = 4242, 777
	fake := func(t *testing.T, controllers, procs string) string {
		own := t.TempDir()
		for name, v := range map[string]string{"cgroup.controllers": controllers, "cgroup.subtree_control": "", "cgroup.procs": procs} {
			if err := os.WriteFile(filepath.Join(own, name), []byte(v), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		for _, f := range []string{"", "cgroup.controllers", "cgroup.subtree_control", "cgroup.procs"} {
			if err := os.Chown(filepath.Join(own, f), uid, uid); err != nil {
				t.Skipf("chown (needs root): %v", err)
			}
		}
		return own
	}
	t.Run("delegated", func(t *testing.T) {
		own := fake(t, "cpu memory pids\n", "777\n")
		if got := prepareV2(own, pid, uid); got != own {
			t.Fatalf("prepareV2 = %q, want %q", got, own)
		}
		if b, _ := os.ReadFile(filepath.Join(own, v2Leaf, "cgroup.procs")); string(b) != "777" {
			t.Errorf("act did not move itself into the leaf: %q", b)
		}
		if b, _ := os.ReadFile(filepath.Join(own, "cgroup.subtree_control")); !strings.Contains(string(b), "+") {
			t.Errorf("no controller enabled for the children: %q", b)
		}
	})
	for _, c := range []struct{ name, controllers, procs string }{
		{"no memory controller", "cpu pids\n", "777\n"},
		{"another process in it", "memory pids\n", "777\n778\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			own := fake(t, c.controllers, c.procs)
			if got := prepareV2(own, pid, uid); got != "" {
				t.Errorf("prepareV2 = %q, want none", got)
			}
			if _, err := os.Stat(filepath.Join(own, v2Leaf)); err == nil {
				t.Error("act made its leaf anyway")
			}
		})
	}
	t.Run("not the user's", func(t *testing.T) {
		own := fake(t, "memory\n", "777\n")
		if got := prepareV2(own, pid, uid+1); got != "" {
			t.Errorf("prepareV2 = %q for another uid", got)
		}
	})
	t.Run("root without Delegate=yes", func(t *testing.T) {
		own := fake(t, "memory\n", "777\n")
		for _, f := range []string{"", "cgroup.controllers", "cgroup.subtree_control", "cgroup.procs"} {
			if err := os.Chown(filepath.Join(own, f), 0, 0); err != nil {
				t.Fatal(err)
			}
		}
		if got := prepareV2(own, pid, 0); got != "" {
			t.Errorf("prepareV2 = %q for root in a cgroup systemd did not delegate", got)
		}
	})
}

// TestMemoryFirst: a run the wall clock ended after the memory cgroup
// killed some of its processes is named by the memory cap.
func TestMemoryFirst(t *testing.T) {
	wall := &CapHit{Cap: CapWall, Limit: 1000, Unit: "ms"}
	enf := map[Cap]string{CapMemory: "cgroup v1 memory.limit_in_bytes"}
	v1, v2 := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(v1, "memory.oom_control"), []byte("oom_kill_disable 0\nunder_oom 0\noom_kill 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(v2, "memory.events"), []byte("low 0\nhigh 0\nmax 9\noom 2\noom_kill 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	l := Limits{MemoryMB: 128, WallMs: 1000}
	if h := memoryFirst(wall, l, &cgroups{memory: v1}, enf); h.Cap != CapMemory || !strings.Contains(h.String(), "3 processes killed by the OOM killer, then the wall clock cap of 1000 ms") {
		t.Errorf("v1: %v", h)
	}
	if h := memoryFirst(wall, l, &cgroups{memory: v2, v2: true}, enf); h.Cap != CapMemory || !strings.Contains(h.String(), "2 processes killed") {
		t.Errorf("v2: %v", h)
	}
	if h := memoryFirst(wall, l, &cgroups{memory: t.TempDir()}, enf); h != wall {
		t.Errorf("no OOM kill: %v", h)
	}
	if h := memoryFirst(nil, l, &cgroups{memory: v1}, enf); h != nil {
		t.Errorf("no hit: %v", h)
	}
}

// TestCPUCapNamedFromRLIMIT: a command the kernel killed at RLIMIT_CPU is
// named as the CPU cap though the rusage reports a little less than the
// limit (the kernel samples by ticks: a spinner killed at 1 s reported
// 0.91 s), never "killed by killed"; one killed far below it is not.
func TestCPUCapNamedFromRLIMIT(t *testing.T) {
	l := Limits{CPUMs: 1000}
	rl := rlimits{cpuS: 1}
	for _, tc := range []struct {
		cpu  time.Duration
		want bool
	}{{912 * time.Millisecond, true}, {1000 * time.Millisecond, true}, {100 * time.Millisecond, false}} {
		res := &Result{ExitCode: -1, Signal: syscall.SIGKILL, Usage: Usage{CPU: tc.cpu}}
		h := capHitAfter(res, l, 0, &cgroups{}, rl, map[Cap]string{}, nil)
		if got := h != nil && h.Cap == CapCPU; got != tc.want {
			t.Errorf("killed after %v of CPU: cap %v, want the CPU cap %v", tc.cpu, h, tc.want)
		}
	}
}

// TestGoCrashNamesMemoryCap: a Go program that cannot start under the
// per-process memory cap crashes with a runtime fatal error at the head of
// a long stack dump: the memory cap is named, not a bare exit status 2.
func TestGoCrashNamesMemoryCap(t *testing.T) {
	dump := "fatal error: failed to reserve page summary memory\n\nruntime stack:\n" +
		strings.Repeat("runtime.throw({0x58b47f?, 0x20000000?})\n\truntime/panic.go:1229 +0x48 fp=0x7ffd866d7fa0\n", 200)
	l := Limits{MemoryMB: 256}
	res := &Result{ExitCode: 2, Stderr: []byte(dump)}
	h := capHitAfter(res, l, 0, &cgroups{}, rlimits{as: 256 << 20}, map[Cap]string{}, nil)
	if h == nil || h.Cap != CapMemory {
		t.Fatalf("cap %v, want the memory cap", h)
	}
	// Without the per-process cap, the same crash is the program's own.
	if h := capHitAfter(res, l, 0, &cgroups{}, rlimits{}, map[Cap]string{}, nil); h != nil {
		t.Errorf("cap %v without RLIMIT_AS", h)
	}
}
