// Package timings records the wall time of each phase of a decision, for
// act … --timings (docs/timings.md): start-up, parse, schema, rules,
// policy, the sandbox's set-up, the command, read-back and diff, risk, the
// record and each fsync, rendering.
//
// A [Recorder] rides in a context.Context ([With]); code marks a phase
// with one line,
//
//	defer timings.Start(ctx, "schema")()
//
// and a phase started under another's context ([Begin]) nests under it.
// Without a recorder in the context every call is a no-op that costs one
// context lookup and allocates nothing: --timings off is the default and
// costs nothing measurable.
//
// Phases measured elsewhere — the sandbox child's, which writes
// CLOCK_MONOTONIC timestamps on its spec socket, and the process's own
// start, which its C constructor stamps — come in as times ([Span],
// [FromMonotonic]).
package timings

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// A Phase is one timed phase, as --json and the MCP tools report it:
// its name, its depth under the phases that contain it (0 at the top),
// when it began in milliseconds since the process started, and how long
// it took.
type Phase struct {
	Name    string  `json:"phase"`
	Depth   int     `json:"depth"`
	StartMs float64 `json:"start_ms"`
	Ms      float64 `json:"ms"`
}

// A Recorder collects the phases of one decision: one act process's, or
// one MCP tool call's. It is safe for concurrent use.
type Recorder struct {
	origin time.Time
	mu     sync.Mutex
	spans  []span
}

type span struct {
	name       string
	parent     int // index in spans, -1 at the top
	start, end time.Time
}

// New returns a recorder whose phases are timed from origin (the process's
// start, or an MCP call's).
func New(origin time.Time) *Recorder { return &Recorder{origin: origin} }

// Origin is the time the recorder's phases are measured from.
func (r *Recorder) Origin() time.Time { return r.origin }

type ctxKey struct{}

// at is what a context carries: the recorder and the phase new ones nest
// under (-1: the top).
type at struct {
	r      *Recorder
	parent int
}

// With returns ctx carrying r: the phases started under it are r's.
func With(ctx context.Context, r *Recorder) context.Context {
	if r == nil {
		return ctx
	}
	return context.WithValue(ctx, ctxKey{}, at{r: r, parent: -1})
}

// From returns the recorder ctx carries, or nil.
func From(ctx context.Context) *Recorder {
	a, _ := ctx.Value(ctxKey{}).(at)
	return a.r
}

func nothing() {}

// Start begins the phase name under ctx's phase and returns the function
// that ends it; with no recorder in ctx it returns a function that does
// nothing. Details, if any, are added to the name after a colon (only when
// recording: a name built of parts costs nothing when off).
func Start(ctx context.Context, name string, details ...string) func() {
	a, ok := ctx.Value(ctxKey{}).(at)
	if !ok {
		return nothing
	}
	i := a.r.open(label(name, details), a.parent, time.Now())
	return func() { a.r.close(i, time.Now()) }
}

// Begin is Start that also returns a context whose phases nest under this
// one. With no recorder in ctx it returns ctx itself.
func Begin(ctx context.Context, name string, details ...string) (context.Context, func()) {
	a, ok := ctx.Value(ctxKey{}).(at)
	if !ok {
		return ctx, nothing
	}
	i := a.r.open(label(name, details), a.parent, time.Now())
	return context.WithValue(ctx, ctxKey{}, at{r: a.r, parent: i}), func() { a.r.close(i, time.Now()) }
}

func label(name string, details []string) string {
	if len(details) == 0 {
		return name
	}
	return name + ": " + strings.Join(details, " ")
}

// Span records a phase measured elsewhere, from start to end, under ctx's
// phase, and returns a context whose phases nest under it.
func Span(ctx context.Context, name string, start, end time.Time) context.Context {
	a, ok := ctx.Value(ctxKey{}).(at)
	if !ok || start.IsZero() || end.Before(start) {
		return ctx
	}
	i := a.r.open(name, a.parent, start)
	a.r.close(i, end)
	return context.WithValue(ctx, ctxKey{}, at{r: a.r, parent: i})
}

