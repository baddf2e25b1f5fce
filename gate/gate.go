package gate

import (
	"strings"
	"time"

	"github.com/act-project/act/internal/outcome"
	"github.com/act-project/act/internal/problem"
	"github.com/act-project/act/internal/state"
	"github.com/act-project/act/plan"
	"github.com/act-project/act/policy"
)

// The rule ids of the gate's outcomes, from the one table
// (internal/outcome).
var (
	RuleConfirmationRequired = outcome.Queued.Rule
	RuleConfirmationVia      = outcome.NotAccepted.Rule
	RuleExpired              = outcome.Expired.Rule
	RuleReverted             = outcome.Reverted.Rule
)

// Rule ids the gate reports (docs/exit-codes.md).
const (
	// RuleDenied: a person denied the plan (exit 8).
	RuleDenied = "apply.denied"
	// RuleNotAllowed: the lifecycle does not allow the move, e.g. to
	// deny an applied plan (exit 8).
	RuleNotAllowed = "plan.not-allowed"
	// RuleMaxRuns: the sandbox already ran the action id's commands
	// sandbox.max_runs times (exit 4).
	RuleMaxRuns = "sandbox.max-runs"
)

// Rules lists the rule ids of the gate, with their exit codes.
func Rules() []plan.Rule {
	return []plan.Rule{
		{ID: RuleMaxRuns, Summary: "the sandbox already ran this action id's commands sandbox.max_runs times", Layer: problem.Policy},
		{ID: RuleExpired, Summary: "the plan is older than the policy's plan expiry: plan again", Layer: problem.Conflict},
		{ID: RuleDenied, Summary: "a person denied the plan", Layer: problem.Conflict},
		{ID: RuleNotAllowed, Summary: "a plan's state does not allow the move (deny an applied plan, say)", Layer: problem.Conflict},
		{ID: RuleMaxPending, Summary: "as many plans as the policy allows already wait for a person", Layer: problem.Policy},
		{ID: RuleMaxLayers, Summary: "the layers of the plans not yet applied would hold more than the policy's max_layers_mb", Layer: problem.Policy},
	}
}

// A Gate decides for one act process: the state dir, the effective host
// policy, the clock and the user's homes (for the files that run code
// later).
type Gate struct {
	Home   state.Dir
	Policy *policy.Policy
	Now    func() time.Time
	// EnvHome is $HOME and UserHome the password database's home of the
	// user act runs as: risk grading checks both and every other home the
	// static rules know (descriptors.HomeRoots), so that a $HOME pointed
	// elsewhere hides nothing.
	EnvHome, UserHome string
	// PathDirs are the directories of $PATH: a program there runs by
	// name, so changing one is HIGH.
	PathDirs []string
	// NewID returns a fresh plan id; nil means random.
	NewID func() string
	// Session is what a long-running act keeps across decisions; nil for
	// a one-shot act.
	Session *Session
	// Caller is the door a request came through, for the audit log: "cli"
	// (the default), "run", "mcp", "claude-code" or "codex".
	Caller string
	// ActLine is the command line of act with args, as the gate's
	// messages hand it out to be run (cmd's: it names the state dir
	// where the environment chose it); nil, "act" and args.
	ActLine func(args ...string) string
	// RemoveLater, if not nil, hands the removal of dir, a layer already
	// renamed out of its plan (plans/.gc-<id>.layer), to a process that
	// outlives this one, and reports whether it could; nil, or false, and
	// the gate removes it itself (docs/promotion.md, "After").
	RemoveLater func(dir string) bool
}

// actLine is the command line of act with args in the gate's messages.
func (g *Gate) actLine(args ...string) string {
	if g.ActLine != nil {
		return g.ActLine(args...)
	}
	return "act " + strings.Join(args, " ")
}

// workspaces are where a plan may be LOW, and where a project outside
// git starts (its dot-directories): the policy's workspaces alone. A
// door's --workspace, act run's working directory and whatever else the
// agent may choose widen or move neither (docs/policy.md, "Workspaces").
func (g *Gate) workspaces() []string { return g.Policy.Workspaces }
