package diff_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/act-project/act/diff"
	"github.com/act-project/act/sandbox"
)

// benchLayer builds a real tree of n files, 100 per directory, and a layer
// of 100 changes over it: 40 modified, 30 deleted and 30 created files.
func benchLayer(b *testing.B, n int) (upper, root string) {
	b.Helper()
	s := filepath.Join(b.TempDir(), "scope")
	for i := range n {
		d := filepath.Join(s, fmt.Sprintf("d%03d", i/100))
		if i%100 == 0 {
			if err := os.MkdirAll(d, 0o755); err != nil {
				b.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("f%02d", i%100)), []byte("some content\n"), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	l := sandbox.NewLayerSystem(sandbox.RealSystem{}, b.TempDir())
	for i := range 100 {
		p := filepath.Join(s, "d000", fmt.Sprintf("f%02d", i))
		var err error
		switch {
		case i < 40:
			err = l.WriteFile(p, []byte("changed content\n"), 0o644)
		case i < 70:
			err = l.Remove(p)
		default:
			err = l.WriteFile(p+".new", []byte("new\n"), 0o644)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	syscall.Sync() // no writeback of the new tree while timing
	return l.UpperDir(), s
}

func compare(b *testing.B, upper, root string) {
	changes, err := diff.Compare(upper, []string{root}, sandbox.RealSystem{})
	if err != nil {
		b.Fatal(err)
	}
	if len(changes) != 100 {
		b.Fatalf("got %d changes, want 100", len(changes))
	}
}

// BenchmarkCompare diffs a layer of 100 changes over real trees of 100 and
// of 10,000 files. The cost must follow the change, not the tree (PERF.md,
// row "diff"): the sub-benchmark "ratio" runs the two interleaved and
// reports the median of the per-pair time ratios 10,000 / 100, which
// should be about 1.
func BenchmarkCompare(b *testing.B) {
	small, smallRoot := benchLayer(b, 100)
	large, largeRoot := benchLayer(b, 10_000)
	b.Run("lower=100", func(b *testing.B) {
		for b.Loop() {
			compare(b, small, smallRoot)
		}
	})
	b.Run("lower=10000", func(b *testing.B) {
		for b.Loop() {
			compare(b, large, largeRoot)
		}
	})
	b.Run("ratio", func(b *testing.B) {
		var ratios []float64
		for b.Loop() {
			t0 := time.Now()
			compare(b, small, smallRoot)
			t1 := time.Now()
			compare(b, large, largeRoot)
			ratios = append(ratios, float64(time.Since(t1))/float64(t1.Sub(t0)))
		}
		slices.Sort(ratios)
		b.ReportMetric(ratios[len(ratios)/2], "median-ratio")
		b.ReportMetric(ratios[0], "min-ratio")
		b.ReportMetric(ratios[len(ratios)-1], "max-ratio")
	})
}
