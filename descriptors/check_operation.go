package descriptors

// Operation rules: for the descriptor and for each step on its own (a
// "node"), the form of every path the operation names, the scope, the
// completeness of the declared effects (every path the operation changes is
// covered by an effect of the right kind) and what the schema cannot say
// about each operation's fields.
//
// Effect kinds by operation (docs/descriptor.md):
//
//	FILE_WRITE         path: create, or modify (create only with create_only)
//	FILE_DELETE        each path: delete
//	FILE_MOVE          from: delete; to: create, or modify with overwrite
//	DIRECTORY_CREATE   path: create
//	DIRECTORY_DELETE   path: delete
//	NETWORK_REQUEST    save_to: create or modify
//	CONFIG_CHANGE      path: modify
//
// A delete effect covers everything below the paths it matches (a deleted
// directory covers its contents); create and modify effects cover exactly
// the paths they match.

import (
	"encoding/base64"
	"net/url"
	"path"
	"slices"
	"strings"

	"github.com/act-project/act/internal/pathglob"
)

// A node is the descriptor or one of its steps, with what the rules need.
type node struct {
	path    []string // nil for the descriptor, else its steps path
	typ     ActionType
	risk    RiskLevel // effective: a step without risk_level takes its parent's
	effects Effects
	op      Operation
	steps   []Step
}

func (c *checker) root() node {
	d := c.d
	return node{typ: d.ActionType, risk: d.RiskLevel, effects: d.Effects, op: d.Op, steps: d.Steps}
}

func (n node) child(i int) node {
	s := n.steps[i]
	ch := node{
		path: field(n.path, "steps", idx(i)), typ: s.ActionType, risk: n.risk,
		effects: s.Effects, op: s.Op, steps: s.Steps,
	}
	if s.RiskLevel != "" {
		ch.risk = s.RiskLevel
	}
	return ch
}

func (n node) top() bool { return n.path == nil }

// usesType reports whether n or one of its steps is of type t.
func usesType(n node, t ActionType) bool {
	if n.typ == t {
		return true
	}
	for i := range n.steps {
		if usesType(n.child(i), t) {
			return true
		}
	}
	return false
}

// networkRequired reports whether an action of type t cannot run without
// the network.
func networkRequired(t ActionType) bool {
	return t == NetworkRequest || t == PackageInstall || t == PackageRemove
}

// networkAllowed reports whether n may use the network: a type that needs
// it, a command, or a composite with such a step.
func networkAllowed(n node) bool {
	if networkRequired(n.typ) || n.typ == CommandExecution {
		return true
	}
	for i := range n.steps {
		if networkAllowed(n.child(i)) {
			return true
		}
	}
	return false
}

// checkNode applies the rules of one node and, for a composite, of its
// steps. depth is 1 for the descriptor.
func (c *checker) checkNode(n node, depth int) {
	c.checkEffects(n)
	c.checkNodeNetwork(n)
	if n.typ == MultiStepComposite {
		c.checkSteps(n, depth)
		return
	}
	c.checkOperation(n)
}

// checkEffects checks the form, scope and persistence of n's effects.
func (c *checker) checkEffects(n node) {
	fs := n.effects.Filesystem
	for _, k := range []struct {
		name  string
		paths []string
	}{{"create", fs.Create}, {"modify", fs.Modify}, {"delete", fs.Delete}} {
		for i, p := range k.paths {
			f := field(n.path, "effects", "filesystem", k.name, idx(i))
			if !c.checkPath(f, p, true) {
				continue
			}
			c.checkInScope(f, p)
			if k.name == "delete" {
				continue
			}
			if kind := c.persistenceKind(p); kind != "" && !c.scopeNames(p) {
				verb := map[string]string{"create": "creating", "modify": "modifying"}[k.name]
				c.add("forbidden.persistence-outside-scope", f,
					"%s %q would change %s, which runs later, outside the action", verb, p, kind)
			}
		}
	}
	if n.effects.SystemStateChange {
		c.add("effects.system-state-change", field(n.path, "effects", "system_state_change"),
			"effects.system_state_change is true; act can carry out and roll back only filesystem changes inside the scope")
	}
}

// scopeNames reports whether a scope path is p itself, a plain path: an
// action scoped to that one file (a short descriptor's scope of a file in
// a home directory's root) may change it, and act grades the plan that
// does HIGH, for a person to confirm (docs/persistence.md).
func (c *checker) scopeNames(p string) bool {
	return !pathglob.HasMeta(p) && slices.Contains(c.d.Scope.Filesystem.Paths, p)
}

// checkNodeNetwork applies the per-type network rules: the flag is
// scope.network.required for the descriptor, effects.network for a step.
func (c *checker) checkNodeNetwork(n node) {
	flag, name, f := n.effects.Network, "effects.network", field(n.path, "effects", "network")
	if n.top() {
		flag, name, f = c.d.Scope.Network.Required, "scope.network.required", []string{"scope", "network", "required"}
	}
	switch {
	case flag && !networkAllowed(n):
		c.add("network.not-allowed-for-type", f,
			"%s is true but a %s action may not use the network", name, n.typ)
	case !flag && networkRequired(n.typ):
		c.add("network.required-for-type", f,
			"%s is false but a %s action needs the network", name, n.typ)
	}
}

