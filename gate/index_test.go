package gate

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/act-project/act/internal/lifecycle"
	"github.com/act-project/act/plan"
)

// indexWorld is a world with one pending plan, one applied and one denied,
// made through the gate's API, and n more applied actions copied from the
// applied one in the state dir's own format (plan.json and the action
// record, ids replaced): what thousands of promotions leave behind,
// without making them one by one.
func indexWorld(t *testing.T, n int) (w *world, pending string) {
	t.Helper()
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		// Thousands of files made and removed: on a tmpfs, where it costs
		// the disk nothing (the test counts reads, it times nothing).
		shm, err := os.MkdirTemp("/dev/shm", "act-index-test-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(shm) })
		t.Setenv("TMPDIR", shm)
	}
	w = newWorld(t, map[string]string{"proj/a.txt": "a\n", "proj/b.txt": "b\n", "proj/c.txt": "c\n"})
	applied := w.plan(spec{id: testID(1), body: writeBody("a.txt", "A\n", false)})
	w.mustApply(applied.Plan.ID)
	waiting := w.plan(spec{id: testID(2), body: deleteBody("b.txt")})
	if _, err := w.apply(waiting.Plan.ID, Approval{}); err == nil {
		t.Fatal("a delete was applied without a person")
	}
	w.wantState(waiting.Plan.ID, lifecycle.Pending)
	denied := w.plan(spec{id: testID(3), body: deleteBody("c.txt")})
	if err := w.deny(denied.Plan.ID); err != nil {
		t.Fatal(err)
	}

	home := w.g.Home
	planJSON, err := os.ReadFile(home.PlanRecord(applied.Plan.ID))
	if err != nil {
		t.Fatal(err)
	}
	actionJSON, err := os.ReadFile(filepath.Join(home.Actions(), applied.Plan.ActionID+".json"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		id, aid := fmt.Sprintf("%016x", 0xa000000000000000+uint64(i)), testID(1000+i)
		r := strings.NewReplacer(applied.Plan.ID, id, applied.Plan.ActionID, aid)
		// The plan's directory as a promotion leaves it: its record and
		// its emptied layer.
		if err := os.MkdirAll(filepath.Join(home.Upper(id), "proj"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(home.PlanRecord(id), []byte(r.Replace(string(planJSON))), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(home.Actions(), aid+".json"), []byte(r.Replace(string(actionJSON))), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return w, waiting.Plan.ID
}

func testID(n int) string { return fmt.Sprintf("5c4b3a29-1807-4f6e-9d5c-%012x", n) }

// countLoads counts the plans the gate reads until the test ends.
func countLoads(t *testing.T) *int {
	n := new(int)
	orig := loadPlan
	loadPlan = func(root, id string) (*plan.Plan, error) {
		*n++
		return orig(root, id)
	}
	t.Cleanup(func() { loadPlan = orig })
	return n
}

// TestPendingScale: with 2,000 applied actions, act pending reads every
// plan once (the index is built), then only the plans not done (here the
// pending one): O(pending), not O(actions). What it lists is the same
// either way, and act history still reads them all.
func TestPendingScale(t *testing.T) {
	const n = 2000
	w, pending := indexWorld(t, n)
	os.Remove(w.g.Home.PlansIndex()) // made by the apply's queue check: built afresh here
	loads := countLoads(t)
	for round, want := range []int{n + 3, 1, 1} {
		*loads = 0
		got, err := w.g.Pending()
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0].Plan.ID != pending || got[0].State != lifecycle.Pending {
			t.Fatalf("round %d: Pending() = %d plans, want %s alone", round, len(got), pending)
		}
		if *loads != want {
			t.Errorf("round %d: Pending() read %d plans, want %d", round, *loads, want)
		}
	}
	*loads = 0
	all, err := w.g.Plans()
	if err != nil || len(all) != n+3 || *loads != n+3 {
		t.Errorf("Plans() = %d plans, %v, reading %d; want all %d read", len(all), err, *loads, n+3)
	}
	// A plan made now measures the layers of the plans not done, and
	// reads none of the done ones: 2,000 emptied layers are not walked.
	measured := 0
	origSize := layerSize
	layerSize = func(dir string, limit int64) (int64, bool, error) {
		measured++
		return origSize(dir, limit)
	}
	t.Cleanup(func() { layerSize = origSize })
	*loads = 0
	w.plan(spec{id: testID(4), body: writeBody("a.txt", "AA\n", false)})
	if measured > 1 || *loads > 3 {
		t.Errorf("a plan at %d applied actions measured %d layers and read %d plans; want the pending plan's layer, and its own plan and the pending one read", n, measured, *loads)
	}
	// A plan applied since was listed by its promotion: not read again;
	// the plan just made, not done, is read each time.
	w.mustApply(pending)
	for round, want := range []int{1, 1} {
		*loads = 0
		if got, _ := w.g.Pending(); len(got) != 0 || *loads != want {
			t.Errorf("after the apply, round %d: Pending() = %d plans, reading %d; want none, reading %d", round, len(got), *loads, want)
		}
	}
}

// TestIndexHostile: the index is the agent's to write. Lines of plans
// that are not saved, of states that are not done, junk, an index that is
// a FIFO or a link to one: none shows a plan or hides a saved one that is
// not listed as done, none blocks act; a forged "done" line hides a
// waiting plan from act pending only, and the plan stays what it is for
// every decision, which loads it by id.
func TestIndexHostile(t *testing.T) {
	w, pending := indexWorld(t, 20)
	home := w.g.Home
	wantPending := func(what string, want ...string) {
		t.Helper()
		got, err := w.g.Pending()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		var ids []string
		for _, e := range got {
			ids = append(ids, e.Plan.ID)
		}
		if !slices.Equal(ids, want) {
			t.Errorf("%s: pending %v, want %v", what, ids, want)
		}
	}
	forge := func(text string) {
		t.Helper()
		os.Remove(home.PlansIndex())
		if err := os.WriteFile(home.PlansIndex(), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// A plan that is not there, listed as waiting, applied, or anything.
	ghost := "ffffffffffffffff"
	forge(ghost + " pending\n" + ghost + " applied\n" + pending + " pending\n" + pending + " planned\n../../etc applied\nnot a line\n\x00\xff\n" + strings.Repeat("x", 1<<16))
	wantPending("junk and ghosts", pending)
	if _, err := w.g.Load(ghost); err == nil {
		t.Errorf("a plan only the index names loads")
	}
	// Not a regular file: a FIFO (which would block a reader that waited
	// for a writer), or a symlink to one.
	for _, kind := range []string{"fifo", "symlink"} {
		os.Remove(home.PlansIndex())
		fifo := filepath.Join(t.TempDir(), "fifo")
		if err := mkfifo(fifo); err != nil {
			t.Fatal(err)
		}
		target := home.PlansIndex()
		if kind == "symlink" {
			if err := os.Symlink(fifo, target); err != nil {
				t.Fatal(err)
			}
		} else if err := mkfifo(target); err != nil {
			t.Fatal(err)
		}
		wantPending(kind, pending)
		if fi, err := os.Lstat(target); err != nil || fi.Mode()&os.ModeType == 0 {
			t.Errorf("%s: the index was replaced or written through (%v, %v)", kind, fi, err)
		}
	}
	// A forged "done" line hides the plan from act pending only.
	forge(pending + " applied\n")
	wantPending("the pending plan listed as applied")
	w.wantState(pending, lifecycle.Pending)
	before := w.file("proj/b.txt")
	if _, err := w.apply(pending, Approval{}); err == nil {
		t.Error("a plan the index lists as applied was applied without a person")
	}
	w.wantState(pending, lifecycle.Pending)
	w.wantFile("proj/b.txt", before)
	// Gone, or grown far past the plans kept: rebuilt.
	os.Remove(home.PlansIndex())
	wantPending("no index", pending)
	forge(strings.Repeat(ghost+" applied\n", 10_000))
	wantPending("a long index", pending)
	if b, _ := os.ReadFile(home.PlansIndex()); bytes.Count(b, []byte("\n")) > 30 {
		t.Errorf("an index of 10,000 lines for 22 plans was not rewritten: %d lines", bytes.Count(b, []byte("\n")))
	}
}

func mkfifo(path string) error { return syscall.Mkfifo(path, 0o600) }
