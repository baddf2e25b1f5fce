package isolate

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// warmInit waits for w's start and returns init's PID and its PID
// namespace as the host sees it.
func warmInit(t *testing.T, w *Warm) (int, string) {
	t.Helper()
	<-w.ready
	if w.err != nil {
		t.Fatalf("prestart: %v", w.err)
	}
	ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", w.init.Pid))
	if err != nil {
		t.Fatal(err)
	}
	return w.init.Pid, ns
}

// reaped fails t unless the process pid is gone (ended and reaped) within
// hangGuard: a liveness bound, not a speed one.
func reaped(t *testing.T, pid int) {
	t.Helper()
	for deadline := time.Now().Add(hangGuard); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); os.IsNotExist(err) {
			return
		}
	}
	t.Fatalf("process %d is still there after %v (a zombie or a running init)", pid, hangGuard)
}

// TestWarm: a prestarted sandbox runs the first Spec that suits it, with
// that Spec's output cap; one that does not suit it (the network shared)
// is ended and a fresh sandbox runs the command; an unused one ends on
// Close. No init is left behind.
func TestWarm(t *testing.T) {
	requireIsolation(t)
	ctx := context.Background()
	t.Run("used", func(t *testing.T) {
		w := Prestart(false)
		pid, ns := warmInit(t, w)
		res, err := Run(ctx, Spec{Argv: []string{"sh", "-c", "readlink /proc/self/ns/pid; head -c 5000 /dev/zero"}, Env: pathEnv,
			Limits: Limits{WallMs: 20_000}, MaxStdout: 100, Warm: w})
		if err != nil {
			t.Fatal(err)
		}
		mustExit(t, res, 0)
		if got := strings.SplitN(string(res.Stdout), "\n", 2)[0]; got != ns {
			t.Errorf("the command ran in %s, not in the warm sandbox's %s", got, ns)
		}
		if len(res.Stdout) != 100 || !res.StdoutCut {
			t.Errorf("stdout %d bytes, cut %v: the Spec's cap of 100 did not hold", len(res.Stdout), res.StdoutCut)
		}
		w.Close() // after use: nothing
		reaped(t, pid)
		if res2, err := Run(ctx, Spec{Argv: []string{"true"}, Env: pathEnv, Limits: Limits{WallMs: 20_000}, Warm: w}); err != nil || res2.ExitCode != 0 {
			t.Fatalf("a used Warm in a second Spec: %v %v", res2, err)
		}
	})
	t.Run("caps", func(t *testing.T) {
		// The cgroups made beside the early start get the Spec's limits
		// before init joins them.
		w := Prestart(false)
		pid, _ := warmInit(t, w)
		res, err := Run(ctx, Spec{Argv: []string{"sh", "-c", "tail /dev/zero"}, Env: pathEnv,
			Limits: Limits{MemoryMB: 32, Procs: 16, WallMs: 20_000}, Warm: w})
		wantMemoryCap(t, res, err, 32)
		reaped(t, pid)
		wantProcsCap(t, Prestart(false))
	})
	t.Run("limited-ahead", func(t *testing.T) {
		// PrestartFor writes the limits before any spec; a Spec with
		// those limits runs under them, one with others gets cgroups of
		// its own limits.
		l := Limits{MemoryMB: 32, Procs: 16, WallMs: 20_000}
		w := PrestartFor(false, &l)
		pid, _ := warmInit(t, w)
		for _, f := range []struct{ dir, file, want string }{
			{w.cg.memory, "memory.limit_in_bytes", "33554432"},
			{w.cg.pids, "pids.max", "16"},
		} {
			if f.dir == "" {
				continue
			}
			b, err := os.ReadFile(filepath.Join(f.dir, f.file))
			if err != nil || strings.TrimSpace(string(b)) != f.want {
				t.Errorf("%s ahead of the spec: %q, %v; want %s", f.file, b, err, f.want)
			}
		}
		res, err := Run(ctx, Spec{Argv: []string{"sh", "-c", "tail /dev/zero"}, Env: pathEnv, Limits: l, Warm: w})
		wantMemoryCap(t, res, err, 32)
		reaped(t, pid)

		w = PrestartFor(false, &Limits{WallMs: 20_000}) // the default process cap, ahead
		pid, _ = warmInit(t, w)
		wantProcsCap(t, w)
		reaped(t, pid)
	})
	t.Run("premounted", func(t *testing.T) {
		// A sandbox started ahead has mounted its /dev, /run and /proc
		// before any spec; the command then sees them as in a fresh one.
		w := Prestart(false)
		pid, _ := warmInit(t, w)
		for _, m := range []struct{ path, fs string }{{"/dev", "tmpfs"}, {"/run", "tmpfs"}, {"/proc", "proc"}} {
			if err := mountedAs(pid, m.path, m.fs); err != nil {
				t.Error(err)
			}
		}
		res, err := Run(ctx, Spec{Argv: []string{"sh", "-c", "test -c /dev/null && test -z \"$(ls -A /run)\" && test $$ -gt 1 && cat /proc/1/cmdline | tr '\\0' ' '"},
			Env: pathEnv, Limits: Limits{WallMs: 20_000, DiskMB: 16}, Warm: w})
		if err != nil {
			t.Fatal(err)
		}
		mustExit(t, res, 0)
		if got := string(res.Stdout); !strings.HasPrefix(got, "act-sandbox") {
			t.Errorf("/proc/1/cmdline in the sandbox: %q, want its own init", got)
		}
	})
	t.Run("scope-under-premount", func(t *testing.T) {
		// A scope below what a sandbox started ahead has mounted over
		// (here /dev/shm, through a symlink) gets a fresh sandbox, which
		// opens it before it mounts /dev.
		real, err := os.MkdirTemp("/dev/shm", "act-warm-")
		if err != nil {
			t.Skipf("no /dev/shm: %v", err)
		}
		defer os.RemoveAll(real)
		if err := os.WriteFile(filepath.Join(real, "in"), []byte("seen\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		base := t.TempDir()
		link := filepath.Join(base, "link")
		if err := os.Symlink(real, link); err != nil {
			t.Fatal(err)
		}
		upper := filepath.Join(base, "upper")
		if err := os.Mkdir(upper, 0o755); err != nil {
			t.Fatal(err)
		}
		w := Prestart(false)
		pid, _ := warmInit(t, w)
		res, err := Run(ctx, Spec{Argv: []string{"sh", "-c", "cat in && echo new > out"}, Env: pathEnv, Workdir: real,
			Scopes: []Scope{{Path: real, Upper: upper}, {Path: link, Upper: filepath.Join(base, "upper2")}}[:1], Limits: Limits{WallMs: 20_000, DiskMB: 16}, Warm: w})
		if err != nil {
			t.Fatal(err)
		}
		mustExit(t, res, 0)
		if string(res.Stdout) != "seen\n" || readFile(t, filepath.Join(upper, "out")) != "new\n" {
			t.Errorf("stdout %q: the scope below /dev/shm was not the command's", res.Stdout)
		}
		reaped(t, pid)
		if underPremounts(Spec{Scopes: []Scope{{Path: link, Upper: upper}}}) != true {
			t.Error("a scope whose symlink leads below /dev/shm is not seen as below a premount")
		}
		if underPremounts(Spec{Scopes: []Scope{{Path: base, Upper: upper}}}) {
			t.Errorf("%s is seen as below a premount", base)
		}
	})
	t.Run("network-differs", func(t *testing.T) {
		w := Prestart(false)
		pid, _ := warmInit(t, w)
		host, err := os.Readlink("/proc/self/ns/net")
		if err != nil {
			t.Fatal(err)
		}
		res, err := Run(ctx, Spec{Argv: []string{"readlink", "/proc/self/ns/net"}, Env: pathEnv, AllowNetwork: true,
			Limits: Limits{WallMs: 20_000}, Warm: w})
		if err != nil {
			t.Fatal(err)
		}
		mustExit(t, res, 0)
		if got := strings.TrimSpace(string(res.Stdout)); got != host {
			t.Errorf("network %s, want the host's %s", got, host)
		}
		reaped(t, pid)
	})
	t.Run("closed-unused", func(t *testing.T) {
		w := Prestart(false)
		pid, _ := warmInit(t, w)
		w.Close()
		reaped(t, pid)
	})
}

// wantMemoryCap fails t unless a run of `tail /dev/zero` under a memory
// cap of mb MiB ended on that cap, or, as uid 65534 here (no writable
// memory cgroup: the cap cannot hold), was refused, warm or not.
func wantMemoryCap(t *testing.T, res *Result, err error, mb int64) {
	t.Helper()
	switch {
	case err != nil:
		t.Fatal(err)
	case res.CapHit == nil || res.CapHit.Cap != CapMemory || res.CapHit.Limit != mb:
		t.Fatalf("cap %v, exit %d, enforcement %v", res.CapHit, res.ExitCode, res.Enforcement)
	case os.Getenv("ACT_ISOLATE_TEST_NOBODY") != "" && !strings.HasPrefix(res.CapHit.Mechanism, MemoryPerProcess):
		// As nobody without a memory cgroup: RLIMIT_AS per process.
		t.Fatalf("as nobody without a memory cgroup: %v", res.CapHit)
	}
}

// wantProcsCap runs 40 processes at once in w under a cap of 16 and
// fails t unless the cap, where a cgroup enforces it, was hit.
func wantProcsCap(t *testing.T, w *Warm) {
	t.Helper()
	res, err := Run(context.Background(), Spec{Argv: []string{"sh", "-c", "i=0; while [ $i -lt 40 ]; do sleep 1 & i=$((i+1)); done; wait"}, Env: pathEnv,
		Limits: Limits{Procs: 16, WallMs: 20_000}, Warm: w})
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasPrefix(res.Enforcement[CapProcs], "cgroup") && (res.CapHit == nil || res.CapHit.Cap != CapProcs) {
		t.Fatalf("process cap %v not hit in 16: cap %v, exit %d", res.Enforcement[CapProcs], res.CapHit, res.ExitCode)
	}
	t.Log(res.Enforcement[CapProcs], res.CapHit)
}
