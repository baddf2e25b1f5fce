package audit_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"filippo.io/torchwood"
	"golang.org/x/mod/sumdb/note"

	"github.com/act-project/act/audit"
	"github.com/act-project/act/internal/witnesstest"
)

const witnessOrigin = "act.test/witnessed/audit"

// appendAt appends n records to the log in dir, stamped from at on, one
// minute apart; tag makes their content differ from another call's.
func appendAt(t *testing.T, dir string, n int, at time.Time, tag string) {
	t.Helper()
	l, err := audit.Open(dir, witnessOrigin)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	l.Now = func() time.Time { at = at.Add(time.Minute); return at }
	for i := 0; i < n; i++ {
		ev := audit.Event{Name: audit.EventApplied, ActionID: fmt.Sprintf("%s-%d", tag, i), Status: "applied",
			DescriptorSHA256: strings.Repeat("cd", 32), LogLevel: audit.LevelSummary}
		if _, err := l.Append(context.Background(), ev); err != nil {
			t.Fatal(err)
		}
	}
}

// rewrite rewrites the log in dir with its own key, as an agent that can
// read the key could: it keeps the first keep records and appends add
// others. The result verifies on its own.
func rewrite(t *testing.T, dir string, keep, add int, at time.Time) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, audit.LogFile))
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(b, []byte("\n"))
	if err := os.WriteFile(filepath.Join(dir, audit.LogFile), bytes.Join(lines[:keep], nil), 0o600); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, audit.CheckpointFile))
	os.Remove(filepath.Join(dir, audit.TreeFile))
	appendAt(t, dir, add, at, "forged")
	if _, err := audit.Verify(dir, audit.VerifyOptions{}); err != nil {
		t.Fatalf("the rewritten log does not verify on its own: %v", err)
	}
}

// noteKey is the log's note verifier key, as act audit pubkey --note
// prints it: what a witness is told to trust.
func noteKey(t *testing.T, dir string) string {
	t.Helper()
	_, k, err := audit.Keys(dir)
	if err != nil || k == "" {
		t.Fatalf("note key: %q %v", k, err)
	}
	return k
}

func witnessOf(w *witnesstest.Witness, name string) audit.Witness {
	return audit.Witness{Name: name, Key: w.VKey, URL: w.URL}
}

// TestCosignatureVerifier: act's verifier of cosignature/v1 accepts what
// torchwood's CosignatureSigner (the one litewitness signs with) makes,
// refuses another key's, and refuses key types it does not verify.
func TestCosignatureVerifier(t *testing.T) {
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	s, err := torchwood.NewCosignatureSigner("witness.example/w1", priv)
	if err != nil {
		t.Fatal(err)
	}
	v, err := audit.NewCosignatureVerifier(s.Verifier().String())
	if err != nil {
		t.Fatal(err)
	}
	if v.Name() != "witness.example/w1" || v.KeyHash() != s.KeyHash() {
		t.Fatalf("verifier %s %08x, signer %08x", v.Name(), v.KeyHash(), s.KeyHash())
	}
	body := witnessOrigin + "\n3\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\n"
	signed, err := note.Sign(&note.Note{Text: body}, s)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := note.Open(signed, note.VerifierList(v)); err != nil {
		t.Fatalf("a cosignature by the key does not verify: %v", err)
	}
	_, other, _ := ed25519.GenerateKey(rand.Reader)
	s2, _ := torchwood.NewCosignatureSigner("witness.example/w1", other)
	signed2, _ := note.Sign(&note.Note{Text: body}, s2)
	if _, err := note.Open(signed2, note.VerifierList(v)); err == nil {
		t.Fatal("a cosignature by another key verified")
	}
	// The same signature over another checkpoint fails.
	forged := bytes.Replace(signed, []byte("\n3\n"), []byte("\n4\n"), 1)
	if _, err := note.Open(forged, note.VerifierList(v)); err == nil {
		t.Fatal("a cosignature verified over another checkpoint")
	}
	edKey, _ := note.NewEd25519VerifierKey("witness.example/w1", priv.Public().(ed25519.PublicKey))
	for _, bad := range []string{"", "w1", "w1+zzzzzzzz+AAAA", edKey, strings.Replace(s.Verifier().String(), "witness.example/w1", "witness.example/w2", 1)} {
		if _, err := audit.NewCosignatureVerifier(bad); err == nil {
			t.Errorf("NewCosignatureVerifier(%q) accepted it", bad)
		}
	}
}

