package gate

import (
	"context"
	"errors"
	"time"

	"github.com/act-project/act/audit"
	"github.com/act-project/act/internal/lifecycle"
	"github.com/act-project/act/internal/problem"
	"github.com/act-project/act/plan"
	"github.com/act-project/act/rollback"
)

// An Entry is one saved plan as the gate's store gives it: the plan, and
// where it stands now (docs/lifecycle.md, "One owner"). The state is
// derived in one place, stateOf: from plan.json's saved state (planned,
// pending, denied), the action record when this plan was promoted
// (applied, rolled back) and the clock (expired).
type Entry struct {
	Plan  *plan.Plan
	State lifecycle.State
}

// Load gives saved plan id with its state now; an unknown id is
// plan.ErrNotFound.
func (g *Gate) Load(id string) (*Entry, error) {
	p, err := loadPlan(g.Home.Root, id)
	if err != nil {
		return nil, err
	}
	st, err := g.stateOf(p)
	if err != nil {
		return nil, err
	}
	return &Entry{Plan: p, State: st}, nil
}

// loadPlan reads a saved plan (a variable: a test counts the plans read).
var loadPlan = plan.Load

// stateOf is where p stands now.
func (g *Gate) stateOf(p *plan.Plan) (lifecycle.State, error) {
	h, err := rollback.LoadActionHead(g.Home, p.ActionID)
	switch {
	case err == nil && h.PlanID == p.ID:
		return h.State, nil
	case err != nil && !errors.Is(err, plan.ErrNotFound):
		return "", err
	}
	if p.State.Waiting() && g.expired(p) {
		return lifecycle.Expired, nil
	}
	return p.State, nil
}

// expired reports whether p is older than the policy's plan expiry, or
// made more than a minute in act's future (a clock set back, or a
// plan.json edited: either way not what was reviewed when it was made).
func (g *Gate) expired(p *plan.Plan) bool {
	age := g.Now().Sub(p.CreatedAt)
	return age > g.Policy.PlanExpiry || age < -time.Minute
}

// Left is how long p may still be applied (negative once expired).
func (g *Gate) Left(p *plan.Plan) time.Duration {
	return p.CreatedAt.Add(g.Policy.PlanExpiry).Sub(g.Now())
}

// transition moves e by event ev, the only way a plan's state changes:
// refused (exit 8, rule) unless the lifecycle allows it; then persist, if
// not nil, makes the move (plan.json, or the promotion or rollback the
// engine carries out, which records itself inside its commit); then rec,
// if not nil, is the move's audit record.
func (g *Gate) transition(ctx context.Context, e *Entry, ev lifecycle.Event, rule string, persist func(to lifecycle.State) error, rec *audit.Event) error {
	to, err := lifecycle.Next(e.State, ev)
	if err != nil {
		return problem.List{{Rule: rule, Field: "plan_id", Layer: problem.Conflict,
			Message: "plan " + e.Plan.ID + ": " + err.Error()}}
	}
	if persist != nil {
		if err := persist(to); err != nil {
			return err
		}
	}
	e.State = to
	g.indexDone(e) // the plans index: act pending and the layers limit need not read it again
	if rec != nil {
		return g.record(ctx, *rec)
	}
	return nil
}

// save is the persist of a move that plan.json holds (queue, deny).
func (g *Gate) save(p *plan.Plan) func(lifecycle.State) error {
	return func(to lifecycle.State) error {
		old := p.State
		p.State = to
		if err := plan.Update(g.Home.Root, p); err != nil {
			p.State = old
			return err
		}
		return nil
	}
}

// EntryOf is the entry of plan p, loaded or just made, with its state now.
func (g *Gate) EntryOf(p *plan.Plan) (*Entry, error) {
	st, err := g.stateOf(p)
	if err != nil {
		return nil, err
	}
	return &Entry{Plan: p, State: st}, nil
}
