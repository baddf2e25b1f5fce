package gate

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/act-project/act/audit"
	"github.com/act-project/act/descriptors"
	"github.com/act-project/act/internal/lifecycle"
	"github.com/act-project/act/internal/outcome"
	"github.com/act-project/act/plan"
	"github.com/act-project/act/policy"
	"github.com/act-project/act/rollback"
)

// The action every lifecycle test plans: setting.txt from "off" to "on".
const (
	settingID = "5a000000-0000-4000-8000-0000000000a1"
	off, on   = "off\n", "on\n"
)

func settingSpec() spec {
	return spec{id: settingID, body: writeBody("setting.txt", on, false)}
}

func settingWorld(t *testing.T) *world {
	return newWorld(t, map[string]string{"proj/setting.txt": off})
}

// lifecycleSetups bring a plan of the setting to each state a saved plan
// can be in, through the gate's API only, under a policy that asks a
// person about every FILE_WRITE (so that pending is reachable); each
// returns the plan's id.
var lifecycleSetups = map[lifecycle.State]func(w *world) string{
	lifecycle.Planned: func(w *world) string { return w.plan(settingSpec()).Plan.ID },
	lifecycle.Pending: func(w *world) string {
		id := w.plan(settingSpec()).Plan.ID
		_, err := w.apply(id, Approval{})
		wantConfirmation(w.t, err, RuleConfirmationRequired, "")
		return id
	},
	lifecycle.Applied: func(w *world) string {
		id := w.plan(settingSpec()).Plan.ID
		w.mustApply(id)
		return id
	},
	lifecycle.RolledBack: func(w *world) string {
		id := w.plan(settingSpec()).Plan.ID
		w.mustApply(id)
		if err := w.rollback(settingID); err != nil {
			w.t.Fatal(err)
		}
		return id
	},
	lifecycle.Denied: func(w *world) string {
		id := w.plan(settingSpec()).Plan.ID
		if err := w.deny(id); err != nil {
			w.t.Fatal(err)
		}
		return id
	},
	lifecycle.Expired: func(w *world) string {
		id := w.plan(settingSpec()).Plan.ID
		w.advance(w.g.Policy.PlanExpiry + time.Second)
		return id
	},
}

// lifecycleOps carry out each event on plan id through the gate's API, as
// act and its MCP server do: queue (what apply does when a person's
// confirmation is missing), apply with --confirm, deny, rollback of the
// plan's action, and expire (the clock moved past the plan expiry).
var lifecycleOps = map[lifecycle.Event]func(w *world, id string) (*rollback.Outcome, error){
	lifecycle.Queue: func(w *world, id string) (*rollback.Outcome, error) {
		return nil, w.g.Queue(context.Background(), w.load(id), []string{"a person must look at it"})
	},
	lifecycle.Apply: func(w *world, id string) (*rollback.Outcome, error) {
		_, out, err := w.g.Apply(context.Background(), w.load(id), NewApproval(ViaFlag), nil, nil)
		return out, err
	},
	lifecycle.Deny: func(w *world, id string) (*rollback.Outcome, error) {
		return nil, w.deny(id)
	},
	lifecycle.Rollback: func(w *world, id string) (*rollback.Outcome, error) {
		return w.g.Rollback(context.Background(), settingID, false, Approval{}, nil, nil)
	},
	lifecycle.Expire: func(w *world, id string) (*rollback.Outcome, error) {
		w.advance(w.g.Policy.PlanExpiry + time.Second)
		return nil, nil
	},
}