// TestWitnessLitewitness runs act's witness client against two real
// litewitness instances: both cosign, verify counts the quorum, a later
// checkpoint is cosigned from the size each cosigned before (a
// consistency proof), and a conflict (409) is resolved from the size the
// witness names.
func TestWitnessLitewitness(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "audit")
	t0 := time.Now().Add(-3 * time.Hour)
	appendAt(t, dir, 5, t0, "a")
	w1, w2 := witnesstest.Start(t, "witness.test/w1"), witnesstest.Start(t, "witness.test/w2")
	w1.AddLog(witnessOrigin, noteKey(t, dir))
	w2.AddLog(witnessOrigin, noteKey(t, dir))
	ws := []audit.Witness{witnessOf(w1, "w1"), witnessOf(w2, "w2")}
	quorum := []audit.Quorum{{Witnesses: []string{"w1", "w2"}, K: 2}}
	ctx := context.Background()

	rep, err := audit.WitnessLog(ctx, dir, ws, audit.WitnessOptions{})
	if err != nil {
		t.Fatalf("%v\n%s\n%s", err, w1.Log(), w2.Log())
	}
	for _, r := range rep.Witnesses {
		if r.Status != audit.WitnessCosigned || r.Size != 5 || r.Previous != 0 || r.Time.IsZero() {
			t.Errorf("first witnessing: %+v", r)
		}
	}
	if w1.Size(witnessOrigin) != 5 {
		t.Errorf("litewitness w1 holds size %d", w1.Size(witnessOrigin))
	}
	// The stored file is a note any reader opens with the log's key and
	// the witness's.
	b, err := os.ReadFile(filepath.Join(dir, audit.WitnessDir, "w1"))
	if err != nil {
		t.Fatal(err)
	}
	lv, _ := note.NewVerifier(noteKey(t, dir))
	cv, _ := audit.NewCosignatureVerifier(w1.VKey)
	if n, err := note.Open(b, note.VerifierList(lv, cv)); err != nil || len(n.Sigs) != 2 {
		t.Fatalf("stored cosigned checkpoint: %v\n%s", err, b)
	}

	opts := audit.VerifyOptions{Witnesses: ws, Quorums: quorum, Grace: time.Hour}
	r, err := audit.Verify(dir, opts)
	if err != nil || len(r.Witnessed) != 2 || r.Witnessed[0].Size != 5 || r.Quorums[0].Size != 5 {
		t.Fatalf("verify with a quorum: %v %+v", err, r)
	}
	// Again: nothing new, the witnesses are not asked.
	if rep, err = audit.WitnessLog(ctx, dir, ws, audit.WitnessOptions{}); err != nil || rep.Witnesses[0].Status != audit.WitnessCurrent {
		t.Fatalf("witnessing the same checkpoint: %v %+v", err, rep)
	}

	// Three records more, appended now: within the grace period, verify
	// passes without them cosigned; with no grace it does not.
	appendAt(t, dir, 3, time.Now().Add(-time.Minute*5), "b")
	if _, err := audit.Verify(dir, opts); err != nil {
		t.Fatalf("records within the grace period: %v", err)
	}
	strict := opts
	strict.Grace = 0
	_, err = audit.Verify(dir, strict)
	var p *audit.Problem
	if !errors.As(err, &p) || p.Kind != audit.Unwitnessed || p.Seq != 5 {
		t.Fatalf("records past the grace period not cosigned: %v", err)
	}
	// w2 loses act's record of its cosignature: act asks from 0, the
	// witness answers 409 with the size it holds, and act proves from it.
	os.Remove(filepath.Join(dir, audit.WitnessDir, "w2"))
	rep, err = audit.WitnessLog(ctx, dir, ws, audit.WitnessOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r := rep.Witnesses[0]; r.Status != audit.WitnessCosigned || r.Previous != 5 || r.Size != 8 {
		t.Errorf("w1 from its stored size: %+v", r)
	}
	if r := rep.Witnesses[1]; r.Status != audit.WitnessCosigned || r.Previous != 5 || r.Size != 8 {
		t.Errorf("w2 after a 409: %+v", r)
	}
	if _, err := audit.Verify(dir, strict); err != nil {
		t.Fatalf("all cosigned: %v", err)
	}
	// A quorum of one of two is met by one.
	os.Remove(filepath.Join(dir, audit.WitnessDir, "w2"))
	one := strict
	one.Quorums = []audit.Quorum{{Witnesses: []string{"w1", "w2"}, K: 1}}
	if r, err := audit.Verify(dir, one); err != nil || r.Witnessed[1].Size != 0 {
		t.Fatalf("quorum 1 of 2: %v %+v", err, r)
	}
	if _, err := audit.Verify(dir, strict); err == nil {
		t.Fatal("quorum 2 of 2 met by one")
	}
}

