package gate

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/act-project/act/audit"
	"github.com/act-project/act/descriptors"
	"github.com/act-project/act/internal/lifecycle"
	"github.com/act-project/act/policy"
)

// appliedRecord is the predicate of the applied record of action id.
func (w *world) appliedRecord(actionID string) audit.Predicate {
	w.t.Helper()
	found, err := audit.Find(w.g.Home.Audit(), actionID, "")
	if err != nil {
		w.t.Fatal(err)
	}
	for _, f := range found {
		if f.Event != audit.EventApplied {
			continue
		}
		s, err := audit.Show(w.g.Home.Audit(), int64(f.Seq), audit.VerifyOptions{})
		if err != nil {
			w.t.Fatal(err)
		}
		return s.Statement.Predicate
	}
	w.t.Fatalf("no applied record of %s", actionID)
	return audit.Predicate{}
}

// TestAdoptRecordsWhatActKnows: an adoption records what act checked (the
// agent's tool wrote exactly the reviewed change) and where the yes came
// from, never that a person allowed it on the word of the note that names
// the plan: that note is in the state directory, which the agent may
// write. A plan that needed no confirmation (a LOW write, adopted through
// a note the agent forged) is recorded as needing none; one that needed a
// person says the yes was asked at the agent's prompt, which act does not
// see. Before, both were signed as "a person allowed it at the agent's
// prompt", confirmed by flag.
func TestAdoptRecordsWhatActKnows(t *testing.T) {
	const low, asked = "5d000000-0000-4000-8000-0000000000a1", "5d000000-0000-4000-8000-0000000000a2"
	w := newWorld(t, map[string]string{"proj/low.txt": "low\n", "proj/asked.txt": "asked\n"})
	adopt := func(s spec, name, content string) audit.Predicate {
		t.Helper()
		e := w.plan(s)
		// What the hook keeps before the tool runs, then the tool's
		// write of exactly the reviewed bytes.
		path := filepath.Join(w.proj, name)
		cp := filepath.Join(t.TempDir(), "copy")
		if err := KeepCopy(path, cp); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := w.g.Adopt(context.Background(), e, NewApproval(ViaFlag), map[int]string{0: cp}); err != nil {
			t.Fatalf("adopt %s: %v", name, err)
		}
		w.wantState(e.Plan.ID, lifecycle.Applied)
		return w.appliedRecord(s.id)
	}

	p := adopt(spec{id: low, body: writeBody("low.txt", "low 2\n", false)}, "low.txt", "low 2\n")
	if p.Approval == nil || p.Approval.Via != ViaNone {
		t.Errorf("a LOW plan adopted is recorded as confirmed: %+v", p.Approval)
	}
	for _, want := range []string{"adopted", "act checked", "needed no confirmation"} {
		if !strings.Contains(p.Reason, want) {
			t.Errorf("the record of a LOW adoption %q does not say %q", p.Reason, want)
		}
	}

	// The host policy asks a person about every write.
	w.g.Policy.Modes.Types[descriptors.FileWrite] = policy.Confirm
	p = adopt(spec{id: asked, body: writeBody("asked.txt", "asked 2\n", false)}, "asked.txt", "asked 2\n")
	if p.Approval == nil || p.Approval.Via != ViaFlag {
		t.Errorf("an adoption of a plan that needed a person: approval %+v, want flag (what the policy counts)", p.Approval)
	}
	for _, want := range []string{"adopted", "act checked", "agent's prompt, which act does not see"} {
		if !strings.Contains(p.Reason, want) {
			t.Errorf("the record of an adoption %q does not say %q", p.Reason, want)
		}
	}
	for _, reason := range []string{p.Reason, w.appliedRecord(low).Reason} {
		if strings.Contains(reason, "a person allowed") {
			t.Errorf("the record says %q: act did not see a person allow anything", reason)
		}
	}
}
