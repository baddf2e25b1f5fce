package descriptors

import (
	"strings"

	"github.com/act-project/act/internal/problem"
)

// A Rule is one stable rule id act can report about a descriptor, with a
// one-line summary of what breaks it.
type Rule struct {
	ID, Summary string
}

// Layer returns the check that reports r, from the prefix of its id:
// parse.*, schema.*, policy.*; every other id is a static rule.
func (r Rule) Layer() problem.Layer {
	switch r.ID[:strings.IndexByte(r.ID, '.')+1] {
	case "parse.":
		return problem.Parse
	case "schema.":
		return problem.Schema
	case "policy.":
		return problem.Policy
	}
	return problem.Rule
}

// Rules returns every rule id act can report about a descriptor, in the
// order of the checks (parse, schema, static rules, policy) and by id within
// each: the parser's (internal/document), the CUE schema's (schema), those
// of [Check], and the host policy's blocks (policy). docs/rules.md is
// generated from it.
func Rules() []Rule {
	out := make([]Rule, len(rules))
	copy(out, rules)
	return out
}

var rules = []Rule{
	// Parse (internal/document): the bytes are not one strict document.
	{"parse.alias-expansion", "YAML aliases refer to themselves or would expand to too many values"},
	{"parse.duplicate-key", "a key appears twice in the same object"},
	{"parse.empty", "the document is empty"},
	{"parse.invalid-utf8", "the document is not valid UTF-8"},
	{"parse.key-not-string", "a YAML key is a list or an object, not a plain string"},
	{"parse.merge-key", "a YAML merge key (`<<`) is used"},
	{"parse.multiple-documents", "the file holds more than one YAML document"},
	{"parse.nul-byte", "the document contains a NUL byte"},
	{"parse.number", "a number does not fit in 64 bits or is not finite"},
	{"parse.syntax", "the document is not valid YAML or JSON"},
	{"parse.tag", "a YAML tag other than the core schema's is used"},
	{"parse.too-deep", "the document nests deeper than 64 levels"},
	{"parse.too-large", "the document is larger than 1 MiB"},
	{"parse.too-many-values", "the document has more than 100,000 values"},
	{"parse.trailing-data", "data follows the JSON value"},

	// Schema (schema/descriptor.cue).
	{"schema.enum", "a value is not one of the values its field allows"},
	{"schema.invalid", "a value breaks a schema constraint not covered by another schema rule"},
	{"schema.missing-field", "a required field is missing"},
	{"schema.pattern", "a string does not have the form its field requires (UUID, timestamp, mode, digest)"},
	{"schema.type", "a value has the wrong type"},
	{"schema.unknown-field", "a field the schema does not define (the schema is closed)"},

	// Static rules (Check).
	{"audit.disabled", "audit.log is false: the agent cannot turn auditing off"},
	{"audit.retain-days-not-positive", "audit.retain_days is zero or negative"},
	{"command.empty-program", "a command's argv[0] is empty"},
	{"command.invalid-env-name", "an env key of COMMAND_EXECUTION is not a valid variable name"},
	{"command.report-cwd-not-shell", "a COMMAND_EXECUTION sets report_cwd, but its argv is not a shell script: [sh, -c, SCRIPT]"},
	{"composite.step-effects-outside-parent", "a step declares an effect its parent's effects do not cover"},
	{"composite.step-risk-above-parent", "a step's risk_level is above its parent's"},
	{"composite.too-deep", "a step stands deeper than depth 8 (the descriptor is depth 1)"},
	{"config.empty", "a CONFIG_CHANGE neither sets nor unsets any key"},
	{"config.format-mismatch", "a CONFIG_CHANGE format disagrees with the file's `.json`, `.yaml` or `.yml` extension"},
	{"config.invalid-key", "a CONFIG_CHANGE key is not a dotted key with non-empty parts"},
	{"config.key-conflict", "a CONFIG_CHANGE key is set and unset, listed twice, or overlaps another key"},
	{"confirmation.reason-missing", "confirmation.required is true but confirmation.reason is empty"},
	{"created-at.future", "created_at is more than 5 minutes in the future"},
	{"created-at.invalid", "created_at is not a valid RFC 3339 time"},
	{"effects.system-state-change", "effects.system_state_change is true: act can only carry out and roll back filesystem changes"},
	{"effects.undeclared-path", "a path the operation changes is not covered by an effect of the right kind"},
	{"file-write.invalid-base64", "a FILE_WRITE content_base64 is not valid standard base64"},
	{"forbidden.background-execution", "a command runs something in the background or later (`nohup`, `setsid`, `&`, `at`, `crontab`, …)"},
	{"forbidden.credential-store", "a scope of a descriptor that runs a command takes in a credential store (`~/.ssh`, `~/.config`, `~/.npmrc`, …) or a host secret"},
	{"forbidden.home-root", "a scope takes in a home directory itself (`$HOME`, the passwd home, `/root`, `/home/NAME`)"},
	{"forbidden.host-access", "a scope takes in a host system directory (`/`, `/etc`, `/usr`, …) or a command asks for host privileges (`sudo`, `systemctl`, …)"},
	{"forbidden.persistence-outside-scope", "an effect creates or modifies a file that runs something later (shell rc, autostart, systemd, cron, …) that no scope path names itself"},
	{"forbidden.state-dir", "a scope reaches into act's own state directory"},
	{"glob.invalid", "a glob is malformed: `**` is not a whole path element"},
	{"glob.too-many", "the descriptor holds more than 256 paths with wildcards"},
	{"intent.empty", "intent_summary is blank"},
	{"intent.not-one-paragraph", "intent_summary has a blank line"},
	{"intent.too-long", "intent_summary is longer than 1,000 characters"},
	{"mode.special-bits", "a mode sets the setuid, setgid or sticky bit"},
	{"move.nested", "a FILE_MOVE moves a path into itself or onto a directory that holds it"},
	{"move.same-path", "a FILE_MOVE has the same from and to"},
	{"network.inconsistent", "effects.network or sandbox.allow_network disagrees with scope.network.required"},
	{"network.invalid-header", "a NETWORK_REQUEST header name is not a token or its value holds a line break"},
	{"network.invalid-url", "a NETWORK_REQUEST url is not http(s) with a host"},
	{"network.not-allowed-for-type", "network is asked for by an action type that cannot use it"},
	{"network.required-for-type", "network is not declared by an action type that needs it"},
	{"network.url-credentials", "a NETWORK_REQUEST url carries a user or password"},
	{"package.dev-unsupported", "development dependencies (dev, -D) asked of a manager that has none (pip)"},
	{"package.invalid-name", "a package name is empty, starts with `-`, or holds spaces or control characters"},
	{"path.not-absolute", "a path is not absolute"},
	{"path.not-clean", "a path has a `..`, `.` or empty element, a trailing slash or a NUL byte"},
	{"path.outside-scope", "an operation, effect or precondition path lies outside scope.filesystem.paths"},
	{"path.too-long", "a path is longer than 4,095 bytes or has an element longer than 255 bytes"},
	{"path.wildcard-not-allowed", "a wildcard in a field that takes no globs"},
	{"preconditions.contradictory", "a path must both exist and be absent"},
	{"preconditions.min-free-disk-not-positive", "preconditions.min_free_disk_mb is zero or negative"},
	{"resources.not-positive", "a resource cap is zero or negative"},
	{"rollback.not-supported", "rollback.supported is false"},
	{"sandbox.max-runs-not-positive", "sandbox.max_runs is zero or negative"},
	{"sandbox.required", "sandbox.required is false for HIGH, CRITICAL, COMMAND_EXECUTION, PACKAGE_INSTALL, PACKAGE_REMOVE, FILE_DELETE or DIRECTORY_DELETE"},
	{"scope.path-not-absolute", "a scope path is not absolute"},
	{"scope.path-not-clean", "a scope path has a `..`, `.` or empty element, a trailing slash or a NUL byte"},
	{"scope.wildcard-not-recursive", "a scope path has a wildcard but scope.filesystem.recursive is false"},
	{"ui.not-allowed-for-type", "scope.ui.required is true for an action without UI_AUTOMATION"},
	{"ui.required-for-type", "scope.ui.required is false for UI_AUTOMATION"},

	// Policy (policy): the host's policy blocks the action.
	{"policy.deny", "the host policy's mode for this action type or risk is deny"},
	{"policy.network-host", "the NETWORK_REQUEST host is not on the policy's allow-list"},
	{"policy.outside-allowed-roots", "a scope path lies outside the policy's allowed roots"},
	{"policy.resource-cap", "a resource is above the policy's cap"},
	{"policy.sandbox-network", "the action needs network in the sandbox and the policy gives none"},
	{"policy.stale-intent", "created_at is older than the policy's plan expiry"},
	{"policy.ui-automation", "UI_AUTOMATION: this host has no UI actuator"},
}