// TestWitnessRewrite: a log rewritten with its own key below a cosigned
// size verifies on its own but not with the witnesses, whatever --since
// says; the witness refuses to cosign the rewritten log (and a fork of the
// same size), even when act's stored cosignatures are deleted too.
func TestWitnessRewrite(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "audit")
	t0 := time.Now().Add(-3 * time.Hour)
	appendAt(t, dir, 8, t0, "a")
	w1 := witnesstest.Start(t, "witness.test/w1")
	w1.AddLog(witnessOrigin, noteKey(t, dir))
	ws := []audit.Witness{witnessOf(w1, "w1")}
	opts := audit.VerifyOptions{Witnesses: ws, Quorums: []audit.Quorum{{Witnesses: []string{"w1"}, K: 1}}, Grace: time.Hour}
	ctx := context.Background()
	if _, err := audit.WitnessLog(ctx, dir, ws, audit.WitnessOptions{}); err != nil {
		t.Fatal(err)
	}
	early, err := audit.CheckpointText(dir, audit.VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		name      string
		keep, add int
	}{
		{"longer", 4, 6}, // rewritten below 8, now 10 records
		{"same size", 6, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := filepath.Join(t.TempDir(), "audit")
			copyDir(t, dir, d)
			rewrite(t, d, c.keep, c.add, t0.Add(time.Hour))
			// --since with a checkpoint of the rewritten prefix passes...
			since, _ := os.ReadFile(filepath.Join(d, audit.CheckpointFile))
			o := opts
			o.Since = since
			_, err := audit.Verify(d, o)
			var p *audit.Problem
			if !errors.As(err, &p) || p.Kind != audit.Altered || !strings.Contains(p.Detail, "witness w1") {
				t.Fatalf("verify of a log rewritten below a cosigned size: %v", err)
			}
			// The stored cosignature alone names it a fork, before asking.
			rep, err := audit.WitnessLog(ctx, d, ws, audit.WitnessOptions{})
			if err == nil || !rep.Witnesses[0].Fork {
				t.Fatalf("witnessing a rewritten log: %v %+v", err, rep)
			}
			// With witness/ deleted, the witness itself refuses: act asks
			// from 0, it answers 409 (8), and the proof from 8 fails (422).
			os.RemoveAll(filepath.Join(d, audit.WitnessDir))
			rep, err = audit.WitnessLog(ctx, d, ws, audit.WitnessOptions{})
			if err == nil || !rep.Witnesses[0].Fork || rep.Witnesses[0].Previous != 8 || !strings.Contains(rep.Witnesses[0].Error, "422") {
				t.Fatalf("the witness cosigned a rewritten log: %v %+v", err, rep)
			}
			if _, err := os.Stat(filepath.Join(d, audit.WitnessDir, "w1")); err == nil {
				t.Fatal("a refused checkpoint left a stored cosignature")
			}
			if got := w1.Size(witnessOrigin); got != 8 {
				t.Fatalf("the witness moved to %d", got)
			}
		})
	}
	// A log truncated below the cosigned size: the witness knows more.
	d := filepath.Join(t.TempDir(), "audit")
	copyDir(t, dir, d)
	rewrite(t, d, 3, 1, t0.Add(time.Hour))
	os.RemoveAll(filepath.Join(d, audit.WitnessDir))
	rep, err := audit.WitnessLog(ctx, d, ws, audit.WitnessOptions{})
	if err == nil || !rep.Witnesses[0].Fork || !strings.Contains(rep.Witnesses[0].Error, "truncated") {
		t.Fatalf("a truncated log: %v %+v", err, rep)
	}
	// The untouched log still verifies, and extends the early checkpoint.
	o := opts
	o.Since = []byte(early)
	if _, err := audit.Verify(dir, o); err != nil {
		t.Fatal(err)
	}
}

