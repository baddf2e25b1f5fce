package audit

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// appendDeferred appends ev without making it durable.
func appendDeferred(t *testing.T, l *Log, ev Event) {
	t.Helper()
	if _, err := l.AppendBatch(context.Background(), []Event{ev}, &BatchOptions{Deferred: true}); err != nil {
		t.Fatal(err)
	}
}

// copyDir copies the files of a log directory.
func copyDir(t *testing.T, from, to string) {
	t.Helper()
	if err := os.MkdirAll(to, 0o700); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDeferredPowerCut: deferred records (docs/audit.md, "Durability")
// never advance the checkpoint cache past the durable records, and a power
// cut that loses any part of them — the log cut at any byte after the last
// durable record, with the caches as the deferred appends left them —
// leaves a log that Open repairs and Verify passes, holding every durable
// record and the deferred ones whole before the cut. The next durable
// append makes the deferred ones durable, and the cache says so.
func TestDeferredPowerCut(t *testing.T) {
	dir := fill(t, 3)
	l, err := Open(dir, testOrigin)
	if err != nil {
		t.Fatal(err)
	}
	l.Now = func() time.Time { return t0.Add(time.Hour) }
	cpDurable, err := os.ReadFile(filepath.Join(dir, CheckpointFile))
	if err != nil {
		t.Fatal(err)
	}
	durable, err := os.ReadFile(filepath.Join(dir, LogFile))
	if err != nil {
		t.Fatal(err)
	}
	for i := 3; i < 6; i++ {
		appendDeferred(t, l, testEvent(i))
	}
	if cp, _ := os.ReadFile(filepath.Join(dir, CheckpointFile)); !bytes.Equal(cp, cpDurable) {
		t.Errorf("deferred appends advanced the checkpoint cache:\n%s\nwas\n%s", cp, cpDurable)
	}
	full, err := os.ReadFile(filepath.Join(dir, LogFile))
	if err != nil {
		t.Fatal(err)
	}
	// Cut at every byte near each line's ends, and every 101st between.
	var cuts []int
	for c := len(durable); c <= len(full); c++ {
		nl := bytes.LastIndexByte(full[:c], '\n')
		next := bytes.IndexByte(full[c:], '\n')
		if c-nl < 4 || (next >= 0 && next < 4) || c%101 == 0 || c == len(full) {
			cuts = append(cuts, c)
		}
	}
	base := t.TempDir()
	for i, c := range cuts {
		cut := filepath.Join(base, "cut", string(rune('a'+i%26)), time.Duration(i).String())
		copyDir(t, dir, cut)
		if err := os.Truncate(filepath.Join(cut, LogFile), int64(c)); err != nil {
			t.Fatal(err)
		}
		wantN := int64(bytes.Count(full[:c], []byte("\n")))
		cl, err := Open(cut, testOrigin)
		if err != nil {
			t.Fatalf("cut at %d: Open: %v", c, err)
		}
		cl.Close()
		r := mustVerify(t, cut, VerifyOptions{})
		if torn := c > 0 && full[c-1] != '\n'; (torn && r.Records != wantN+1) || (!torn && r.Records != wantN) {
			t.Fatalf("cut at %d: %d records, want the %d whole lines (and a repair record if one was torn)", c, r.Records, wantN)
		}
	}
	// The next durable append makes the deferred ones durable with it.
	if _, err := l.Append(context.Background(), testEvent(6)); err != nil {
		t.Fatal(err)
	}
	l.Close()
	cp, err := os.ReadFile(filepath.Join(dir, CheckpointFile))
	if err != nil || bytes.Equal(cp, cpDurable) {
		t.Fatalf("a durable append left the checkpoint cache behind: %v", err)
	}
	if r := mustVerify(t, dir, VerifyOptions{}); r.Records != 7 {
		t.Errorf("%d records, want 7", r.Records)
	}
}

// TestDeferredOpenCatchesUp: a log whose last records were deferred by a
// process that then ended has its checkpoint cache brought up to them by
// the next Open, which makes them durable first.
func TestDeferredOpenCatchesUp(t *testing.T) {
	dir := fill(t, 2)
	l, err := Open(dir, testOrigin)
	if err != nil {
		t.Fatal(err)
	}
	appendDeferred(t, l, testEvent(2))
	l.Close()
	before, _ := os.ReadFile(filepath.Join(dir, CheckpointFile))
	l, err = Open(dir, testOrigin)
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	after, _ := os.ReadFile(filepath.Join(dir, CheckpointFile))
	cp, err := CheckpointText(dir, VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(before, after) || !bytes.HasPrefix([]byte(cp), after) {
		t.Errorf("the cache was not brought up to the deferred record:\n%s\nthe log's checkpoint:\n%s", after, cp)
	}
}
