package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/urfave/cli/v2"

	"github.com/act-project/act/gate"
	"github.com/act-project/act/internal/outcome"
	"github.com/act-project/act/internal/state"
)

func newRollbackCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:      "rollback",
		Usage:     "restore what an applied action changed",
		UsageText: "act rollback [--force [--confirm]] [--json] ACTION_ID",
		Description: `Restores the pre-images of everything the action's apply changed: what it
   created is removed, what it modified or deleted comes back with its mode,
   all or nothing, journaled like apply. If a path changed since the apply,
   rollback refuses and lists them; --force restores anyway after saving the
   current versions (printed), and needs --confirm or a yes at the terminal.

EXAMPLES:
   act rollback 0b5e1c9a-2d4f-4e8a-9c3b-7a6d5e4f3c21
   act rollback 0b5e1c9a-2d4f-4e8a-9c3b-7a6d5e4f3c21 --force --confirm

` + endsWith("rolled back", 1, 2, 7, 8, 9).note(7, "--force not confirmed").
			note(8, "a path changed since the apply, or already rolled back").note(9, "no such action").help(),
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "force", Usage: "restore even paths changed since the apply, saving their current versions"},
			&cli.BoolFlag{Name: "confirm", Usage: "confirm a forced rollback"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usagef("rollback takes exactly one action id, got %d arguments", c.NArg())
			}
			return runRollback(c.Context, env, c.Args().First(), c.Bool("force"), c.Bool("confirm"))
		},
	}
}

func runRollback(ctx context.Context, env *Env, id string, force, confirmed bool) error {
	res := &result{ActionID: id}
	pol, err := env.loadPolicy(res)
	if err != nil {
		return env.finish(res, outcome.RolledBack.Status, err, nil)
	}
	g := env.gate(pol)
	if gate.IsPlanID(id) {
		// A plan id where an action id belongs: say which one it is.
		if e, perr := g.Load(id); perr == nil {
			return env.finish(res, outcome.RolledBack.Status, fmt.Errorf("%s is a plan id, not an action id; its action id is %s: %s: %w", id, e.Plan.ActionID, env.actLine("rollback", e.Plan.ActionID), gate.ErrNotFound), nil)
		}
	}
	ap := gate.Approval{}
	if confirmed {
		ap = gate.NewApproval(gate.ViaFlag)
	}
	var askPerson func() (gate.Approval, bool)
	if env.interactive() {
		askPerson = func() (gate.Approval, bool) {
			if ask(env, fmt.Sprintf("Roll back %s even where paths changed since the apply (their current versions are saved)? [y/N] ", id)) {
				return gate.NewApproval(gate.ViaTerminal), true
			}
			return gate.Approval{}, false
		}
	}
	out, err := g.Rollback(ctx, id, force, ap, askPerson, env.progress("rolling back"))
	var need *gate.ConfirmationRequired
	if errors.As(err, &need) {
		return env.finish(res, outcome.RolledBack.Status, fmt.Errorf(
			"rollback --force needs confirmation: add --confirm (%w)", err), nil)
	}
	if out != nil {
		env.recovered = append(env.recovered, out.Recovered...)
		if out.Action != nil {
			res.PlanID, res.ActionType = out.Action.PlanID, out.Action.ActionType
			res.Changes = out.Action.Changes
		}
	}
	if err == nil {
		defer env.witnessAfter(pol) // once the outcome is printed (audit.witness_after)
	}
	if err == nil && len(out.Action.Saved) > 0 {
		res.Data = map[string]any{"saved": out.Action.Saved}
	}
	return env.finish(res, outcome.RolledBack.Status, err, func(w io.Writer, st styles) {
		fmt.Fprintf(w, "%s\n", st.Bold.Render(fmt.Sprintf("Rolled back %s: %s restored.", escapeLine(id), plural(len(out.Action.Changes), "change"))))
		for _, s := range out.Action.Saved {
			fmt.Fprintf(w, "Saved the version of %s found at rollback to %s\n", escapeLine(s.Path), escapeLine(s.Copy))
		}
	})
}

func newRecoverCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:      "recover",
		Usage:     "finish or undo promotions and rollbacks a crash left part-way",
		UsageText: "act recover [--json]",
		Description: `Every act command does this first; recover does only this. A promotion
   that had not committed is undone, one that had is completed: the tree ends
   fully before or fully after, never between.

EXAMPLES:
   act recover
   act --json recover

` + endsWith("success (nothing to do, or recovered)", 1, 2).help(),
		Action: func(c *cli.Context) error {
			if c.NArg() != 0 {
				return usagef("recover takes no arguments, got %d", c.NArg())
			}
			res := &result{}
			home, err := env.stateDir()
			if err == nil {
				var rec []gate.Recovery
				rec, err = gate.Recover(c.Context, state.Dir{Root: home}, env.Now)
				env.recovered = append(env.recovered, rec...)
			}
			return env.finish(res, outcome.OK.Status, err, func(w io.Writer, st styles) {
				if len(env.recovered) == 0 {
					fmt.Fprintln(w, "Nothing to recover.")
				}
				for _, r := range env.recovered {
					fmt.Fprintf(w, "Recovered the %s of action %s: %s.\n", escapeLine(r.Event), escapeLine(r.ActionID), recoveryOutcome(r))
				}
			})
		},
	}
}

// recoverFirst recovers, before any command runs, a promotion a crash left
// part-way (docs/promotion.md: "recovered on the next act command"). A failure is not
// this command's: it is left for apply, rollback and recover to report.
// While another act process holds the lock it does not wait.
func (env *Env) recoverFirst() {
	home, err := env.stateDir()
	if err != nil || !gate.NeedsRecovery(state.Dir{Root: home}) {
		return
	}
	rec, err := gate.RecoverIfIdle(state.Dir{Root: home}, env.Now)
	env.recovered = append(env.recovered, rec...)
	if err != nil {
		fmt.Fprintf(env.Stdio.Err, "act: warning: recovery of an interrupted promotion failed: %s\n", escapeLine(err.Error()))
	}
}

// plural is "1 change", "2 changes".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
