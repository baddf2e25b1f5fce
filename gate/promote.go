package gate

import (
	"context"
	"errors"
	"strings"

	"github.com/act-project/act/audit"
	"github.com/act-project/act/internal/lifecycle"
	"github.com/act-project/act/internal/outcome"
	"github.com/act-project/act/internal/problem"
	"github.com/act-project/act/plan"
	"github.com/act-project/act/rollback"
)

// Apply: decide, approve, then queue or promote; and adoption, the same
// decision for a change an agent's own tool made (docs/promotion.md).

// An Asker asks a person to confirm plan p for the reasons why, and
// returns their answer and, for a yes, the approval given.
type Asker func(p *plan.Plan, why []string) (Approval, Answer)

// An Answer is what came of an Asker's question.
type Answer int

const (
	// NotAsked: no person could be asked (no terminal, or the answer
	// ended before a line): the plan stays pending.
	NotAsked Answer = iota
	// Yes: a person approved; the Approval says how.
	Yes
	// No: a person refused: the plan is denied.
	No
)

// RefusedError is a plan a person refused at the question apply put to
// them (act apply's or act run's y/N): it is denied, as act deny denies
// it; its outcome is refused (exit 7, confirm.refused).
type RefusedError struct {
	PlanID string
	// Reason is the reason kept with the denied plan.
	Reason string
}

func (e *RefusedError) Error() string {
	return "plan " + e.PlanID + " denied: " + e.Reason
}

// Outcome is refused (exit 7, confirm.refused).
func (e *RefusedError) Outcome() outcome.Outcome { return outcome.Refused }

// Rule is the rule id of the outcome.
func (e *RefusedError) Rule() string { return outcome.Refused.Rule }

// refusedAtPrompt is the reason kept with a plan a person answered no to.
const refusedAtPrompt = "a person answered no to act's question at the terminal"

// Apply is the gate's whole sequence for promoting the saved plan p, in
// order: Admit decides now (expired, denied, blocked, the change list, what
// needs a person); Approve checks ap, or what ask obtains when ap is not
// enough (nil never asks); a missing confirmation leaves the plan pending
// (Queue: *ConfirmationRequired), and a person's no denies it
// (*RefusedError); Promote promotes. Every refusal on the
// way is recorded (apply_refused; expired and queued have records of their
// own). The Admission is returned whenever Admit got that far. The CLI and
// the MCP server both apply through it.
func (g *Gate) Apply(ctx context.Context, e *Entry, ap Approval, ask Asker, progress rollback.Progress) (*Admission, *rollback.Outcome, error) {
	p := e.Plan
	adm, err := g.Decide(ctx, e)
	if err != nil {
		return adm, nil, err // recorded by Decide
	}
	if len(adm.Confirm) > 0 {
		if ap, err = g.Approve(adm.Confirm, p, ap); err != nil && ask != nil {
			switch given, ans := ask(p, adm.Confirm); ans {
			case Yes:
				ap, err = g.Approve(adm.Confirm, p, given)
			case No:
				// The person saw the plan and said no: that is act deny.
				if _, derr := g.Deny(ctx, p.ID, refusedAtPrompt); derr != nil {
					return adm, nil, derr
				}
				return adm, nil, &RefusedError{PlanID: p.ID, Reason: refusedAtPrompt}
			}
		}
		var need *ConfirmationRequired
		if errors.As(err, &need) {
			if qerr := g.queue(ctx, e, need.Why); qerr != nil {
				return adm, nil, qerr // too many plans wait already (max_pending): recorded
			}
			return adm, nil, err
		}
		if err != nil {
			return adm, nil, err
		}
	} else if ap.Via == "" {
		ap = NewApproval(ViaNone)
	}
	out, err := g.promoteAdmitted(ctx, adm, ap, progress)
	return adm, out, err
}

// Queue leaves e pending a person's confirmation, for the reasons why —
// unless as many plans as the policy allows wait already (exit 4).
func (g *Gate) Queue(ctx context.Context, e *Entry, why []string) error {
	p := e.Plan
	if err := g.queueLimit(e); err != nil {
		return err
	}
	old := p.ConfirmReasons
	p.ConfirmReasons = why
	ev := planEvent(audit.EventQueued, p)
	setOutcome(&ev, outcome.Queued)
	ev.Reason, ev.Rules = strings.Join(why, "; "), nil
	if err := g.transition(ctx, e, lifecycle.Queue, RuleNotAllowed, g.save(p), &ev); err != nil {
		p.ConfirmReasons = old
		return err
	}
	return nil
}

// Promote promotes an admitted plan, approved by ap (already checked by
// Approve), under the state-dir lock; the approval is kept with the action
// record.
func (g *Gate) Promote(ctx context.Context, adm *Admission, ap Approval, progress rollback.Progress) (*rollback.Outcome, error) {
	host := plan.DefaultHost()
	var out *rollback.Outcome
	if adm.Entry.State == lifecycle.RolledBack {
		// Promote once: the engine's answer names when it was rolled back.
		_, err := rollback.Promoted(g.Home, adm.Plan.ActionID, adm.Plan.DescriptorDigest)
		return nil, err
	}
	err := g.transition(ctx, adm.Entry, lifecycle.Apply, RuleNotAllowed, func(lifecycle.State) (err error) {
		out, err = g.promote(ctx, adm, ap, host, progress)
		return err
	}, nil)
	if err == nil && out != nil && !out.AlreadyApplied {
		// Promotion copied the layer's files (docs/sandbox-promotion.md):
		// the layer of an applied plan is of no more use, and goes now
		// rather than at gc (a failure only leaves it to gc).
		g.dropLayer(ctx, adm.Plan)
	}
	return out, err
}

