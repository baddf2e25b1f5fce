package policy

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/act-project/act/internal/document"
	"github.com/act-project/act/internal/problem"
	"github.com/act-project/act/internal/state"
	"github.com/act-project/act/schema"
)

//go:embed default.yaml
var defaultSource []byte

// DefaultSource returns the embedded default policy file.
func DefaultSource() []byte { return append([]byte(nil), defaultSource...) }

// DefaultName is the file name the embedded default is given in positions.
const DefaultName = "<default policy>"

// Rule ids of policy file problems the schema cannot express (besides the
// parse.* and schema.* rules).
const (
	// RuleInvalidDuration: a duration out of range (plan_expiry and
	// idle_period at least 1s; at most about 2562047h).
	RuleInvalidDuration = "policy.invalid-duration"
	// RuleInvalidRoot: an allowed root that is not clean.
	RuleInvalidRoot = "policy.invalid-root"
	// RuleInvalidWorkspace: a workspace that is "/", a home directory's
	// root or a system tree.
	RuleInvalidWorkspace = "policy.invalid-workspace"
	// RuleNoHome: "~" in a policy file when the password database gives
	// the user no usable home (none, a relative one, or "/").
	RuleNoHome = "policy.no-home"
	// RuleEmptySystem: a system policy file with no settings.
	RuleEmptySystem = "policy.empty-system"
	// RuleInvalidWitness: an audit witness whose key is not a
	// cosignature/v1 verifier key, whose URL is not one, or whose name or
	// key another witness has.
	RuleInvalidWitness = "policy.invalid-witness"
	// RuleInvalidQuorum: an audit quorum larger than the witnesses listed.
	RuleInvalidQuorum = "policy.invalid-quorum"
)

// HomeFile is the name of the policy file in act's state dir.
const HomeFile = state.PolicyFileName

// Where a policy comes from, in resolution order.
const (
	OriginFlag    = "flag"    // --policy FILE
	OriginEnv     = "env"     // ACT_POLICY
	OriginHome    = "home"    // <home>/policy.yaml
	OriginDefault = "default" // the embedded default
)

// An Origin records which source the effective policy was read from.
type Origin struct {
	// Source is OriginFlag, OriginEnv, OriginHome or OriginDefault.
	Source string `json:"source"`
	// Path is the policy file; empty for the embedded default.
	Path string `json:"path,omitempty"`
}

// String describes o for people: "--policy p.yaml", "ACT_POLICY p.yaml",
// "/home/u/.local/state/act/policy.yaml" or "the embedded default".
func (o Origin) String() string {
	switch o.Source {
	case OriginFlag:
		return "--policy " + o.Path
	case OriginEnv:
		return "ACT_POLICY " + o.Path
	case OriginHome:
		return o.Path
	}
	return "the embedded default"
}

// LoadOptions say where to look for the policy. cmd fills them from the
// command line and the environment.
type LoadOptions struct {
	// Flag is the --policy value; empty when not given.
	Flag string
	// Env is ACT_POLICY; empty when unset.
	Env string
	// Home is act's state dir; <Home>/policy.yaml is used if it exists.
	Home string
}

// A LoadError is an unusable policy file: unreadable (Err), or invalid
// (Problems, each with the file, line and column).
type LoadError struct {
	// File is the policy file as named by its source.
	File string
	// Source is the Origin source of the file.
	Source string
	// Problems are every problem found in the file, sorted by position.
	Problems problem.List
	// Err is the error reading the file, when it could not be read.
	Err error
}

// Error describes the read error, or the first problem and how many more.
func (e *LoadError) Error() string {
	if e.Err != nil {
		err := e.Err
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return fmt.Sprintf("read policy %s: %v", e.File, err)
	}
	if len(e.Problems) == 1 {
		return "invalid policy: " + e.Problems[0].Error()
	}
	return fmt.Sprintf("invalid policy: %s (and %d more problems)", e.Problems[0].Error(), len(e.Problems)-1)
}

// Unwrap returns the read error, or the problem list.
func (e *LoadError) Unwrap() error {
	if e.Err != nil {
		return e.Err
	}
	return e.Problems
}