// TestLifecycleGate drives every event in every state a saved plan can be
// in (docs/lifecycle.md, "States") through the gate, and checks the move
// against lifecycle.Next: a move the table allows is made, one it does not
// is refused, and either way the state the store derives, the real tree,
// the audit records and the refusal's rule are as the docs say.
func TestLifecycleGate(t *testing.T) {
	const (
		notFound = "<not found>" // the action was never promoted
		expired  = "<expired>"   // *ExpiredError
		// Time passing is no request to refuse: a plan the table does not
		// let expire stays as it is.
		unmoved = "<unmoved>"
	)
	cases := []struct {
		from lifecycle.State
		ev   lifecycle.Event
		// to is where the plan stands after; rule the refusal's ("" for
		// none), with the exit code of code.
		to   lifecycle.State
		rule string
		code outcome.Outcome
		// events are the audit records the move adds; file is what
		// setting.txt holds after.
		events []string
		file   string
	}{
		{lifecycle.Planned, lifecycle.Queue, lifecycle.Pending, "", outcome.OK, []string{audit.EventQueued}, off},
		{lifecycle.Planned, lifecycle.Apply, lifecycle.Applied, "", outcome.OK, []string{audit.EventApplied}, on},
		{lifecycle.Planned, lifecycle.Deny, lifecycle.Denied, "", outcome.OK, []string{audit.EventDenied}, off},
		{lifecycle.Planned, lifecycle.Rollback, lifecycle.Planned, notFound, outcome.NotFound, nil, off},
		{lifecycle.Planned, lifecycle.Expire, lifecycle.Expired, "", outcome.OK, nil, off},

		{lifecycle.Pending, lifecycle.Queue, lifecycle.Pending, "", outcome.OK, []string{audit.EventQueued}, off},
		{lifecycle.Pending, lifecycle.Apply, lifecycle.Applied, "", outcome.OK, []string{audit.EventApplied}, on},
		{lifecycle.Pending, lifecycle.Deny, lifecycle.Denied, "", outcome.OK, []string{audit.EventDenied}, off},
		{lifecycle.Pending, lifecycle.Rollback, lifecycle.Pending, notFound, outcome.NotFound, nil, off},
		{lifecycle.Pending, lifecycle.Expire, lifecycle.Expired, "", outcome.OK, nil, off},

		{lifecycle.Applied, lifecycle.Queue, lifecycle.Applied, RuleNotAllowed, outcome.Conflict, nil, on},
		{lifecycle.Applied, lifecycle.Apply, lifecycle.Applied, "", outcome.OK, nil, on}, // already applied
		{lifecycle.Applied, lifecycle.Deny, lifecycle.Applied, RuleNotAllowed, outcome.Conflict, nil, on},
		{lifecycle.Applied, lifecycle.Rollback, lifecycle.RolledBack, "", outcome.OK, []string{audit.EventRolledBack}, off},
		{lifecycle.Applied, lifecycle.Expire, lifecycle.Applied, unmoved, outcome.OK, nil, on},

		{lifecycle.RolledBack, lifecycle.Queue, lifecycle.RolledBack, RuleNotAllowed, outcome.Conflict, nil, off},
		{lifecycle.RolledBack, lifecycle.Apply, lifecycle.RolledBack, rollback.RuleWasRolledBack, outcome.Conflict, []string{audit.EventApplyRefused}, off},
		{lifecycle.RolledBack, lifecycle.Deny, lifecycle.RolledBack, RuleNotAllowed, outcome.Conflict, nil, off},
		{lifecycle.RolledBack, lifecycle.Rollback, lifecycle.RolledBack, rollback.RuleAlreadyRolled, outcome.Conflict, []string{audit.EventRollbackRefused}, off},
		{lifecycle.RolledBack, lifecycle.Expire, lifecycle.RolledBack, unmoved, outcome.OK, nil, off},

		{lifecycle.Denied, lifecycle.Queue, lifecycle.Denied, RuleNotAllowed, outcome.Conflict, nil, off},
		{lifecycle.Denied, lifecycle.Apply, lifecycle.Denied, RuleDenied, outcome.Conflict, []string{audit.EventApplyRefused}, off},
		{lifecycle.Denied, lifecycle.Deny, lifecycle.Denied, RuleNotAllowed, outcome.Conflict, nil, off},
		{lifecycle.Denied, lifecycle.Rollback, lifecycle.Denied, notFound, outcome.NotFound, nil, off},
		{lifecycle.Denied, lifecycle.Expire, lifecycle.Denied, unmoved, outcome.OK, nil, off},

		{lifecycle.Expired, lifecycle.Queue, lifecycle.Expired, RuleNotAllowed, outcome.Conflict, nil, off},
		{lifecycle.Expired, lifecycle.Apply, lifecycle.Expired, expired, outcome.Expired, []string{audit.EventExpired}, off},
		{lifecycle.Expired, lifecycle.Deny, lifecycle.Denied, "", outcome.OK, []string{audit.EventDenied}, off},
		{lifecycle.Expired, lifecycle.Rollback, lifecycle.Expired, notFound, outcome.NotFound, nil, off},
		{lifecycle.Expired, lifecycle.Expire, lifecycle.Expired, unmoved, outcome.OK, nil, off},
	}

	// Every state a saved plan can be in, and every event, is a row; each
	// row's move is the lifecycle table's.
	seen := map[string]bool{}
	for _, c := range cases {
		seen[string(c.from)+" "+string(c.ev)] = true
		next, err := lifecycle.Next(c.from, c.ev)
		refused := c.rule != ""
		if refused != (err != nil) || (!refused && next != c.to) {
			t.Errorf("row %s %s: want %s (refused %v), the lifecycle table says %s, %v", c.from, c.ev, c.to, refused, next, err)
		}
		if refused && c.to != c.from {
			t.Errorf("row %s %s: a refusal moves the plan to %s", c.from, c.ev, c.to)
		}
	}
	for _, s := range lifecycle.States {
		if s == lifecycle.Rejected {
			continue // nothing is saved: no plan is ever loaded rejected
		}
		if lifecycleSetups[s] == nil {
			t.Errorf("no setup brings a plan to %s", s)
		}
		for _, ev := range lifecycle.Events {
			if !seen[string(s)+" "+string(ev)] {
				t.Errorf("no row for %s %s", s, ev)
			}
			if lifecycleOps[ev] == nil {
				t.Errorf("no operation for %s", ev)
			}
		}
	}

	for _, c := range cases {
		t.Run(fmt.Sprintf("%s/%s", c.from, c.ev), func(t *testing.T) {
			w := settingWorld(t)
			w.g.Policy.Modes.Types[descriptors.FileWrite] = policy.Confirm
			id := lifecycleSetups[c.from](w)
			w.wantState(id, c.from)
			before := w.events(settingID)
			fileBefore := w.file("proj/setting.txt")

			out, err := lifecycleOps[c.ev](w, id)

			switch c.rule {
			case "", unmoved:
				if err != nil {
					t.Fatalf("%s of a %s plan: %v", c.ev, c.from, err)
				}
			case notFound:
				if !errors.Is(err, plan.ErrNotFound) {
					t.Fatalf("rollback of an action never promoted: %v, want not found", err)
				}
			case expired:
				var exp *ExpiredError
				if !errors.As(err, &exp) {
					t.Fatalf("apply of an expired plan: %v, want *ExpiredError", err)
				}
				if o := exp.Outcome(); o.Code != outcome.Expired.Code || o.Rule != RuleExpired {
					t.Errorf("outcome %d %s, want %d %s", o.Code, o.Rule, outcome.Expired.Code, RuleExpired)
				}
				if exp.PlanID != id || exp.Expiry != w.g.Policy.PlanExpiry || exp.Age <= exp.Expiry {
					t.Errorf("ExpiredError %+v: want plan %s, older than %s", exp, id, w.g.Policy.PlanExpiry)
				}
			default:
				wantRule(t, err, c.rule, c.code)
			}
			w.wantState(id, c.to)
			w.wantFile("proj/setting.txt", c.file)
			if c.rule != "" && w.file("proj/setting.txt") != fileBefore {
				t.Errorf("a refused %s changed the real tree", c.ev)
			}
			w.wantNewEvents(settingID, before, c.events...)
			if c.from == lifecycle.Applied && c.ev == lifecycle.Apply && (out == nil || !out.AlreadyApplied) {
				t.Errorf("a repeated apply: outcome %+v, want AlreadyApplied", out)
			}
		})
	}
}