// TestWitnessWrongKey: a witness that cosigns with a key other than the
// policy's is refused, and nothing is stored.
func TestWitnessWrongKey(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "audit")
	appendAt(t, dir, 3, time.Now().Add(-time.Hour), "a")
	wa := witnesstest.Start(t, "witness.test/w1")
	wb := witnesstest.Start(t, "witness.test/w1") // the same name, another key
	wa.AddLog(witnessOrigin, noteKey(t, dir))
	bad := audit.Witness{Name: "w1", Key: wb.VKey, URL: wa.URL}
	rep, err := audit.WitnessLog(context.Background(), dir, []audit.Witness{bad}, audit.WitnessOptions{})
	var we *audit.WitnessError
	if !errors.As(err, &we) || rep.Witnesses[0].Status != audit.WitnessFailed || !strings.Contains(rep.Witnesses[0].Error, "refused") {
		t.Fatalf("a cosignature by another key: %v %+v", err, rep)
	}
	t.Log(err)
	if _, err := os.Stat(filepath.Join(dir, audit.WitnessDir, "w1")); err == nil {
		t.Fatal("a cosignature by another key was stored")
	}
	// A stored file holding that cosignature (copied in by hand) fails
	// verify: it is not by the policy's key.
	good := audit.Witness{Name: "w1", Key: wa.VKey, URL: wa.URL}
	if _, err := audit.WitnessLog(context.Background(), dir, []audit.Witness{good}, audit.WitnessOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = audit.Verify(dir, audit.VerifyOptions{Witnesses: []audit.Witness{bad}, Quorums: []audit.Quorum{{Witnesses: []string{"w1"}, K: 1}}})
	var p *audit.Problem
	if !errors.As(err, &p) || p.Kind != audit.BadSignature {
		t.Fatalf("verify of a cosignature under another key: %v", err)
	}
}