// promote is the engine's promotion of an admitted plan, recorded inside
// its commit (applied) or after its undoing (reverted).
func (g *Gate) promote(ctx context.Context, adm *Admission, ap Approval, host plan.Host, progress rollback.Progress) (*rollback.Outcome, error) {
	out, err := rollback.Apply(ctx, g.Home, adm.Plan, rollback.Options{
		Now:      g.Now,
		Progress: progress,
		Approval: &ap.Approval,
		Preconditions: func() problem.List {
			return plan.CheckPreconditions(adm.Descriptor, host, g.Now(), g.Policy.IdlePeriod)
		},
		Record: g.recordApplied(ctx, adm, ap, ""),
	})
	var rev *rollback.RevertedError
	if errors.As(err, &rev) {
		ev := planEvent(audit.EventReverted, adm.Plan)
		setOutcome(&ev, outcome.Reverted)
		ev.Reason, ev.Approval = err.Error(), approvalOf(&ap.Approval)
		if rerr := g.record(ctx, ev); rerr != nil {
			return out, errors.Join(err, rerr)
		}
	}
	return out, err
}

// The reasons an adoption's record gives (docs/agents.md, "A yes at Claude
// Code's prompt"): what act checked itself, and where the yes came from.
// act never sees the agent's prompt; the note that ties the tool call to
// the plan is in the state directory, which the agent may write. So a
// record says that a person was asked only where the policy needed one,
// and that the yes is the agent host's, never that a person allowed it.
const (
	adoptedChecked = "adopted: act checked that the agent's tool wrote exactly the reviewed change (every path against the plan's digests, every kept copy against what the plan found)"
	adoptedNoYes   = adoptedChecked + "; the plan needed no confirmation"
	adoptedAsked   = adoptedChecked + "; the confirmation was asked at the agent's prompt, which act does not see: the yes is the agent host's (it ran the call act asked about), tied to this plan only by act's note in its state directory"
)

// Adopt records the planned plan of e as applied where an agent's own
// tool made its changes, the call allowed at the agent's prompt
// (docs/agents.md): ap is what that prompt counts as where the plan needs
// a person, which must count under the policy as any other (only a flag
// counts: the prompt is not a terminal and signs nothing). The real tree
// must hold exactly the plan's changes and copies the kept copies of what
// they replaced (rollback.Adopt), so that act rollback undoes them;
// nothing on the tree is changed. It is decided as an apply (admitted,
// approved, recorded), and refused (exit 8) where the tree is not what the
// plan makes of it. The record says what act checked, and where the yes
// came from: none was needed (recorded as none, whatever ap says), or it
// was asked at a prompt act does not see.
func (g *Gate) Adopt(ctx context.Context, e *Entry, ap Approval, copies map[int]string) (*rollback.Outcome, error) {
	p := e.Plan
	adm, err := g.Decide(ctx, e)
	if err != nil {
		return nil, err // recorded by Decide
	}
	reason := adoptedAsked
	if len(adm.Confirm) == 0 {
		reason, ap = adoptedNoYes, NewApproval(ViaNone)
	}
	if ap, err = g.Approve(adm.Confirm, p, ap); err != nil {
		return nil, g.refused(ctx, audit.EventApplyRefused, planEvent(audit.EventApplyRefused, p), err)
	}
	var out *rollback.Outcome
	err = g.transition(ctx, e, lifecycle.Apply, RuleNotAllowed, func(lifecycle.State) (err error) {
		out, err = rollback.Adopt(ctx, g.Home, p, copies, rollback.Options{
			Now:      g.Now,
			Approval: &ap.Approval,
			Record:   g.recordApplied(ctx, adm, ap, reason),
		})
		return err
	}, nil)
	var probs problem.List
	if errors.As(err, &probs) {
		ev := planEvent(audit.EventApplyRefused, p)
		ev.Approval = approvalOf(&ap.Approval)
		err = g.refused(ctx, audit.EventApplyRefused, ev, err)
	}
	return out, err
}

// recordApplied records the promotion (or, with a reason, the adoption)
// of the admitted plan, approved by ap.
func (g *Gate) recordApplied(ctx context.Context, adm *Admission, ap Approval, reason string) func(*rollback.Action, bool) error {
	return g.recordOutcome(ctx, func(*rollback.Action) audit.Event {
		name := audit.EventApplied
		if NothingToApprove(adm.Plan) && reason == "" {
			name, reason = audit.EventRan, "it changed nothing: there was nothing to promote or to approve"
			if len(adm.Waived) > 0 {
				reason += " (a change would have needed a person: " + strings.Join(adm.Waived, "; ") + ")"
			}
		}
		ev := planEvent(name, adm.Plan)
		ev.Status, ev.Approval = outcome.Succeeded.Status, approvalOf(&ap.Approval)
		ev.Policy = &audit.Policy{Mode: string(adm.Decision.Mode), Source: adm.Decision.Source}
		ev.Risk.Assessed = string(adm.Risk.Assessed)
		ev.Reason = reason
		return ev
	})
}
