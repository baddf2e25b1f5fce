package audit

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/secure-systems-lab/go-securesystemslib/dsse"
)

// alphabet makes strings that exercise every escape of encoding/json:
// every ASCII control, HTML characters, U+2028/9, invalid UTF-8.
func randomStrings(seed uint64) func() string {
	alphabet := []string{"a", "\"", "\\", "<", ">", "&", "\u2028", "\u2029", "é", "€", "😀", "\xff", "\xe2\x82", "\x7f", "/", " ", "—"}
	for c := 0; c < 0x20; c++ {
		alphabet = append(alphabet, string(rune(c)))
	}
	r := rand.New(rand.NewPCG(seed, 2))
	return func() string {
		var b strings.Builder
		for range r.IntN(12) {
			b.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		return b.String()
	}
}

// marshalStatement must write exactly json.Marshal's bytes: records
// written before it and after it are the same format, and a reader's
// re-encoding gives the signed payload back.
func TestMarshalStatement(t *testing.T) {
	check := func(st *Statement) {
		t.Helper()
		want, werr := json.Marshal(st)
		got, gerr := marshalStatement(st)
		if (werr != nil) != (gerr != nil) {
			t.Fatalf("errors differ: json.Marshal %v, marshalStatement %v", werr, gerr)
		}
		if werr == nil && !bytes.Equal(got, want) {
			t.Fatalf("marshalStatement differs from json.Marshal:\n got %s\nwant %s", got, want)
		}
	}
	stmt := func(ev Event) *Statement {
		return &Statement{Type: StatementType, PredicateType: PredicateType,
			Subject:   []Subject{{Name: ev.ActionID, Digest: map[string]string{"sha256": strings.Repeat("ab", 32)}}},
			Predicate: Predicate{Version: PredicateVersion, Seq: 7, Prev: strings.Repeat("01", 32), Time: t0, Event: ev}}
	}
	check(&Statement{})
	check(stmt(Event{Name: EventGC}))
	check(stmt(testEvent(3)))
	full := testEvent(4)
	full.Approval.Principal, full.Approval.KeyFingerprint = "p", "k"
	full.Changes.Files = append(full.Changes.Files, FileChange{Path: "/a", Kind: "deleted", SHA256Before: "x"})
	full.Resources.DiskBytes, full.Resources.Processes = 9, 2
	full.Pruned = &PruneInfo{Count: 3, Through: 2, Before: t0}
	full.Removed = &GCRemoved{Plans: []string{"a", "<b>"}, Backups: []string{"c"}, Kept: []string{"d"}}
	full.Started = time.Date(2026, 1, 2, 3, 4, 5, 6, time.FixedZone("x", 3600))
	check(stmt(full))
	empty := stmt(Event{Name: EventApplied, Rules: []string{}, Risk: &Risk{}, Policy: &Policy{Source: "s"},
		Approval: &Approval{}, Changes: &Changes{Files: []FileChange{}}, Resources: &Resources{}})
	empty.Subject = []Subject{}
	check(empty)
	for _, r := range []*GCRemoved{{}, {Kept: []string{"k"}}, {Backups: []string{"b"}, Kept: []string{}}, {Plans: []string{"p"}}} {
		check(stmt(Event{Name: EventGC, Removed: r}))
	}
	two := stmt(Event{Name: EventPlanned, Risk: &Risk{Declared: "d"}, Policy: &Policy{Mode: "m"}})
	two.Subject = append(two.Subject, Subject{Name: "n", Digest: map[string]string{"z": "1", "a": "2", "m": ""}}, Subject{})
	check(two)
	bad := stmt(Event{Name: EventApplied})
	bad.Predicate.Time = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	check(bad)

	rs := randomStrings(1)
	r := rand.New(rand.NewPCG(1, 3))
	for range 2000 {
		ev := Event{Name: rs(), ActionID: rs(), Reason: rs(), Rules: []string{rs(), rs()}, Output: rs(),
			Risk: &Risk{Assessed: rs()}, Approval: &Approval{Via: rs(), User: rs()}, Host: rs(), LogLevel: rs(),
			Changes: &Changes{Files: []FileChange{{Path: rs(), Kind: rs(), Mode: rs()}}}, ExitCode: r.IntN(300) - 150}
		st := stmt(ev)
		st.Subject[0].Digest[rs()] = rs()
		st.Predicate.Prev = rs()
		check(st)
	}
}

// appendLine must write exactly what json.Encoder with SetEscapeHTML(false)
// writes: the canonical form of every line already on disk.
func TestAppendLine(t *testing.T) {
	check := func(l *line) {
		t.Helper()
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		werr := enc.Encode(l)
		got, gerr := appendLine(nil, l)
		if (werr != nil) != (gerr != nil) {
			t.Fatalf("errors differ: json %v, appendLine %v", werr, gerr)
		}
		if werr == nil && !bytes.Equal(got, buf.Bytes()) {
			t.Fatalf("appendLine differs from json.Encoder:\n got %s\nwant %s", got, buf.Bytes())
		}
	}
	check(&line{})
	check(&line{Signatures: []dsse.Signature{}})
	check(&line{Pruned: &stub{Seq: 3, Time: time.Date(2026, 1, 2, 3, 4, 5, 6, time.FixedZone("x", -7200))}})
	check(&line{Pruned: &stub{Time: time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC)}})
	for _, ln := range readLines(t, fill(t, 3)) {
		l, err := decodeLine(bytes.TrimSuffix(ln, []byte("\n")))
		if err != nil {
			t.Fatal(err)
		}
		check(l)
	}
	rs := randomStrings(2)
	for i := range 2000 {
		l := &line{PayloadType: rs(), Payload: rs(), Checkpoint: rs()}
		if i%2 == 0 {
			l.Signatures = []dsse.Signature{{KeyID: rs(), Sig: rs()}, {KeyID: rs()}}
		}
		if i%3 == 0 {
			l.Pruned = &stub{Seq: uint64(i), Leaf: rs(), Line: rs(), Time: t0}
		}
		check(l)
	}
}
