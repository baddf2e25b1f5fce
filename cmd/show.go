package cmd

import (
	"io"

	"github.com/urfave/cli/v2"

	"github.com/act-project/act/plan"
)

func newShowCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:      "show",
		Usage:     "print a saved plan",
		UsageText: "act show [--json] PLAN_ID",
		Description: `Prints a saved plan as plan printed it: each change, a unified diff for
   text files, and the summary line.

EXIT STATUS:
   0 success, 1 error, 2 usage, 9 no such plan`,
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usagef("show takes exactly one plan id, got %d arguments", c.NArg())
			}
			res := &result{}
			stateDir, err := env.stateDir()
			if err != nil {
				return env.finish(res, "ok", err, nil)
			}
			p, err := plan.Load(stateDir, c.Args().First())
			if err != nil {
				return env.finish(res, "ok", err, nil)
			}
			fillPlan(res, p)
			return env.finish(res, "ok", nil, func(w io.Writer, st styles) { renderPlan(w, st, env, p) })
		},
	}
}
