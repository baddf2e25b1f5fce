package gate

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/act-project/act/audit"
	"github.com/act-project/act/diff"
	"github.com/act-project/act/internal/problem"
	"github.com/act-project/act/plan"
	"github.com/act-project/act/rollback"
	"github.com/act-project/act/sandbox"
)

// RuleMaxPending: as many plans as the policy allows already wait for a
// person (exit 4).
const RuleMaxPending = "policy.max-pending"

// DefaultMaxPending is how many plans may wait when the policy sets no
// limit.
const DefaultMaxPending = 50

func (g *Gate) maxPending() int {
	if n := g.Policy.MaxPending; n > 0 {
		return int(n)
	}
	return DefaultMaxPending
}

// Status is where p stands now: its saved state, or expired for a planned
// or pending plan older than the policy's plan expiry.
func (g *Gate) Status(p *plan.Plan) State {
	if (p.State == plan.Planned || p.State == plan.Pending) && g.Now().Sub(p.CreatedAt) > g.Policy.PlanExpiry {
		return Expired
	}
	return State(p.State)
}

// Left is how long p may still be applied (negative once expired).
func (g *Gate) Left(p *plan.Plan) time.Duration {
	return p.CreatedAt.Add(g.Policy.PlanExpiry).Sub(g.Now())
}

// A Listed plan is one saved plan with where it stands now.
type Listed struct {
	Plan  *plan.Plan
	State State
}

// Plans returns every saved plan with its state now, newest first.
func (g *Gate) Plans() ([]Listed, error) {
	ids, err := plan.List(g.Home.Root)
	if err != nil {
		return nil, err
	}
	var out []Listed
	for _, id := range ids {
		p, err := rollback.LoadPlan(g.Home, id)
		if err != nil {
			continue // a torn plan is gc's, not the inbox's
		}
		out = append(out, Listed{Plan: p, State: g.Status(p)})
	}
	slices.SortFunc(out, func(a, b Listed) int { return b.Plan.CreatedAt.Compare(a.Plan.CreatedAt) })
	return out, nil
}

// Pending returns the plans waiting for a person, newest first.
func (g *Gate) Pending() ([]Listed, error) {
	all, err := g.Plans()
	if err != nil {
		return nil, err
	}
	var out []Listed
	for _, l := range all {
		if l.State == Pending {
			out = append(out, l)
		}
	}
	return out, nil
}

// queueLimit refuses (exit 4) a plan about to wait when as many as the
// policy allows wait already.
func (g *Gate) queueLimit(p *plan.Plan) error {
	if p.State == plan.Pending {
		return nil // waiting already
	}
	waiting, err := g.Pending()
	if err != nil {
		return err
	}
	if max := g.maxPending(); len(waiting) >= max {
		return problem.List{{
			Rule: RuleMaxPending, Field: "action_id", Layer: problem.Policy,
			Message: fmt.Sprintf("%d plans already wait for a person, the policy's limit: deny or apply some (act pending lists them) before queueing more", len(waiting)),
		}}
	}
	return nil
}

// Deny records a person's refusal of plan id: it is denied, its layer is
// removed, and its action id can then only be planned again with a
// person's confirmation.
func (g *Gate) Deny(ctx context.Context, id, reason string) (*plan.Plan, error) {
	unlock, err := g.Home.Lock(ctx)
	if err != nil {
		return nil, err
	}
	p, err := rollback.LoadPlan(g.Home, id)
	if err != nil {
		unlock()
		return nil, err
	}
	to, err := Next(g.Status(p), EventDeny)
	if err != nil {
		unlock()
		return p, problem.List{{Rule: RuleDenied, Field: "plan_id", Layer: problem.Conflict, Message: err.Error()}}
	}
	now := g.Now().UTC()
	p.State, p.DeniedAt, p.DenyReason = plan.State(to), &now, reason
	if err := plan.Update(g.Home.Root, p); err != nil {
		unlock()
		return p, err
	}
	// The saved state says denied first: a crash before the layer is gone
	// leaves a denied plan with a layer, which nothing promotes.
	err = sandbox.RemoveAll(plan.LayerDir(g.Home.Root, id))
	unlock()
	if err != nil {
		return p, err
	}
	ev := planEvent(audit.EventDenied, p)
	ev.Status, ev.Reason = "denied", reason
	if err := g.record(ctx, ev); err != nil {
		return p, err
	}
	return p, updateAttempts(ctx, g.Home, p.ActionID, func(at *attempts) error {
		at.Refusals = append(at.Refusals, Refusal{Digest: p.DescriptorDigest, Code: 8, Rule: RuleDenied, At: now})
		return nil
	})
}

// Summary counts a plan's changes.
func Summary(p *plan.Plan) (create, modify, delete int) { return diff.Summary(p.Changes) }