// TestWitnessDown: an unreachable witness is reported, the others cosign,
// and the next call, with it back, cosigns from where it was.
func TestWitnessDown(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "audit")
	appendAt(t, dir, 3, time.Now().Add(-time.Hour), "a")
	up := witnesstest.Start(t, "witness.test/up")
	up.AddLog(witnessOrigin, noteKey(t, dir))
	down := witnesstest.Start(t, "witness.test/down")
	down.AddLog(witnessOrigin, noteKey(t, dir))
	down.Stop()
	ws := []audit.Witness{witnessOf(up, "up"), witnessOf(down, "down")}
	rep, err := audit.WitnessLog(context.Background(), dir, ws, audit.WitnessOptions{Timeout: 2 * time.Second})
	var we *audit.WitnessError
	if !errors.As(err, &we) || len(we.Failed) != 1 || we.Failed[0].Name != "down" || !strings.Contains(we.Failed[0].Error, "unreachable") {
		t.Fatalf("a witness that is down: %v", err)
	}
	if rep.Witnesses[0].Status != audit.WitnessCosigned {
		t.Fatalf("the witness that is up: %+v", rep.Witnesses[0])
	}
	down.Restart()
	if rep, err = audit.WitnessLog(context.Background(), dir, ws, audit.WitnessOptions{}); err != nil || rep.Witnesses[1].Status != audit.WitnessCosigned {
		t.Fatalf("the witness back: %v %+v", err, rep)
	}
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		dst := filepath.Join(to, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o700)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestWitnessFutureRecords: records stamped far in the future are due at
// once: a key holder cannot put off the quorum by its clock. Records no
// witness has cosigned are due whatever their own times say.
func TestWitnessFutureRecords(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "audit")
	now := time.Now()
	appendAt(t, dir, 2, now.Add(-10*time.Minute), "a")
	w1 := witnesstest.Start(t, "witness.test/w1")
	w1.AddLog(witnessOrigin, noteKey(t, dir))
	opts := audit.VerifyOptions{Witnesses: []audit.Witness{witnessOf(w1, "w1")},
		Quorums: []audit.Quorum{{Witnesses: []string{"w1"}, K: 1}}, Grace: time.Hour, Now: now}
	_, err := audit.Verify(dir, opts)
	var p *audit.Problem
	if !errors.As(err, &p) || p.Kind != audit.Unwitnessed || p.Seq != 0 || !strings.Contains(p.Detail, "none of its witnesses has cosigned") {
		t.Fatalf("records within the grace period by their own times, never cosigned: %v", err)
	}
	// A witness key act cannot use fails verify, and the report says so.
	badKey := opts
	badKey.Witnesses = []audit.Witness{{Name: "w1", Key: "witness.example/w1+f51765e1+ARERERERERERERERERERERERERERERERERERERERERER", URL: "http://127.0.0.1:1"}}
	if r, err := audit.Verify(dir, badKey); err == nil || r.OK {
		t.Fatalf("verify with a witness key of type 0x01: %v, ok %v", err, r.OK)
	}
	if _, err := audit.WitnessLog(context.Background(), dir, opts.Witnesses, audit.WitnessOptions{}); err != nil {
		t.Fatal(err)
	}
	if r, err := audit.Verify(dir, opts); err != nil || r.Quorums[0].Stale || r.Quorums[0].Time.IsZero() {
		t.Fatalf("records cosigned just now: %v %+v", err, r.Quorums)
	}
	appendAt(t, dir, 1, now.Add(2*time.Hour), "b")
	_, err = audit.Verify(dir, opts)
	if !errors.As(err, &p) || p.Kind != audit.Unwitnessed || p.Seq != 2 || !strings.Contains(p.Detail, "appended at") {
		t.Fatalf("a record stamped 2 h ahead: %v", err)
	}
}

