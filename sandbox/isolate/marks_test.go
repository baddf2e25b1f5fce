package isolate

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/act-project/act/internal/timings"
)

// phaseNames lists the phases of r as "name" indented by depth.
func phaseNames(r *timings.Recorder) []string {
	var out []string
	for _, p := range r.Phases() {
		out = append(out, strings.Repeat(" ", p.Depth)+p.Name)
	}
	return out
}

// TestTimingsMarks: with a recorder in the context, a run reports the
// set-up's phases inside the sandbox (docs/timings.md) — the namespaces,
// each part of the mounts, the command's confinement under the run, the
// copy-out with a disk cap — on the parent's clock, each within the run.
func TestTimingsMarks(t *testing.T) {
	requireIsolation(t)
	for _, disk := range []int64{0, 1} {
		t.Run(map[int64]string{0: "layers-in-place", 1: "disk-cap"}[disk], func(t *testing.T) {
			r := timings.New(time.Now())
			ctx := timings.With(context.Background(), r)
			sc := newScope(t, t.TempDir(), map[string]string{"a": "1"})
			before := time.Now()
			res, err := Run(ctx, Spec{Argv: []string{"sh", "-c", "echo 2 > a"}, Env: pathEnv, Workdir: sc.Path, Scopes: []Scope{sc}, Limits: Limits{WallMs: 20_000, DiskMB: disk}})
			if err != nil || res.ExitCode != 0 {
				t.Fatalf("Run: %v %+v", err, res)
			}
			after := time.Now()
			names := phaseNames(r)
			want := []string{"sandbox: exec of its first process", "sandbox: namespaces", "sandbox: mounts", " overlays", " read-only",
				"sandbox: run", " landlock", " seccomp", "sandbox: the run, seen from the parent"}
			if disk > 0 {
				want = append(want, "sandbox: copy-out")
			}
			for _, w := range want {
				if !slices.Contains(names, w) {
					t.Errorf("no phase %q in %q", w, names)
				}
			}
			// The command's process shares init's memory until it execs
			// (nsexec_init.c, spawn_command): its phases are its own, sent
			// once, never again among init's.
			for _, w := range []string{" limits", " privileges", " landlock", " seccomp"} {
				if n := count(names, w); n != 1 {
					t.Errorf("phase %q %d times in %q, want once", w, n, names)
				}
			}
			for _, p := range r.Phases() {
				start := r.Origin().Add(time.Duration(p.StartMs * float64(time.Millisecond)))
				if p.Ms < 0 || start.Before(before.Add(-time.Millisecond)) || start.After(after) {
					t.Errorf("phase %q at %v ms for %v ms: outside the run", p.Name, p.StartMs, p.Ms)
				}
			}
		})
	}
}

// TestTimingsOff: without a recorder the sandbox is not asked for its
// phases, and sends none.
func TestTimingsOff(t *testing.T) {
	requireIsolation(t)
	var seen atomic.Int64
	marksSeen = func(n int) { seen.Add(int64(n) + 100) }
	t.Cleanup(func() { marksSeen = nil })
	sh(t, "true", nil, Limits{})
	if got := seen.Load(); got != 100 {
		t.Fatalf("a run without a recorder sent %d MSG_TIMES lines (collect ran %v)", got-100, got >= 100)
	}
	r := timings.New(time.Now())
	if _, err := Run(timings.With(context.Background(), r), Spec{Argv: []string{"true"}, Env: pathEnv, Limits: Limits{WallMs: 20_000}}); err != nil {
		t.Fatal(err)
	}
	if got := seen.Load(); got != 100+102 {
		t.Errorf("a run with a recorder sent %d MSG_TIMES lines, want 2 (init's and the command's)", got-200)
	}
}

// TestParseMarksHostile: a MSG_TIMES line comes from the sandbox, where a
// command may have written anything on the socket it inherited before
// its exec: what does not parse, or goes back in time, is dropped whole.
func TestParseMarksHostile(t *testing.T) {
	for _, bad := range []string{
		"", "init", "init x", "init 5 mounts", "init 5 mounts x", "init 5 mounts 4",
		"init 5 a 6 b 5", "init -1 a -2",
		"init 1 " + strings.Repeat("a 2 ", 65),
		"init 1 " + strings.Repeat("a", 65) + " 2",
	} {
		if m, ok := parseMarks(bad); ok {
			t.Errorf("parseMarks(%q) = %+v, accepted", bad, m)
		}
	}
	m, ok := parseMarks("command 10 limits 11 landlock 13")
	if !ok || m.who != "command" || m.start != 10 || !slices.Equal(m.names, []string{"limits", "landlock"}) || !slices.Equal(m.ns, []int64{11, 13}) {
		t.Errorf("parseMarks = %+v, %v", m, ok)
	}
}

// count is how many times s holds v.
func count(s []string, v string) int {
	n := 0
	for _, e := range s {
		if e == v {
			n++
		}
	}
	return n
}
