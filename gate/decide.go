package gate

import (
	"fmt"
	"os"
	"strings"

	"github.com/act-project/act/descriptors"
	"github.com/act-project/act/diff"
	"github.com/act-project/act/internal/pathglob"
	"github.com/act-project/act/internal/problem"
	"github.com/act-project/act/policy"
)

// The policy's decision on a plan: from the stricter of the declared and
// the assessed risk (risk.go), what its changes amount to (implied.go) and
// the command rules.

// decide is the policy's decision on d now, its risk the stricter of the
// declared one and r's assessment, and its mode at least as strict as that
// of each action type its changes amount to (impliedTypes): a command that
// deletes is decided as a FILE_DELETE of those paths too.
func (g *Gate) decide(d *descriptors.Descriptor, r Risk, changes []diff.Change) policy.Decision {
	eff := *d
	eff.RiskLevel = r.Effective()
	dec := g.Policy.Decide(&eff, g.Now())
	g.commandRule(&dec, r, d.Confirmation.Required)
	declared := map[descriptors.ActionType]bool{}
	var walk func(t descriptors.ActionType, steps []descriptors.Step)
	walk = func(t descriptors.ActionType, steps []descriptors.Step) {
		declared[t] = true
		for _, s := range steps {
			walk(s.ActionType, s.Steps)
		}
	}
	walk(d.ActionType, d.Steps)
	for _, im := range impliedTypes(changes) {
		if declared[im.typ] {
			continue // decided as itself already
		}
		as := g.Policy.ModeOf(im.typ, eff.RiskLevel)
		what := fmt.Sprintf("the plan's changes amount to a %s (%s)", im.typ, shownPaths(im.paths))
		if as.Mode.Rank() > dec.Mode.Rank() {
			dec.Mode, dec.Source, dec.Reason = as.Mode, as.Source, what+": "+as.Reason
		}
		if as.Mode == policy.Deny {
			dec.Blocked = append(dec.Blocked, problem.Problem{Rule: policy.RuleDeny, Field: "action_type", Layer: problem.Policy,
				Message: what + ", and " + as.Reason})
		}
	}
	if r.Assessed.Rank() > r.Declared.Rank() {
		dec.Reason += fmt.Sprintf(" (act assessed the risk as %s, above the declared %s: %s)", r.Assessed, r.Declared, strings.Join(r.Reasons, "; "))
		for i := range dec.Blocked {
			if dec.Blocked[i].Field == "risk_level" {
				dec.Blocked[i].Message += fmt.Sprintf(" (as act assessed it: %s)", strings.Join(r.Reasons, "; "))
			}
		}
	}
	return dec
}

// commandRule applies the policy's command rules to dec (docs/policy.md,
// "Command rules"): a deny rule blocks; otherwise, while the plan is LOW
// by act's allow-list and as declared, the rules' mode replaces the mode
// its type and risk give (a person pre-approved those commands), unless
// the policy denies the plan outright or the descriptor asks for a
// person (asked). Beyond LOW a rule only tightens.
func (g *Gate) commandRule(dec *policy.Decision, r Risk, asked bool) {
	if r.CommandMode == "" {
		return
	}
	rules := strings.Join(r.CommandRules, ", ")
	why := fmt.Sprintf("the policy's command rules (%s) set its commands to %s", rules, r.CommandMode)
	switch {
	case r.CommandMode == policy.Deny:
		dec.Mode, dec.Source, dec.Reason = policy.Deny, "command rule", why
		dec.Blocked = append(dec.Blocked, problem.Problem{Rule: policy.RuleDeny, Field: "operation.argv", Layer: problem.Policy,
			Message: why})
	case len(dec.Blocked) > 0:
	case (r.Effective() == descriptors.RiskLow && !asked) || r.CommandMode.Rank() > dec.Mode.Rank():
		dec.Mode, dec.Source, dec.Reason = r.CommandMode, "command rule", why
	}
}

func (g *Gate) riskRules() RiskRules {
	ws := g.workspaces()
	r := RiskRules{Homes: descriptors.HomeRoots(g.EnvHome, g.UserHome), MaxDeletes: int(g.Policy.Risk.MaxDeletes), SensitivePaths: g.Policy.Risk.SensitivePaths,
		InWorkspace: func(path string) bool {
			// act's own state dir is never part of a workspace.
			return g.Policy.InWorkspace(path, ws) && !pathglob.Within(path, g.Home.Root)
		},
		UID: uint32(os.Geteuid()), PathDirs: g.PathDirs, Commands: g.Policy.CommandModeIn(g.PathDirs), Workspaces: ws, Home: g.EnvHome,
		CommandsByDiff: g.Policy.CommandsGradedByDiff()}
	if r.MaxDeletes <= 0 {
		r.MaxDeletes = DefaultMaxDeletes
	}
	return r
}

// shownPaths names the first few of paths, and counts the rest.
func shownPaths(paths []string) string {
	const shown = 3
	list := strings.Join(paths[:min(len(paths), shown)], ", ")
	if n := len(paths) - shown; n > 0 {
		list += fmt.Sprintf(" and %d more", n)
	}
	return list
}