// TestWitnessClock: act audit verify grades a record's age by the
// witnesses' clocks, not by the record's own time, which the key's holder
// writes. An agent that can read the key and rewrite the whole state
// directory, but not the witnesses or the system policy:
//
//   - deletes witness/ and re-signs the log with fresh times: every record
//     looks younger than the grace, and verify passed; now nothing shows
//     any record's age, so all are due and verify fails, and verify
//     --witnesses names the fork (the witness refuses the rewritten tree);
//   - keeps witness/ and rewrites, with fresh times, the records appended
//     since the last cosignature, hours ago by the witness's clock: verify
//     passed; now the quorum's cosignatures are stale, every record is
//     due, and verify fails.
func TestWitnessClock(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "audit")
	t0 := time.Now().Add(-3 * time.Hour)
	appendAt(t, dir, 5, t0, "a")
	w1 := witnesstest.Start(t, "witness.test/w1")
	w1.AddLog(witnessOrigin, noteKey(t, dir))
	ws := []audit.Witness{witnessOf(w1, "w1")}
	if _, err := audit.WitnessLog(context.Background(), dir, ws, audit.WitnessOptions{}); err != nil {
		t.Fatal(err)
	}
	// Verify runs three hours after that cosignature; three records were
	// appended since, the first two of them more than the grace ago.
	later := time.Now().Add(3 * time.Hour)
	appendAt(t, dir, 3, later.Add(-2*time.Hour), "b")
	opts := audit.VerifyOptions{Witnesses: ws, Quorums: []audit.Quorum{{Witnesses: []string{"w1"}, K: 1}}, Grace: time.Hour, Now: later}
	var p *audit.Problem
	if _, err := audit.Verify(dir, opts); !errors.As(err, &p) || p.Kind != audit.Unwitnessed || p.Seq != 5 {
		t.Fatalf("the honest log, records past the grace not cosigned: %v", err)
	}

	t.Run("witness-deleted", func(t *testing.T) {
		d := filepath.Join(t.TempDir(), "audit")
		copyDir(t, dir, d)
		os.RemoveAll(filepath.Join(d, audit.WitnessDir))
		rewrite(t, d, 0, 8, later.Add(-10*time.Minute))
		_, err := audit.Verify(d, opts)
		if !errors.As(err, &p) || p.Kind != audit.Unwitnessed || p.Seq != 0 || !strings.Contains(p.Detail, "none of its witnesses has cosigned") {
			t.Fatalf("a log re-signed with fresh times, witness/ deleted: %v", err)
		}
		r, err := audit.VerifyAsking(context.Background(), d, opts, audit.WitnessOptions{})
		if !errors.As(err, &p) || p.Kind != audit.Forked || !strings.Contains(p.Detail, "witness w1") || !strings.Contains(p.Detail, "422") || len(r.Asked) != 1 || !r.Asked[0].Fork {
			t.Fatalf("verify --witnesses of the re-signed log: %v %+v", err, r.Asked)
		}
		if got := w1.Size(witnessOrigin); got != 5 {
			t.Fatalf("the witness moved to %d", got)
		}
	})
	t.Run("tail-rewritten", func(t *testing.T) {
		d := filepath.Join(t.TempDir(), "audit")
		copyDir(t, dir, d)
		rewrite(t, d, 5, 3, later.Add(-10*time.Minute))
		r, err := audit.Verify(d, opts)
		if !errors.As(err, &p) || p.Kind != audit.Unwitnessed || p.Seq != 5 || !strings.Contains(p.Detail, "the quorum last cosigned at") {
			t.Fatalf("a tail re-signed with fresh times after an old cosignature: %v", err)
		}
		if q := r.Quorums[0]; !q.Stale || q.Size != 5 || q.Due != 8 {
			t.Errorf("the quorum's status: %+v", q)
		}
	})
}

// TestWitnessVerifyAsking: act audit verify --witnesses asks every witness
// now, even one whose stored cosignature is of the newest checkpoint: a
// good log is cosigned afresh and verifies; a state directory put back to
// an older copy of itself (log and witness/ both, which agree) verifies
// on its own, and the witness, which has cosigned more, names it.
func TestWitnessVerifyAsking(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "audit")
	appendAt(t, dir, 4, time.Now().Add(-3*time.Hour), "a")
	w1 := witnesstest.Start(t, "witness.test/w1")
	w1.AddLog(witnessOrigin, noteKey(t, dir))
	ws := []audit.Witness{witnessOf(w1, "w1")}
	opts := audit.VerifyOptions{Witnesses: ws, Quorums: []audit.Quorum{{Witnesses: []string{"w1"}, K: 1}}, Grace: time.Hour}
	ctx := context.Background()
	r, err := audit.VerifyAsking(ctx, dir, opts, audit.WitnessOptions{})
	if err != nil || len(r.Asked) != 1 || r.Asked[0].Status != audit.WitnessCosigned || r.Quorums[0].Size != 4 {
		t.Fatalf("verify --witnesses of a good log: %v %+v", err, r)
	}
	old := filepath.Join(t.TempDir(), "audit")
	copyDir(t, dir, old)
	appendAt(t, dir, 3, time.Now().Add(-time.Minute), "b")
	if _, err := audit.VerifyAsking(ctx, dir, opts, audit.WitnessOptions{}); err != nil {
		t.Fatal(err)
	}
	// The older copy, as an agent would put it back.
	if _, err := audit.Verify(old, opts); err != nil {
		t.Fatalf("the older copy on its own: %v", err)
	}
	r, err = audit.VerifyAsking(ctx, old, opts, audit.WitnessOptions{})
	var p *audit.Problem
	if !errors.As(err, &p) || p.Kind != audit.Forked || !strings.Contains(p.Detail, "it has cosigned 7 records of this log, and the log holds 4") || r.Asked[0].Known != 7 {
		t.Fatalf("verify --witnesses of an older copy: %v %+v", err, r.Asked)
	}
}

