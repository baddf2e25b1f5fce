// Package parallel runs the independent steps of a loop on several
// goroutines.
package parallel

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// CPUs is the worker count for CPU-bound loops: GOMAXPROCS.
func CPUs() int { return runtime.GOMAXPROCS(0) }

// Do calls f(w, i) for every i in [0, n), on at most workers goroutines
// (w in [0, workers) names the one calling, for per-worker buffers), each
// taking chunk consecutive indexes at a time: neighbours often share a
// directory, and the shared counter is touched less. When one worker is
// enough, f runs in the caller's goroutine, in order. Do returns when every
// call has returned; the calls must not depend on each other.
func Do(n, workers, chunk int, f func(w, i int)) {
	chunk = max(chunk, 1)
	workers = min(workers, (n+chunk-1)/chunk)
	if workers <= 1 {
		for i := range n {
			f(0, i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for {
				lo := int(next.Add(int64(chunk))) - chunk
				if lo >= n {
					return
				}
				for i := lo; i < min(lo+chunk, n); i++ {
					f(w, i)
				}
			}
		})
	}
	wg.Wait()
}
