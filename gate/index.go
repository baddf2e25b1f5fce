package gate

import (
	"bytes"
	"io"
	"os"
	"strings"
	"syscall"

	"github.com/act-project/act/internal/lifecycle"
	"github.com/act-project/act/plan"
)

// The plans index (docs/state.md, "The plans index") lets act pending
// read only the plans that may still wait for a person. It lists, one a
// line, "<plan id> <state>", the saved plans found done: applied, rolled
// back or denied, states no plan leaves. A pending scan lists plans/ (one
// directory read), skips the ids the index lists and reads every other
// plan itself, adding those it finds done; so a plan is read once after
// it is done, and an index that is missing, cut short or stale costs
// reads, never a plan.
//
// The index is the agent's to write, like everything in the state dir.
// Nothing is shown through it: every plan act pending lists is read and
// its state derived from plan.json and the action record, as without an
// index. Nothing is decided through it: apply, deny and show load the plan
// they are given by id, and check it whole. What a forged index can do is
// list a waiting plan as done, so that act pending leaves it out (and the
// policy's max_pending counts one fewer) — what the agent can do as well
// by rewriting that plan's plan.json.

// indexMax bounds what is read of the index: far more than the lines of
// the plans a state dir keeps.
const indexMax = 16 << 20

// done reports whether a plan in state s can never wait again.
func done(s lifecycle.State) bool {
	return s == lifecycle.Applied || s == lifecycle.RolledBack || s == lifecycle.Denied
}

// readIndex returns the ids the index lists as done, with their states,
// and how many lines it holds. A line that is not a plan id and a done
// state is ignored.
func (g *Gate) readIndex() (map[string]lifecycle.State, int) {
	f, err := os.OpenFile(g.Home.PlansIndex(), os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, 0
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, 0
	}
	b, err := io.ReadAll(io.LimitReader(f, indexMax))
	if err != nil {
		return nil, 0
	}
	ids := map[string]lifecycle.State{}
	n := 0
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			break // the tail of an append cut short
		}
		id, st, ok := strings.Cut(string(b[:i]), " ")
		b = b[i+1:]
		n++
		if ok && plan.IsID(id) && done(lifecycle.State(st)) {
			ids[id] = lifecycle.State(st)
		}
	}
	return ids, n
}

// noteDone adds to the index the plans found done, best effort: a write
// that fails or races with another act costs a later scan a read. An index
// holding many lines of plans no longer saved (removed by act gc) is
// rewritten with those still listed.
func (g *Gate) noteDone(found []*Entry, indexed map[string]lifecycle.State, lines int, saved []string) {
	if len(found) == 0 && lines <= 2*len(saved)+64 {
		return
	}
	var b strings.Builder
	for _, e := range found {
		b.WriteString(e.Plan.ID + " " + string(e.State) + "\n")
	}
	if lines > 2*len(saved)+64 {
		// Compact: what is still saved and listed, and what was found.
		var all strings.Builder
		for _, id := range saved {
			if st, ok := indexed[id]; ok {
				all.WriteString(id + " " + string(st) + "\n")
			}
		}
		all.WriteString(b.String())
		g.rewriteIndex(all.String())
		return
	}
	f, err := os.OpenFile(g.Home.PlansIndex(), os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return
	}
	// One write of whole lines (O_APPEND): concurrent appends do not
	// interleave within one. Not synced: a cache.
	_, _ = f.WriteString(b.String())
}

// indexDone adds e, just done, to the index (transition: a promotion, a
// rollback, a denial).
func (g *Gate) indexDone(e *Entry) {
	if done(e.State) {
		g.noteDone([]*Entry{e}, nil, 0, nil)
	}
}

// rewriteIndex replaces the index with text (a new file renamed over it).
func (g *Gate) rewriteIndex(text string) {
	tmp, err := os.CreateTemp(g.Home.Root, ".plans.index-*")
	if err != nil {
		return
	}
	_, werr := tmp.WriteString(text)
	cerr := tmp.Close()
	if werr != nil || cerr != nil || os.Rename(tmp.Name(), g.Home.PlansIndex()) != nil {
		os.Remove(tmp.Name())
	}
}

// notDone lists the saved plans the plans index does not list as done:
// the plans that may still be applied, and those done but not yet listed
// (each added by the next pending scan, or when layersHeld reads it).
func (g *Gate) notDone() ([]string, error) {
	ids, err := plan.List(g.Home.Root)
	if err != nil {
		return nil, err
	}
	indexed, _ := g.readIndex()
	if len(indexed) == 0 {
		return ids, nil
	}
	out := ids[:0:0]
	for _, id := range ids {
		if _, ok := indexed[id]; !ok {
			out = append(out, id)
		}
	}
	return out, nil
}
