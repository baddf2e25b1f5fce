package cmd

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/act-project/act/audit"
	"github.com/act-project/act/descriptors"
	"github.com/act-project/act/gate"
	"github.com/act-project/act/internal/lifecycle"
	"github.com/act-project/act/internal/outcome"
	"github.com/act-project/act/policy"
	"github.com/act-project/act/review"
)

// pendingRow is one plan of `act pending` as --json prints it.
type pendingRow struct {
	PlanID       string   `json:"plan_id"`
	ActionID     string   `json:"action_id"`
	ActionType   string   `json:"action_type"`
	Intent       string   `json:"intent_summary"`
	RiskDeclared string   `json:"risk_declared"`
	RiskAssessed string   `json:"risk_assessed,omitempty"`
	Why          []string `json:"why"`
	Summary      summary  `json:"summary"`
	CreatedAt    string   `json:"created_at"`
	AgeSeconds   int64    `json:"age_seconds"`
	LeftSeconds  int64    `json:"left_seconds"`
}

func newPendingCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:      "pending",
		Usage:     "list the plans waiting for a person's confirmation",
		UsageText: "act pending [--json]",
		Description: `Lists every pending plan, newest first: its plan id and action, the risk
   the agent declared and the one act assessed, why it waits, what it would
   change, how old it is and how long it may still be applied. "act show
   PLAN_ID" prints its whole diff; "act apply PLAN_ID --confirm" approves it,
   "act deny PLAN_ID" refuses it.

EXAMPLES:
   act pending
   act show 3f2a9c0e1b7d4a65
   act deny 3f2a9c0e1b7d4a65 --reason "not this week"

` + endsWith("success", 1, 2).help(),
		Action: func(c *cli.Context) error {
			if c.NArg() != 0 {
				return usagef("pending takes no arguments, got %d", c.NArg())
			}
			env.page = true
			res := &result{}
			g, err := env.newGate(res)
			if err != nil {
				return env.finish(res, outcome.OK.Status, err, nil)
			}
			waiting, err := g.Pending()
			if err != nil {
				return env.finish(res, outcome.OK.Status, err, nil)
			}
			rows := []pendingRow{}
			for _, l := range waiting {
				p := l.Plan
				c, m, d := gate.Summary(p)
				rows = append(rows, pendingRow{
					PlanID: p.ID, ActionID: p.ActionID, ActionType: p.ActionType, Intent: review.IntentOf(p),
					RiskDeclared: p.RiskLevel, RiskAssessed: p.RiskAssessed,
					Why: nonNil(p.ConfirmReasons), Summary: summary{c, m, d},
					CreatedAt:  p.CreatedAt.UTC().Format(time.RFC3339),
					AgeSeconds: int64(env.Now().Sub(p.CreatedAt).Seconds()), LeftSeconds: int64(g.Left(p).Seconds()),
				})
			}
			res.Data = map[string]any{"pending": rows}
			return env.finish(res, outcome.OK.Status, nil, func(w io.Writer, st styles) {
				if len(rows) == 0 {
					fmt.Fprintln(w, "Nothing is waiting for confirmation.")
					return
				}
				for _, r := range rows {
					risk := escapeLine(r.RiskDeclared)
					if descriptors.RiskLevel(r.RiskAssessed).Rank() > descriptors.RiskLevel(r.RiskDeclared).Rank() {
						risk += " (assessed " + escapeLine(r.RiskAssessed) + ")"
					}
					fmt.Fprintf(w, "%s  %s  %s  %s\n", st.Bold.Render(escapeLine(r.PlanID)), escapeLine(r.ActionID), escapeLine(r.ActionType), risk)
					if r.Intent != "" {
						fmt.Fprintf(w, "    intent: %s\n", review.ShortIntent(r.Intent))
					}
					fmt.Fprintf(w, "    %d to create, %d to modify, %d to delete; made %s ago, %s left\n",
						r.Summary.Create, r.Summary.Modify, r.Summary.Delete,
						policy.FormatDuration(time.Duration(r.AgeSeconds)*time.Second), policy.FormatDuration(time.Duration(max(r.LeftSeconds, 0))*time.Second))
					for _, why := range r.Why {
						fmt.Fprintf(w, "    why: %s\n", escapeLine(why))
					}
				}
				fmt.Fprintf(w, "\n%d waiting. Review with %s; approve with %s; refuse with %s.\n", len(rows),
					env.actLine("show", "PLAN_ID"), env.actLine("apply", "PLAN_ID", "--confirm"), env.actLine("deny", "PLAN_ID"))
			})
		},
	}
}

func newDenyCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:      "deny",
		Usage:     "refuse plans: they can no longer be applied",
		UsageText: "act deny [--reason TEXT] [--json] PLAN_ID...\n   act deny --all [--older-than DURATION] [--reason TEXT] [--json]",
		Description: `Marks each plan denied and removes its layer. Its action id can then only
   be planned again with a person's confirmation.

   With plan ids, each is denied in turn; one that cannot be (unknown,
   applied or denied already) is reported and the others are still denied;
   act exits with the code of the first plan that was not denied.
   --all denies every plan act pending lists; --older-than DURATION (24h,
   90m) only those made longer ago, with or without --all. A selection
   that finds nothing denies nothing and says so (exit 0).

EXAMPLES:
   act deny 3f2a9c0e1b7d4a65
   act deny 3f2a9c0e1b7d4a65 8c1d2e3f4a5b6c7d --reason "touches the production config"
   act deny --all
   act deny --older-than 24h

` + endsWith("denied", 1, 2, 8, 9).note(8, "the plan was applied, rolled back or denied already").
			note(9, "no such plan").help(),
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "reason", Usage: "why, kept with each plan"},
			&cli.BoolFlag{Name: "all", Usage: "deny every pending plan"},
			&cli.DurationFlag{Name: "older-than", Usage: "deny the pending plans made longer ago than this"},
		},
		Action: func(c *cli.Context) error {
			all, older := c.Bool("all"), c.Duration("older-than")
			filter := all || c.IsSet("older-than")
			switch {
			case filter && c.NArg() > 0:
				return usagef("deny takes plan ids or --all/--older-than, not both")
			case !filter && c.NArg() == 0:
				return usagef("deny takes one or more plan ids, or --all or --older-than DURATION")
			case older < 0:
				return usagef("--older-than must not be negative, got %s", older)
			}
			res := &result{}
			g, err := env.newGate(res)
			if err != nil {
				return env.finish(res, outcome.Denied.Status, err, nil)
			}
			ids := c.Args().Slice()
			if filter {
				if ids, err = pendingOlderThan(env, g, older); err != nil {
					return env.finish(res, outcome.Denied.Status, err, nil)
				}
			}
			return runDeny(env, res, g, c, ids, filter)
		},
	}
}

// pendingOlderThan is the ids of the pending plans made more than older
// ago (0: every one), oldest first.
func pendingOlderThan(env *Env, g *gate.Gate, older time.Duration) ([]string, error) {
	waiting, err := g.Pending()
	if err != nil {
		return nil, err
	}
	var ids []string
	for i := len(waiting) - 1; i >= 0; i-- {
		if p := waiting[i].Plan; env.Now().Sub(p.CreatedAt) > older || older == 0 {
			ids = append(ids, p.ID)
		}
	}
	return ids, nil
}

// deniedRow is one plan act deny denied, or could not deny (Error).
type deniedRow struct {
	PlanID   string `json:"plan_id"`
	ActionID string `json:"action_id,omitempty"`
	Error    string `json:"error,omitempty"`
}

// runDeny denies each of ids in turn (filter: they came from --all or
// --older-than), reporting each; it ends with the first refusal's code.
func runDeny(env *Env, res *result, g *gate.Gate, c *cli.Context, ids []string, filter bool) error {
	var rows []deniedRow
	var first error
	for _, id := range ids {
		p, err := g.Deny(c.Context, id, c.String("reason"))
		row := deniedRow{PlanID: id}
		if p != nil {
			row.ActionID = p.ActionID
		}
		if err != nil {
			row.Error = err.Error()
			if first == nil {
				first = err
			}
		}
		rows = append(rows, row)
		if len(ids) == 1 && !filter && p != nil {
			res.PlanID, res.ActionID, res.ActionType = p.ID, p.ActionID, p.ActionType
		}
	}
	if len(ids) == 1 && !filter {
		// One plan: as act deny PLAN_ID always answered.
		return env.finish(res, outcome.Denied.Status, first, func(w io.Writer, st styles) {
			fmt.Fprintf(w, "Denied plan %s of action %s.\n", escapeLine(rows[0].PlanID), escapeLine(rows[0].ActionID))
		})
	}
	res.Data = map[string]any{"denied": nonNil(rows)}
	if first != nil && len(rows) > 1 {
		n := 0
		for _, r := range rows {
			if r.Error != "" {
				n++
			}
		}
		first = fmt.Errorf("%d of %d plans were not denied; the first: %w", n, len(rows), first)
	}
	if first != nil && !env.json {
		renderDenied(env.Stdio.Out, rows)
	}
	return env.finish(res, outcome.Denied.Status, first, func(w io.Writer, _ styles) { renderDenied(w, rows) })
}