// Load returns the effective policy and where it came from, trying in order
// opts.Flag, opts.Env, <opts.Home>/policy.yaml and the embedded default.
// A named file (--policy or ACT_POLICY) that cannot be read, or any policy
// file that is invalid, is a [*LoadError]: there is no fallback.
//
// "~" in every layer is [RealHome], never $HOME.
func Load(opts LoadOptions) (*Policy, Origin, error) {
	h := realHome()
	sys, _, err := loadSystem(h)
	if err != nil {
		return nil, Origin{}, err
	}
	if sys != nil && !sys.System.UserPolicy {
		// The host forbids per-user policies: one named is an error, the
		// state dir's is not read.
		if opts.Flag != "" || opts.Env != "" {
			name := opts.Flag
			if name == "" {
				name = opts.Env
			}
			return nil, Origin{}, &LoadError{File: name, Source: OriginSystem, Err: fmt.Errorf(
				"the system policy %s forbids per-user policies (user_policy: false): drop --policy and ACT_POLICY", SystemFile)}
		}
		opts.Home = ""
	}
	user, origin, err := loadUser(opts, h)
	if err != nil || sys == nil {
		return user, origin, err
	}
	return tighten(sys, user, origin), origin, nil
}

// loadUser is Load without the system layer.
func loadUser(opts LoadOptions, h home) (*Policy, Origin, error) {
	var origin Origin
	switch {
	case opts.Flag != "":
		origin = Origin{Source: OriginFlag, Path: opts.Flag}
	case opts.Env != "":
		origin = Origin{Source: OriginEnv, Path: opts.Env}
	case opts.Home != "":
		name := state.Dir{Root: opts.Home}.PolicyFile()
		_, err := os.Lstat(name)
		switch {
		case err == nil:
			origin = Origin{Source: OriginHome, Path: name}
		case !errors.Is(err, fs.ErrNotExist):
			return nil, Origin{}, &LoadError{File: name, Source: OriginHome, Err: err}
		}
	}
	if origin.Source == "" {
		p, err := defaultLayer(h)
		return p, Origin{Source: OriginDefault}, err
	}
	data, err := os.ReadFile(origin.Path)
	if err != nil {
		return nil, Origin{}, &LoadError{File: origin.Path, Source: origin.Source, Err: err}
	}
	p, err := parse(origin.Path, data, h, false)
	if err != nil {
		var le *LoadError
		if errors.As(err, &le) {
			le.Source = origin.Source
		}
		return nil, Origin{}, err
	}
	return p, origin, nil
}

// Default returns the embedded default policy, with "~" expanded to
// userHome (and its "~" entries left out when userHome is empty, relative
// or "/").
func Default(userHome string) (*Policy, error) {
	return defaultLayer(homeOf(userHome))
}

// defaultLayer is the embedded default with "~" expanded to h.
func defaultLayer(h home) (*Policy, error) {
	return build(map[string]any{}, defaultValue(), h)
}

// Parse reads a policy file's bytes: name is used in positions, userHome
// expands "~" (a file using "~" is invalid when userHome is empty,
// relative or "/"). Fields the file leaves out take the default's values.
// An invalid file is a [*LoadError].
func Parse(name string, data []byte, userHome string) (*Policy, error) {
	return parse(name, data, homeOf(userHome), false)
}

// RuleSystemOnly: a key only the system policy may set (state_dir,
// user_policy) in another layer.
const RuleSystemOnly = "policy.system-only"

