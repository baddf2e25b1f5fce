package gate

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/act-project/act/audit"
	"github.com/act-project/act/descriptors"
	"github.com/act-project/act/internal/lifecycle"
	"github.com/act-project/act/internal/outcome"
	"github.com/act-project/act/internal/problem"
	"github.com/act-project/act/internal/sshsig"
	"github.com/act-project/act/plan"
	"github.com/act-project/act/policy"
	"github.com/act-project/act/rollback"
	"github.com/act-project/act/sandbox/isolate"
)

// Every refusal of the gate (docs/lifecycle.md, "What the gate decides"
// and "What apply trusts"): its rule and exit code, the plan's state
// after, the real tree untouched, and its signed record.

// run runs f as subtest name of w's test, with w's helpers failing the
// subtest.
func (w *world) run(name string, f func(t *testing.T)) {
	w.t.Helper()
	w.t.Run(name, func(t *testing.T) {
		parent := w.t
		w.t = t
		defer func() { w.t = parent }()
		f(t)
	})
}

// planIDs lists the saved plans.
func (w *world) planIDs() []string {
	w.t.Helper()
	ids, err := plan.List(w.g.Home.Root)
	if err != nil {
		w.t.Fatal(err)
	}
	return ids
}

// wantNoNewPlan checks that a refused plan saved nothing: the saved plans
// are still before.
func (w *world) wantNoNewPlan(before []string) {
	w.t.Helper()
	if got := w.planIDs(); strings.Join(got, " ") != strings.Join(before, " ") {
		w.t.Errorf("a refused plan was saved: plans %v, before %v", got, before)
	}
	ents, _ := os.ReadDir(w.g.Home.Plans())
	for _, ent := range ents {
		if strings.HasPrefix(ent.Name(), ".tmp-") {
			w.t.Errorf("a refused plan left plans/%s", ent.Name())
		}
	}
}

// TestPromoteOnce: an action id is promoted at most once. Planned again
// with other content, or after its rollback, it is refused before the dry
// run (exit 8, a rejected record, nothing saved); the same content again
// is "already applied" with no dry run. A second plan of the id made
// before the first was applied is refused at apply (apply_refused).
func TestPromoteOnce(t *testing.T) {
	ctx := context.Background()
	w := settingWorld(t)
	id := w.plan(settingSpec()).Plan.ID
	// A second plan of the same id with other content, made before the
	// first is applied.
	other := spec{id: settingID, body: writeBody("setting.txt", "ON\n", false)}
	otherID := w.plan(other).Plan.ID
	w.mustApply(id)
	w.wantFile("proj/setting.txt", on)

	w.run("other content at plan", func(t *testing.T) {
		before, plans := w.events(settingID), w.planIDs()
		_, err := w.tryPlan(other)
		wantRule(t, err, rollback.RuleOtherContent, outcome.Conflict)
		w.wantNoNewPlan(plans)
		w.wantFile("proj/setting.txt", on)
		w.wantNewEvents(settingID, before, audit.EventRejected)
	})

	w.run("other content at apply", func(t *testing.T) {
		before := w.events(settingID)
		_, err := w.apply(otherID, NewApproval(ViaFlag))
		wantRule(t, err, rollback.RuleOtherContent, outcome.Conflict)
		w.wantState(otherID, lifecycle.Planned)
		w.wantState(id, lifecycle.Applied)
		w.wantFile("proj/setting.txt", on)
		w.wantNewEvents(settingID, before, audit.EventApplyRefused)
	})

	w.run("same content", func(t *testing.T) {
		before, plans := w.events(settingID), w.planIDs()
		d, digest := w.descriptor(settingSpec())
		pre, err := w.g.BeforePlan(ctx, d, digest, true)
		if err != nil {
			t.Fatal(err)
		}
		if pre.Applied == nil || pre.Applied.PlanID != id || pre.Reuse != nil {
			t.Errorf("BeforePlan() = %+v, want already applied by plan %s", pre, id)
		}
		p, pre, err := w.g.Plan(ctx, d, plan.Options{StateDir: w.g.Home.Root, Policy: w.g.Policy, Now: w.g.Now, Host: fakeHost(), Digest: digest}, true)
		if err != nil || p != nil || pre == nil || pre.Applied == nil {
			t.Errorf("Plan(reuse) = %v, %+v, %v; want already applied and no plan", p, pre, err)
		}
		w.wantNoNewPlan(plans)
		w.wantNewEvents(settingID, before)
	})

	if err := w.rollback(settingID); err != nil {
		t.Fatal(err)
	}
	w.run("rolled back", func(t *testing.T) {
		for _, s := range []spec{settingSpec(), other} {
			before, plans := w.events(settingID), w.planIDs()
			_, err := w.tryPlan(s)
			wantRule(t, err, rollback.RuleWasRolledBack, outcome.Conflict)
			w.wantNoNewPlan(plans)
			w.wantFile("proj/setting.txt", off)
			w.wantNewEvents(settingID, before, audit.EventRejected)
		}
	})
}

