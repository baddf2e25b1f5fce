package plan

import (
	"github.com/act-project/act/internal/problem"
)

// A Rule is a rule id the plan stage can report, with its layer:
// Precondition (exit 5) or Rejected (exit 6).
type Rule struct {
	ID      string
	Summary string
	Layer   problem.Layer
}

// RuleVerificationWrote: a verification command changed paths of the
// scope, which were thrown away (a warning: a Note of RunOps).
const RuleVerificationWrote = "verification.wrote"

// Rules lists every rule id plan reports: preconditions, the effects check,
// the disk cap and the operations' own ([OpRules]). Warnings are listed too
// (effects.not-happened, verification.wrote and the operation notes), as
// Rejected.
func Rules() []Rule {
	out := []Rule{
		{"precondition.path-missing", "a path in preconditions.paths_exist does not exist", problem.Precondition},
		{"precondition.path-present", "a path in preconditions.paths_absent exists", problem.Precondition},
		{"precondition.sha256-mismatch", "a file in preconditions.sha256 is missing or has another digest", problem.Precondition},
		{"precondition.disk-space", "a scope path's filesystem has less free space than preconditions.min_free_disk_mb", problem.Precondition},
		{"precondition.network-unavailable", "preconditions.network_available is true and no non-loopback route exists", problem.Precondition},
		{"precondition.user-not-idle", "preconditions.user_idle is true and the user typed at a terminal within the policy's idle period", problem.Precondition},
		{"precondition.user-idle-unknown", "preconditions.user_idle is true and no terminal of the user shows its last input: unknown counts as failed", problem.Precondition},
		{"effects.undeclared-change", "the dry run changed a path that no declared effect of the same kind matches", problem.Rejected},
		{"effects.not-happened", "warning: a declared effect did not happen in the dry run", problem.Rejected},
		{"resources.disk-cap-exceeded", "the dry run's layer (its files' content and their names) holds more than resources.max_disk_mb", problem.Rejected},
		{RulePlanTooLarge, "the plan's record would be larger than act keeps for one plan (64 MiB)", problem.Rejected},
		{RuleTooManyChanges, "the dry run made more changes than the policy's max_changes", problem.Rejected},
		{RuleOutsideScope, "a saved plan's change lies outside its descriptor's scope (the plan was edited after its dry run)", problem.Rejected},
		{RuleSpecialMode, "the dry run made a file setuid, setgid or sticky (act never promotes one)", problem.Rejected},
		{RuleScopeCredentialStore, "a scope of a plan that runs commands is, holds or lies in a credential store found on its real path (through a symbolic link) or a tool's configuration that holds a secret now: refused before anything runs", problem.Rejected},
		{RuleVerificationWrote, "warning: a verification command wrote in the scope; it ran over the planned result in a throwaway layer, so nothing it wrote is in the plan (the warning names the first paths, and how many)", problem.Rejected},
		{RuleCacheRefused, "warning: act refused to keep some of what a command added to one of its own persistent caches (sandbox.persistent_caches; the warning names the first, with why)", problem.Rejected},
		{RuleCacheChanged, "act's own persistent Go module cache, verified before a command ran, fails verification after it (something wrote it meanwhile): what the command made may be built from it; act empties the cache (docs/sandbox-filesystem.md)", problem.Rejected},
		{RuleCacheDropped, "warning: act's own persistent Go module cache failed verification before a command was to see it (something other than act wrote it), and act emptied it whole; the warning names what failed (docs/sandbox-filesystem.md)", problem.Rejected},
	}
	for _, r := range OpRules() {
		out = append(out, Rule{ID: r.ID, Summary: r.Summary, Layer: problem.Rejected})
	}
	return out
}
