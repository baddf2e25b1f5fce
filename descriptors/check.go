package descriptors

// This file holds Check and the rules on the descriptor as a whole. The
// rules on each field family live beside it: check_path.go (path form and
// scope), check_forbidden.go (docs/descriptor.md), check_operation.go (what each
// action type's operation names), check_command.go (argv),
// check_composite.go (steps) and check_pattern.go (sets of effect patterns,
// and the cap on wildcards). Every rule id is listed in rules.go.
//
// Conventions for every problem:
//   - Layer problem.Rule and a rule id "area.kebab-case" listed by [Rules];
//   - the field path of the offending value, as path elements, so that the
//     document can say where it is written;
//   - one sentence, lower-case, no final period, naming the offending value.

import (
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/act-project/act/internal/document"
	"github.com/act-project/act/internal/problem"
)

// CheckOptions are the host facts the static rules need. Check reads nothing
// else: no clock, no environment, no filesystem.
type CheckOptions struct {
	// Now is the current time, for created_at. The zero time skips the
	// "not in the future" rule.
	Now time.Time
	// Home is $HOME. Empty when unknown.
	Home string
	// UserHome is the current user's home directory from the password
	// database. Empty when unknown.
	UserHome string
	// StateDir is act's state directory. Empty when unknown.
	StateDir string
}

// Limits of the static rules.
const (
	// MaxIntentRunes is the longest intent_summary accepted, in characters.
	MaxIntentRunes = 1000
	// MaxStepDepth is the deepest a composite step may stand: the
	// descriptor is depth 1, its steps depth 2.
	MaxStepDepth = 8
	// MaxFutureSkew is how far in the future created_at may be.
	MaxFutureSkew = 5 * time.Minute
)

// Check applies the static rules of docs/rules.md to d, a descriptor that has
// passed [Load]; doc is the document it was loaded from and gives every
// problem its position (nil: problems without positions). It returns every
// broken rule, sorted by position, or nil.
//
// Check is pure: it reads neither the clock nor the filesystem nor the
// environment; what it needs to know of the host comes in opts.
func Check(d *Descriptor, doc *document.Document, opts CheckOptions) problem.List {
	c := &checker{d: d, doc: doc, opts: opts}
	c.checkGlobCount()
	c.checkMetadata()
	c.checkScope()
	c.checkResources()
	c.checkSandbox()
	c.checkRollback()
	c.checkConfirmation()
	c.checkAudit()
	c.checkNetwork()
	c.checkUI()
	c.checkPreconditions()
	c.checkVerification()
	c.checkNode(c.root(), 1)
	if len(c.probs) == 0 {
		return nil
	}
	c.probs.Sort()
	return c.probs
}

// checker collects the problems of one descriptor.
type checker struct {
	d       *Descriptor
	doc     *document.Document
	opts    CheckOptions
	probs   problem.List
	roots   *scopeRoots          // see scopeRoots
	persist []persistencePattern // see persistencePatterns
	// tooManyGlobs turns off the rules that compare patterns pairwise.
	tooManyGlobs bool
}

// add records a problem of rule at the field path.
func (c *checker) add(rule string, path []string, format string, args ...any) {
	if c.doc != nil {
		c.probs = append(c.probs, At(c.doc, problem.Rule, rule, path, format, args...))
		return
	}
	c.probs = append(c.probs, problem.Problem{
		Rule:    rule,
		Field:   problem.FieldPath(path...),
		Message: fmt.Sprintf(format, args...),
		Layer:   problem.Rule,
	})
}

// field returns a fresh path: prefix followed by elems.
func field(prefix []string, elems ...string) []string {
	out := make([]string, 0, len(prefix)+len(elems))
	return append(append(out, prefix...), elems...)
}

// idx formats a list index as a path element.
func idx(i int) string { return fmt.Sprint(i) }

func (c *checker) checkMetadata() {
	d := c.d
	t, err := time.Parse(time.RFC3339, d.CreatedAt)
	switch {
	case err != nil:
		c.add("created-at.invalid", []string{"created_at"},
			"created_at %q is not a valid RFC 3339 time", d.CreatedAt)
	case !c.opts.Now.IsZero() && t.After(c.opts.Now.Add(MaxFutureSkew)):
		c.add("created-at.future", []string{"created_at"},
			"created_at %q is more than 5 minutes in the future (now is %s)",
			d.CreatedAt, c.opts.Now.UTC().Format(time.RFC3339))
	}
	c.checkIntent([]string{"intent_summary"}, d.IntentSummary)
}

// checkIntent applies the one-paragraph rules to an intent_summary.
func (c *checker) checkIntent(path []string, s string) {
	if strings.TrimSpace(s) == "" {
		c.add("intent.empty", path, "intent_summary is blank")
		return
	}
	if n := utf8.RuneCountInString(s); n > MaxIntentRunes {
		c.add("intent.too-long", path,
			"intent_summary is %d characters long, more than the limit of %d", n, MaxIntentRunes)
	}
	body := strings.ReplaceAll(strings.TrimSpace(s), "\r\n", "\n")
	for i, line := range strings.Split(body, "\n") {
		if strings.TrimSpace(line) == "" {
			c.add("intent.not-one-paragraph", path,
				"intent_summary has a blank line (line %d of the text); it must be one paragraph", i+1)
			return
		}
	}
}

func (c *checker) checkResources() {
	r := c.d.Resources
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"max_cpu_ms", r.MaxCPUMs},
		{"max_memory_mb", r.MaxMemoryMB},
		{"max_disk_mb", r.MaxDiskMB},
		{"max_duration_ms", r.MaxDurationMs},
	} {
		if f.v <= 0 {
			c.add("resources.not-positive", []string{"resources", f.name},
				"resources.%s is %d; every resource must be a positive integer", f.name, f.v)
		}
	}
}

