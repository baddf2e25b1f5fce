package gate

import (
	"context"
	"errors"

	"github.com/act-project/act/audit"
	"github.com/act-project/act/descriptors"
	"github.com/act-project/act/internal/timings"
	"github.com/act-project/act/policy"
	"github.com/act-project/act/rollback"
)

// The session API: how every door (the CLI, act run, act mcp, the Claude
// Code and Codex hooks, adoption after PostToolUse) asks the gate about a
// saved plan. Each call decides, writes its record and returns a typed
// answer the door only translates into its protocol (docs/agents.md,
// "Adding a door"). A door never sequences Admit, Queue and Promote
// itself: the order, and the record of every refusal on the way, are the
// gate's.

// Decide admits the plan of e now (Admit) and records a refusal as
// apply_refused, the same event and reason on every door; an expiry is
// recorded by Admit as expired. A nil error means the plan may go on: to
// a person (Admission.Confirm) or to promotion.
func (g *Gate) Decide(ctx context.Context, e *Entry) (*Admission, error) {
	defer timings.Start(ctx, "admit: expiry, denial, changes, risk, policy now")()
	adm, err := g.Admit(e)
	var expired *ExpiredError
	if err == nil || errors.As(err, &expired) {
		return adm, err
	}
	return adm, g.refused(ctx, audit.EventApplyRefused, planEvent(audit.EventApplyRefused, e.Plan), err)
}

// A Door says what a door can do with the gate's answer on a plan.
type Door struct {
	// Prompt: the door puts its call to a person at the agent's own
	// prompt (a hook whose agent is known to show its question). A plan
	// that needs a person is then answered Ask rather than queued, where
	// the host policy counts that yes (confirmation.via: flag).
	Prompt bool
	// Later: an allowed plan is not promoted now; the door hands out the
	// command that promotes it (the hook's Bash replacement, act apply
	// --as-command), which comes back through Apply. A plan that changes
	// nothing is promoted now all the same (recorded as run): there is
	// nothing for a later command to promote.
	Later bool
}

// A Verdict is what the gate did with a plan a door submitted.
type Verdict int

const (
	// Promoted: allowed, and promoted (Decision.Outcome).
	Promoted Verdict = iota
	// Allowed: allowed; the door's own command promotes it (Door.Later).
	Allowed
	// Ask: a person must say yes at the door's prompt (Decision.Why).
	Ask
	// Queued: the plan waits in act pending for a person (Decision.Why).
	Queued
)

// A Decision is the gate's answer to Submit.
type Decision struct {
	Verdict   Verdict
	Admission *Admission
	// Why lists what a person must confirm (Ask, Queued).
	Why []string
	// Outcome is the promotion's (Promoted).
	Outcome *rollback.Outcome
}

// Submit is the gate's whole answer on the saved plan of e for a door
// that cannot wait at a terminal: Decide; promoted now when allowed (or
// left to the door's command, door.Later); put to the door's prompt where
// the policy counts a yes there (door.Prompt); else queued for a person.
// Every refusal on the way — the policy's, max_pending's, the
// promotion's — is recorded, as Apply records it, and returned as the
// error (a problem.List, *ExpiredError, or an ordinary error).
func (g *Gate) Submit(ctx context.Context, e *Entry, door Door) (*Decision, error) {
	adm, err := g.Decide(ctx, e)
	if err != nil {
		return nil, err
	}
	dec := &Decision{Admission: adm, Why: adm.Confirm}
	switch {
	case len(adm.Confirm) == 0 && door.Later && len(e.Plan.Changes) > 0:
		dec.Verdict = Allowed
		return dec, nil
	case len(adm.Confirm) == 0:
		dec.Verdict = Promoted
		dec.Outcome, err = g.promoteAdmitted(ctx, adm, NewApproval(ViaNone), nil)
		return dec, err
	case door.Prompt && g.Via() == ViaFlag:
		dec.Verdict = Ask
		return dec, nil
	}
	if err := g.queue(ctx, e, adm.Confirm); err != nil {
		return nil, err
	}
	dec.Verdict = Queued
	return dec, nil
}

// queue is Queue with its refusal (max_pending) recorded as apply_refused.
func (g *Gate) queue(ctx context.Context, e *Entry, why []string) error {
	if err := g.Queue(ctx, e, why); err != nil {
		return g.refused(ctx, audit.EventApplyRefused, planEvent(audit.EventApplyRefused, e.Plan), err)
	}
	return nil
}

// promoteAdmitted is the end of every promotion of an admitted, approved
// plan: a FILE_READ's content read again (the plan never kept it), then
// Promote; a refusal on the way is recorded.
func (g *Gate) promoteAdmitted(ctx context.Context, adm *Admission, ap Approval, progress rollback.Progress) (*rollback.Outcome, error) {
	p := adm.Plan
	var err error
	if adm.Reads, err = g.ReadBack(p); err != nil {
		return nil, g.refused(ctx, audit.EventApplyRefused, planEvent(audit.EventApplyRefused, p), err)
	}
	out, err := g.Promote(ctx, adm, ap, progress)
	if isRefusal(err) {
		ev := planEvent(audit.EventApplyRefused, p)
		ev.Approval = approvalOf(&ap.Approval)
		err = g.refused(ctx, audit.EventApplyRefused, ev, err)
	}
	return out, err
}

// Unplanned is the policy's decision on d, a descriptor whose dry run did
// not end (a command still running at a door's deadline): graded as act
// grades it without its changes (a command is at least MEDIUM: its
// effects only the dry run shows), with the command rules. A door that
// could let a person run such a call unreviewed (hooks.cannot_dry_run:
// ask) may do so only where this is no deny: the setting never loosens a
// mode the policy set.
func (g *Gate) Unplanned(d *descriptors.Descriptor) policy.Decision {
	rules := g.riskRules()
	rules.Unplanned = true
	return g.decide(d, Assess(d, nil, rules), nil)
}