// renderDenied says what act deny did of each plan.
func renderDenied(w io.Writer, rows []deniedRow) {
	if len(rows) == 0 {
		fmt.Fprintln(w, "No pending plan matched: nothing was denied.")
		return
	}
	n := 0
	for _, r := range rows {
		if r.Error != "" {
			fmt.Fprintf(w, "Not denied: plan %s: %s\n", escapeLine(r.PlanID), escapeLine(r.Error))
			continue
		}
		n++
		fmt.Fprintf(w, "Denied plan %s of action %s.\n", escapeLine(r.PlanID), escapeLine(r.ActionID))
	}
	fmt.Fprintf(w, "%d denied.\n", n)
}

// historyRow is one line of `act history`.
type historyRow struct {
	Kind        string  `json:"kind"` // "action" or "plan"
	Reason      string  `json:"reason,omitempty"`
	ID          string  `json:"id"`
	ActionID    string  `json:"action_id"`
	PlanID      string  `json:"plan_id"`
	ActionType  string  `json:"action_type"`
	Intent      string  `json:"intent_summary"`
	State       string  `json:"state"`
	At          string  `json:"at"`
	Summary     summary `json:"summary"`
	ConfirmedBy string  `json:"confirmed_by,omitempty"`
	at          time.Time
}

func newHistoryCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:      "history",
		Usage:     "list actions and plans with their state, newest first",
		UsageText: "act history [--state STATE] [--since DURATION|TIME] [--limit N] [--json]",
		Description: `Lists every applied or rolled-back action and every plan that was not
   promoted (planned, pending, denied, expired), newest first, with its state,
   time, type, what it changed and who confirmed it.

EXAMPLES:
   act history --limit 10
   act history --state rolled_back --since 24h
   act history --json --state pending

` + endsWith("success", 1, 2).help(),
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "state", Usage: "only this state: planned, pending, applied, rolled_back, rejected, denied, expired"},
			&cli.StringFlag{Name: "since", Usage: "only since this long ago (24h) or this time (RFC 3339)"},
			&cli.IntFlag{Name: "limit", Usage: "at most this many, newest first (0: all)"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 0 {
				return usagef("history takes no arguments, got %d", c.NArg())
			}
			env.page = true
			var since time.Time
			if s := c.String("since"); s != "" {
				if d, err := time.ParseDuration(s); err == nil {
					since = env.Now().Add(-d)
				} else if t, err := time.Parse(time.RFC3339, s); err == nil {
					since = t
				} else {
					return usagef("--since %q is neither a duration (24h) nor an RFC 3339 time", s)
				}
			}
			if s := c.String("state"); s != "" && !slices.Contains(lifecycle.States, lifecycle.State(s)) {
				return usagef("--state %q is not a state (%s)", s, joinStates())
			}
			res := &result{}
			g, err := env.newGate(res)
			if err != nil {
				return env.finish(res, outcome.OK.Status, err, nil)
			}
			rows, err := history(g)
			if err != nil {
				return env.finish(res, outcome.OK.Status, err, nil)
			}
			var out []historyRow
			for _, r := range rows {
				if (c.String("state") == "" || r.State == c.String("state")) && !r.at.Before(since) {
					out = append(out, r)
				}
			}
			if n := c.Int("limit"); n > 0 && len(out) > n {
				out = out[:n]
			}
			if out == nil {
				out = []historyRow{}
			}
			res.Data = map[string]any{"history": out}
			return env.finish(res, outcome.OK.Status, nil, func(w io.Writer, st styles) {
				if len(out) == 0 {
					fmt.Fprintln(w, "Nothing yet.")
				}
				for _, r := range out {
					who := ""
					if r.ConfirmedBy != "" {
						who = "  confirmed by " + r.ConfirmedBy
					}
					intent := ""
					if r.Intent != "" {
						intent = "  " + review.ShortIntent(r.Intent)
					} else if r.Reason != "" {
						intent = "  " + review.ShortIntent(r.Reason)
					}
					fmt.Fprintf(w, "%s  %-11s  %s %s  %s  +%d ~%d -%d%s%s\n", r.At, escapeLine(r.State), r.Kind, escapeLine(r.ID), escapeLine(r.ActionType),
						r.Summary.Create, r.Summary.Modify, r.Summary.Delete, escapeLine(who), intent)
				}
			})
		},
	}
}

