package parallel

import (
	"sync/atomic"
	"testing"
)

func TestDo(t *testing.T) {
	for _, tc := range []struct{ n, workers, chunk int }{
		{0, 4, 1}, {1, 4, 1}, {7, 1, 3}, {100, 2, 8}, {1000, 8, 1}, {1000, 3, 64}, {5, 0, 0},
	} {
		calls := make([]atomic.Int32, tc.n)
		var badWorker atomic.Bool
		Do(tc.n, tc.workers, tc.chunk, func(w, i int) {
			if w < 0 || w >= max(tc.workers, 1) {
				badWorker.Store(true)
			}
			calls[i].Add(1)
		})
		for i := range calls {
			if c := calls[i].Load(); c != 1 {
				t.Errorf("n=%d workers=%d chunk=%d: f(%d) called %d times", tc.n, tc.workers, tc.chunk, i, c)
			}
		}
		if badWorker.Load() {
			t.Errorf("n=%d workers=%d chunk=%d: a worker index out of range", tc.n, tc.workers, tc.chunk)
		}
	}
}

// TestDoInCaller checks that a single worker runs the calls in order.
func TestDoInCaller(t *testing.T) {
	var got []int
	Do(5, 1, 2, func(_, i int) { got = append(got, i) })
	for i, v := range got {
		if v != i {
			t.Fatalf("calls out of order: %v", got)
		}
	}
	if len(got) != 5 {
		t.Fatalf("got %d calls, want 5", len(got))
	}
}