// TestApplyAllowed: a plan the policy allows is applied without anyone's
// confirmation (planned → applied); the action record and the applied
// record say no one was asked; the layer is promoted and the tree changed.
func TestApplyAllowed(t *testing.T) {
	w := settingWorld(t)
	e := w.plan(settingSpec())
	id := e.Plan.ID
	w.wantNewEvents(settingID, nil, audit.EventPlanned)
	if e.Plan.Mode != string(policy.Allow) || e.Plan.RiskAssessed != string(descriptors.RiskLow) {
		t.Fatalf("the plan is %s, %s; want LOW and allowed", e.Plan.RiskAssessed, e.Plan.Mode)
	}
	w.wantFile("proj/setting.txt", off) // a plan changes nothing

	adm, out, err := w.g.Apply(context.Background(), w.load(id), Approval{}, func(*plan.Plan, []string) (Approval, Answer) {
		t.Error("apply asked a person about a plan the policy allows")
		return Approval{}, NotAsked
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(adm.Confirm) != 0 || out.AlreadyApplied {
		t.Errorf("admission asks %q, already applied %v", adm.Confirm, out.AlreadyApplied)
	}
	if ap := out.Action.Approval; ap == nil || ap.Via != ViaNone {
		t.Errorf("the action record's approval is %+v, want via none", ap)
	}
	w.wantState(id, lifecycle.Applied)
	w.wantFile("proj/setting.txt", on)
	w.wantNewEvents(settingID, []string{audit.EventPlanned}, audit.EventApplied)
	if h, err := rollback.LoadActionHead(w.g.Home, settingID); err != nil || h.PlanID != id || h.State != lifecycle.Applied {
		t.Errorf("the action record: %+v, %v", h, err)
	}
}

// TestApplyAgain: applying an applied plan again is "already applied":
// nothing is done, even to a file changed since, and nothing is recorded.
func TestApplyAgain(t *testing.T) {
	w := settingWorld(t)
	id := w.plan(settingSpec()).Plan.ID
	w.mustApply(id)
	// Someone changes the file after the apply: a repeat must not put
	// the plan's content back.
	if err := os.WriteFile(w.root+"/proj/setting.txt", []byte("by hand\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := w.events(settingID)
	for _, ap := range []Approval{{}, NewApproval(ViaFlag)} {
		adm, out, err := w.g.Apply(context.Background(), w.load(id), ap, nil, nil)
		if err != nil {
			t.Fatalf("apply again (via %q): %v", ap.Via, err)
		}
		if out == nil || !out.AlreadyApplied || out.Action == nil || out.Action.PlanID != id {
			t.Errorf("apply again (via %q): outcome %+v, want already applied by plan %s", ap.Via, out, id)
		}
		if len(adm.Confirm) != 0 {
			t.Errorf("an applied plan asks for confirmation: %q", adm.Confirm)
		}
	}
	w.wantState(id, lifecycle.Applied)
	w.wantFile("proj/setting.txt", "by hand\n")
	w.wantNewEvents(settingID, before)
}

// TestQueueThenConfirm: under a confirm mode, apply without a
// confirmation leaves the plan pending (exit 7, a queued record), and so
// does a second try; apply --confirm then promotes it, and the action
// record keeps who confirmed and how.
func TestQueueThenConfirm(t *testing.T) {
	w := settingWorld(t)
	w.g.Policy.Modes.Types[descriptors.FileWrite] = policy.Confirm
	id := w.plan(settingSpec()).Plan.ID

	for i, want := range []lifecycle.State{lifecycle.Planned, lifecycle.Pending} {
		w.wantState(id, want)
		before := w.events(settingID)
		asked := 0
		adm, out, err := w.g.Apply(context.Background(), w.load(id), Approval{}, func(p *plan.Plan, why []string) (Approval, Answer) {
			asked++
			if p.ID != id || len(why) == 0 {
				t.Errorf("asked about plan %s for %q", p.ID, why)
			}
			return Approval{}, NotAsked // no one answered
		}, nil)
		need := wantConfirmation(t, err, RuleConfirmationRequired, "FILE_WRITE")
		if need.PlanID != id || need.Via != ViaFlag || need.Refused != "" {
			t.Errorf("try %d: %+v", i, need)
		}
		if asked != 1 || out != nil || adm == nil || adm.Decision.Mode != policy.Confirm {
			t.Errorf("try %d: asked %d times, outcome %+v, admission %+v", i, asked, out, adm)
		}
		w.wantState(id, lifecycle.Pending)
		w.wantFile("proj/setting.txt", off)
		w.wantNewEvents(settingID, before, audit.EventQueued)
		pending, err := w.g.Pending()
		if err != nil || len(pending) != 1 || pending[0].Plan.ID != id {
			t.Errorf("try %d: Pending() = %v, %v; want the plan once", i, pending, err)
		}
	}
	if got := w.load(id).Plan.ConfirmReasons; len(got) == 0 {
		t.Error("a pending plan keeps no reason it waits")
	}

	before := w.events(settingID)
	_, out, err := w.g.Apply(context.Background(), w.load(id), NewApproval(ViaFlag), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ap := out.Action.Approval; ap == nil || ap.Via != ViaFlag || ap.UID != os.Getuid() {
		t.Errorf("the action record's approval is %+v, want via flag by uid %d", ap, os.Getuid())
	}
	w.wantState(id, lifecycle.Applied)
	w.wantFile("proj/setting.txt", on)
	w.wantNewEvents(settingID, before, audit.EventApplied)
	if pending, _ := w.g.Pending(); len(pending) != 0 {
		t.Errorf("an applied plan is still pending: %v", pending)
	}
}

// TestNoAtTheQuestion: a person's no to apply's question denies the plan,
// as act deny does (exit 7, confirm.refused): its layer is gone, it is
// not pending, the tree is untouched, and its record is denied.
func TestNoAtTheQuestion(t *testing.T) {
	w := settingWorld(t)
	w.g.Policy.Modes.Types[descriptors.FileWrite] = policy.Confirm
	id := w.plan(settingSpec()).Plan.ID
	before := w.events(settingID)
	_, out, err := w.g.Apply(context.Background(), w.load(id), Approval{}, func(*plan.Plan, []string) (Approval, Answer) {
		return Approval{}, No
	}, nil)
	var refused *RefusedError
	if !errors.As(err, &refused) || refused.PlanID != id || out != nil {
		t.Fatalf("apply answered no: %v, %+v; want a refusal of plan %s", err, out, id)
	}
	if o, _ := outcomeOf(err); o != outcome.Refused {
		t.Errorf("outcome %+v, want refused (exit 7)", o)
	}
	w.wantState(id, lifecycle.Denied)
	w.wantFile("proj/setting.txt", off)
	w.wantNewEvents(settingID, before, audit.EventDenied)
	if pending, _ := w.g.Pending(); len(pending) != 0 {
		t.Errorf("a refused plan is pending: %v", pending)
	}
	if _, err := os.Stat(plan.LayerDir(w.g.Home.Root, id)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the refused plan's layer is still there: %v", err)
	}
	if p := w.load(id).Plan; p.DenyReason == "" {
		t.Error("the refused plan keeps no reason")
	}
}

// TestDeny: a denied plan's layer is gone, its deny time and reason are
// kept, a second deny is refused (exit 8) and adds no denied record; the
// action id planned again needs a person, who is told it was denied.
func TestDeny(t *testing.T) {
	w := settingWorld(t)
	id := w.plan(settingSpec()).Plan.ID
	if _, err := os.Stat(plan.LayerDir(w.g.Home.Root, id)); err != nil {
		t.Fatalf("a planned plan has no layer: %v", err)
	}
	p, err := w.g.Deny(context.Background(), id, "not this week")
	if err != nil {
		t.Fatal(err)
	}
	if p.DeniedAt == nil || !p.DeniedAt.Equal(w.now) || p.DenyReason != "not this week" {
		t.Errorf("denied at %v for %q", p.DeniedAt, p.DenyReason)
	}
	if _, err := os.Stat(plan.LayerDir(w.g.Home.Root, id)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a denied plan's layer is still there: %v", err)
	}
	e := w.load(id)
	if e.State != lifecycle.Denied || e.Plan.DenyReason != "not this week" {
		t.Errorf("loaded: %s, %q", e.State, e.Plan.DenyReason)
	}
	w.wantNewEvents(settingID, nil, audit.EventPlanned, audit.EventDenied)

	before := w.events(settingID)
	_, err = w.g.Deny(context.Background(), id, "again")
	wantRule(t, err, RuleNotAllowed, outcome.Conflict)
	if e := w.load(id); e.State != lifecycle.Denied || e.Plan.DenyReason != "not this week" {
		t.Errorf("after a refused deny: %s, %q", e.State, e.Plan.DenyReason)
	}
	w.wantNewEvents(settingID, before)

	// Applied anyway: refused, recorded, nothing changed; the message
	// says when and why it was denied.
	before = w.events(settingID)
	_, err = w.apply(id, NewApproval(ViaFlag))
	probs := wantRule(t, err, RuleDenied, outcome.Conflict)
	if msg := probs[0].Message; !containsAll(msg, id, "not this week") {
		t.Errorf("the refusal says %q", msg)
	}
	w.wantNewEvents(settingID, before, audit.EventApplyRefused)
	w.wantFile("proj/setting.txt", off)

	// Planned again: a person must confirm, and is told why.
	id2 := w.plan(settingSpec()).Plan.ID
	_, err = w.apply(id2, Approval{})
	wantConfirmation(t, err, RuleConfirmationRequired, "denied by a person")
	w.wantState(id2, lifecycle.Pending)
	w.wantFile("proj/setting.txt", off)
	w.mustApply(id2)
	w.wantFile("proj/setting.txt", on)
}

// TestExpiry: a plan past the policy's plan expiry is expired, planned or
// pending: it is no longer listed as pending, apply refuses it with an
// *ExpiredError and an expired record, and it can still be denied. A plan
// made in act's future is expired too.
func TestExpiry(t *testing.T) {
	for _, from := range []lifecycle.State{lifecycle.Planned, lifecycle.Pending} {
		t.Run(string(from), func(t *testing.T) {
			w := settingWorld(t)
			w.g.Policy.Modes.Types[descriptors.FileWrite] = policy.Confirm
			id := lifecycleSetups[from](w)
			w.advance(w.g.Policy.PlanExpiry) // exactly the expiry: still fresh
			w.wantState(id, from)
			w.advance(time.Second)
			w.wantState(id, lifecycle.Expired)
			if pending, _ := w.g.Pending(); len(pending) != 0 {
				t.Errorf("an expired plan is listed as pending: %v", pending)
			}
			if left := w.g.Left(w.load(id).Plan); left >= 0 {
				t.Errorf("Left() = %s for an expired plan", left)
			}

			before := w.events(settingID)
			_, err := w.apply(id, NewApproval(ViaFlag))
			var exp *ExpiredError
			if !errors.As(err, &exp) {
				t.Fatalf("apply: %v, want *ExpiredError", err)
			}
			if exp.Age != w.g.Policy.PlanExpiry+time.Second {
				t.Errorf("age %s", exp.Age)
			}
			w.wantNewEvents(settingID, before, audit.EventExpired)
			w.wantFile("proj/setting.txt", off)
			w.wantState(id, lifecycle.Expired)

			before = w.events(settingID)
			if err := w.deny(id); err != nil {
				t.Fatal(err)
			}
			w.wantState(id, lifecycle.Denied)
			w.wantNewEvents(settingID, before, audit.EventDenied)
		})
	}

	// Made more than a minute in act's future (the clock set back).
	w := settingWorld(t)
	id := w.plan(settingSpec()).Plan.ID
	w.advance(-time.Minute)
	w.wantState(id, lifecycle.Planned)
	w.advance(-time.Second)
	w.wantState(id, lifecycle.Expired)
}

// TestRollbackTwice: an applied action is rolled back (the tree as
// before, a rolled_back record); a second rollback is refused
// (rollback.already-rolled-back, a rollback_refused record) and so is an
// apply of its plan (apply.rolled-back, apply_refused), and neither
// changes the tree.
func TestRollbackTwice(t *testing.T) {
	w := settingWorld(t)
	id := w.plan(settingSpec()).Plan.ID
	w.mustApply(id)
	w.wantFile("proj/setting.txt", on)

	before := w.events(settingID)
	out, err := w.g.Rollback(context.Background(), settingID, false, Approval{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if out.Action == nil || out.Action.State != lifecycle.RolledBack || out.Action.RolledBackAt == nil || !out.Action.RolledBackAt.Equal(w.now) {
		t.Errorf("rollback outcome %+v", out.Action)
	}
	w.wantState(id, lifecycle.RolledBack)
	w.wantFile("proj/setting.txt", off)
	w.wantNewEvents(settingID, before, audit.EventRolledBack)

	before = w.events(settingID)
	_, err = w.g.Rollback(context.Background(), settingID, false, Approval{}, nil, nil)
	wantRule(t, err, rollback.RuleAlreadyRolled, outcome.Conflict)
	w.wantState(id, lifecycle.RolledBack)
	w.wantFile("proj/setting.txt", off)
	w.wantNewEvents(settingID, before, audit.EventRollbackRefused)

	before = w.events(settingID)
	_, err = w.apply(id, NewApproval(ViaFlag))
	wantRule(t, err, rollback.RuleWasRolledBack, outcome.Conflict)
	w.wantState(id, lifecycle.RolledBack)
	w.wantFile("proj/setting.txt", off)
	w.wantNewEvents(settingID, before, audit.EventApplyRefused)
}

func containsAll(s string, subs ...string) bool {
	return !slices.ContainsFunc(subs, func(sub string) bool { return !strings.Contains(s, sub) })
}
