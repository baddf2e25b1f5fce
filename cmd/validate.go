package cmd

import (
	"context"
	"fmt"
	"io"

	"github.com/urfave/cli/v2"

	"github.com/act-project/act/descriptors"
	"github.com/act-project/act/gate"
	"github.com/act-project/act/internal/document"
	"github.com/act-project/act/internal/outcome"
	"github.com/act-project/act/internal/problem"
	"github.com/act-project/act/internal/timings"
	"github.com/act-project/act/policy"
)

func newValidateCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:      "validate",
		Usage:     "check a descriptor: schema, rules and host policy, without touching its scope",
		UsageText: "act validate [--json] [--expand] DESCRIPTOR|-",
		Description: `Parses the descriptor strictly (YAML 1.2 or JSON; - reads standard input),
   checks it against the CUE schema and the static rules, and says the mode
   act apply will decide for it: the same decision, over the paths the
   descriptor names (what only a dry run shows, such as a command's changes,
   is decided again then: docs/risk.md, "Before the dry run"). Nothing is
   read from or written to the declared scope.
   A descriptor refused by a rule (3) or the policy (4) is recorded in the
   audit log as validate_blocked, as act plan and act apply record it.

   A short descriptor (docs/descriptor.md, "Short form") is expanded first:
   act fills in the fields with one allowed value, action_id (a fresh
   UUID), created_at (now) and a file operation's effects. --expand prints
   the expanded descriptor, the one act plans, shows, signs and audits: as
   YAML on standard output (the summary goes to standard error), or with
   --json as data.descriptor.

EXAMPLES:
   act validate d.yaml
   cat d.json | act validate -
   act --json validate d.yaml | jq '.errors[].rule'
   act validate --expand short.yaml > full.yaml

` + endsWith("valid", 1, 2, 3, 4).note(1, "error (I/O, invalid policy file)").help(),
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "expand", Usage: "print the expanded descriptor (a short one with what act fills in)"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usagef("validate takes exactly one descriptor (a file or -), got %d arguments", c.NArg())
			}
			res := &result{}
			ck, err := env.checkFor(c.Context, res, c.Args().First(), false)
			var expanded []byte
			if err == nil && c.Bool("expand") {
				canon, _, cerr := ck.Canonical()
				if err = cerr; err == nil {
					res.Data = map[string]any{"descriptor": canon}
					expanded, err = ck.Doc.Root.YAML()
				}
			}
			return env.finish(res, outcome.Valid.Status, err, func(w io.Writer, st styles) {
				if expanded != nil {
					// The descriptor is the data; the summary a diagnostic.
					w.Write(expanded)
					w = env.Stdio.Err
				}
				fmt.Fprintf(w, "%s %s\n", st.Create.Render("valid:"), res.File)
				fmt.Fprintf(w, "  action  %s %s, risk %s\n", res.ActionID, res.ActionType, res.RiskLevel)
				fmt.Fprintf(w, "  mode    %s (%s): %s\n", st.Bold.Render(res.Mode), res.ModeSource, res.Reason)
			})
		},
	}
}

// runValidate runs the checks of docs/rules.md in order and stops at the first
// layer that fails, reporting every problem of that layer.
func runValidate(ctx context.Context, env *Env, arg string) (*result, error) {
	res := &result{}
	_, err := env.checkFor(ctx, res, arg, false)
	return res, err
}

// checked is a descriptor that passed every check of docs/rules.md
// (gate.Check), with what cmd adds for its plan.
type checked struct {
	*gate.Checked
	pol *policy.Policy
	// progress, if not nil, gets the dry run's command output as it comes
	// (act run's); else env.streamer's.
	progress func(stream int, line string)
}

// release ends what the checks started and the plan did not use.
func (ck *checked) release() {
	if ck != nil {
		ck.Release()
	}
}

// check reads the descriptor arg and runs parse, schema, rules and policy,
// filling res as it goes.
func (env *Env) check(ctx context.Context, res *result, arg string) (*checked, error) {
	return env.checkFor(ctx, res, arg, true)
}

// checkFor is check; acting is false for validate, which only looks at
// the descriptor (a stale intent is then a warning).
func (env *Env) checkFor(ctx context.Context, res *result, arg string, acting bool) (*checked, error) {
	end := timings.Start(ctx, "policy: load")
	pol, err := env.loadPolicy(res)
	end()
	if err != nil {
		return nil, err
	}
	name, data, err := env.readInput(arg)
	if err != nil {
		return nil, err
	}
	return env.checkData(ctx, res, pol, name, data, acting)
}

// checkData runs the gate's checks (parse, schema, rules and policy) under
// policy pol on a descriptor's bytes (name is the name positions use),
// filling res.
func (env *Env) checkData(ctx context.Context, res *result, pol *policy.Policy, name string, data []byte, acting bool) (*checked, error) {
	res.File = name
	if _, err := env.stateDir(); err != nil {
		return nil, err
	}
	ctx, end := timings.Begin(ctx, "check")
	defer end()
	ck, err := env.gate(pol).Check(ctx, name, data, acting)
	return env.checkedInto(res, pol, ck, err)
}

// checkBuilt runs the gate's checks on a descriptor a door built itself
// (no file: its problems name only their field), filling res.
func (env *Env) checkBuilt(ctx context.Context, res *result, pol *policy.Policy, d *descriptors.Descriptor) (*checked, error) {
	if _, err := env.stateDir(); err != nil {
		return nil, err
	}
	ctx, end := timings.Begin(ctx, "check")
	defer end()
	ck, err := env.gate(pol).CheckBuilt(ctx, d)
	return env.checkedInto(res, pol, ck, err)
}

// checkedInto fills res from the gate's checks.
func (env *Env) checkedInto(res *result, pol *policy.Policy, ck *gate.Checked, err error) (*checked, error) {
	res.FillChecked(ck)
	if err != nil {
		return nil, err
	}
	return &checked{Checked: ck, pol: pol}, nil
}

// locate gives problems that name only a field the file and position of
// that field in doc.
func locate(doc *document.Document, probs problem.List) problem.List {
	return descriptors.Locate(doc, probs)
}

// loadPolicy resolves the host policy (docs/policy.md) and records where it came
// from in res.
func (env *Env) loadPolicy(res *result) (*policy.Policy, error) {
	if env.onePolicy != nil {
		res.Policy = env.onePolicy.origin
		return env.onePolicy.pol, nil
	}
	stateDir, err := env.stateDir()
	if err != nil {
		return nil, err
	}
	pol, origin, err := policy.Load(policy.LoadOptions{
		Flag: env.policyFile,
		Env:  env.Getenv("ACT_POLICY"),
		Home: stateDir,
	})
	if err != nil {
		return nil, err
	}
	res.Policy = &policyOrigin{Source: origin.Source, File: origin.Path}
	if env.keepPolicy {
		env.onePolicy = &loadedPolicy{pol: pol, origin: res.Policy}
	}
	return pol, nil
}

// A loadedPolicy is the policy a one-shot decision loaded, kept for the
// rest of it (Env.keepPolicy).
type loadedPolicy struct {
	pol    *policy.Policy
	origin *policyOrigin
}