// cooldownSpec is the setting turned on with cooldown_on_repeat, as action
// id; body, if not "", declares it in other words.
func cooldownSpec(id, body string) spec {
	if body == "" {
		body = writeBody("setting.txt", on, false)
	}
	return spec{id: id, cooldown: true, body: body}
}

// TestCooldown: with cooldown_on_repeat, the same action under any id is
// blocked during the policy's cooldown after a rollback (exit 4,
// policy.cooldown, a validate_blocked record, nothing saved) — reworded
// with a path listed twice too, whose declared key is the same, and in
// other words altogether at apply, from what its dry run changed; after
// the cooldown it needs a person's confirmation.
func TestCooldown(t *testing.T) {
	const (
		first    = "5a000000-0000-4000-8000-0000000000c1"
		again    = "5a000000-0000-4000-8000-0000000000c2"
		reworded = "5a000000-0000-4000-8000-0000000000c3"
		glob     = "5a000000-0000-4000-8000-0000000000c4"
		later    = "5a000000-0000-4000-8000-0000000000c5"
	)
	twice := `action_type: FILE_WRITE
effects:
  filesystem: {create: [], modify: [$P/setting.txt, $P/setting.txt], delete: []}
  network: false
  system_state_change: false
operation: {path: $P/setting.txt, content: "on\n"}
`
	globbed := strings.Replace(twice, "[$P/setting.txt, $P/setting.txt]", `["$P/*.txt"]`, 1)

	w := settingWorld(t)
	id := w.plan(cooldownSpec(first, "")).Plan.ID
	w.mustApply(id)
	if err := w.rollback(first); err != nil {
		t.Fatal(err)
	}
	rolledBackAt := w.now
	w.wantFile("proj/setting.txt", off)

	// The declared keys: a path listed twice is the same action; a glob is another declaration.
	dFirst, _ := w.descriptor(cooldownSpec(first, ""))
	dTwice, _ := w.descriptor(cooldownSpec(reworded, twice))
	dGlob, _ := w.descriptor(cooldownSpec(glob, globbed))
	if k1, k2 := plan.CooldownKeys(dFirst, nil), plan.CooldownKeys(dTwice, nil); k1[0] != k2[0] {
		t.Errorf("a path listed twice has another cooldown key: %s, %s", k1[0], k2[0])
	}
	if k1, k3 := plan.CooldownKeys(dFirst, nil), plan.CooldownKeys(dGlob, nil); k1[0] == k3[0] {
		t.Error("a glob declaration has the same declared key: the apply check below proves nothing")
	}

	w.advance(30 * time.Minute)
	for _, s := range []spec{cooldownSpec(again, ""), cooldownSpec(reworded, twice)} {
		w.run("blocked "+s.id, func(t *testing.T) {
			before, plans := w.events(s.id), w.planIDs()
			_, err := w.tryPlan(s)
			probs := wantRule(t, err, rollback.RuleCooldown, outcome.Blocked)
			if msg := probs[0].Message; !strings.Contains(msg, first) || !strings.Contains(msg, rolledBackAt.Add(w.g.Policy.Cooldown).Format(time.RFC3339)) {
				t.Errorf("the block says %q: want the action rolled back and when the cooldown ends", msg)
			}
			w.wantNoNewPlan(plans)
			w.wantFile("proj/setting.txt", off)
			w.wantNewEvents(s.id, before, audit.EventValidateBlocked)
		})
	}

	w.run("in other words at apply", func(t *testing.T) {
		e := w.plan(cooldownSpec(glob, globbed))
		before := w.events(glob)
		_, err := w.apply(e.Plan.ID, NewApproval(ViaFlag))
		wantRule(t, err, rollback.RuleCooldown, outcome.Blocked)
		w.wantState(e.Plan.ID, lifecycle.Planned)
		w.wantFile("proj/setting.txt", off)
		w.wantNewEvents(glob, before, audit.EventApplyRefused)
	})

	// The cooldown ends an hour after the rollback: then the same action
	// is planned, and needs a person.
	w.now = rolledBackAt.Add(w.g.Policy.Cooldown - time.Second)
	if _, err := w.tryPlan(cooldownSpec(later, "")); err == nil {
		t.Fatal("planned a second before the cooldown ends")
	}
	w.now = rolledBackAt.Add(w.g.Policy.Cooldown)
	w.run("after the cooldown", func(t *testing.T) {
		laterID := w.plan(cooldownSpec(later, "")).Plan.ID
		before := w.events(later)
		_, err := w.apply(laterID, Approval{})
		wantConfirmation(t, err, RuleConfirmationRequired, "the same action ("+first+") was rolled back")
		w.wantState(laterID, lifecycle.Pending)
		w.wantFile("proj/setting.txt", off)
		w.wantNewEvents(later, before, audit.EventQueued)
		w.mustApply(laterID)
		w.wantFile("proj/setting.txt", on)
	})
}

