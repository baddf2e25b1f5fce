package gate

import (
	"context"
	"fmt"
	"slices"

	"github.com/act-project/act/audit"
	"github.com/act-project/act/diff"
	"github.com/act-project/act/internal/lifecycle"
	"github.com/act-project/act/internal/outcome"
	"github.com/act-project/act/internal/problem"
	"github.com/act-project/act/plan"
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

// Plans returns every saved plan with its state now, newest first: each
// plan read (act history is linear in the plans kept).
func (g *Gate) Plans() ([]Entry, error) {
	return g.scan(false)
}

// Pending returns the plans waiting for a person, newest first. It reads
// only the plans the plans index does not list as done (index.go): the
// plans that wait, and those expired or never queued until act gc removes
// them, however many actions were applied before.
func (g *Gate) Pending() ([]Entry, error) {
	all, err := g.scan(true)
	if err != nil {
		return nil, err
	}
	var out []Entry
	for _, e := range all {
		if e.State == lifecycle.Pending {
			out = append(out, e)
		}
	}
	return out, nil
}

// scan loads the saved plans, newest first; with skipDone, not those the
// plans index lists as done. Those it finds done are added to the index.
func (g *Gate) scan(skipDone bool) ([]Entry, error) {
	ids, err := plan.List(g.Home.Root)
	if err != nil {
		return nil, err
	}
	indexed, lines := g.readIndex()
	var out []Entry
	var found []*Entry
	for _, id := range ids {
		_, listed := indexed[id]
		if skipDone && listed {
			continue
		}
		e, err := g.Load(id)
		if err != nil {
			continue // a torn plan is gc's, not the inbox's
		}
		if done(e.State) && !listed {
			found = append(found, e)
		}
		out = append(out, *e)
	}
	g.noteDone(found, indexed, lines, ids)
	slices.SortFunc(out, func(a, b Entry) int { return b.Plan.CreatedAt.Compare(a.Plan.CreatedAt) })
	return out, nil
}

// queueLimit refuses (exit 4) a plan about to wait when as many as the
// policy allows wait already.
func (g *Gate) queueLimit(e *Entry) error {
	if e.State == lifecycle.Pending {
		return nil // waiting already
	}
	waiting, err := g.Pending()
	if err != nil {
		return err
	}
	if max := g.maxPending(); len(waiting) >= max {
		return problem.List{{
			Rule: RuleMaxPending, Field: "action_id", Layer: problem.Policy,
			Message: fmt.Sprintf("%d plans already wait for a person, the policy's limit: deny or apply some (%s lists them) before queueing more", len(waiting), g.actLine("pending")),
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
	e, err := g.Load(id)
	if err != nil {
		unlock()
		return nil, err
	}
	p := e.Plan
	now := g.Now().UTC()
	oldAt, oldReason := p.DeniedAt, p.DenyReason
	p.DeniedAt, p.DenyReason = &now, reason
	err = g.transition(ctx, e, lifecycle.Deny, RuleNotAllowed, g.save(p), nil)
	if err != nil {
		p.DeniedAt, p.DenyReason = oldAt, oldReason
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
	ev.Status, ev.Reason = outcome.Denied.Status, reason
	if err := g.record(ctx, ev); err != nil {
		return p, err
	}
	return p, updateAttempts(ctx, g.Home, p.ActionID, func(at *attempts) error {
		at.Refusals = append(at.Refusals, Refusal{Digest: p.DescriptorDigest, Code: outcome.Conflict.Code, Rule: RuleDenied, At: now})
		return nil
	})
}

// Summary counts a plan's changes.
func Summary(p *plan.Plan) (create, modify, delete int) { return diff.Summary(p.Changes) }
