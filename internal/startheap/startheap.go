// Package startheap lets a short act process finish before the garbage
// collector's first cycle. Most act processes (a check, a plan of a few
// files, a rollback, a hook's decision) allocate a few MiB in all and
// exit within tens of milliseconds; with Go's defaults the collector
// starts its first cycle at a 4 MiB heap, and two or three cycles, with
// the threads they start, cost a tenth of such a process's CPU
// (docs/timings.md, "Start-up"). The same idea as the Go compiler's
// starting heap.
package startheap

import (
	"os"
	"runtime"
	"runtime/debug"
	"sync/atomic"
)

// The Go runtime's first heap goal at GOGC=100 (runtime.heapMinimum).
const heapMinimum = 4 << 20

// steady is the GOGC the process keeps after its first collection.
var steady atomic.Int32

func init() { steady.Store(100) }

// Adjust makes the first collection happen at a heap of about goal
// bytes, and from then on collects as GOGC=100 would, or as [Steady]
// said: a process that never reaches goal never collects, and one that
// does is bounded as before by twice its live heap. GOGC in the
// environment wins over both.
func Adjust(goal uint64) {
	if os.Getenv("GOGC") != "" || goal <= heapMinimum {
		return
	}
	debug.SetGCPercent(int(goal * 100 / heapMinimum))
	// Unreachable at once, so its finalizer runs after the first cycle.
	// Not tiny (the tiny allocator can delay a finalizer indefinitely).
	sentinel := new([64]byte)
	runtime.SetFinalizer(sentinel, func(*[64]byte) { debug.SetGCPercent(int(steady.Load())) })
}

// Steady sets the GOGC a process keeps after its starting heap: a
// long-running server may want a larger heap than GOGC=100's. GOGC in
// the environment wins.
func Steady(percent int) {
	if os.Getenv("GOGC") != "" {
		return
	}
	steady.Store(int32(percent))
	debug.SetGCPercent(percent)
}
