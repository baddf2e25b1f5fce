package audit

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// lookupLog makes a log of n records of a few actions and plans, some
// deferred, in a new directory.
func lookupLog(t *testing.T, n int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "audit")
	l, err := Open(dir, testOrigin)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	i := 0
	l.Now = func() time.Time { i++; return t0.Add(time.Duration(i) * time.Minute) }
	for j := range n {
		ev := testEvent(j)
		ev.ActionID, ev.PlanID = fmt.Sprintf("a-%d", j%7), fmt.Sprintf("p-%d", j%5)
		if j%11 == 0 {
			ev.PlanID = ""
		}
		if _, err := l.AppendBatch(context.Background(), []Event{ev}, &BatchOptions{Deferred: j%2 == 1}); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func equalFound(t *testing.T, what string, dir, action, plan string) []Found {
	t.Helper()
	want, err := Find(dir, action, plan)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Lookup(dir, action, plan, VerifyOptions{})
	if err != nil {
		t.Fatalf("%s: Lookup(%q, %q): %v", what, action, plan, err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("%s: Lookup(%q, %q) = %v, Find %v", what, action, plan, got, want)
	}
	return got
}

// TestLookupAsFind: Lookup finds what Find finds, with no index, with the
// index it made, after more appends (the index brought up to the end), and
// after a prune (another log file: rebuilt).
func TestLookupAsFind(t *testing.T) {
	dir := lookupLog(t, 60)
	ids := [][2]string{{"a-3", ""}, {"", "p-2"}, {"a-1", "p-4"}, {"a-9", ""}, {"", "p-9"}}
	for _, id := range ids {
		equalFound(t, "first", dir, id[0], id[1])
	}
	if b, err := os.ReadFile(filepath.Join(dir, IDsFile)); err != nil || strings.Count(string(b), "\n") != 61 {
		t.Fatalf("the index: %v, %d lines", err, strings.Count(string(b), "\n"))
	}
	l, err := Open(dir, testOrigin)
	if err != nil {
		t.Fatal(err)
	}
	for j := 60; j < 70; j++ {
		ev := testEvent(j)
		ev.ActionID, ev.PlanID = "a-3", "p-2"
		if _, err := l.Append(context.Background(), ev); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range ids {
		equalFound(t, "after appends", dir, id[0], id[1])
	}
	if _, err := l.PruneBefore(context.Background(), t0.Add(20*time.Minute)); err != nil {
		t.Fatal(err)
	}
	l.Close()
	for _, id := range ids {
		equalFound(t, "after a prune", dir, id[0], id[1])
	}
}

// TestLookupIndexHostile: the index is in the state dir. Lines whose
// offsets or ids were changed, gaps, another log's header, junk, a FIFO:
// Lookup never returns a record that is not the id's (each is verified),
// and what does not fit the log is rebuilt. Ids changed in place can
// leave a record out: the one thing a forged index can do.
func TestLookupIndexHostile(t *testing.T) {
	dir := lookupLog(t, 30)
	name := filepath.Join(dir, IDsFile)
	equalFound(t, "clean", dir, "a-3", "")
	good, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(good), "\n")
	forge := func(what string, text string) {
		t.Helper()
		os.Remove(name)
		if err := os.WriteFile(name, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		equalFound(t, what, dir, "a-3", "")
		equalFound(t, what, dir, "", "p-1")
	}
	// Record 4 (a-4) claimed to be a-3's: verified, so not returned.
	swapped := slices.Clone(lines)
	swapped[5] = strings.Replace(swapped[5], " a-4 ", " a-3 ", 1)
	forge("a record claimed for another id", strings.Join(swapped, ""))
	// Offsets moved: the line at the offset is not the record.
	moved := slices.Clone(lines)
	f := strings.Fields(moved[4])
	moved[4] = fmt.Sprintf("%s %s %s %s %s %s\n", f[0], f[1], "17", f[3], f[4], f[5])
	forge("an offset moved", strings.Join(moved, ""))
	forge("a line left out", strings.Join(append(slices.Clone(lines[:3]), lines[4:]...), ""))
	if b, _ := os.ReadFile(name); string(b) != string(good) {
		t.Errorf("an index with a gap was not written anew:\n%s", b)
	}
	forge("another log's header", strings.Replace(string(good), "act audit ids 1 ", "act audit ids 1 9", 1))
	forge("junk", "\x00\xff junk\n"+strings.Repeat("x", 1<<16))
	os.Remove(name)
	if err := mkfifoAt(name); err != nil {
		t.Fatal(err)
	}
	equalFound(t, "a FIFO", dir, "a-3", "")
	// Ids changed in place: the record of a-3 at seq 3 claimed for a-6.
	hidden := slices.Clone(lines)
	hidden[4] = strings.Replace(hidden[4], " a-3 ", " a-6 ", 1)
	os.Remove(name)
	os.WriteFile(name, []byte(strings.Join(hidden, "")), 0o600)
	got, err := Lookup(dir, "a-3", "", VerifyOptions{})
	want, _ := Find(dir, "a-3", "")
	if err != nil || len(got) != len(want)-1 || slices.ContainsFunc(got, func(f Found) bool { return f.Seq == 3 }) {
		t.Errorf("ids changed in place: Lookup = %v, %v; want Find's %v without record 3", got, err, want)
	}
}

// TestLookupDamagedLog: where a record Lookup would return is damaged, it
// answers as Find does, with Find's error; damage elsewhere is act audit
// verify's to find, and Lookup returns the records it verified.
func TestLookupDamagedLog(t *testing.T) {
	dir := lookupLog(t, 10)
	equalFound(t, "clean", dir, "a-3", "")
	lines := readLines(t, dir)
	damage := func(i int) {
		ls := readLines(t, dir)
		ls[i] = append([]byte(nil), ls[i]...)
		ls[i][len(ls[i])/2] ^= 1
		writeLines(t, dir, ls)
	}
	damage(5) // a-5's record
	got, err := Lookup(dir, "a-3", "", VerifyOptions{})
	if err != nil || len(got) != 1 || got[0].Seq != 3 {
		t.Errorf("damage elsewhere: Lookup = %v, %v; want record 3", got, err)
	}
	writeLines(t, dir, lines)
	damage(3) // a-3's own
	_, ferr := Find(dir, "a-3", "")
	_, lerr := Lookup(dir, "a-3", "", VerifyOptions{})
	if ferr == nil || lerr == nil || ferr.Error() != lerr.Error() {
		t.Errorf("its own record damaged: Find %v, Lookup %v; want Find's error", ferr, lerr)
	}
}

func mkfifoAt(path string) error { return syscall.Mkfifo(path, 0o600) }
