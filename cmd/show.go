package cmd

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/act-project/act/audit"
	"github.com/act-project/act/gate"
	"github.com/act-project/act/internal/lifecycle"
	"github.com/act-project/act/internal/outcome"
	"github.com/act-project/act/internal/state"
	"github.com/act-project/act/review"
)

func newShowCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:      "show",
		Usage:     "print a saved plan or an applied action",
		UsageText: "act show [--json] [--stat|--full] PLAN_ID|ACTION_ID",
		Description: `Prints a saved plan as plan printed it: each change, a unified diff for
   text files, and the summary line, with the plan's state (planned, pending,
   applied, rolled_back). Given an action id, prints where the action stands
   (applied or rolled back, when) and the changes its apply made.

EXAMPLES:
   act show 3f2a9c0e1b7d4a65
   act show 0b5e1c9a-2d4f-4e8a-9c3b-7a6d5e4f3c21
   act --json show 3f2a9c0e1b7d4a65

` + endsWith("success", 1, 2, 9).note(9, "no such plan or action").help(),
		Flags: diffFlags(),
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usagef("show takes exactly one plan or action id, got %d arguments", c.NArg())
			}
			env.stat, env.full = c.Bool("stat"), c.Bool("full")
			env.page = true
			res := &result{}
			stateDir, err := env.stateDir()
			if err != nil {
				return env.finish(res, outcome.OK.Status, err, nil)
			}
			id := c.Args().First()
			if !gate.IsPlanID(id) {
				return showAction(env, res, stateDir, id)
			}
			g, err := env.newGate(res)
			if err != nil {
				return env.finish(res, outcome.OK.Status, err, nil)
			}
			e, err := g.Load(id)
			if err != nil {
				return env.finish(res, outcome.OK.Status, err, nil)
			}
			p, status := e.Plan, e.State
			fillPlan(res, p)
			saved := *p
			saved.Changes = nil // they are the result's changes[]
			records, aerr := audit.Lookup(state.Dir{Root: stateDir}.Audit(), "", p.ID, audit.VerifyOptions{})
			res.Data = map[string]any{"state": status, "plan": &saved, "digest": gate.PlanDigest(p), "audit": nonNil(records)}
			return env.finish(res, outcome.OK.Status, nil, func(w io.Writer, st styles) {
				renderPlan(w, st, env, p, status)
				fmt.Fprintf(w, "State: %s\n", status)
				auditLine(w, env, records, aerr)
				switch {
				case status == lifecycle.Pending:
					for _, why := range p.ConfirmReasons {
						fmt.Fprintf(w, "Waits for a person: %s\n", escapeLine(why))
					}
					fmt.Fprintf(w, "Digest (what a signed approval signs): %s\n", gate.PlanDigest(p))
					fmt.Fprintf(w, "Approve with: %s   Refuse with: %s\n", env.actLine("apply", p.ID, "--confirm"), env.actLine("deny", p.ID))
				case status == lifecycle.Denied && p.DeniedAt != nil:
					fmt.Fprintf(w, "Denied at %s", p.DeniedAt.UTC().Format(time.RFC3339))
					if p.DenyReason != "" {
						fmt.Fprintf(w, ": %s", escapeLine(p.DenyReason))
					}
					fmt.Fprintln(w)
				}
			})
		},
	}
}

// showAction prints the record of an applied action: what it was for, the
// commands its plan ran, how it was approved, what it changed and where
// it stands.
func showAction(env *Env, res *result, stateDir, id string) error {
	home := state.Dir{Root: stateDir}
	a, err := gate.LoadAction(home, id)
	if err != nil {
		if gate.IsPlanID(id) {
			err = fmt.Errorf("%s looks like a plan id, but no such plan is saved: %w", id, gate.ErrNotFound)
		}
		return env.finish(res, outcome.OK.Status, err, nil)
	}
	res.ActionID, res.PlanID, res.ActionType, res.Changes = a.ActionID, a.PlanID, a.ActionType, a.Changes
	data := map[string]any{"state": a.State, "applied_at": a.AppliedAt}
	if a.RolledBackAt != nil {
		data["rolled_back_at"] = a.RolledBackAt
	}
	if len(a.Saved) > 0 {
		data["saved"] = a.Saved
	}
	if a.Approval != nil {
		data["approval"] = a.Approval
	}
	var p *gate.Plan
	g, perr := env.newGate(res)
	if perr == nil {
		var e *gate.Entry
		if e, perr = g.Load(a.PlanID); perr == nil { // the plan may be gone (gc)
			p = e.Plan
		}
	}
	var intent string
	if perr == nil {
		res.Commands = p.Commands
		res.RiskLevel = p.RiskLevel
		if d, err := p.Decode(); err == nil {
			intent = d.IntentSummary
			data["intent_summary"] = intent
		}
	}
	records, aerr := audit.Lookup(home.Audit(), a.ActionID, "", audit.VerifyOptions{})
	data["audit"] = nonNil(records)
	res.Data = data
	return env.finish(res, outcome.OK.Status, nil, func(w io.Writer, st styles) {
		defer auditLine(w, env, records, aerr)
		fmt.Fprintf(w, "Action %s (%s), plan %s\n", escapeLine(a.ActionID), escapeLine(a.ActionType), escapeLine(a.PlanID))
		if intent != "" {
			fmt.Fprintf(w, "Intent: %s\n", escapeLine(intent))
		}
		for _, c := range res.Commands {
			fmt.Fprintf(w, "$ %s (exit %d, %d ms)\n", shellJoin(c.Argv), c.ExitCode, c.WallMs)
		}
		fmt.Fprintf(w, "Applied at %s", a.AppliedAt.UTC().Format(time.RFC3339))
		if ap := a.Approval; ap != nil && ap.Via != "none" {
			fmt.Fprintf(w, ", confirmed by %s (%s)", escapeLine(orUID(ap)), escapeLine(viaReported(ap)))
		}
		fmt.Fprintln(w)
		if a.RolledBackAt != nil {
			fmt.Fprintf(w, "Rolled back at %s\n", a.RolledBackAt.UTC().Format(time.RFC3339))
		}
		review.ActionChanges(w, st, a.Changes, env.reviewWorkspaces)
		for _, s := range a.Saved {
			fmt.Fprintf(w, "Saved at rollback: %s → %s\n", escapeLine(s.Path), escapeLine(s.Copy))
		}
		fmt.Fprintf(w, "State: %s\n", escapeLine(string(a.State)))
		if a.State == lifecycle.Applied {
			fmt.Fprintf(w, "Roll back with: %s\n", env.actLine("rollback", a.ActionID))
		}
	})
}

// auditLine names the audit records of a plan or an action.
func auditLine(w io.Writer, env *Env, records []audit.Found, err error) {
	if err != nil {
		fmt.Fprintf(w, "Audit: the log does not verify (%s): %s says more\n", escapeLine(err.Error()), env.actLine("audit", "verify"))
		return
	}
	if len(records) == 0 {
		return
	}
	var parts []string
	for _, r := range records {
		parts = append(parts, fmt.Sprintf("%d %s", r.Seq, escapeLine(r.Event)))
	}
	fmt.Fprintf(w, "Audit records: %s (%s)\n", strings.Join(parts, ", "), env.actLine("audit", "show", "SEQ"))
}
