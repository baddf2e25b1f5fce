// Package outcome is act's one table of how a command can end: each
// outcome's exit code, the status --json reports, the rule id of an outcome
// that is not a problem of its own, and what it means (docs/exit-codes.md).
// No exit code is written anywhere else: a code beyond 0-9 (130, the
// hook's 2, a command's own) is a row here too.
//
// Any package returns a typed outcome as an [Error] (or an error with an
// Outcome method); cmd turns it into the exit code in one place. A problem
// list ends in the outcome of its layer ([ForLayer]).
package outcome

import (
	"errors"
	"slices"

	"github.com/act-project/act/internal/problem"
)

// An Outcome is one way a command can end.
type Outcome struct {
	// Code is the exit code.
	Code int
	// Status is what --json and the MCP tools report as "status".
	Status string
	// Rule is the rule id an error of this outcome carries when it is not
	// a problem of its own ("" for the outcomes of problems: the problem's
	// rule id is reported).
	Rule string
	// Label is the outcome in a few words, as a command's help lists it.
	Label string
	// Meaning is the outcome in one line, as docs/exit-codes.md gives it.
	Meaning string
}

// The outcomes of each exit code: the rows of docs/exit-codes.md.
var (
	OK           = Outcome{0, "ok", "", "success", "success (the command's own status: valid, planned, succeeded, already_applied, rolled_back, denied, ok)"}
	Fail         = Outcome{1, "error", "error", "error", "error: I/O, internal, environment (e.g. no sandbox), an invalid policy file; a promotion undone part-way is status reverted (rule apply.reverted)"}
	Usage        = Outcome{2, "error", "usage", "usage", "usage: bad flags or arguments, unknown command"}
	Invalid      = Outcome{3, "invalid", "", "invalid descriptor", "invalid descriptor: parse, schema or rule"}
	Blocked      = Outcome{4, "blocked", "", "blocked by policy", "blocked by policy: deny mode, outside allowed roots, above a policy cap, cooldown, max_runs, stale intent, UI_AUTOMATION"}
	Precondition = Outcome{5, "failed", "", "precondition failed", "precondition failed"}
	Rejected     = Outcome{6, "rejected", "", "dry run rejected", "dry run rejected: undeclared effect, cap exceeded, an operation that cannot be carried out or promoted, command or verification failed"}
	Queued       = Outcome{7, "queued", "confirm.required", "confirmation required", "confirmation required and not given (or not of the kind the host's policy counts): the plan stays pending"}
	Conflict     = Outcome{8, "rejected", "", "conflict", "conflict: stale or expired plan (status expired, rule apply.expired), action id already applied with other content or rolled back, rollback target changed"}
	NotFound     = Outcome{9, "not_found", "not-found", "not found", "not found: unknown plan or action id"}
)

// The named outcomes: a code's outcome with a status, or a rule, of its own.
var (
	Valid          = Outcome{0, "valid", "", "valid", "validate: the descriptor is valid"}
	Planned        = Outcome{0, "planned", "", "planned", "plan: the dry run passed and the plan is saved"}
	Succeeded      = Outcome{0, "succeeded", "", "applied", "apply: the plan was promoted onto the real tree"}
	AlreadyApplied = Outcome{0, "already_applied", "", "already applied", "apply: the same action, with the same content, was applied before; nothing was done again"}
	RolledBack     = Outcome{0, "rolled_back", "", "rolled back", "rollback: what the action changed is restored"}
	Denied         = Outcome{0, "denied", "", "denied", "deny: the pending plan is denied"}
	Reverted       = Outcome{1, "reverted", "apply.reverted", "undone part-way", "a promotion or rollback failed part-way and what it had done was undone: the tree is as before it"}
	NotAccepted    = Outcome{7, "queued", "confirm.not-accepted", "confirmation not accepted", "a confirmation was given, but not of the kind the host's policy counts: the plan stays pending"}
	Refused        = Outcome{7, "refused", "confirm.refused", "refused at the question", "act apply, act run: a person answered no (or nothing but Enter) to the question at the terminal: the plan is denied, as act deny denies it"}
	Expired        = Outcome{8, "expired", "apply.expired", "plan expired", "the plan is older than the policy allows: plan the action again"}
	HookUnsafe     = Outcome{5, "failed", "hook.unsafe", "hook set-up unsafe", "hook check: an agent's hook set-up lets tool calls run unreviewed, blocks them all, or misses a part act needs; hook install: such a set-up it cannot repair, so nothing was written"}
)

