package cmd

import (
	"context"
	"errors"
	"io"

	"github.com/urfave/cli/v2"

	"github.com/act-project/act/gate"
	"github.com/act-project/act/internal/lifecycle"
	"github.com/act-project/act/internal/outcome"
	"github.com/act-project/act/internal/problem"
	"github.com/act-project/act/review"
)

func newPlanCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:      "plan",
		Usage:     "dry-run a descriptor into a layer, show the diff and save a plan",
		UsageText: "act plan [--json] [--stat|--full] DESCRIPTOR|-",
		Description: `Validates the descriptor (as validate does), checks its preconditions on
   the real filesystem, carries out its operation into a copy-on-write layer,
   diffs the layer against the real tree and refuses any change the descriptor
   did not declare. The real tree is never touched. The plan is saved under
   the state directory; apply promotes it.

EXAMPLES:
   act plan d.yaml
   act new FILE_WRITE --path ~/proj/NOTES.md | act plan -
   act --json plan d.yaml | jq .changes

` + endsWith("planned", 1, 2, 3, 4, 5, 6, 8).
			note(8, "conflict (action id already applied with other content, or rolled back)").with(outcome.Interrupted).help(),
		Flags: diffFlags(),
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usagef("plan takes exactly one descriptor (a file or -), got %d arguments", c.NArg())
			}
			env.stat, env.full = c.Bool("stat"), c.Bool("full")
			env.page = true
			ctx, stop := interruptible(c.Context)
			res, p, err := runPlan(ctx, env, c.Args().First())
			if stop() {
				res, err = &result{File: res.File, ActionID: res.ActionID}, errInterrupted
			}
			return env.finish(res, outcome.Planned.Status, err, func(w io.Writer, st styles) {
				renderPlan(w, st, env, p, p.State)
			})
		},
	}
}

func runPlan(ctx context.Context, env *Env, arg string) (*result, *gate.Plan, error) {
	res := &result{}
	ck, err := env.check(ctx, res, arg)
	if err != nil {
		return res, nil, err
	}
	defer ck.release()
	p, err := planChecked(ctx, env, res, ck)
	return res, p, err
}

// planChecked is plan after the checks: the gate's sequence (gate.Plan,
// its check overlapping the dry run), and the warnings a later apply will
// answer for (report.Result.PlanWarnings, as act mcp's act_plan).
func planChecked(ctx context.Context, env *Env, res *result, ck *checked) (*gate.Plan, error) {
	p, pre, err := planWith(ctx, env, res, ck, false)
	if err != nil {
		return nil, err
	}
	res.PlanWarnings(p, pre)
	return p, nil
}

// planWith runs the gate's plan sequence for a checked descriptor, with
// what this process made ahead (a sandbox, a plan directory) as its
// overlap; reuse is gate.Plan's. Its problems are placed in the
// descriptor.
func planWith(ctx context.Context, env *Env, res *result, ck *checked, reuse bool) (*gate.Plan, *gate.PrePlan, error) {
	p, pre, err := env.gate(ck.pol).PlanChecked(ctx, ck.Checked, gate.PlanOptions{File: res.File, Reuse: reuse, Progress: ck.streamer(env)})
	if err != nil {
		return nil, pre, err
	}
	if p != nil {
		fillPlan(res, p)
		res.Warnings = ck.Locate(res.Warnings)
	}
	return p, pre, nil
}

// withPositions gives the problems of a failed plan their place in the
// descriptor file.
func withPositions(ck *checked, err error) error {
	var probs problem.List
	if errors.As(err, &probs) {
		return ck.Locate(probs)
	}
	return err
}

// fillPlan fills res from saved plan p (report.Result.FillPlan).
func fillPlan(res *result, p *gate.Plan) { res.FillPlan(p) }

// renderPlan prints a plan as a person reviews it (review.Plan), with
// env's flags (--stat, --full) and workspaces. state is where p stands.
func renderPlan(w io.Writer, st styles, env *Env, p *gate.Plan, state lifecycle.State) {
	review.Plan(w, st, p, state, reviewOptions(env))
}

// planText is plan p as a text a person or a model reads in one piece (a
// hook's reason): plain, escaped, bounded (review.PlanText).
func planText(env *Env, p *gate.Plan) string {
	o := reviewOptions(env)
	o.Brief = !o.Full
	return review.PlanText(p, p.State, o)
}

func reviewOptions(env *Env) review.Options {
	stateDir, _ := env.stateDir()
	return review.Options{StateDir: stateDir, Workspaces: env.reviewWorkspaces, Stat: env.stat, Full: env.full, ActLine: env.actLine}
}

// shellJoin quotes argv as a shell would need it typed (review.ShellJoin).
func shellJoin(argv []string) string { return review.ShellJoin(argv) }

// diffFlags are the flags of the commands that print a plan.
func diffFlags() []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: "stat", Usage: "the changes without their diffs"},
		&cli.BoolFlag{Name: "full", Usage: "every change and every diff, however many"},
	}
}