// TestWitnessReadsTheHead: witnessing reads the newest checkpoint and the
// tree cache, not every record, so that it stays within its bound after
// each apply however long the log is: a record damaged after its append
// (which verify names) does not stop the log's signed tree from being
// sent to the witnesses.
func TestWitnessReadsTheHead(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "audit")
	appendAt(t, dir, 3, time.Now().Add(-time.Hour), "a")
	b, err := os.ReadFile(filepath.Join(dir, audit.LogFile))
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(b, []byte("\n"))
	zero := base64.StdEncoding.EncodeToString(make([]byte, ed25519.SignatureSize))
	lines[1] = regexp.MustCompile(`"sig":"[^"]*"`).ReplaceAll(lines[1], []byte(`"sig":"`+zero+`"`))
	if err := os.WriteFile(filepath.Join(dir, audit.LogFile), bytes.Join(lines, nil), 0o600); err != nil {
		t.Fatal(err)
	}
	var p *audit.Problem
	if _, err := audit.Verify(dir, audit.VerifyOptions{}); !errors.As(err, &p) || p.Seq != 1 {
		t.Fatalf("verify of the damaged record: %v", err)
	}
	down := audit.Witness{Name: "w1", Key: "witness.example/w1+da40b4ad+BBERERERERERERERERERERERERERERERERERERERERER", URL: "http://127.0.0.1:1"}
	rep, err := audit.WitnessLog(context.Background(), dir, []audit.Witness{down}, audit.WitnessOptions{Timeout: time.Second})
	var we *audit.WitnessError
	if !errors.As(err, &we) || rep.Records != 3 || !strings.Contains(rep.Witnesses[0].Error, "unreachable") {
		t.Fatalf("witnessing read every record: %v %+v", err, rep)
	}
}

// TestWitnessNamedLock: a witness may be named "lock"; the lock that
// serializes the stores is no witness's file, so another witness's store
// does not leave an empty file that verify would read as its cosignature.
func TestWitnessNamedLock(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "audit")
	appendAt(t, dir, 3, time.Now().Add(-time.Hour), "a")
	w1 := witnesstest.Start(t, "witness.test/w1")
	w1.AddLog(witnessOrigin, noteKey(t, dir))
	lock := audit.Witness{Name: "lock", Key: "witness.example/w1+da40b4ad+BBERERERERERERERERERERERERERERERERERERERERER", URL: "http://127.0.0.1:1"}
	ws := []audit.Witness{witnessOf(w1, "w1"), lock}
	rep, err := audit.WitnessLog(context.Background(), dir, ws, audit.WitnessOptions{Timeout: time.Second})
	if rep.Witnesses[0].Status != audit.WitnessCosigned || rep.Witnesses[1].Status != audit.WitnessFailed {
		t.Fatalf("w1 up, lock down: %v %+v", err, rep)
	}
	opts := audit.VerifyOptions{Witnesses: ws, Quorums: []audit.Quorum{{Witnesses: []string{"w1", "lock"}, K: 1}}}
	if r, err := audit.Verify(dir, opts); err != nil || r.Witnessed[1].Size != 0 {
		t.Fatalf("verify with a witness named lock that has not cosigned: %v", err)
	}
}
