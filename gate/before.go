package gate

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/act-project/act/descriptors"
	"github.com/act-project/act/internal/outcome"
	"github.com/act-project/act/internal/problem"
	"github.com/act-project/act/plan"
	"github.com/act-project/act/rollback"
)

// Before a dry run: promote once, the cooldown, max_runs and the reuse of
// a fresh saved plan (docs/lifecycle.md, "What the gate decides").

// PrePlan is what the gate found before a dry run of a descriptor.
type PrePlan struct {
	// Applied is the action, when the same id and content was promoted
	// already: nothing to plan.
	Applied *rollback.Action
	// Reuse is a fresh saved plan of the same id and content that
	// `act apply DESCRIPTOR` promotes instead of running again.
	Reuse *Entry
	// Refusals are the id's earlier refusals that make a person's
	// confirmation necessary now.
	Refusals []string
	// Reserved: a run of the sandbox was counted ahead, given back by
	// Plan if no command runs.
	Reserved bool
}

// BeforePlan applies the rules that come before a dry run of d (digest
// its canonical digest): promote once (an id rolled back, or applied with
// other content, is a conflict; the same content is PrePlan.Applied), the
// cooldown block, and max_runs: a run of the sandbox is counted here, before
// it happens. With reuse (`act apply DESCRIPTOR`), a fresh saved plan of
// the same id and digest is returned instead, and nothing is counted: one
// that is planned or pending, within the plan expiry, and made after the
// last promotion or rollback in the state dir.
func (g *Gate) BeforePlan(ctx context.Context, d *descriptors.Descriptor, digest string, reuse bool) (*PrePlan, error) {
	g.prepareRecord()
	pre, err := g.beforePlan(ctx, d, digest, reuse)
	var probs problem.List
	if errors.As(err, &probs) && len(probs) > 0 {
		// A block (max_runs, cooldown) or a conflict (promote once) is a
		// decision: recorded, though not counted against the id.
		ev := refusalEvent(d, digest, probs)
		err = g.refused(ctx, ev.Name, ev, err)
	}
	return pre, err
}

func (g *Gate) beforePlan(ctx context.Context, d *descriptors.Descriptor, digest string, reuse bool) (*PrePlan, error) {
	pre := &PrePlan{}
	a, err := rollback.Promoted(g.Home, d.ActionID, digest)
	pre.Applied = a
	if err != nil || (a != nil && reuse) {
		return pre, err // apply answers "already applied"; plan goes on
	}
	if err := g.cooldownBlock(plan.CooldownKeys(d, nil)); err != nil {
		return nil, err
	}
	at, err := loadAttempts(g.Home, d.ActionID)
	if err != nil {
		return nil, err
	}
	pre.Refusals = refusalReasons(at.Refusals, digest)
	if reuse {
		if pre.Reuse = g.freshPlan(at, digest); pre.Reuse != nil {
			return pre, nil
		}
	}
	if !plan.NeedsSandbox(d) {
		return pre, nil
	}
	err = updateAttempts(ctx, g.Home, d.ActionID, func(at *attempts) error {
		if max := int(d.Sandbox.MaxRuns); at.Runs >= max {
			// Planning again what was planned already is a look at that
			// plan, not a run: a fresh one is shown instead of refusing.
			if pre.Reuse = g.freshPlan(at, digest); pre.Reuse != nil {
				return errReused
			}
			return problem.List{{
				Rule: RuleMaxRuns, Field: "sandbox.max_runs", Layer: problem.Policy,
				Message: fmt.Sprintf("the sandbox already ran the commands of action %s %s, its max_runs is %d: give a new action a new action_id", d.ActionID, plural(at.Runs, "time"), max),
			}}
		}
		at.Runs++
		return nil
	})
	pre.Reserved = err == nil
	return pre, err
}

// errReused stops a dry run whose action's fresh saved plan BeforePlan
// found instead (PrePlan.Reuse): nothing of it runs.
var errReused = errors.New("a fresh saved plan of this descriptor is reused")

// freshPlan is the newest saved plan of at's action id and digest that may
// still be applied and was made after the last promotion or rollback in
// the state dir (each writes an action record; a plan made before dry-ran
// another tree), or nil.
func (g *Gate) freshPlan(at *attempts, digest string) *Entry {
	var epoch time.Time
	if fi, err := os.Stat(g.Home.Actions()); err == nil {
		epoch = fi.ModTime()
	}
	for i := len(at.Plans) - 1; i >= 0; i-- {
		e, err := g.Load(at.Plans[i])
		if err != nil || e.Plan.DescriptorDigest != digest {
			continue
		}
		if e.State.Waiting() && e.Plan.CreatedAt.After(epoch) {
			return e
		}
	}
	return nil
}

// releaseRun gives back the run of the sandbox BeforePlan counted ahead
// for action id, when no command ran.
func (g *Gate) releaseRun(ctx context.Context, id string) error {
	return updateAttempts(ctx, g.Home, id, func(at *attempts) error {
		if at.Runs > 0 {
			at.Runs--
		}
		return nil
	})
}

// refusalReasons says why earlier refusals need a person now: after a
// rejection (6) or block (4), planning the id again with other content;
// after a failed precondition (5), planning it again at all.
func refusalReasons(refusals []Refusal, digest string) []string {
	var why []string
	for _, r := range refusals {
		if r.Code == outcome.Precondition.Code || r.Rule == RuleDenied || r.Digest != digest {
			what := map[int]string{
				outcome.Blocked.Code:      "blocked by the policy",
				outcome.Precondition.Code: "stopped by a failed precondition",
				outcome.Rejected.Code:     "rejected at its dry run",
				outcome.Conflict.Code:     "denied by a person",
			}[r.Code]
			why = append(why, fmt.Sprintf("this action id was %s at %s (%s); it is planned again", what, r.At.UTC().Format(time.RFC3339), r.Rule))
		}
	}
	return why
}