// The outcomes of codes a command gives beyond the table's 0-9, or
// gives a meaning of its own: the rows of docs/exit-codes.md's last table.
var (
	Interrupted = Outcome{130, "error", "interrupted", "interrupted", "act plan, act apply DESCRIPTOR, act run: interrupted (Ctrl-C, SIGTERM) during the dry run; nothing was promoted, the run does not count (130, as a shell reports a command ended by SIGINT)"}
	HookBlocked = Outcome{2, "error", "hook.blocked", "blocked", "act hook: bad input, an error or no decision within --timeout; the reason is on stderr, and the agent's harness blocks the tool call (it blocks on exit 2 alone)"}
	// Command is the row of a command's own exit code: its Code is
	// [CommandCode], a placeholder; [CommandExit] gives the code.
	Command = Outcome{CommandCode, "", "", "the command's exit code", "act run, act apply --as-command: the command ran and exited non-zero, with this code (128 + N when signal N killed it); act run promoted nothing (with --json, status rejected, the code in commands[0].exit_code)"}
)

// CommandCode is the Code of [Command]'s row: no exit code, the
// command's own.
const CommandCode = -1

// SignalBase is what a command killed by signal N exits with, less N: a
// shell's convention.
const SignalBase = 128

// CommandExit is the outcome of a command that ends as the command it ran
// did: its exit code code, and status, act's own status for it.
func CommandExit(code int, status string) Outcome {
	o := Command
	o.Code, o.Status = code, status
	return o
}

var codes = []Outcome{OK, Fail, Usage, Invalid, Blocked, Precondition, Rejected, Queued, Conflict, NotFound}

var named = []Outcome{Valid, Planned, Succeeded, AlreadyApplied, RolledBack, Denied, Reverted, NotAccepted, Refused, Expired, HookUnsafe}

var own = []Outcome{Interrupted, HookBlocked, Command}

// Codes returns the outcome of each exit code, by code: Codes()[c].Code == c.
func Codes() []Outcome { return append([]Outcome(nil), codes...) }

// Named returns the named outcomes: those with a status or rule other than
// their code's.
func Named() []Outcome { return append([]Outcome(nil), named...) }

// Own returns the outcomes of codes beyond 0-9 and of codes a command
// gives a meaning of its own, [Command] last.
func Own() []Outcome { return append([]Outcome(nil), own...) }

// ForCode returns the outcome of exit code c; an unknown code is [Fail].
func ForCode(c int) Outcome {
	if c >= 0 && c < len(codes) {
		return codes[c]
	}
	return Fail
}

// ForRule returns the outcome whose rule id is rule, if there is one.
func ForRule(rule string) (Outcome, bool) {
	for _, o := range slices.Concat(codes, named, own) {
		if rule != "" && o.Rule == rule {
			return o, true
		}
	}
	return Outcome{}, false
}

// layers is the outcome of each problem layer.
var layers = map[problem.Layer]Outcome{
	problem.Parse: Invalid, problem.Schema: Invalid, problem.Rule: Invalid,
	problem.Policy: Blocked, problem.Precondition: Precondition,
	problem.Rejected: Rejected, problem.Conflict: Conflict,
}

// ForLayer returns the outcome of problems of layer l; a layer the table
// does not know is [Invalid].
func ForLayer(l problem.Layer) Outcome {
	if o, ok := layers[l]; ok {
		return o
	}
	return Invalid
}

// Carrier is an error that knows its outcome.
type Carrier interface {
	error
	Outcome() Outcome
}

// Error is an error that ends a command in a given outcome.
type Error struct {
	O   Outcome
	Err error
}

// New returns err ending in outcome o (nil when err is nil).
func New(o Outcome, err error) error {
	if err == nil {
		return nil
	}
	return &Error{O: o, Err: err}
}

func (e *Error) Error() string    { return e.Err.Error() }
func (e *Error) Unwrap() error    { return e.Err }
func (e *Error) Outcome() Outcome { return e.O }

// Of returns the outcome of the first error in err's chain that carries
// one ([Carrier]).
func Of(err error) (Outcome, bool) {
	var c Carrier
	if errors.As(err, &c) {
		return c.Outcome(), true
	}
	return Outcome{}, false
}