func (c *checker) checkSandbox() {
	s := c.d.Sandbox
	if s.MaxRuns <= 0 {
		c.add("sandbox.max-runs-not-positive", []string{"sandbox", "max_runs"},
			"sandbox.max_runs is %d; it must be a positive integer", s.MaxRuns)
	}
	if s.Required {
		return
	}
	if why := sandboxReason(c.d.ActionType, c.d.RiskLevel); why != "" {
		c.add("sandbox.required", []string{"sandbox", "required"},
			"sandbox.required is false, but %s must run in a sandbox", why)
	}
	// Steps that need a sandbox are reported where they stand, in
	// checkStep: their sandbox is their parent's.
}

// sandboxReason says why an action of type t at risk r needs a sandbox, or
// "" when it does not (docs/rules.md).
func sandboxReason(t ActionType, r RiskLevel) string {
	switch t {
	case CommandExecution, PackageInstall, PackageRemove, FileDelete, DirectoryDelete:
		return "a " + string(t) + " action"
	}
	if r == RiskHigh || r == RiskCritical {
		return "an action of risk " + string(r)
	}
	return ""
}

func (c *checker) checkRollback() {
	if !c.d.Rollback.Supported {
		c.add("rollback.not-supported", []string{"rollback", "supported"},
			"rollback.supported is false; act runs only actions it can roll back")
	}
}

func (c *checker) checkConfirmation() {
	cf := c.d.Confirmation
	if cf.Required && strings.TrimSpace(cf.Reason) == "" {
		c.add("confirmation.reason-missing", []string{"confirmation", "reason"},
			"confirmation.required is true but confirmation.reason is empty; give the factual reason")
	}
}

func (c *checker) checkAudit() {
	a := c.d.Audit
	if !a.Log {
		c.add("audit.disabled", []string{"audit", "log"},
			"audit.log is false; every action is audited and the agent cannot turn it off")
	}
	if a.RetainDays <= 0 {
		c.add("audit.retain-days-not-positive", []string{"audit", "retain_days"},
			"audit.retain_days is %d; it must be a positive integer", a.RetainDays)
	}
}

// checkNetwork applies the agreement rule to the descriptor's three network
// flags; checkNode applies the per-type rules.
func (c *checker) checkNetwork() {
	d := c.d
	want := d.Scope.Network.Required
	if d.Effects.Network != want {
		c.add("network.inconsistent", []string{"effects", "network"},
			"effects.network is %t but scope.network.required is %t; they must agree", d.Effects.Network, want)
	}
	if d.Sandbox.AllowNetwork != want {
		c.add("network.inconsistent", []string{"sandbox", "allow_network"},
			"sandbox.allow_network is %t but scope.network.required is %t; they must agree", d.Sandbox.AllowNetwork, want)
	}
}

// checkUI requires scope.ui.required exactly when the action (or one of its
// steps) is UI_AUTOMATION.
func (c *checker) checkUI() {
	uses := usesType(c.root(), UIAutomation)
	switch req := c.d.Scope.UI.Required; {
	case uses && !req:
		c.add("ui.required-for-type", []string{"scope", "ui", "required"},
			"scope.ui.required is false but the action includes UI_AUTOMATION")
	case !uses && req:
		c.add("ui.not-allowed-for-type", []string{"scope", "ui", "required"},
			"scope.ui.required is true but %s includes no UI_AUTOMATION", c.d.ActionType)
	}
}

func (c *checker) checkPreconditions() {
	p := c.d.Preconditions
	exist := map[string]bool{}
	for i, s := range p.PathsExist {
		path := []string{"preconditions", "paths_exist", idx(i)}
		if c.checkPath(path, s, false) {
			c.checkInScope(path, s)
		}
		exist[s] = true
	}
	for i, s := range p.PathsAbsent {
		path := []string{"preconditions", "paths_absent", idx(i)}
		if c.checkPath(path, s, false) {
			c.checkInScope(path, s)
		}
		if exist[s] {
			c.add("preconditions.contradictory", path,
				"%q is listed in both paths_exist and paths_absent", s)
		}
	}
	for _, k := range sortedKeys(p.SHA256) {
		path := []string{"preconditions", "sha256", k}
		if c.checkPath(path, k, false) {
			c.checkInScope(path, k)
		}
		if slices.Contains(p.PathsAbsent, k) {
			c.add("preconditions.contradictory", path,
				"%q has a sha256 precondition but is listed in paths_absent", k)
		}
	}
	if p.MinFreeDiskMB != nil && *p.MinFreeDiskMB <= 0 {
		c.add("preconditions.min-free-disk-not-positive", []string{"preconditions", "min_free_disk_mb"},
			"preconditions.min_free_disk_mb is %d; it must be a positive integer", *p.MinFreeDiskMB)
	}
}

func (c *checker) checkVerification() {
	v := c.d.Verification
	if v == nil {
		return
	}
	for i, argv := range v.Commands {
		c.checkArgv([]string{"verification", "commands", idx(i)}, argv)
	}
	if v.Workdir != "" {
		f := []string{"verification", "workdir"}
		if c.checkPath(f, v.Workdir, false) {
			c.checkInScope(f, v.Workdir)
		}
	}
	for _, k := range sortedKeys(v.Env) {
		if !envName(k) {
			c.add("command.invalid-env-name", []string{"verification", "env", k},
				"%q is not a valid environment variable name", k)
		}
	}
}