func joinStates() string {
	var s []string
	for _, st := range lifecycle.States {
		s = append(s, string(st))
	}
	return strings.Join(s, ", ")
}

// history lists the actions (by their latest event) and the plans that
// were never promoted, newest first.
func history(g *gate.Gate) ([]historyRow, error) {
	plans, err := g.Plans()
	if err != nil {
		return nil, err
	}
	var rows []historyRow
	promoted := map[string]bool{}
	for _, l := range plans {
		p := l.Plan
		if l.State == lifecycle.Applied || l.State == lifecycle.RolledBack {
			a, err := gate.LoadAction(g.Home, p.ActionID)
			if err != nil || a.PlanID != p.ID {
				continue
			}
			promoted[p.ID] = true
			at := a.AppliedAt
			if a.RolledBackAt != nil {
				at = *a.RolledBackAt
			}
			c, m, d := gate.Summary(p)
			r := historyRow{Kind: "action", ID: a.ActionID, ActionID: a.ActionID, PlanID: a.PlanID, ActionType: a.ActionType, Intent: review.IntentOf(p),
				State: string(a.State), At: at.UTC().Format(time.RFC3339), Summary: summary{c, m, d}, at: at}
			if a.Approval != nil && a.Approval.Via != gate.ViaNone {
				r.ConfirmedBy = fmt.Sprintf("%s (%s)", orUID(a.Approval), viaReported(a.Approval))
			}
			rows = append(rows, r)
			continue
		}
		at := p.CreatedAt
		if p.DeniedAt != nil {
			at = *p.DeniedAt
		}
		c, m, d := gate.Summary(p)
		rows = append(rows, historyRow{Kind: "plan", ID: p.ID, ActionID: p.ActionID, PlanID: p.ID, ActionType: p.ActionType, Intent: review.IntentOf(p),
			State: string(l.State), At: at.UTC().Format(time.RFC3339), Summary: summary{c, m, d}, at: at})
	}
	// A rejected dry run saved no plan: the audit log is its only record.
	rejected, err := audit.Named(g.Home.Audit(), audit.EventRejected)
	if err != nil {
		return nil, err
	}
	for _, r := range rejected {
		id := r.PlanID
		if id == "" {
			id = r.ActionID
		}
		var sum summary
		if r.Changes != nil {
			sum = summary{r.Changes.Created, r.Changes.Modified, r.Changes.Deleted}
		}
		rows = append(rows, historyRow{Kind: "plan", ID: id, ActionID: r.ActionID, PlanID: r.PlanID, State: string(lifecycle.Rejected),
			Reason: r.Reason, At: r.Time.UTC().Format(time.RFC3339), Summary: sum, at: r.Time})
	}
	slices.SortStableFunc(rows, func(a, b historyRow) int { return b.at.Compare(a.at) })
	return rows, nil
}

// viaReported is how a was given, with where a door was told the yes
// came from (gate.ReportedAgentPrompt, gate.ReportedPromptProgram).
func viaReported(a *gate.ActionApproval) string {
	switch a.Reported {
	case "":
		return a.Via
	case gate.ReportedAgentPrompt:
		return a.Via + ", reported from the agent's prompt"
	case gate.ReportedPromptProgram:
		return a.Via + ", reported from a program answering the agent's prompt"
	}
	return a.Via + ", reported from " + a.Reported
}

func orUID(a *gate.ActionApproval) string {
	if a.Principal != "" {
		return a.Principal
	}
	if a.User != "" {
		return a.User
	}
	return fmt.Sprintf("uid %d", a.UID)
}

// newGate loads the policy and returns the gate of this process.
func (env *Env) newGate(res *result) (*gate.Gate, error) {
	if _, err := env.stateDir(); err != nil {
		return nil, err
	}
	pol, err := env.loadPolicy(res)
	if err != nil {
		return nil, err
	}
	return env.gate(pol), nil
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