// parse is Parse; system allows the keys only the system policy may set.
func parse(name string, data []byte, h home, system bool) (*Policy, error) {
	base := defaultValue()
	doc, probs := document.Parse(name, data)
	var v any = map[string]any{}
	switch {
	case len(probs) == 1 && probs[0].Rule == "parse.empty" && system:
		// An empty system policy is refused: a file emptied (or a link
		// pointed at an empty file) must not read as act's defaults.
		return nil, &LoadError{File: name, Problems: problem.List{{Rule: RuleEmptySystem, File: name, Line: 1, Column: 1, Layer: problem.Rule,
			Message: "the system policy is empty: write the settings it enforces, or {} to bound every user by act's defaults"}}}
	case len(probs) == 1 && probs[0].Rule == "parse.empty":
		// A file of comments only leaves every field to the default.
	case len(probs) > 0:
		return nil, &LoadError{File: name, Problems: probs}
	case doc.Value() != nil:
		v = doc.Value()
	}
	probs = check(name, data, doc, v, h)
	m, _ := v.(map[string]any)
	sys := &System{File: name, UserPolicy: true}
	for _, k := range []string{"state_dir", "user_policy"} {
		val, ok := m[k]
		if !ok {
			continue
		}
		if !system {
			pos := problem.Pos{}
			if doc != nil {
				pos = doc.Pos(k)
			}
			probs = append(probs, problem.Problem{Rule: RuleSystemOnly, Field: k, File: name, Line: pos.Line, Column: pos.Column,
				Message: fmt.Sprintf("only the system policy (%s) may set %s", SystemFile, k), Layer: problem.Rule})
			continue
		}
		switch k {
		case "state_dir":
			sys.StateDir, _ = val.(string)
		case "user_policy":
			sys.UserPolicy, _ = val.(bool)
		}
		delete(m, k)
	}
	if len(probs) > 0 {
		probs.Sort()
		return nil, &LoadError{File: name, Problems: probs}
	}
	p, err := build(m, base, h)
	if err != nil {
		return nil, err
	}
	if system {
		if sys.StateDir != "" {
			sys.StateDir = expandHome(sys.StateDir, h.dir)
		}
		p.System = sys
	}
	return p, nil
}

// A long-lived act (act mcp) reads the policy again for every call, so
// that a person's edit holds at once; the schema's verdict on the same
// bytes is the same, and is kept for the last few files' bytes this
// process read (compared whole), never anywhere another process could
// write.
var (
	validatedMu   sync.Mutex
	validatedLast []validatedEntry
)

type validatedEntry struct {
	data  string
	viols []schema.Violation
}

// validated is schema.ValidatePolicy(v) for v parsed from data, from the
// bytes' last verdict where this process has one.
func validated(data []byte, v any) []schema.Violation {
	validatedMu.Lock()
	for _, e := range validatedLast {
		if e.data == string(data) {
			validatedMu.Unlock()
			return slices.Clone(e.viols)
		}
	}
	validatedMu.Unlock()
	viols := schema.ValidatePolicy(v)
	validatedMu.Lock()
	defer validatedMu.Unlock()
	if len(validatedLast) >= 4 {
		validatedLast = validatedLast[1:]
	}
	validatedLast = append(validatedLast, validatedEntry{string(data), slices.Clone(viols)})
	return viols
}

// defaultValue is the embedded default as the strict parser reads it,
// made once and shared (never changed): from default_value.go, which TestDefaultValueGenerated keeps
// equal to default.yaml parsed, since parsing it cost every act process
// 1.5–2 ms. It is not run through the policy schema here either (a
// compile of it would cost more); TestDefaultValidates checks it against
// the schema instead.
var defaultValue = sync.OnceValue(defaultGenerated)