// An opPath is one path an operation names, with the effect kinds that may
// cover it (none for a path that is only read or worked in) and the verb
// messages use for it.
type opPath struct {
	field []string
	path  string
	glob  bool
	kinds []string
	verb  string
}

func (c *checker) checkOperation(n node) {
	opf := func(elems ...string) []string { return field(n.path, append([]string{"operation"}, elems...)...) }
	var paths []opPath
	switch op := n.op.(type) {
	case FileReadOp:
		paths = append(paths, opPath{field: opf("path"), path: op.Path})
	case FileWriteOp:
		kinds := []string{"create", "modify"}
		switch {
		case op.CreateOnly:
			kinds = []string{"create"}
		case op.Edits != nil:
			kinds = []string{"modify"} // edits change a file that is there
		}
		paths = append(paths, opPath{field: opf("path"), path: op.Path, kinds: kinds, verb: "writes"})
		if op.ContentBase64 != nil {
			if _, err := base64.StdEncoding.Strict().DecodeString(*op.ContentBase64); err != nil {
				c.add("file-write.invalid-base64", opf("content_base64"),
					"content_base64 is not valid standard base64: %v", err)
			}
		}
		c.checkMode(opf("mode"), op.Mode)
	case FileDeleteOp:
		for i, p := range op.Paths {
			paths = append(paths, opPath{field: opf("paths", idx(i)), path: p, glob: true,
				kinds: []string{"delete"}, verb: "deletes"})
		}
	case FileMoveOp:
		to := []string{"create"}
		if op.Overwrite {
			to = []string{"create", "modify"}
		}
		paths = append(paths,
			opPath{field: opf("from"), path: op.From, kinds: []string{"delete"}, verb: "moves away"},
			opPath{field: opf("to"), path: op.To, kinds: to, verb: "moves onto"})
		c.checkMove(opf, op)
	case DirectoryCreateOp:
		paths = append(paths, opPath{field: opf("path"), path: op.Path, kinds: []string{"create"}, verb: "creates"})
		c.checkMode(opf("mode"), op.Mode)
	case DirectoryDeleteOp:
		paths = append(paths, opPath{field: opf("path"), path: op.Path, kinds: []string{"delete"}, verb: "deletes"})
	case CommandExecutionOp:
		paths = append(paths, opPath{field: opf("workdir"), path: op.Workdir})
		c.checkArgv(opf("argv"), op.Argv)
		if op.ReportCwd && !ShellScript(op.Argv) {
			c.add("command.report-cwd-not-shell", opf("report_cwd"),
				"report_cwd records where a shell script ended: argv must be [sh, -c, SCRIPT]")
		}
		for _, k := range sortedKeys(op.Env) {
			if !envName(k) {
				c.add("command.invalid-env-name", opf("env", k),
					"%q is not a valid environment variable name", k)
			}
		}
	case PackageOp:
		paths = append(paths, opPath{field: opf("workdir"), path: op.Workdir})
		pkgs, dev := op.Split()
		if len(pkgs) == 0 {
			c.add("package.invalid-name", opf("packages"), "the packages name no package, only the flag of development dependencies")
		}
		if dev && devFlags[op.Manager] == nil {
			c.add("package.dev-unsupported", opf("dev"),
				"%s has no development dependencies (a requirements file of them is a project's own convention): install them as packages", op.Manager)
		}
		for i, p := range op.Packages {
			if slices.Contains(devFlags[op.Manager], p) {
				continue
			}
			if why := packageNameProblem(p); why != "" {
				c.add("package.invalid-name", opf("packages", idx(i)),
					"the package name %q %s", p, why)
			}
		}
	case NetworkRequestOp:
		if op.SaveTo != "" {
			paths = append(paths, opPath{field: opf("save_to"), path: op.SaveTo,
				kinds: []string{"create", "modify"}, verb: "saves to"})
		}
		c.checkURL(opf("url"), op.URL)
		for _, k := range sortedKeys(op.Headers) {
			if !headerName(k) {
				c.add("network.invalid-header", opf("headers", k), "%q is not a valid HTTP header name", k)
			} else if strings.ContainsAny(op.Headers[k], "\r\n\x00") {
				c.add("network.invalid-header", opf("headers", k),
					"the value of header %q holds a line break or NUL", k)
			}
		}
	case ConfigChangeOp:
		paths = append(paths, opPath{field: opf("path"), path: op.Path, kinds: []string{"modify"}, verb: "modifies"})
		c.checkConfig(opf, op)
	}
	var sets *effectSets
	for _, p := range paths {
		if !c.checkPath(p.field, p.path, p.glob) {
			continue
		}
		c.checkInScope(p.field, p.path)
		if len(p.kinds) == 0 || c.tooManyGlobs {
			continue
		}
		if sets == nil {
			sets = newEffectSets(n.effects.Filesystem)
		}
		if !sets.cover(p.kinds, p.path) {
			c.add("effects.undeclared-path", p.field,
				"the operation %s %q but no %s effect covers it", p.verb, p.path, strings.Join(p.kinds, " or "))
		}
	}
}

