package cmd

import (
	"fmt"
	"io"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/act-project/act/gate"
	"github.com/act-project/act/internal/outcome"
)

func newGCCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:      "gc",
		Usage:     "remove what is past the host's retention",
		UsageText: "act gc [--caches] [--json]",
		Flags:     []cli.Flag{&cli.BoolFlag{Name: "caches", Usage: "also empty act's own caches (sandbox.persistent_caches): the next plans start from the user's"}},
		Description: `Removes what is past the host policy's retention (audit.retain_days,
   docs/state.md, docs/audit.md):
   - plans made before it, with their layers, and the backups of actions
     applied or rolled back before it (such an action can then no longer be
     rolled back);
   - whatever their age, the layers of planned plans that expired: they can
     no longer be applied, and their records stay until retention;
   - the bodies of older audit records, keeping their leaf hashes, so act
     audit verify still proves the whole log and says how many records were
     pruned and up to when;
   - what a crash left: half-written plans, interrupted removals.
   It never removes a pending plan, a plan that can still be applied, or the
   plan and backups of the newest applied action: it lists them as kept.
   Nothing but act's own files is touched. Every gc is itself recorded.
   With --caches it also empties act's own caches (the policy's opt-in
   sandbox.persistent_caches, docs/sandbox-filesystem.md): what tools
   cached in earlier dry runs is gone, and the next ones start from the
   user's own caches.

EXAMPLES:
   act gc
   act --json gc

` + endsWith("success", 1, 2).help(),
		Action: func(c *cli.Context) error {
			if c.NArg() != 0 {
				return usagef("gc takes no arguments")
			}
			res := &result{}
			pol, err := env.loadPolicy(res)
			if err != nil {
				return env.finish(res, outcome.OK.Status, err, nil)
			}
			if _, err := env.stateDir(); err != nil {
				return env.finish(res, outcome.OK.Status, err, nil)
			}
			before := env.Now().UTC().Add(-time.Duration(pol.Audit.RetainDays) * 24 * time.Hour)
			g := env.gate(pol)
			col, err := g.GC(c.Context, before)
			if err == nil && c.Bool("caches") {
				col.Caches, err = g.ClearCaches()
			}
			res.Data = col
			return env.finish(res, outcome.OK.Status, err, func(w io.Writer, _ styles) {
				renderGC(w, col)
			})
		},
	}
}

func renderGC(w io.Writer, c *gate.Collected) {
	cutoff := c.Before.Format(time.RFC3339)
	fmt.Fprintf(w, "gc: removed %s (with their layers) and the backups of %s older than %s\n",
		plural(len(c.Plans), "plan"), plural(len(c.Backups), "action"), cutoff)
	for _, id := range c.Plans {
		fmt.Fprintf(w, "  removed plan %s\n", escapeLine(id))
	}
	for _, id := range c.Backups {
		fmt.Fprintf(w, "  removed the backups of action %s: it can no longer be rolled back\n", escapeLine(id))
	}
	for _, id := range c.Layers {
		fmt.Fprintf(w, "  removed the layer of plan %s: expired, it can no longer be applied (its record stays)\n", escapeLine(id))
	}
	if c.Temp > 0 {
		what := "directories"
		if c.Temp == 1 {
			what = "directory"
		}
		fmt.Fprintf(w, "  removed %d %s left by a crash or an interrupted gc\n", c.Temp, what)
	}
	if c.Caches != nil {
		fmt.Fprintf(w, "  emptied %s of the sandbox (%d bytes)\n", plural(c.Caches.Caches, "cache"), c.Caches.Bytes)
	}
	for _, k := range c.Kept {
		fmt.Fprintf(w, "  kept %s\n", escapeLine(k))
	}
	if a := c.Audit; a.Count == 0 {
		fmt.Fprintf(w, "gc: no audit record older than %s\n", cutoff)
	} else {
		fmt.Fprintf(w, "gc: pruned %d audit records through record %d (older than %s)\n", a.Count, a.Through, cutoff)
	}
}