// check validates a policy file's value (v, parsed from data) against the
// schema and then the checks the schema cannot express: durations in
// range, allowed roots absolute and clean once "~" is expanded. doc may be
// nil (empty file).
func check(name string, data []byte, doc *document.Document, v any, h home) problem.List {
	var probs problem.List
	at := func(layer problem.Layer, path []string, rule, format string, args ...any) {
		p := problem.Problem{
			Rule:    rule,
			Field:   problem.FieldPath(path...),
			File:    name,
			Message: fmt.Sprintf(format, args...),
			Layer:   layer,
		}
		if doc != nil {
			pos := doc.Pos(path...)
			p.Line, p.Column = pos.Line, pos.Column
		}
		probs = append(probs, p)
	}
	bad := map[string]bool{}
	for _, viol := range validated(data, v) {
		if oldCommandRule(v, viol.Path) {
			continue // checkCommandRule says what replaces it
		}
		at(problem.Schema, viol.Path, viol.Rule, "%s", viol.Message)
		bad[problem.FieldPath(viol.Path...)] = true
	}
	m, ok := v.(map[string]any)
	if !ok {
		return probs
	}
	// The checks below skip what the schema already rejected.
	schemaAt := at
	at = func(layer problem.Layer, path []string, rule, format string, args ...any) {
		if !bad[problem.FieldPath(path...)] {
			schemaAt(layer, path, rule, format, args...)
		}
	}
	for _, f := range []struct {
		name string
		min  time.Duration
		path []string
	}{{"cooldown", 0, nil}, {"plan_expiry", time.Second, nil}, {"idle_period", time.Second, nil}, {"witness_grace", 0, []string{"audit", "witness_grace"}}} {
		path := f.path
		if path == nil {
			path = []string{f.name}
		}
		var s string
		var ok bool
		if len(path) == 2 {
			a, _ := m[path[0]].(map[string]any)
			s, ok = a[path[1]].(string)
		} else {
			s, ok = m[f.name].(string)
		}
		if !ok {
			continue
		}
		d, err := time.ParseDuration(s)
		switch {
		case err != nil:
			at(problem.Rule, path, RuleInvalidDuration, "%q is not a duration Go can represent (at most about 2562047h)", s)
		case d < f.min:
			at(problem.Rule, path, RuleInvalidDuration, "must be at least %s, not %q", FormatDuration(f.min), s)
		}
	}
	if a, ok := m["audit"].(map[string]any); ok {
		checkWitnesses(a, func(path []string, rule, format string, args ...any) {
			at(problem.Rule, append([]string{"audit"}, path...), rule, format, args...)
		})
	}
	// "~" anywhere, with no usable home: the file is invalid.
	tilde := func(path []string, s string) bool {
		if isTilde(s) && h.err != nil {
			at(problem.Rule, path, RuleNoHome, "%q cannot be expanded: %v", s, h.err)
			return true
		}
		return false
	}
	for _, f := range [][]string{{"allowed_roots"}, {"workspaces"}, {"risk", "sensitive_paths"}, {"sandbox", "hide_paths"}, {"sandbox", "home_visible"}, {"sandbox", "caches"}, {"sandbox", "persistent_caches"}} {
		var list any = m
		for _, k := range f {
			mm, _ := list.(map[string]any)
			list = mm[k]
		}
		items, _ := list.([]any)
		for i, item := range items {
			s, _ := item.(string)
			path := append(f[:len(f):len(f)], fmt.Sprint(i))
			switch {
			case tilde(path, s) || (f[0] != "allowed_roots" && f[0] != "workspaces"):
			case !isCleanRoot(s):
				at(problem.Rule, path, RuleInvalidRoot, "%q is not a clean absolute path (write %s)", s, cleanSuggestion(s))
			case f[0] == "workspaces":
				if err := CheckWorkspace(expandHome(s, h.dir), h.dir); err != nil {
					at(problem.Rule, path, RuleInvalidWorkspace, "%v", err)
				}
			}
		}
	}
	rules, _ := m["command_rules"].([]any)
	for i, item := range rules {
		r, _ := item.(map[string]any)
		checkCommandRule(r, func(path []string, rule, format string, args ...any) {
			at(problem.Rule, append([]string{"command_rules", fmt.Sprint(i)}, path...), rule, format, args...)
		}, tilde)
	}
	if c, ok := m["confirmation"].(map[string]any); ok {
		s, _ := c["approvers_file"].(string)
		tilde([]string{"confirmation", "approvers_file"}, s)
	}
	s, _ := m["state_dir"].(string)
	tilde([]string{"state_dir"}, s)
	return probs
}