func effectList(fs FilesystemEffects, kind string) []string {
	switch kind {
	case "create":
		return fs.Create
	case "modify":
		return fs.Modify
	}
	return fs.Delete
}

// checkMode rejects the setuid, setgid and sticky bits: a setuid file is a
// way to keep privileges after the action, and act never needs them.
func (c *checker) checkMode(f []string, mode string) {
	if len(mode) == 4 && mode[0] != '0' {
		c.add("mode.special-bits", f,
			"mode %q sets the setuid, setgid or sticky bit; use a mode of the form 0NNN", mode)
	}
}

func (c *checker) checkMove(opf func(...string) []string, op FileMoveOp) {
	if CheckPath(op.From) != nil || CheckPath(op.To) != nil {
		return
	}
	switch {
	case op.From == op.To:
		c.add("move.same-path", opf("to"), "from and to are the same path %q", op.To)
	case pathglob.Within(op.To, op.From):
		c.add("move.nested", opf("to"), "%q lies inside %q, the path being moved", op.To, op.From)
	case pathglob.Within(op.From, op.To):
		c.add("move.nested", opf("to"), "%q would replace %q, a directory holding the path being moved", op.To, op.From)
	}
}

func (c *checker) checkURL(f []string, raw string) {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		c.add("network.invalid-url", f, "the url %q does not parse", raw)
	case u.Scheme != "http" && u.Scheme != "https":
		c.add("network.invalid-url", f, "the url %q is not http or https", raw)
	case u.Host == "" || u.Hostname() == "":
		c.add("network.invalid-url", f, "the url %q has no host", raw)
	case u.User != nil:
		c.add("network.url-credentials", f,
			"the url %q carries credentials, which would be recorded in the audit log; pass them in headers", raw)
	}
}

func (c *checker) checkConfig(opf func(...string) []string, op ConfigChangeOp) {
	if len(op.Set) == 0 && len(op.Unset) == 0 {
		c.add("config.empty", opf(), "the config change neither sets nor unsets any key")
	}
	ext := strings.ToLower(path.Ext(op.Path))
	if (ext == ".json" && op.Format != "json") || ((ext == ".yaml" || ext == ".yml") && op.Format != "yaml") {
		c.add("config.format-mismatch", opf("format"),
			"format is %q but the file %q is named as %s", op.Format, op.Path, strings.TrimPrefix(ext, "."))
	}
	type key struct {
		name, list string
		f          []string
	}
	var keys []key
	for _, k := range sortedKeys(op.Set) {
		keys = append(keys, key{k, "set", opf("set", k)})
	}
	for i, k := range op.Unset {
		keys = append(keys, key{k, "unset", opf("unset", idx(i))})
	}
	var good []key
	for _, k := range keys {
		if !dottedKey(k.name) {
			c.add("config.invalid-key", k.f,
				"%q is not a dotted key: it needs non-empty parts separated by single dots", k.name)
			continue
		}
		for _, g := range good {
			switch {
			case g.name == k.name && g.list != k.list:
				c.add("config.key-conflict", k.f, "the key %q is both set and unset", k.name)
			case g.name == k.name:
				c.add("config.key-conflict", k.f, "the key %q is listed twice in %s", k.name, k.list)
			case strings.HasPrefix(k.name, g.name+"."), strings.HasPrefix(g.name, k.name+"."):
				c.add("config.key-conflict", k.f, "the key %q overlaps the key %q", k.name, g.name)
			default:
				continue
			}
			break
		}
		good = append(good, k)
	}
}

func dottedKey(k string) bool {
	if k == "" {
		return false
	}
	for _, part := range strings.Split(k, ".") {
		if strings.TrimSpace(part) == "" {
			return false
		}
	}
	return true
}

func envName(k string) bool {
	if k == "" {
		return false
	}
	for i, r := range k {
		switch {
		case r == '_' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z':
		case i > 0 && r >= '0' && r <= '9':
		default:
			return false
		}
	}
	return true
}

// headerName reports whether k is an RFC 9110 token.
func headerName(k string) bool {
	if k == "" {
		return false
	}
	for _, r := range k {
		if r > 0x7e || r <= ' ' || strings.ContainsRune(`"(),/:;<=>?@[\]{}`, r) {
			return false
		}
	}
	return true
}

// packageNameProblem says what is wrong with a package name, or "".
func packageNameProblem(p string) string {
	switch {
	case strings.TrimSpace(p) == "":
		return "is empty"
	case strings.HasPrefix(p, "-"):
		return "starts with \"-\", so the package manager would read it as an option"
	case strings.IndexFunc(p, func(r rune) bool { return r <= ' ' || r == 0x7f }) >= 0:
		return "holds a space or control character"
	}
	return ""
}
