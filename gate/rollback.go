package gate

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/act-project/act/audit"
	"github.com/act-project/act/internal/lifecycle"
	"github.com/act-project/act/internal/outcome"
	"github.com/act-project/act/internal/problem"
	"github.com/act-project/act/plan"
	"github.com/act-project/act/rollback"
)

// Rollback of a promoted action, through the engine (docs/promotion.md,
// "Rollback").

// Rollback rolls back action id; a forced one needs a person's
// confirmation (ap, or what ask obtains when ap is not enough; nil never
// asks), as the host counts it. Every refusal is recorded
// (rollback_refused).
func (g *Gate) Rollback(ctx context.Context, id string, force bool, ap Approval, ask func() (Approval, bool), progress rollback.Progress) (*rollback.Outcome, error) {
	refused := audit.Event{ActionID: id}
	if force {
		why := []string{"rollback --force restores even paths changed since the apply (their current versions are saved)"}
		_, err := g.Approve(why, nil, ap)
		if err != nil && ask != nil {
			if given, ok := ask(); ok {
				ap = given
				_, err = g.Approve(why, nil, ap)
			}
		}
		if err != nil {
			return nil, g.refused(ctx, audit.EventRollbackRefused, refused, err)
		}
		refused.Approval = approvalOf(&ap.Approval)
	}
	e, err := g.actionEntry(id)
	if err != nil {
		return nil, err
	}
	if e.State == lifecycle.RolledBack {
		a, err := rollback.LoadAction(g.Home, id)
		if err != nil {
			return nil, err
		}
		return &rollback.Outcome{Action: a}, g.refused(ctx, audit.EventRollbackRefused, refused, problem.List{{
			Rule: rollback.RuleAlreadyRolled, Field: "action_id", Layer: problem.Conflict,
			Message: fmt.Sprintf("action %s was already rolled back at %s", id, a.RolledBackAt.UTC().Format(time.RFC3339)),
		}})
	}
	var out *rollback.Outcome
	err = g.transition(ctx, e, lifecycle.Rollback, rollback.RuleAlreadyRolled, func(lifecycle.State) (err error) {
		out, err = g.rollback(ctx, id, force, ap, progress)
		return err
	}, nil)
	if out != nil && out.Action != nil {
		refused.PlanID, refused.DescriptorSHA256 = out.Action.PlanID, out.Action.DescriptorDigest
	}
	return out, g.refused(ctx, audit.EventRollbackRefused, refused, err)
}

// actionEntry is the entry of the plan action id promoted; when gc has
// removed that plan, an entry of its id alone, in the action's state (the
// engine then says why it cannot be rolled back).
func (g *Gate) actionEntry(id string) (*Entry, error) {
	h, err := rollback.LoadActionHead(g.Home, id)
	if err != nil {
		return nil, err
	}
	e, err := g.Load(h.PlanID)
	if errors.Is(err, plan.ErrNotFound) {
		return &Entry{Plan: &plan.Plan{ID: h.PlanID, ActionID: id}, State: h.State}, nil
	}
	return e, err
}

// rollback is the engine's rollback of action id, recorded inside its
// commit.
func (g *Gate) rollback(ctx context.Context, id string, force bool, ap Approval, progress rollback.Progress) (*rollback.Outcome, error) {
	return rollback.Rollback(ctx, g.Home, id, rollback.Options{Now: g.Now, Force: force, Progress: progress,
		Record: g.recordOutcome(ctx, func(a *rollback.Action) audit.Event {
			ev := audit.Event{Name: audit.EventRolledBack, ActionID: a.ActionID, PlanID: a.PlanID,
				DescriptorSHA256: a.DescriptorDigest, Status: outcome.RolledBack.Status, Changes: changeSummary(a.Changes)}
			if force {
				ev.Reason = "forced"
				ev.Approval = approvalOf(&ap.Approval)
			}
			return ev
		}),
	})
}