// build merges file over base, decodes the result and expands "~".
func build(file, base map[string]any, h home) (*Policy, error) {
	userHome := h.dir
	merged := merge(base, file)
	data, err := json.Marshal(merged)
	if err != nil {
		return nil, fmt.Errorf("encode policy: %w", err)
	}
	p := new(Policy)
	if err := json.Unmarshal(data, p); err != nil {
		return nil, fmt.Errorf("decode policy: %w", err)
	}
	roots := []string{}
	for _, r := range p.AllowedRoots {
		if isTilde(r) && userHome == "" {
			continue // only the default's roots get here: file roots were checked
		}
		roots = append(roots, expandHome(r, userHome))
	}
	p.AllowedRoots = roots
	workspaces := []string{}
	for _, w := range p.Workspaces {
		if isTilde(w) && userHome == "" {
			continue
		}
		workspaces = append(workspaces, expandHome(w, userHome))
	}
	p.Workspaces = workspaces
	hide := []string{}
	for _, h := range p.Sandbox.HidePaths {
		if isTilde(h) && userHome == "" {
			continue // "~" unknown: nothing of the user's to hide
		}
		hide = append(hide, expandHome(h, userHome))
	}
	p.Sandbox.HidePaths = hide
	var visible []string
	for _, h := range p.Sandbox.HomeVisible {
		if userHome == "" {
			continue // "~" unknown: nothing of the user's to show
		}
		visible = append(visible, expandHome(h, userHome))
	}
	p.Sandbox.HomeVisible = visible
	var caches []string
	for _, h := range p.Sandbox.Caches {
		if userHome == "" {
			continue
		}
		caches = append(caches, expandHome(h, userHome))
	}
	p.Sandbox.Caches = caches
	var persistent []string
	for _, h := range p.Sandbox.PersistentCaches {
		if userHome == "" {
			continue
		}
		// Only a cache the sandbox shows at all may persist.
		if h = expandHome(h, userHome); slices.Contains(caches, h) {
			persistent = append(persistent, h)
		}
	}
	p.Sandbox.PersistentCaches = persistent
	var sensitive []string
	for _, h := range p.Risk.SensitivePaths {
		if isTilde(h) && userHome == "" {
			continue
		}
		sensitive = append(sensitive, expandHome(h, userHome))
	}
	p.Risk.SensitivePaths = nonNil(sensitive)
	for i, r := range p.CommandRules {
		if len(r.Argv) > 0 && isTilde(r.Argv[0]) && userHome != "" {
			argv := slices.Clone(r.Argv)
			argv[0] = expandHome(argv[0], userHome)
			p.CommandRules[i].Argv = argv
		}
	}
	if p.Confirmation.Via == "" {
		p.Confirmation.Via = ViaFlag
	}
	if p.Hooks.CannotDryRun == "" {
		p.Hooks.CannotDryRun = HookDeny
	}
	if p.Risk.Commands == "" {
		p.Risk.Commands = CommandsByDiff
	}
	if f := p.Confirmation.ApproversFile; f != "" {
		if isTilde(f) {
			f = expandHome(f, userHome)
		}
		p.Confirmation.ApproversFile = f
	}
	return p, nil
}

// merge returns base with over laid on top: maps merge key by key, every
// other value replaces.
func merge(base, over map[string]any) map[string]any {
	out := make(map[string]any, len(base)+len(over))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range over {
		bm, ok1 := out[k].(map[string]any)
		om, ok2 := v.(map[string]any)
		if ok1 && ok2 {
			out[k] = merge(bm, om)
			continue
		}
		out[k] = v
	}
	return out
}

func isTilde(root string) bool { return root == "~" || strings.HasPrefix(root, "~/") }

// expandHome expands a leading "~" to home.
func expandHome(root, home string) string {
	switch {
	case root == "~":
		return home
	case strings.HasPrefix(root, "~/"):
		return path.Join(home, root[2:])
	}
	return root
}

// isCleanRoot reports whether an allowed root, as written, is absolute and
// clean, or "~" followed by a clean relative path.
func isCleanRoot(root string) bool {
	switch {
	case root == "~":
		return true
	case strings.HasPrefix(root, "~/"):
		root = root[1:]
		return root != "/" && path.Clean(root) == root
	}
	return path.IsAbs(root) && path.Clean(root) == root
}

func cleanSuggestion(root string) string {
	if isTilde(root) {
		rest := path.Clean("/" + strings.TrimPrefix(root, "~"))
		if rest == "/" {
			return "~"
		}
		return "~" + rest
	}
	return path.Clean(root)
}