// TestMaxPending: with max_pending 1, a second plan that needs a person
// is refused (exit 4, policy.max-pending) and stays planned, recorded
// (apply_refused); the one pending may be queued again; once it is denied
// the second may wait.
func TestMaxPending(t *testing.T) {
	const a, b = "5a000000-0000-4000-8000-0000000000d1", "5a000000-0000-4000-8000-0000000000d2"
	w := newWorld(t, map[string]string{"proj/a.txt": "a\n", "proj/b.txt": "b\n"})
	w.g.Policy.MaxPending = 1
	idA := w.plan(spec{id: a, body: deleteBody("a.txt")}).Plan.ID
	idB := w.plan(spec{id: b, body: deleteBody("b.txt")}).Plan.ID

	_, err := w.apply(idA, Approval{})
	wantConfirmation(t, err, RuleConfirmationRequired, "")
	w.wantState(idA, lifecycle.Pending)

	before := w.events(b)
	_, err = w.apply(idB, Approval{})
	probs := wantRule(t, err, RuleMaxPending, outcome.Blocked)
	if !strings.Contains(probs[0].Message, "1 plans already wait") {
		t.Errorf("the refusal says %q", probs[0].Message)
	}
	w.wantState(idB, lifecycle.Planned)
	w.wantFile("proj/b.txt", "b\n")
	w.wantNewEvents(b, before, audit.EventApplyRefused)

	// The one waiting is not counted against itself.
	_, err = w.apply(idA, Approval{})
	wantConfirmation(t, err, RuleConfirmationRequired, "")
	w.wantState(idA, lifecycle.Pending)

	if err := w.deny(idA); err != nil {
		t.Fatal(err)
	}
	_, err = w.apply(idB, Approval{})
	wantConfirmation(t, err, RuleConfirmationRequired, "")
	w.wantState(idB, lifecycle.Pending)
	w.wantFile("proj/a.txt", "a\n")
	w.wantFile("proj/b.txt", "b\n")
}

