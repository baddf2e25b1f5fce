package audit

import (
	"context"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"
)

// TestVerifyBesideAppends: verifiers loop, as act audit verify does
// (EnsureKey, then Verify), from the moment the log directory is first
// used, while writers append: goroutines that each open the log afresh as
// a process does and append through AppendBatch (one record or several,
// synced by fdatasync or syncfs), now and then pruning, and writer
// processes. Every verify passes: it reads a whole prefix of the log and
// its checkpoint, never a record half-appended.
func TestVerifyBesideAppends(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("AUDIT_RACE_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d (AUDIT_RACE_SEED=%d reruns it)", seed, seed)
	dir := filepath.Join(t.TempDir(), "audit")
	const writers, procs, rounds, verifiers = 4, 3, 12, 2
	var wg sync.WaitGroup
	stop := make(chan struct{})
	errs := make(chan error, writers+procs+verifiers)
	var verified [verifiers]int
	for v := 0; v < verifiers; v++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				if err := EnsureKey(dir); err != nil {
					errs <- err
					return
				}
				if r, err := Verify(dir, VerifyOptions{}); err != nil || !r.OK {
					errs <- err
					return
				}
				verified[v]++
				select {
				case <-stop:
					return
				default:
				}
			}
		}()
	}
	var ww sync.WaitGroup
	for w := 0; w < writers; w++ {
		rng := rand.New(rand.NewPCG(seed, uint64(w)))
		ww.Add(1)
		go func() {
			defer ww.Done()
			for r := 0; r < rounds; r++ {
				if err := os.MkdirAll(dir, 0o700); err != nil {
					errs <- err
					return
				}
				l, err := Open(dir, testOrigin)
				if err != nil {
					errs <- err
					return
				}
				n := 1 + rng.IntN(3)
				evs := make([]Event, n)
				for i := range evs {
					evs[i] = testEvent(w*1000 + r*10 + i)
				}
				_, err = l.AppendBatch(context.Background(), evs, &BatchOptions{SyncFS: rng.IntN(2) == 0})
				if err == nil && rng.IntN(16) == 0 {
					_, err = l.PruneBefore(context.Background(), time.Now())
				}
				l.Close()
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	// And writer processes, as act's own are.
	for range procs {
		c := exec.Command(os.Args[0], "-test.run=^TestHelperWriter$")
		c.Env = append(os.Environ(), "AUDIT_HELPER_DIR="+dir, "AUDIT_HELPER_N="+strconv.Itoa(rounds))
		c.Stderr = os.Stderr
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		ww.Add(1)
		go func() {
			defer ww.Done()
			if err := c.Wait(); err != nil {
				errs <- err
			}
		}()
	}
	ww.Wait()
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("seed %d: %v", seed, err)
	}
	r := mustVerify(t, dir, VerifyOptions{})
	t.Logf("%d records; verified %v times during the appends", r.Records, verified)
}
