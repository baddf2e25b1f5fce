package gate

import (
	"context"
	"math/rand/v2"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/act-project/act/internal/state"
)

// TestAttemptsLog: updates append whole records; a line a crash cut short
// is ignored and cut off by the next update; a long log is rewritten with
// its latest record alone; an update creates and removes no file after
// the first.
func TestAttemptsLog(t *testing.T) {
	ctx := context.Background()
	home := state.Dir{Root: t.TempDir()}
	const id = "5d0c7a9e-3f1b-4c2d-8e4f-a0b1c2d3e4f5"
	name, err := attemptsFile(home, id)
	if err != nil {
		t.Fatal(err)
	}
	run := func(at *attempts) error { at.Runs++; return nil }
	if err := updateAttempts(ctx, home, id, run); err != nil {
		t.Fatal(err)
	}
	before, err := os.Stat(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := updateAttempts(ctx, home, id, func(at *attempts) error { at.Plans = append(at.Plans, "0123456789abcdef"); return nil }); err != nil {
		t.Fatal(err)
	}
	after, err := os.Stat(name)
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(before, after) {
		t.Error("an update replaced the attempts file; want it appended to")
	}
	b, _ := os.ReadFile(name)
	if n := strings.Count(string(b), "\n"); n != 2 {
		t.Errorf("the attempts file has %d lines, want 2:\n%s", n, b)
	}
	want := &attempts{Runs: 1, Plans: []string{"0123456789abcdef"}}
	got, err := loadAttempts(home, id)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("attempts (-want +got):\n%s", d)
	}

	// A crash in the middle of an append: the torn line does not count,
	// and the next update starts where the last whole line ends.
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"runs":9`)
	f.Close()
	if got, err := loadAttempts(home, id); err != nil || got.Runs != 1 {
		t.Fatalf("after a torn append: %+v, %v; want runs 1", got, err)
	}
	if err := updateAttempts(ctx, home, id, run); err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(name)
	if strings.Contains(string(b), `{"runs":9`) || strings.Count(string(b), "\n") != 3 {
		t.Errorf("the torn line was not cut off:\n%s", b)
	}
	if got, _ := loadAttempts(home, id); got.Runs != 2 {
		t.Errorf("runs = %d, want 2", got.Runs)
	}

	// The log is bounded: past maxAttemptsLog it is one record again.
	for i := 0; i < maxAttemptsLog/40; i++ {
		if err := updateAttempts(ctx, home, id, run); err != nil {
			t.Fatal(err)
		}
	}
	fi, _ := os.Stat(name)
	if fi.Size() > maxAttemptsLog {
		t.Errorf("the attempts file is %d bytes, more than %d", fi.Size(), maxAttemptsLog)
	}
	if got, _ := loadAttempts(home, id); got.Runs != 2+maxAttemptsLog/40 {
		t.Errorf("runs = %d after the rewrite, want %d", got.Runs, 2+maxAttemptsLog/40)
	}

	// The id's first record cut short by a crash: no update counted, and
	// the next update starts the file afresh (the id is not stuck).
	if err := os.WriteFile(name, []byte(`{"runs":1,"pla`), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := loadAttempts(home, id); err != nil || got.Runs != 0 {
		t.Errorf("a torn first record: %+v, %v; want an empty record", got, err)
	}
	if err := updateAttempts(ctx, home, id, run); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(name); string(b) != `{"runs":1}`+"\n" {
		t.Errorf("after a torn first record the file holds %q", b)
	}

	// A whole record that does not parse is refused, not read as empty.
	if err := os.WriteFile(name, []byte("{\"runs\":\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := loadAttempts(home, id); err == nil {
		t.Error("a corrupt record read without an error")
	}

	// A file of the old form (one record) reads as a log of one line.
	if err := os.WriteFile(name, []byte(`{"runs":3,"plans":["fedcba9876543210"]}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, _ := loadAttempts(home, id); got.Runs != 3 || len(got.Plans) != 1 {
		t.Errorf("old form: %+v", got)
	}
}

// TestFileIDAsRegexp: fileID and idLike accept exactly what the regular
// expressions they replace accepted (they are hand-written to spare every
// act process the expressions' compilation at start-up).
func TestFileIDAsRegexp(t *testing.T) {
	fileRE := regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)
	likeRE := regexp.MustCompile(`^[A-Za-z0-9-]+$`)
	cases := []string{"", "a", "-a", ".a", "a.b_c-d", "a/b", "a b", "5c4b3a29-1807-4f6e-9d5c-000000000001", "é", "a\x00", "A\n",
		strings.Repeat("a", 128), strings.Repeat("a", 129), "..", "a..", "_x"}
	r := rand.New(rand.NewPCG(1, 2))
	for _, alphabet := range []string{"aZ09._-/ \x00\xff", "aZ09._-", "aZ09-"} {
		for range 1000 {
			b := make([]byte, r.IntN(140))
			for i := range b {
				b[i] = alphabet[r.IntN(len(alphabet))]
			}
			cases = append(cases, string(b))
		}
	}
	for _, c := range cases {
		if got, want := fileID(c), fileRE.MatchString(c); got != want {
			t.Errorf("fileID(%q) = %v, the expression %v", c, got, want)
		}
		if got, want := idLike(c), likeRE.MatchString(c); got != want {
			t.Errorf("idLike(%q) = %v, the expression %v", c, got, want)
		}
	}
}
