package isolate

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/act-project/act/internal/timings"
)

// The set-up's phases inside the sandbox, for --timings (docs/timings.md):
// where the spec asks for them ("timings", sent only when ctx carries a
// recorder), init and the command's process each write one MSG_TIMES
// line before the command runs or its status is reported
// (nsexec_times.c):
//
//	T<who> <start> <phase> <ns> <phase> <ns> …
//
// who is "init" or "command", start the CLOCK_MONOTONIC time at which the
// sandbox's first process began (its constructor), and each pair a phase
// and the time it ended. init's first phase began at start, the command's
// at init's "fork". A phase named "a/b" is part of a phase "a" that spans
// its consecutive parts. The lines are hostile input like any other from
// the sandbox: one that does not parse is ignored, and they only ever
// become rows of the table.

// marksSeen, in tests, is told how many MSG_TIMES lines a run sent.
var marksSeen func(n int)

// maxMarkLines bounds the MSG_TIMES lines read from one run.
const maxMarkLines = 2

// markLine is one parsed MSG_TIMES line.
type markLine struct {
	who   string
	start int64
	names []string
	ns    []int64
}

func parseMarks(text string) (markLine, bool) {
	f := strings.Fields(text)
	if len(f) < 2 || len(f)%2 != 0 || len(f) > 2+2*64 {
		return markLine{}, false
	}
	m := markLine{who: f[0]}
	var err error
	if m.start, err = strconv.ParseInt(f[1], 10, 64); err != nil {
		return markLine{}, false
	}
	last := m.start
	for i := 2; i < len(f); i += 2 {
		n, err := strconv.ParseInt(f[i+1], 10, 64)
		if err != nil || n < last || len(f[i]) > 64 {
			return markLine{}, false
		}
		last = n
		m.names = append(m.names, f[i])
		m.ns = append(m.ns, n)
	}
	return m, true
}

// recordMarks adds the phases of a run to ctx's recorder: the parent's
// start of the sandbox's first process (launched) to its constructor, then
// init's and the command's phases from lines.
func recordMarks(ctx context.Context, launched time.Time, lines []markLine) {
	if !timings.Enabled(ctx) {
		return
	}
	var init, command *markLine
	for i := range lines {
		switch lines[i].who {
		case "init":
			init = &lines[i]
		case "command":
			command = &lines[i]
		}
	}
	if init == nil {
		return
	}
	all := append([]int64{init.start}, init.ns...)
	if command != nil {
		all = append(all, command.ns...)
	}
	at := timings.FromMonotonic(all...)
	if at == nil {
		return
	}
	if !launched.IsZero() {
		timings.Span(ctx, "sandbox: exec of its first process", launched, at[0])
	}
	var runCtx context.Context
	sequence(ctx, "sandbox", init.names, at[0], at[1:len(init.ns)+1], func(name string, c context.Context) {
		if name == "run" {
			runCtx = c
		}
	})
	if command == nil || runCtx == nil {
		return
	}
	var fork time.Time
	for i, n := range init.names {
		if n == "fork" {
			fork = at[1+i]
		}
	}
	sequence(runCtx, "", command.names, fork, at[len(init.ns)+1:], nil)
}

// sequence records consecutive phases: names[i] ended at ends[i] and began
// where the one before it ended (the first at start). Consecutive phases
// "a/b", "a/c" are parts of a phase "a". each, if not nil, is given each
// phase's name and the context under it.
func sequence(ctx context.Context, prefix string, names []string, start time.Time, ends []time.Time, each func(string, context.Context)) {
	label := func(n string) string {
		if prefix == "" {
			return n
		}
		return prefix + ": " + n
	}
	from := start
	for i := 0; i < len(names); {
		group, _, nested := strings.Cut(names[i], "/")
		if !nested {
			c := timings.Span(ctx, label(names[i]), from, ends[i])
			if each != nil {
				each(names[i], c)
			}
			from = ends[i]
			i++
			continue
		}
		j := i
		for j < len(names) && strings.HasPrefix(names[j], group+"/") {
			j++
		}
		gc := timings.Span(ctx, label(group), from, ends[j-1])
		for k := i; k < j; k++ {
			timings.Span(gc, strings.TrimPrefix(names[k], group+"/"), from, ends[k])
			from = ends[k]
		}
		i = j
	}
}
