package startheap

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

// gcPercent reads the current GOGC.
func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

var sink [][]byte

// TestAdjust: below the starting heap nothing collects; past it the
// collector runs and GOGC is back to the steady 100.
func TestAdjust(t *testing.T) {
	t.Setenv("GOGC", "")
	runtime.GC()
	defer debug.SetGCPercent(100)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	Adjust(64 << 20)
	if p := gcPercent(); p != 1600 {
		t.Fatalf("GOGC %d after Adjust(64 MiB), want 1600", p)
	}
	// 16 MiB, four times the default first goal: no cycle.
	for range 256 {
		sink = append(sink, make([]byte, 64<<10))
	}
	runtime.ReadMemStats(&after)
	if after.NumGC != before.NumGC {
		t.Fatalf("%d collections within the starting heap", after.NumGC-before.NumGC)
	}
	sink = nil
	// Past it: a cycle, then the finalizer restores GOGC=100.
	for range 2048 {
		if sink = append(sink, make([]byte, 64<<10)); len(sink) > 16 {
			sink = sink[1:]
		}
	}
	sink = nil
	for deadline := time.Now().Add(time.Minute); gcPercent() != 100; {
		if time.Now().After(deadline) {
			t.Fatalf("GOGC still %d after the first collections", gcPercent())
		}
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
	runtime.ReadMemStats(&after)
	if after.NumGC == before.NumGC {
		t.Fatal("no collection past the starting heap")
	}
}

// TestAdjustGOGC: GOGC in the environment wins.
func TestAdjustGOGC(t *testing.T) {
	t.Setenv("GOGC", "50")
	old := debug.SetGCPercent(50)
	defer debug.SetGCPercent(old)
	Adjust(64 << 20)
	Steady(400)
	if p := gcPercent(); p != 50 {
		t.Fatalf("GOGC %d, want the environment's 50", p)
	}
}

// TestSteady: after the starting heap, the steady GOGC a server asked for.
func TestSteady(t *testing.T) {
	t.Setenv("GOGC", "")
	defer func() { steady.Store(100); debug.SetGCPercent(100) }()
	Adjust(64 << 20)
	Steady(400)
	if p := gcPercent(); p != 400 {
		t.Fatalf("GOGC %d after Steady(400), want 400", p)
	}
	for deadline := time.Now().Add(time.Minute); ; {
		runtime.GC()
		time.Sleep(time.Millisecond)
		if gcPercent() == 400 && steady.Load() == 400 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("GOGC %d after the first collection, want 400", gcPercent())
		}
	}
}
