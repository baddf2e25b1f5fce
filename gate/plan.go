package gate

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/act-project/act/audit"
	"github.com/act-project/act/descriptors"
	"github.com/act-project/act/diff"
	"github.com/act-project/act/internal/timings"
	"github.com/act-project/act/plan"
)

// Plan is the gate's whole sequence for a dry run of d, in order:
//
//  1. check: BeforePlan (promote once, cooldown, max_runs). With reuse
//     (act apply DESCRIPTOR) it runs first, and may answer without a dry
//     run (PrePlan.Applied, PrePlan.Reuse); without, it runs beside the
//     dry run (plan.Ahead.Check), and no command runs and no request is
//     sent before it has passed;
//  2. dry run: a draft (plan.DryRun), without the by-products a
//     command wrote to paths git ignores (byProducts);
//  3. assess: act's risk and the policy's decision, from the draft's
//     changes; a block discards the draft;
//  4. save and record: the plan is saved with its planned record, both
//     or neither.
//
// A refusal at any step is recorded (docs/lifecycle.md). opts.Digest must
// be set; opts.Ahead.Check is the gate's own.
func (g *Gate) Plan(ctx context.Context, d *descriptors.Descriptor, opts plan.Options, reuse bool) (*plan.Plan, *PrePlan, error) {
	var pre *PrePlan
	before := func() (err error) {
		defer timings.Start(ctx, "gate: promote once, cooldown, max_runs")()
		pre, err = g.BeforePlan(ctx, d, opts.Digest, reuse)
		return err
	}
	if reuse {
		if err := before(); err != nil || pre.Applied != nil || pre.Reuse != nil {
			return nil, pre, err
		}
	} else {
		opts.Ahead.Check = plan.StartCheck(before)
	}
	// A run of the sandbox is reserved by the check (so that plans of one
	// id at once cannot pass max_runs together) and counts only once a
	// command has run: a plan refused or stopped before that gives it back.
	// What the command writes to paths git ignores is a by-product: out
	// of the plan before its changes are checked (byProducts).
	opts.ByProducts = g.byProducts(d)
	var started atomic.Bool
	opts.Ahead.Started = func() { started.Store(true) }
	// What the plan's last steps need and the dry run does not change is
	// made beside it, while this process mostly waits for the sandbox.
	held := g.besideDryRun()
	dctx, end := timings.Begin(ctx, "dry run")
	dr, err := plan.DryRun(dctx, d, opts)
	end()
	cerr := opts.Ahead.Check.Wait() // done by now, or nil: with reuse it ran first
	switch {
	case errors.Is(cerr, errReused):
		if err == nil {
			dr.Discard()
		}
		return pre.Reuse.Plan, pre, nil
	case cerr != nil:
		// The gate's own refusal comes first, as if it had been checked
		// before the dry run began.
		if err == nil {
			dr.Discard()
		}
		return nil, pre, cerr
	}
	if err == nil && ctx.Err() != nil {
		dr.Discard() // stopped (Ctrl-C) as it ended: not a plan
		err = ctx.Err()
	}
	// Stopped by the caller (Ctrl-C): the run does not count, and it is no
	// refusal of the descriptor.
	stopped := ctx.Err() != nil
	if pre.Reserved && (!started.Load() || stopped) {
		if rerr := g.releaseRun(context.WithoutCancel(ctx), d.ActionID); rerr != nil {
			err = errors.Join(err, rerr)
		}
	}
	if err != nil && stopped {
		return nil, pre, err
	}
	if err != nil {
		return nil, pre, g.refusedPlan(ctx, d, opts.Digest, err)
	}
	end = timings.Start(ctx, "risk and policy on the changes")
	a, err := g.assess(d, dr.Changes, dr.Reads(), dr.UpperDir())
	end()
	if err == nil {
		end := timings.Start(ctx, "layers limit (max_layers_mb)")
		err = g.layersLimit(dr.LayerBytes(), held)
		end()
	}
	if err != nil {
		dr.Discard()
		return nil, pre, g.refusedPlan(ctx, d, opts.Digest, err)
	}
	sctx, end := timings.Begin(ctx, "save the plan, beside its record")
	defer end()
	p, err := dr.Save(a, func(p *plan.Plan) error { return g.Planned(sctx, p) })
	return p, pre, err
}

// assess grades a draft's changes: act's own risk assessment, and the
// policy's decision with the stricter of the declared and the assessed
// risk. A block (exit 4) is the error.
func (g *Gate) assess(d *descriptors.Descriptor, changes []diff.Change, reads []plan.ReadResult, upper string) (plan.Assessment, error) {
	rules := g.riskRules()
	rules.Upper = upper
	r := Assess(d, changes, rules)
	AssessReads(&r, reads, rules)
	dec := g.decide(d, r, changes)
	a := plan.Assessment{RiskAssessed: string(r.Assessed), RiskReasons: r.Reasons, Decision: dec}
	if len(dec.Blocked) > 0 {
		return a, dec.Blocked
	}
	return a, nil
}

// maxKeptPlans is how many of an action id's plans its record lists.
const maxKeptPlans = 16

// Planned records a saved plan of its action id, for reuse.
func (g *Gate) Planned(ctx context.Context, p *plan.Plan) error {
	if err := g.record(ctx, planEvent(audit.EventPlanned, p)); err != nil {
		return err
	}
	defer timings.Start(ctx, "attempts file")()
	return updateAttempts(ctx, g.Home, p.ActionID, func(at *attempts) error {
		at.Plans = append(at.Plans, p.ID)
		if n := len(at.Plans); n > maxKeptPlans {
			at.Plans = at.Plans[n-maxKeptPlans:] // reuse wants the newest
		}
		return nil
	})
}
