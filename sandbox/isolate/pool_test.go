package isolate

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// pooledMemory waits for the runs so far to end (their cgroups released)
// and returns the memory cgroup directory the pool holds last ("" where
// none: no writable v1 cgroups, as for an ordinary user here).
func pooledMemory(t *testing.T) string {
	t.Helper()
	settling.Wait()
	cgPool.Lock()
	defer cgPool.Unlock()
	if n := len(cgPool.free); n > 0 {
		return cgPool.free[n-1].memory
	}
	return ""
}

func readInt(t *testing.T, path string) int64 {
	t.Helper()
	s := strings.TrimSpace(readFile(t, path))
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatalf("%s: %q", path, s)
	}
	return n
}

// TestCgroupPool: the cgroups of a finished run go back to the pool and
// serve the next run, which sees none of the last one's limits or
// counters: a run after one killed by the memory cap, one stopped by the
// process cap and one that used CPU time hits no cap of its own. Cgroups
// left charged with more than maxPooledCharge are removed instead. Settle
// removes the pool.
func TestCgroupPool(t *testing.T) {
	requireIsolation(t)
	if os.Getenv("ACT_ISOLATE_TEST_NOBODY") != "" {
		t.Skip("no writable v1 cgroups for uid 65534 here: nothing is pooled")
	}
	Settle() // an empty pool to start with
	PoolCgroups(true)
	defer PoolCgroups(false)
	ctx := context.Background()
	// A file the page cache does not hold: a run that reads it is
	// charged its pages.
	sc := newScope(t, t.TempDir(), nil)
	big := filepath.Join(sc.Path, "big")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(make([]byte, 24<<20)); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		t.Fatal(err)
	}
	f.Close()
	run := func(script string, l Limits) *Result {
		t.Helper()
		l.WallMs, l.DiskMB = 20_000, 16
		res, err := Run(ctx, Spec{Argv: []string{"sh", "-c", script}, Env: pathEnv, Workdir: sc.Path, Scopes: []Scope{sc}, Limits: l})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := run("tail /dev/zero", Limits{MemoryMB: 32}); res.CapHit == nil || res.CapHit.Cap != CapMemory {
		t.Fatalf("cap %v, exit %d: want the memory cap", res.CapHit, res.ExitCode)
	}
	mem := pooledMemory(t)
	if mem == "" {
		t.Skip("no v1 memory cgroup was pooled here")
	}
	if got := readInt(t, filepath.Join(mem, "memory.limit_in_bytes")); got < 1<<40 {
		t.Errorf("a pooled memory cgroup keeps the limit %d", got)
	}
	if got := readInt(t, filepath.Join(mem, "memory.usage_in_bytes")); got > maxPooledCharge {
		t.Errorf("a pooled memory cgroup is charged %d bytes", got)
	}
	after := func(what string, l Limits) {
		t.Helper()
		before := pooledMemory(t)
		res := run("true", l)
		mustExit(t, res, 0)
		if res.CapHit != nil {
			t.Errorf("after %s, a run in the pooled cgroups hit %v", what, res.CapHit)
		}
		if got := pooledMemory(t); got != before {
			t.Errorf("after %s, the run used cgroups %s, not the pooled %s", what, got, before)
		}
	}
	after("a memory cap hit", Limits{MemoryMB: 32})
	// A run that leaves more than maxPooledCharge charged (the page
	// cache of the 24 MiB it read) does not give its cgroups back: they
	// are removed, and the charge goes to the parent.
	used := pooledMemory(t)
	mustExit(t, run("cat big >/dev/null", Limits{MemoryMB: 64}), 0)
	if got := pooledMemory(t); got == used {
		t.Errorf("%s, charged %d bytes, went back to the pool", used, readInt(t, filepath.Join(used, "memory.usage_in_bytes")))
	}
	if _, err := os.Stat(used); !os.IsNotExist(err) {
		t.Errorf("%s, charged by the read, was not removed: %v", used, err)
	}
	if res := run("i=0; while [ $i -lt 40 ]; do sleep 1 & i=$((i+1)); done; wait", Limits{Procs: 16}); res.CapHit == nil || res.CapHit.Cap != CapProcs {
		t.Fatalf("cap %v, exit %d: want the process cap", res.CapHit, res.ExitCode)
	}
	after("a process cap hit", Limits{Procs: 16})
	if res := run("i=0; while [ $i -lt 400000 ]; do i=$((i+1)); done", Limits{}); res.Usage.CPU < 100*time.Millisecond {
		t.Fatalf("the run used %v of CPU time; the next one's cap of 50 ms would not tell", res.Usage.CPU)
	}
	after("a run of some CPU time", Limits{CPUMs: 50})

	Settle()
	if n := len(cgPool.free); n != 0 {
		t.Errorf("Settle left %d cgroups in the pool", n)
	}
	if _, err := os.Stat(mem); !os.IsNotExist(err) {
		t.Errorf("Settle left %s: %v", mem, err)
	}
}
