// Command runner is the engine of bench/run: it builds act and the
// baselines, runs each row's A and B sides interleaved (A B A B …), and
// prints one table of medians, per-pair ratios A/B and targets. See
// bench/README.md; the rows themselves are in rows.go.
//
// It is a benchmark, not a test: a missed target is reported, never an
// error. It exits non-zero only when something fails to build or run.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// sample is one timed run of one side.
type sample struct {
	wall   time.Duration
	maxRSS int64 // peak RSS in bytes; -1 when the side does not measure it
}

// side is one of a row's two contenders. run is called once per timed run
// (numbered from 0; negative during warm-up) and returns its measurement.
type side struct {
	label string // what it runs, shown under the table
	run   func(n int) (sample, error)
}

// row is one line of the table: A is timed against B in the same run, and
// the median of the per-pair ratios A/B is compared with target.
type row struct {
	num, name string
	target    float64 // the median A/B must be ≤ target; 0: no time target (a memory row)
	rssMiB    float64 // when > 0, A's peak RSS must be ≤ this many MiB
	// setup builds and prepares what the row needs and returns its sides.
	// It reports failure with b.must / b.fail.
	setup func(*bench) (a, b side)
}

// result is a measured row, or the error that stopped it.
type result struct {
	row
	a, b        side
	as, bs      []sample
	ratios      []float64
	err         error
	rssMeasured bool
}

func main() {
	root := flag.String("root", ".", "the act repository")
	work := flag.String("work", "", "an empty temporary directory for builds and data (required)")
	pairs := flag.Int("pairs", envInt("BENCH_PAIRS", 30), "timed A/B pairs per row (env BENCH_PAIRS)")
	warmup := flag.Int("warmup", envInt("BENCH_WARMUP", 3), "untimed warm-up pairs per row (env BENCH_WARMUP)")
	only := flag.String("rows", os.Getenv("BENCH_ROWS"), "comma-separated row numbers to run (env BENCH_ROWS); empty runs all")
	flag.Parse()
	if *work == "" || *pairs < 1 || *warmup < 0 {
		flag.Usage()
		os.Exit(2)
	}

	b, err := newBench(*root, *work)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	defer b.close()

	selected := rows
	if *only != "" {
		want := strings.Split(*only, ",")
		selected = nil
		for _, r := range rows {
			if slices.Contains(want, r.num) {
				selected = append(selected, r)
			}
		}
		if len(selected) == 0 {
			fmt.Fprintf(os.Stderr, "bench: no row matches %q\n", *only)
			os.Exit(2)
		}
	}

	var results []*result
	failed := false
	for _, r := range selected {
		fmt.Fprintf(os.Stderr, "bench: row %s %s: setup\n", r.num, r.name)
		res := measure(b, r, *pairs, *warmup)
		if res.err != nil {
			failed = true
			fmt.Fprintf(os.Stderr, "bench: row %s %s: %v\n", r.num, r.name, res.err)
		}
		results = append(results, res)
	}

	printHeader(os.Stdout, b, *pairs, *warmup)
	printTable(os.Stdout, b, results)
	if failed {
		os.Exit(1)
	}
}

// measure sets a row up and runs it: warm-up pairs, then timed pairs.
func measure(b *bench, r row, pairs, warmup int) (res *result) {
	res = &result{row: r}
	defer func() {
		if p := recover(); p != nil {
			var e rowError
			if err, ok := p.(error); ok && errors.As(err, &e) {
				res.err = e.err
				return
			}
			panic(p)
		}
	}()
	res.a, res.b = r.setup(b)
	for i := -warmup; i < pairs; i++ {
		sa, err := res.a.run(i)
		if err != nil {
			res.err = fmt.Errorf("A (%s), run %d: %w", res.a.label, i, err)
			return res
		}
		sb, err := res.b.run(i)
		if err != nil {
			res.err = fmt.Errorf("B (%s), run %d: %w", res.b.label, i, err)
			return res
		}
		if i < 0 {
			continue
		}
		if sb.wall <= 0 {
			res.err = fmt.Errorf("B (%s), run %d: measured %v", res.b.label, i, sb.wall)
			return res
		}
		res.as, res.bs = append(res.as, sa), append(res.bs, sb)
		res.ratios = append(res.ratios, float64(sa.wall)/float64(sb.wall))
		if sa.maxRSS >= 0 {
			res.rssMeasured = true
		}
	}
	return res
}

// stats is median, min and max of a sample set.
type stats struct{ med, lo, hi float64 }

func summarize(xs []float64) stats {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n == 0 {
		return stats{}
	}
	med := s[n/2]
	if n%2 == 0 {
		med = (s[n/2-1] + s[n/2]) / 2
	}
	return stats{med, s[0], s[n-1]}
}

func walls(ss []sample) []float64 {
	out := make([]float64, len(ss))
	for i, s := range ss {
		out[i] = float64(s.wall) / float64(time.Millisecond)
	}
	return out
}

func rssMiB(ss []sample) []float64 {
	var out []float64
	for _, s := range ss {
		if s.maxRSS >= 0 {
			out = append(out, float64(s.maxRSS)/(1<<20))
		}
	}
	return out
}

func envInt(name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench: %s=%q is not an integer\n", name, v)
		os.Exit(2)
	}
	return n
}