// Enabled reports whether ctx carries a recorder: whether it is worth
// collecting times that cost something to collect.
func Enabled(ctx context.Context) bool {
	_, ok := ctx.Value(ctxKey{}).(at)
	return ok
}

func (r *Recorder) open(name string, parent int, t time.Time) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.spans = append(r.spans, span{name: name, parent: parent, start: t})
	return len(r.spans) - 1
}

func (r *Recorder) close(i int, t time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.spans[i].end.IsZero() {
		r.spans[i].end = t
	}
}

// Phases returns the phases recorded so far in the order they began (a
// phase before those it contains); a phase not yet ended is timed to now.
func (r *Recorder) Phases() []Phase {
	if r == nil {
		return nil
	}
	now := time.Now()
	r.mu.Lock()
	spans := slices.Clone(r.spans)
	r.mu.Unlock()
	depth := make([]int, len(spans))
	for i, s := range spans {
		if s.parent >= 0 {
			depth[i] = depth[s.parent] + 1
		}
	}
	// The order of a depth-first walk, children by their start: a child
	// measured elsewhere may begin before a sibling recorded earlier.
	kids := make(map[int][]int, len(spans))
	for i, s := range spans {
		kids[s.parent] = append(kids[s.parent], i)
	}
	out := make([]Phase, 0, len(spans))
	var walk func(p int)
	walk = func(p int) {
		ix := kids[p]
		slices.SortStableFunc(ix, func(a, b int) int { return spans[a].start.Compare(spans[b].start) })
		for _, i := range ix {
			s := spans[i]
			end := s.end
			if end.IsZero() {
				end = now
			}
			out = append(out, Phase{Name: s.name, Depth: depth[i], StartMs: ms(s.start.Sub(r.origin)), Ms: ms(end.Sub(s.start))})
			walk(i)
		}
	}
	walk(-1)
	return out
}

// ms is d in milliseconds, to the microsecond.
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// WriteTable writes phases as the table --timings prints on standard
// error: when each began and how long it took, in milliseconds, nested
// phases indented under theirs, then the total from the process's start.
func WriteTable(w io.Writer, phases []Phase, total time.Duration) {
	var b strings.Builder
	b.WriteString("act: timings (ms; start is from the process's start)\n")
	fmt.Fprintf(&b, "%9s %9s  %s\n", "start", "ms", "phase")
	for _, p := range phases {
		fmt.Fprintf(&b, "%9.2f %9.2f  %s%s\n", p.StartMs, p.Ms, strings.Repeat("  ", p.Depth), p.Name)
	}
	fmt.Fprintf(&b, "%9s %9.2f  %s\n", "", ms(total), "total")
	io.WriteString(w, b.String())
}

// FromMonotonic converts CLOCK_MONOTONIC readings (nanoseconds, as the
// sandbox child and the process's C constructor take them) to times on
// this process's clock.
func FromMonotonic(ns ...int64) []time.Time {
	var ts unix.Timespec
	now := time.Now()
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return nil
	}
	mono := ts.Nano()
	out := make([]time.Time, len(ns))
	for i, n := range ns {
		out[i] = now.Add(time.Duration(n - mono))
	}
	return out
}

// startNs is the CLOCK_MONOTONIC time at which the process began, as the
// sandbox package's C constructor stamps it (SetProcessStart); loaded is
// this package's initialisation, the fallback in a binary without it.
var (
	startNs atomic.Int64
	loaded  = time.Now()
)

// SetProcessStart records the CLOCK_MONOTONIC time, in nanoseconds, at
// which the process began: the first act of a C constructor, before the
// Go runtime and every package's initialisation.
func SetProcessStart(ns int64) { startNs.Store(ns) }

// ProcessStart is when the process began: as SetProcessStart recorded
// it, else when this package was initialised.
func ProcessStart() time.Time {
	if ns := startNs.Load(); ns > 0 {
		if t := FromMonotonic(ns); t != nil {
			return t[0]
		}
	}
	return loaded
}
