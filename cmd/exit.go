package cmd

import "github.com/act-project/act/internal/problem"

// An ExitCode is one row of act's one table of exit codes: the code, the
// --json status it reports, the rule id of an outcome that is not a
// problem of its own, and what it means. exitCode, statusFor, ruleFor and
// docs/exit-codes.md all read it.
type ExitCode struct {
	Code    int
	Status  string
	Rule    string
	Meaning string
}

// exitCodes is the table, by code.
var exitCodes = []ExitCode{
	{0, "ok", "", "success (the command's own status: valid, planned, succeeded, already_applied, rolled_back, ok)"},
	{1, "error", "error", "error: I/O, internal, environment (e.g. no sandbox), an invalid policy file; a promotion undone part-way is status reverted (rule apply.reverted)"},
	{2, "error", "usage", "usage: bad flags or arguments, unknown command"},
	{3, "invalid", "", "invalid descriptor: parse, schema or rule"},
	{4, "blocked", "", "blocked by policy: deny mode, outside allowed roots, above a policy cap, cooldown, max_runs, stale intent, UI_AUTOMATION"},
	{5, "failed", "", "precondition failed"},
	{6, "rejected", "", "dry run rejected: undeclared effect, cap exceeded, an operation that cannot be carried out or promoted, command or verification failed"},
	{7, "queued", "confirm.required", "confirmation required and not given (or not of the kind the host's policy counts): the plan stays pending"},
	{8, "rejected", "", "conflict: stale or expired plan (status expired, rule apply.expired), action id already applied with other content or rolled back, rollback target changed"},
	{9, "not_found", "not-found", "not found: unknown plan or action id"},
}

// ExitCodes returns the table, for documentation.
func ExitCodes() []ExitCode { return append([]ExitCode(nil), exitCodes...) }

// layerExit is the exit code of each problem layer.
var layerExit = map[problem.Layer]int{
	problem.Parse: 3, problem.Schema: 3, problem.Rule: 3,
	problem.Policy: 4, problem.Precondition: 5, problem.Rejected: 6, problem.Conflict: 8,
}

// LayerExit returns the exit code of a problem layer.
func LayerExit(l problem.Layer) int {
	if c, ok := layerExit[l]; ok {
		return c
	}
	return 3
}

func rowOf(code int) ExitCode {
	for _, r := range exitCodes {
		if r.Code == code {
			return r
		}
	}
	return exitCodes[1]
}

// statusFor names the outcome of exit code code; success is the status a
// command reports on exit 0.
func statusFor(code int, success string) string {
	if code == 0 && success != "" {
		return success
	}
	return rowOf(code).Status
}

// ruleFor is the rule id of an error of exit code code that carries none.
func ruleFor(code int) string {
	if r := rowOf(code).Rule; r != "" {
		return r
	}
	return "error"
}
