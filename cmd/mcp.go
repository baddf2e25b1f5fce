package cmd

import (
	"context"
	"fmt"
	"sync"

	"github.com/urfave/cli/v2"

	"github.com/act-project/act/doors"
	"github.com/act-project/act/doors/mcpserver"
	"github.com/act-project/act/gate"
	"github.com/act-project/act/internal/startheap"
	"github.com/act-project/act/internal/state"
	"github.com/act-project/act/internal/timings"
)

// act mcp: the command that starts the MCP door (doors/mcpserver,
// docs/mcp.md) on standard input and output, for the life of the
// session.

func newMCPCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:      "mcp",
		Usage:     "serve the Model Context Protocol over stdio, for an agent",
		UsageText: "act mcp [--workspace DIR]...   (act [--home DIR] [--policy FILE] mcp [--workspace DIR]...)",
		Description: `Serves act's tools to an MCP client (an agent) over standard input and
   output: act_schema, act_validate, act_plan, act_apply, act_status and
   act_rollback. The agent can never confirm: an action that needs a person
   is left pending, and the answer is "queued" with the plan id; a person
   confirms it with "act apply PLAN_ID --confirm". The state directory and
   the policy are the ones --home and --policy (or their defaults) name;
   the policy is read again on every call, so an edit takes effect at once.
   --workspace DIR names this session's project (paths are shown from
   it); a plan is LOW only when every change lies in one of the policy's
   workspaces (docs/risk.md), which neither the flag nor anything the
   agent sends widens. See docs/mcp.md.

EXAMPLES:
   act mcp
   claude mcp add act -- act mcp --workspace ~/src/project

` + endsWith("the client closed the session", 1, 2).help(),
		Flags: []cli.Flag{
			&cli.StringSliceFlag{Name: "workspace", Usage: "this session's project (a directory); risk counts only the policy's workspaces"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 0 {
				return usagef("mcp takes no arguments, got %d", c.NArg())
			}
			home, err := env.stateDir()
			if err != nil {
				return err
			}
			for _, w := range c.StringSlice("workspace") {
				if err := env.addWorkspace(w); err != nil {
					return err
				}
			}
			// A long-running server of short calls: a heap of a few
			// times the live one (about 40 MiB in all) halves the
			// collector's share of each call's CPU.
			startheap.Steady(400)
			env.session = gate.NewSession(home)
			defer env.session.Close()
			out := env.rawOut
			if out == nil {
				out = env.Stdio.Out
			}
			if err := mcpserver.Serve(c.Context, newMCPHost(env), env.Stdio.In, out, mcpserver.Options{Version: Version, Log: env.Stdio.Err, Timings: env.timings != nil}); err != nil {
				return fmt.Errorf("mcp: %w", err)
			}
			return nil
		},
	}
}

// mcpHost is this process as the MCP server sees it (mcpserver.Host):
// calls come concurrently, and each gets a door of its own.
type mcpHost struct {
	env *Env
	// mu: the env's gate, review workspaces and recoveries are one
	// call's at a time.
	mu sync.Mutex
}

// newMCPHost makes env the process of an MCP session: every record it
// writes names the door (mcpserver.Caller), its recoveries' too.
func newMCPHost(env *Env) *mcpHost {
	env.caller = mcpserver.Caller
	return &mcpHost{env: env}
}

// Door is env's door under the host policy read now (--policy,
// $ACT_POLICY, the state dir's): a person's edit holds from the next call
// on. After a promotion or rollback the recoveries it made are recorded
// at once, the session being long, and the policy's witnesses are asked
// (audit.witness_after), as env.door does for a one-shot act.
func (h *mcpHost) Door(ctx context.Context) (*doors.Door, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	end := timings.Start(ctx, "policy: load")
	pol, err := h.env.loadPolicy(&result{})
	end()
	if err != nil {
		return nil, err
	}
	d := h.env.door(pol)
	d.Promoted = func(out *gate.Outcome) {
		h.mu.Lock()
		h.env.recovered = append(h.env.recovered, out.Recovered...)
		h.env.auditRecoveries()
		h.mu.Unlock()
		if !out.AlreadyApplied {
			h.env.witnessAfter(pol) // bounded, never failing the call
		}
	}
	return d, nil
}

// Home is the session's state dir, resolved when it began.
func (h *mcpHost) Home() state.Dir {
	home, _ := h.env.stateDir()
	return state.Dir{Root: home}
}