// TestConfirmationKind: only what the host's policy counts is a person's
// confirmation. Another kind is confirm.not-accepted (exit 7), saying what
// counts, and the plan is pending; a signed one under a policy listing no
// approvers is refused saying so; a listed approver's signature of the
// plan's digest is accepted and kept with the action record, and one of
// another plan's digest is not.
func TestConfirmationKind(t *testing.T) {
	t.Run("terminal given --confirm", func(t *testing.T) {
		w := settingWorld(t)
		w.g.Policy.Modes.Types[descriptors.FileWrite] = policy.Confirm
		w.g.Policy.Confirmation.Via = policy.ViaTerminal
		id := w.plan(settingSpec()).Plan.ID
		before := w.events(settingID)
		_, err := w.apply(id, NewApproval(ViaFlag))
		need := wantConfirmation(t, err, RuleConfirmationVia, "")
		if !strings.Contains(need.Refused, "only a yes typed at the controlling terminal") || need.Via != ViaTerminal {
			t.Errorf("refused %q (via %s)", need.Refused, need.Via)
		}
		w.wantState(id, lifecycle.Pending)
		w.wantFile("proj/setting.txt", off)
		w.wantNewEvents(settingID, before, audit.EventQueued)

		_, err = w.apply(id, NewApproval(ViaTerminal))
		if err != nil {
			t.Fatal(err)
		}
		w.wantState(id, lifecycle.Applied)
		w.wantFile("proj/setting.txt", on)
	})

	signer, approver := newSigner(t, "alice@example.org")
	signed := func(t *testing.T, digest string) Approval {
		sig, err := sshsig.Sign(signer, sshsig.Message(digest), sshsig.Namespace)
		if err != nil {
			t.Fatal(err)
		}
		ap := NewApproval(ViaSigned)
		ap.Signature, ap.Digest = sig, digest
		return ap
	}

	t.Run("signed without approvers", func(t *testing.T) {
		w := settingWorld(t)
		w.g.Policy.Modes.Types[descriptors.FileWrite] = policy.Confirm
		w.g.Policy.Confirmation.Via = policy.ViaSigned
		w.g.Policy.Confirmation.Approvers = nil
		e := w.plan(settingSpec())
		before := w.events(settingID)
		_, err := w.apply(e.Plan.ID, signed(t, PlanDigest(e.Plan)))
		need := wantConfirmation(t, err, RuleConfirmationVia, "")
		if !strings.Contains(need.Refused, "lists no approvers") {
			t.Errorf("refused %q: want it to say the policy lists no approvers", need.Refused)
		}
		w.wantState(e.Plan.ID, lifecycle.Pending)
		w.wantFile("proj/setting.txt", off)
		w.wantNewEvents(settingID, before, audit.EventQueued)
	})

	t.Run("signed by a listed approver", func(t *testing.T) {
		w := settingWorld(t)
		w.g.Policy.Modes.Types[descriptors.FileWrite] = policy.Confirm
		w.g.Policy.Confirmation.Via = policy.ViaSigned
		w.g.Policy.Confirmation.Approvers = []string{approver}
		e := w.plan(settingSpec())

		// A key not listed approves nothing; nor does --confirm.
		_, stranger, _ := ed25519.GenerateKey(rand.Reader)
		strangerSigner, _ := ssh.NewSignerFromKey(stranger)
		sig, err := sshsig.Sign(strangerSigner, sshsig.Message(PlanDigest(e.Plan)), sshsig.Namespace)
		if err != nil {
			t.Fatal(err)
		}
		ap := NewApproval(ViaSigned)
		ap.Signature, ap.Digest = sig, PlanDigest(e.Plan)
		_, err = w.apply(e.Plan.ID, ap)
		need := wantConfirmation(t, err, RuleConfirmationVia, "")
		if !strings.Contains(need.Refused, "does not approve this plan") {
			t.Errorf("refused %q", need.Refused)
		}
		_, err = w.apply(e.Plan.ID, NewApproval(ViaFlag))
		wantConfirmation(t, err, RuleConfirmationVia, "")
		w.wantState(e.Plan.ID, lifecycle.Pending)
		w.wantFile("proj/setting.txt", off)

		_, out, err := w.g.Apply(context.Background(), w.load(e.Plan.ID), signed(t, PlanDigest(e.Plan)), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if ap := out.Action.Approval; ap == nil || ap.Via != ViaSigned || ap.Principal != "alice@example.org" || ap.KeyFingerprint == "" {
			t.Errorf("the action record's approval is %+v, want alice's signature", ap)
		}
		w.wantState(e.Plan.ID, lifecycle.Applied)
		w.wantFile("proj/setting.txt", on)
	})
}

// editPlan rewrites plan id's plan.json with each old → new replacement,
// as a same-user agent could; each must match.
func (w *world) editPlan(id string, oldnew ...string) {
	w.t.Helper()
	name := w.g.Home.PlanRecord(id)
	b, err := os.ReadFile(name)
	if err != nil {
		w.t.Fatal(err)
	}
	for i := 0; i < len(oldnew); i += 2 {
		if !bytes.Contains(b, []byte(oldnew[i])) {
			w.t.Fatalf("plan.json holds no %s:\n%s", oldnew[i], b)
		}
		b = bytes.ReplaceAll(b, []byte(oldnew[i]), []byte(oldnew[i+1]))
	}
	if err := os.WriteFile(name, b, 0o600); err != nil {
		w.t.Fatal(err)
	}
}

// TestEditedPlan: apply trusts nothing in plan.json it can derive again
// (docs/lifecycle.md, "What apply trusts"). A risk and mode rewritten to
// LOW and allow still need a person; a change moved outside the scope is
// refused (exit 6, plan.outside-scope, apply_refused) and the file there
// is untouched.
func TestEditedPlan(t *testing.T) {
	const del, del2 = "5a000000-0000-4000-8000-0000000000e1", "5a000000-0000-4000-8000-0000000000e2"
	w := newWorld(t, map[string]string{"proj/keep.txt": "keep\n", "proj/two.txt": "two\n", "elsewhere/two.txt": "not the agent's\n"})

	w.run("risk and mode", func(t *testing.T) {
		e := w.plan(spec{id: del, body: deleteBody("keep.txt")})
		if e.Plan.RiskAssessed != string(descriptors.RiskMedium) || e.Plan.Mode != string(policy.Confirm) {
			t.Fatalf("a delete is %s, %s; want MEDIUM, confirm", e.Plan.RiskAssessed, e.Plan.Mode)
		}
		w.editPlan(e.Plan.ID, `"risk_assessed": "MEDIUM"`, `"risk_assessed": "LOW"`, `"mode": "confirm"`, `"mode": "allow"`)
		if p := w.load(e.Plan.ID).Plan; p.RiskAssessed != "LOW" || p.Mode != "allow" {
			t.Fatalf("the edit did not take: %s, %s", p.RiskAssessed, p.Mode)
		}
		before := w.events(del)
		adm, err := w.apply(e.Plan.ID, Approval{})
		wantConfirmation(t, err, RuleConfirmationRequired, "")
		if adm == nil || adm.Risk.Assessed != descriptors.RiskMedium || adm.Decision.Mode != policy.Confirm {
			t.Errorf("admission %+v: want MEDIUM, confirm, derived again", adm)
		}
		w.wantState(e.Plan.ID, lifecycle.Pending)
		w.wantFile("proj/keep.txt", "keep\n")
		w.wantNewEvents(del, before, audit.EventQueued)
	})

	w.run("outside the scope", func(t *testing.T) {
		e := w.plan(spec{id: del2, body: deleteBody("two.txt")})
		w.editPlan(e.Plan.ID, `"path": "`+filepath.Join(w.proj, "two.txt")+`"`, `"path": "`+filepath.Join(w.elsewhere, "two.txt")+`"`)
		before := w.events(del2)
		_, err := w.apply(e.Plan.ID, NewApproval(ViaFlag))
		wantRule(t, err, plan.RuleOutsideScope, outcome.Rejected)
		w.wantState(e.Plan.ID, lifecycle.Planned)
		w.wantFile("elsewhere/two.txt", "not the agent's\n")
		w.wantFile("proj/two.txt", "two\n")
		w.wantNewEvents(del2, before, audit.EventApplyRefused)
	})
}

// TestStaleApply: a file changed after the plan is not overwritten: apply
// is refused (exit 8, apply.stale, apply_refused) and the plan stays
// planned; put back as it was, the plan applies.
func TestStaleApply(t *testing.T) {
	w := settingWorld(t)
	id := w.plan(settingSpec()).Plan.ID
	name := filepath.Join(w.proj, "setting.txt")
	if err := os.WriteFile(name, []byte("changed by someone\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := w.events(settingID)
	_, err := w.apply(id, NewApproval(ViaFlag))
	wantRule(t, err, rollback.RuleStale, outcome.Conflict)
	w.wantState(id, lifecycle.Planned)
	w.wantFile("proj/setting.txt", "changed by someone\n")
	w.wantNewEvents(settingID, before, audit.EventApplyRefused)

	if err := os.WriteFile(name, []byte(off), 0o644); err != nil {
		t.Fatal(err)
	}
	w.mustApply(id)
	w.wantFile("proj/setting.txt", on)
}

// TestPolicyNow: apply decides with the policy as it is now. A delete
// planned under confirm and denied by the policy since is blocked (exit 4,
// policy.deny, apply_refused), --confirm or not.
func TestPolicyNow(t *testing.T) {
	const del = "5a000000-0000-4000-8000-0000000000f1"
	w := newWorld(t, map[string]string{"proj/keep.txt": "keep\n"})
	id := w.plan(spec{id: del, body: deleteBody("keep.txt")}).Plan.ID
	w.g.Policy.Modes.Types[descriptors.FileDelete] = policy.Deny
	for _, ap := range []Approval{{}, NewApproval(ViaFlag)} {
		before := w.events(del)
		_, err := w.apply(id, ap)
		wantRule(t, err, policy.RuleDeny, outcome.Blocked)
		w.wantState(id, lifecycle.Planned)
		w.wantFile("proj/keep.txt", "keep\n")
		w.wantNewEvents(del, before, audit.EventApplyRefused)
	}
}

// TestImpliedTypeDenied: a plan is decided by what its changes amount to
// as well as by its declared type. A FILE_MOVE creates a file at its
// destination, which is a FILE_WRITE: under FILE_WRITE: deny it is
// blocked at plan (validate_blocked, nothing saved) and, when the policy
// changed since the plan, at apply (apply_refused).
func TestImpliedTypeDenied(t *testing.T) {
	const mv, mv2 = "5a000000-0000-4000-8000-0000000000f2", "5a000000-0000-4000-8000-0000000000f3"
	move := `action_type: FILE_MOVE
effects:
  filesystem: {create: [$P/to.txt], modify: [], delete: [$P/from.txt]}
  network: false
  system_state_change: false
operation: {from: $P/from.txt, to: $P/to.txt}
`
	w := newWorld(t, map[string]string{"proj/from.txt": "moving\n"})
	id := w.plan(spec{id: mv, body: move}).Plan.ID

	w.g.Policy.Modes.Types[descriptors.FileWrite] = policy.Deny
	before := w.events(mv)
	_, err := w.apply(id, NewApproval(ViaFlag))
	probs := wantRule(t, err, policy.RuleDeny, outcome.Blocked)
	if !strings.Contains(probs[0].Message, "amount to a FILE_WRITE") {
		t.Errorf("the block says %q", probs[0].Message)
	}
	w.wantState(id, lifecycle.Planned)
	w.wantFile("proj/from.txt", "moving\n")
	w.wantFile("proj/to.txt", "<none>")
	w.wantNewEvents(mv, before, audit.EventApplyRefused)

	before, plans := w.events(mv2), w.planIDs()
	_, err = w.tryPlan(spec{id: mv2, body: move})
	wantRule(t, err, policy.RuleDeny, outcome.Blocked)
	w.wantNoNewPlan(plans)
	w.wantNewEvents(mv2, before, audit.EventValidateBlocked)
	w.wantFile("proj/from.txt", "moving\n")
}

// TestCommandDeleteDenied: a command that deletes is decided as a
// FILE_DELETE of what it deletes: under FILE_DELETE: deny it is blocked,
// --confirm or not. It needs the sandbox, and a memory cgroup to run the
// command in (an ordinary user has none unless one was delegated).
func TestCommandDeleteDenied(t *testing.T) {
	if err := isolate.Available(); err != nil {
		t.Skipf("the sandbox is unavailable: %v", err)
	}
	const rm = "6b000000-0000-4000-8000-000000000001"
	w := newWorld(t, map[string]string{"proj/victim.txt": "the user's\n"})
	w.g.Policy.Modes.Types[descriptors.FileDelete] = policy.Deny
	before := w.events(rm)
	_, err := w.tryPlan(spec{id: rm, body: `action_type: COMMAND_EXECUTION
effects:
  filesystem: {create: [], modify: [], delete: [$P/victim.txt]}
  network: false
  system_state_change: false
operation: {argv: [rm, victim.txt], workdir: $P}
`})
	if errors.Is(err, isolate.ErrUnavailable) {
		// As an ordinary user with no memory cgroup of its own, say.
		t.Skipf("the sandbox runs no command here: %v", err)
	}
	probs := wantRule(t, err, policy.RuleDeny, outcome.Blocked)
	if !strings.Contains(probs[0].Message, "amount to a FILE_DELETE") {
		t.Errorf("the block says %q", probs[0].Message)
	}
	w.wantFile("proj/victim.txt", "the user's\n")
	w.wantNewEvents(rm, before, audit.EventValidateBlocked)
}

// TestEarlierRefusals: an action id refused before needs a person when it
// is planned again: after a rejection (exit 6), with other content; after
// a failed precondition (exit 5), at all. Each refusal is recorded, and
// so is a precondition that no longer holds at apply.
func TestEarlierRefusals(t *testing.T) {
	const rej, pre = "5a000000-0000-4000-8000-0000000000b1", "5a000000-0000-4000-8000-0000000000b2"
	w := newWorld(t, map[string]string{"proj/setting.txt": off, "proj/other.txt": "other\n"})

	w.run("rejected", func(t *testing.T) {
		// Creates setting.txt only if it does not exist: it does, so the
		// dry run is rejected.
		bad := spec{id: rej, body: strings.Replace(writeBody("setting.txt", on, true), `content: "on\n"}`, `content: "on\n", create_only: true}`, 1)}
		plans := w.planIDs()
		_, err := w.tryPlan(bad)
		if o, ok := outcomeOf(err); !ok || o.Code != outcome.Rejected.Code {
			t.Fatalf("an undeclared effect: %v, want exit 6", err)
		}
		w.wantNoNewPlan(plans)
		w.wantNewEvents(rej, nil, audit.EventRejected)

		id := w.plan(spec{id: rej, body: writeBody("setting.txt", on, false)}).Plan.ID
		_, err = w.apply(id, Approval{})
		wantConfirmation(t, err, RuleConfirmationRequired, "rejected at its dry run")
		w.wantState(id, lifecycle.Pending)
		w.wantFile("proj/setting.txt", off)
	})

	w.run("precondition", func(t *testing.T) {
		s := spec{id: pre, pre: []string{"$P/flag"}, body: writeBody("other.txt", "two\n", false)}
		plans := w.planIDs()
		_, err := w.tryPlan(s)
		wantRule(t, err, "precondition.path-missing", outcome.Precondition)
		w.wantNoNewPlan(plans)
		w.wantNewEvents(pre, nil, audit.EventRejected)

		if err := os.WriteFile(filepath.Join(w.proj, "flag"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		id := w.plan(s).Plan.ID
		_, err = w.apply(id, Approval{})
		wantConfirmation(t, err, RuleConfirmationRequired, "stopped by a failed precondition")
		w.wantState(id, lifecycle.Pending)

		// The precondition checked again at apply: gone since, refused
		// (exit 8, apply.precondition-failed) and recorded.
		if err := os.Remove(filepath.Join(w.proj, "flag")); err != nil {
			t.Fatal(err)
		}
		before := w.events(pre)
		_, err = w.apply(id, NewApproval(ViaFlag))
		probs := wantRule(t, err, rollback.RulePreconditionNow, outcome.Conflict)
		if !strings.Contains(probs[0].Message, "precondition.path-missing") {
			t.Errorf("the refusal does not name the precondition's rule: %q", probs[0].Message)
		}
		w.wantState(id, lifecycle.Pending)
		w.wantFile("proj/other.txt", "other\n")
		w.wantNewEvents(pre, before, audit.EventApplyRefused)
	})
}

// TestForcedRollbackConfirmation: a rollback does not overwrite a file
// changed since the apply (exit 8, rollback.target-changed,
// rollback_refused). Forced, it needs a person's confirmation: without
// one it is refused (exit 7, rollback_refused) and nothing is restored;
// with --confirm it restores the file.
func TestForcedRollbackConfirmation(t *testing.T) {
	w := settingWorld(t)
	id := w.plan(settingSpec()).Plan.ID
	w.mustApply(id)
	if err := os.WriteFile(filepath.Join(w.proj, "setting.txt"), []byte("edited\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := w.events(settingID)
	wantRule(t, w.rollback(settingID), rollback.RuleTargetChanged, outcome.Conflict)
	w.wantState(id, lifecycle.Applied)
	w.wantFile("proj/setting.txt", "edited\n")
	w.wantNewEvents(settingID, before, audit.EventRollbackRefused)

	before = w.events(settingID)
	_, err := w.g.Rollback(context.Background(), settingID, true, Approval{}, nil, nil)
	wantConfirmation(t, err, RuleConfirmationRequired, "rollback --force")
	w.wantState(id, lifecycle.Applied)
	w.wantFile("proj/setting.txt", "edited\n")
	w.wantNewEvents(settingID, before, audit.EventRollbackRefused)

	before = w.events(settingID)
	if _, err := w.g.Rollback(context.Background(), settingID, true, NewApproval(ViaFlag), nil, nil); err != nil {
		t.Fatal(err)
	}
	w.wantState(id, lifecycle.RolledBack)
	w.wantFile("proj/setting.txt", off)
	w.wantNewEvents(settingID, before, audit.EventRolledBack)
}

// outcomeOf is the outcome err ends in: its own, or its problems'.
func outcomeOf(err error) (outcome.Outcome, bool) {
	if o, ok := outcome.Of(err); ok {
		return o, true
	}
	var probs problem.List
	if errors.As(err, &probs) && len(probs) > 0 {
		return outcome.ForLayer(probs.Layer()), true
	}
	return outcome.Outcome{}, false
}

// TestSignedApprovalOfAnotherPlan: a listed approver's signature approves
// the plan whose digest it signs, and no other (docs/lifecycle.md, "What
// apply trusts": "a signed approval is checked against the plan digest").
// Offered to the gate for plan B with the digest of plan A it signed, it
// must not promote B: the gate checks the signature against B's digest,
// whatever digest the approval names.
func TestSignedApprovalOfAnotherPlan(t *testing.T) {
	const a, b = "5a000000-0000-4000-8000-0000000000a7", "5a000000-0000-4000-8000-0000000000a8"
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	w := newWorld(t, map[string]string{"proj/a.txt": "a\n", "proj/b.txt": "b\n"})
	w.g.Policy.Confirmation.Via = policy.ViaSigned
	w.g.Policy.Confirmation.Approvers = []string{"alice@example.org " + strings.TrimSpace(string(ssh.MarshalAuthorizedKey(signer.PublicKey())))}
	planA := w.plan(spec{id: a, body: deleteBody("a.txt")}).Plan
	planB := w.plan(spec{id: b, body: deleteBody("b.txt")}).Plan

	// Alice reviewed and signed plan A.
	sig, err := sshsig.Sign(signer, sshsig.Message(PlanDigest(planA)), sshsig.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	ap := NewApproval(ViaSigned)
	ap.Signature, ap.Digest = sig, PlanDigest(planA)

	// Her signature is offered for plan B.
	_, err = w.apply(planB.ID, ap)
	need := wantConfirmation(t, err, RuleConfirmationVia, "")
	if need != nil && !strings.Contains(need.Refused, "does not approve this plan") {
		t.Errorf("refused %q", need.Refused)
	}
	w.wantState(planB.ID, lifecycle.Pending)
	w.wantFile("proj/b.txt", "b\n")

	// It approves plan A.
	if _, err := w.apply(planA.ID, ap); err != nil {
		t.Fatal(err)
	}
	w.wantFile("proj/a.txt", "<none>")
}
