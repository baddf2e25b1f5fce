package timings

import (
	"context"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestNesting: a phase begun under another's context nests under it, in
// the order the phases began, and one measured elsewhere (Span) takes its
// place by its start, though recorded last.
func TestNesting(t *testing.T) {
	t0 := time.Now()
	r := New(t0)
	ctx := With(context.Background(), r)
	end := Start(ctx, "parse")
	end()
	pctx, endPlan := Begin(ctx, "plan")
	Start(pctx, "diff", "of", "the layer")()
	endPlan()
	Span(pctx, "sandbox", t0.Add(-time.Millisecond), t0)
	Start(ctx, "render")()

	var got []string
	for _, p := range r.Phases() {
		got = append(got, strings.Repeat(" ", p.Depth)+p.Name)
		if p.Ms < 0 {
			t.Errorf("%s: %v ms", p.Name, p.Ms)
		}
	}
	want := []string{"parse", "plan", " sandbox", " diff: of the layer", "render"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("phases %q, want %q", got, want)
	}
}

// TestOff: without a recorder every call does nothing and allocates
// nothing, whatever its details.
func TestOff(t *testing.T) {
	ctx := context.Background()
	if Enabled(ctx) || From(ctx) != nil {
		t.Fatal("a recorder in the background context")
	}
	n := testing.AllocsPerRun(100, func() {
		Start(ctx, "record", "planned")()
		c, end := Begin(ctx, "dry run")
		Span(c, "x", time.Time{}, time.Time{})
		end()
	})
	if n != 0 {
		t.Errorf("%v allocations per call without a recorder", n)
	}
	if With(ctx, nil) != ctx {
		t.Error("With(nil) made a new context")
	}
}

// TestSpanRefusesBackwards: a phase measured elsewhere that ends before
// it begins (hostile or skewed input) is not recorded.
func TestSpanRefusesBackwards(t *testing.T) {
	r := New(time.Now())
	ctx := With(context.Background(), r)
	now := time.Now()
	Span(ctx, "backwards", now, now.Add(-time.Second))
	Span(ctx, "zero", time.Time{}, now)
	if ps := r.Phases(); len(ps) != 0 {
		t.Errorf("recorded %v", ps)
	}
}

// TestTable: the table has a header, one row per phase, indented by
// depth, and the total.
func TestTable(t *testing.T) {
	var b strings.Builder
	WriteTable(&b, []Phase{{Name: "check", StartMs: 1, Ms: 2}, {Name: "schema (CUE)", Depth: 1, StartMs: 1.5, Ms: 1.25}}, 5*time.Millisecond)
	want := `act: timings (ms; start is from the process's start)
    start        ms  phase
     1.00      2.00  check
     1.50      1.25    schema (CUE)
               5.00  total
`
	if b.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", b.String(), want)
	}
}

// TestFromMonotonic: a CLOCK_MONOTONIC reading taken now is now on this
// process's clock (a minute either way would be a wrong clock or unit), and
// ProcessStart falls back to the package's start without a stamp.
func TestFromMonotonic(t *testing.T) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		t.Fatal(err)
	}
	at := FromMonotonic(ts.Nano(), ts.Nano()-int64(time.Hour))
	if d := time.Since(at[0]); d < 0 || d > time.Minute { // a wrong clock or unit is off by far more; a loaded machine may stall
		t.Errorf("FromMonotonic(now) is %v before now", d)
	}
	if d := at[0].Sub(at[1]); d != time.Hour {
		t.Errorf("an hour apart on CLOCK_MONOTONIC is %v apart", d)
	}
	SetProcessStart(0)
	if got := ProcessStart(); !got.Equal(loaded) {
		t.Errorf("ProcessStart without a stamp = %v, want the package's start %v", got, loaded)
	}
	SetProcessStart(ts.Nano())
	if d := time.Since(ProcessStart()); d < 0 || d > time.Minute { // a wrong clock or unit is off by far more; a loaded machine may stall
		t.Errorf("ProcessStart is %v before now", d)
	}
}
