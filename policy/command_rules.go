package policy

// Command rules (docs/policy.md, "Command rules"): invocations a person
// pre-approves (allow, confirm) or refuses (deny).
//
// An approving rule matches the whole invocation, as the sandbox will run
// it: the program act resolves through the PATH the command runs with,
// each argument word for word (or "*" for one operand), a tail only where
// the rule ends in "**", the operation's env and stdin. A deny rule
// matches a program by its name, whatever follows its words, also inside
// wrappers and shell scripts (descriptors.Subcommands): best effort,
// never the only defence.

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/act-project/act/descriptors"
	"github.com/act-project/act/internal/pathglob"
)

// The wildcards of a rule's argv: AnyArg stands for one operand, AnyTail
// (last only) for any arguments at all — any flag of the tool.
const (
	AnyArg  = "*"
	AnyTail = "**"
	// AnyStdin is the one value of a rule's stdin: the command may read
	// what the descriptor's operation.stdin gives it.
	AnyStdin = "any"
	// AnyValue as an env value in a rule: the variable may have any value.
	AnyValue = "*"
)

// RuleInvalidCommandRule: a command rule that is not one (an old prefix
// rule, a wildcard as the program, "**" before the end, a relative
// program path, a bad variable name, env or stdin on a deny rule).
const RuleInvalidCommandRule = "policy.invalid-command-rule"

// A CommandRule is an invocation a person pre-approves or refuses, and the
// mode of the commands it matches.
type CommandRule struct {
	// Argv is the program and its arguments: the program a bare name
	// (go) or an absolute path (/usr/local/go/bin/go, ~/go/bin/x, "~"
	// expanded when the policy is read); then each argument exactly, "*"
	// for one operand, "**" as the last word for any arguments.
	Argv []string `json:"argv"`
	// Env are the variables the operation's env may set, each to the
	// value given or to any ("*"); a command whose env sets another
	// matches no approving rule.
	Env map[string]string `json:"env,omitempty"`
	// Stdin "any": the command may read the operation's stdin; without
	// it, a command given stdin matches no approving rule.
	Stdin string `json:"stdin,omitempty"`
	Mode  Mode   `json:"mode"`
}

// String shows r as the decision's reason names it: [go test ./...],
// with its env and stdin when it has them.
func (r CommandRule) String() string {
	s := "[" + strings.Join(r.Argv, " ") + "]"
	if len(r.Env) > 0 {
		keys := make([]string, 0, len(r.Env))
		for k := range r.Env {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for i, k := range keys {
			keys[i] = k + "=" + r.Env[k]
		}
		s += " with env " + strings.Join(keys, " ")
	}
	if r.Stdin != "" {
		s += " with stdin"
	}
	return s
}

// Equal reports whether r and o are the same rule.
func (r CommandRule) Equal(o CommandRule) bool {
	if !slices.Equal(r.Argv, o.Argv) || r.Stdin != o.Stdin || r.Mode != o.Mode || len(r.Env) != len(o.Env) {
		return false
	}
	for k, v := range r.Env {
		if w, ok := o.Env[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// An Invocation is one command a plan runs, as the sandbox runs it.
type Invocation struct {
	Argv    []string
	Env     map[string]string
	Stdin   string
	Workdir string
}

// Invocations are every command a plan of d runs: its COMMAND_EXECUTION
// operations' (steps included) and its verification commands (their
// workdir, when none is given, the first scope path).
func Invocations(d *descriptors.Descriptor) []Invocation {
	var out []Invocation
	var walk func(op descriptors.Operation, steps []descriptors.Step)
	walk = func(op descriptors.Operation, steps []descriptors.Step) {
		if c, ok := op.(descriptors.CommandExecutionOp); ok {
			out = append(out, Invocation{Argv: c.Argv, Env: c.Env, Stdin: c.Stdin, Workdir: c.Workdir})
		}
		for _, s := range steps {
			walk(s.Op, s.Steps)
		}
	}
	walk(d.Op, d.Steps)
	if v := d.Verification; v != nil {
		wd := v.Workdir
		if wd == "" && len(d.Scope.Filesystem.Paths) > 0 {
			wd = d.Scope.Filesystem.Paths[0]
		}
		for _, argv := range v.Commands {
			out = append(out, Invocation{Argv: argv, Env: v.Env, Workdir: wd})
		}
	}
	return out
}

// CommandMode is the mode the command rules give a plan of d, and the
// rules used; ok is false when they give none. pathDirs is the PATH act
// passes its sandbox (its own; the operation's env may set another).
//
// A deny rule that matches any command of the plan, or any command act
// sees inside one (descriptors.Subcommands), gives deny, whatever the
// other commands are. Otherwise every command must match an approving
// rule — the strictest of those that match it decides it — and the plan
// gets the strictest of its commands' modes; a command no rule matches
// leaves the plan to its type and risk (ok false).
func (p *Policy) CommandMode(d *descriptors.Descriptor, pathDirs []string) (mode Mode, used []CommandRule, ok bool) {
	invs := Invocations(d)
	if len(invs) == 0 || len(p.CommandRules) == 0 {
		return "", nil, false
	}
	path := strings.Join(pathDirs, string(os.PathListSeparator))
	progs := make([]string, len(invs))
	for i, inv := range invs {
		progs[i] = p.resolveProgram(inv, path)
		subs := descriptors.Subcommands(inv.Argv)
		if real, err := filepath.EvalSymlinks(progs[i]); progs[i] != "" && err == nil {
			// The file the program's name leads to: a link named del to
			// rm is rm.
			subs = append(subs, append([]string{real}, inv.Argv[1:]...))
		}
		for _, sub := range subs {
			for _, r := range p.CommandRules {
				if r.Mode == Deny && r.deniesCommand(sub) && !slices.ContainsFunc(used, r.Equal) {
					used = append(used, r)
				}
			}
		}
	}
	if len(used) > 0 {
		return Deny, used, true
	}
	for i, inv := range invs {
		prog := progs[i]
		var best *CommandRule
		for i := range p.CommandRules {
			r := &p.CommandRules[i]
			if r.Mode != Deny && r.approves(inv, prog) && (best == nil || r.Mode.Rank() > best.Mode.Rank()) {
				best = r
			}
		}
		if best == nil {
			return "", nil, false
		}
		if mode == "" || best.Mode.Rank() > mode.Rank() {
			mode = best.Mode
		}
		if !slices.ContainsFunc(used, best.Equal) {
			used = append(used, *best)
		}
	}
	return mode, used, true
}

// deniesCommand reports whether the deny rule r matches argv: its
// program by name (rm is also /bin/rm and ./rm), and its other words as
// the start of argv's arguments, whatever follows.
func (r CommandRule) deniesCommand(argv []string) bool {
	if len(r.Argv) == 0 || len(argv) == 0 || path.Base(argv[0]) != path.Base(r.Argv[0]) {
		return false
	}
	return matchArgs(r.Argv[1:], argv[1:], true)
}

// approves reports whether the approving rule r matches inv, whose
// program resolves to prog ("" where act cannot tell).
func (r CommandRule) approves(inv Invocation, prog string) bool {
	if len(r.Argv) == 0 || len(inv.Argv) == 0 || prog == "" || !r.program(inv.Argv[0], prog) {
		return false
	}
	if !matchArgs(r.Argv[1:], inv.Argv[1:], false) {
		return false
	}
	for k, v := range inv.Env {
		want, ok := r.Env[k]
		if !ok || (want != AnyValue && want != v) {
			return false
		}
	}
	return inv.Stdin == "" || r.Stdin == AnyStdin
}

// program reports whether the program the command names as argv0, which
// resolves to prog, is r's. A rule's absolute path is that file (links
// followed on both sides), called by the same name. A bare name is a
// program of that name installed by root in a system tree (rootProgram).
func (r CommandRule) program(argv0, prog string) bool {
	want := r.Argv[0]
	if path.Base(argv0) != path.Base(want) || path.Base(prog) != path.Base(want) {
		return false
	}
	if strings.Contains(want, "/") {
		a, err1 := filepath.EvalSymlinks(prog)
		b, err2 := filepath.EvalSymlinks(want)
		return err1 == nil && err2 == nil && a == b
	}
	return rootProgram(prog) == nil
}

// matchArgs reports whether args match the pattern words: each exactly,
// AnyArg one operand, AnyTail (last) any rest; prefix: any rest after the
// last word too (a deny rule).
func matchArgs(pattern, args []string, prefix bool) bool {
	for i, w := range pattern {
		if w == AnyTail {
			return true
		}
		if i >= len(args) {
			return false
		}
		if w == AnyArg {
			if !IsOperand(args[i]) {
				return false
			}
		} else if args[i] != w {
			return false
		}
	}
	return prefix || len(args) == len(pattern)
}

// IsOperand reports whether a, an argument, is what "*" stands for: an
// operand, not an option — non-empty, starting with none of "-", "+" and
// "@" (an option, a toolchain, a file of more arguments), and holding no
// "=" (make and many tools read NAME=value as a setting).
func IsOperand(a string) bool {
	return a != "" && !strings.ContainsAny(a[:1], "-+@") && !strings.Contains(a, "=")
}

// ProgramTrees are where a program a rule names by its bare name may lie:
// the system's trees, as installed by root.
var ProgramTrees = []string{"/usr", "/bin", "/sbin", "/opt", "/snap", "/nix"}

// resolveProgram is the absolute path of the program inv runs, found as
// the sandbox's execvp finds it: argv[0] with a "/" from the workdir,
// else the first executable regular file of that name in the command's
// PATH (the operation's env's, else path, else act's default), relative
// entries from the workdir. "" when act cannot tell: no such program, a
// relative name or entry without a workdir, or an entry in one of the
// policy's sandbox caches before it — the sandbox shows act's own cache
// there, which any earlier dry run may have filled.
func (p *Policy) resolveProgram(inv Invocation, path string) string {
	name := inv.Argv[0]
	abs := func(dir string) string {
		if filepath.IsAbs(dir) {
			return filepath.Clean(dir)
		}
		if inv.Workdir == "" {
			return ""
		}
		return filepath.Join(inv.Workdir, dir)
	}
	if name == "" {
		return ""
	}
	if strings.Contains(name, "/") {
		return abs(name)
	}
	if v, ok := inv.Env["PATH"]; ok {
		path = v
	}
	if path == "" {
		path = DefaultCommandPath
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			dir = "."
		}
		dir = abs(dir)
		if dir == "" {
			return ""
		}
		for _, c := range p.Sandbox.Caches {
			if pathglob.Within(dir, c) || pathglob.Within(c, filepath.Join(dir, name)) {
				return ""
			}
		}
		cand := filepath.Join(dir, name)
		if st, err := os.Stat(cand); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return cand
		}
	}
	return ""
}

// DefaultCommandPath is the PATH of a command when act has none
// (plan.defaultPath).
const DefaultCommandPath = "/usr/local/bin:/usr/bin:/bin"

// rootProgram says why prog, as PATH found it, is not a program installed
// by root in a system tree: it and the file it leads to must lie in one of
// ProgramTrees, and that file and every directory above it, and above
// prog, belong to root and be writable by no one else. nil when it is.
func rootProgram(prog string) error {
	real, err := filepath.EvalSymlinks(prog)
	if err != nil {
		return err
	}
	dir, err := filepath.EvalSymlinks(filepath.Dir(prog))
	if err != nil {
		return err
	}
	for _, p := range []string{prog, real} {
		if !slices.ContainsFunc(ProgramTrees, func(t string) bool { return pathglob.Within(p, t) }) {
			return fmt.Errorf("%s lies in no system tree (%s)", p, strings.Join(ProgramTrees, ", "))
		}
	}
	for _, p := range []string{real, dir} {
		for q := p; ; q = filepath.Dir(q) {
			st, err := os.Lstat(q)
			if err != nil {
				return err
			}
			if err := rootOwned(q, st); err != nil {
				return err
			}
			if q == "/" {
				break
			}
		}
	}
	return nil
}

// rootOwned says why q (described by st) is not root's alone.
func rootOwned(q string, st fs.FileInfo) error {
	sys, ok := st.Sys().(*syscall.Stat_t)
	switch {
	case !ok:
		return fmt.Errorf("%s: no owner", q)
	case sys.Uid != 0:
		return fmt.Errorf("%s belongs to uid %d, not root", q, sys.Uid)
	case st.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("%s is writable by others (mode %04o)", q, st.Mode().Perm())
	}
	return nil
}

// checkCommandRule reports what makes the policy file's command rule r
// not one (at: a problem at a path below the rule; tilde: "~" with no
// home). The schema has checked the types.
func checkCommandRule(r map[string]any, at func(path []string, rule, format string, args ...any), tilde func(path []string, s string) bool) {
	if r == nil {
		return
	}
	if _, ok := r["prefix"]; ok {
		at([]string{"prefix"}, RuleInvalidCommandRule,
			"prefix rules, which matched any tail, are no longer read: a rule matches the whole invocation. "+
				"Write argv: [go, test] for exactly \"go test\", [go, test, \"*\"] for one more operand, "+
				"or [go, test, \"**\"] for any flag of this tool; a deny rule's words match whatever follows "+
				"(docs/policy.md, \"Command rules\")")
		return
	}
	raw, ok := r["argv"].([]any)
	if !ok {
		return // the schema said what is wrong
	}
	if len(raw) == 0 {
		at([]string{"argv"}, RuleInvalidCommandRule, "argv is empty: name the program and its arguments, such as [go, test, ./...]")
	}
	deny := r["mode"] == string(Deny)
	for i, w := range raw {
		s, _ := w.(string)
		el := []string{"argv", fmt.Sprint(i)}
		switch {
		case i == 0 && (s == AnyArg || s == AnyTail || s == ""):
			at(el, RuleInvalidCommandRule, "the program may not be %q: name it (go) or give its absolute path (/usr/local/go/bin/go)", s)
		case i == 0 && strings.Contains(s, "/") && !tilde(el, s) && !isCleanRoot(s):
			at(el, RuleInvalidCommandRule, "%q is not a bare program name nor a clean absolute path (or one starting with \"~/\")", s)
		case s == AnyTail && i != len(raw)-1:
			at(el, RuleInvalidCommandRule, "%q (any arguments) may only be the last word", s)
		}
	}
	if deny {
		for _, k := range []string{"env", "stdin"} {
			if _, ok := r[k]; ok {
				at([]string{k}, RuleInvalidCommandRule, "a deny rule refuses the program whatever its %s: drop %s", k, k)
			}
		}
	}
	env, _ := r["env"].(map[string]any)
	for k := range env {
		if !validEnvName(k) {
			at([]string{"env", k}, RuleInvalidCommandRule, "%q is not an environment variable name (letters, digits and _, not starting with a digit)", k)
		}
	}
}

// oldCommandRule reports whether path is inside a command rule of the
// policy file's value v that is a former prefix rule: checkCommandRule
// reports it, and what the schema finds in it (an unknown field prefix,
// argv missing) would only repeat that.
func oldCommandRule(v any, path []string) bool {
	if len(path) < 2 || path[0] != "command_rules" {
		return false
	}
	m, _ := v.(map[string]any)
	rules, _ := m["command_rules"].([]any)
	for i, item := range rules {
		r, _ := item.(map[string]any)
		if _, ok := r["prefix"]; ok && path[1] == fmt.Sprint(i) {
			return true
		}
	}
	return false
}

// validEnvName reports whether k is a shell variable name.
func validEnvName(k string) bool {
	if k == "" {
		return false
	}
	for i, r := range k {
		if r != '_' && (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') && (i == 0 || r < '0' || r > '9') {
			return false
		}
	}
	return true
}

// CommandModeIn is CommandMode for a sandbox given pathDirs as its PATH.
func (p *Policy) CommandModeIn(pathDirs []string) func(d *descriptors.Descriptor) (Mode, []CommandRule, bool) {
	return func(d *descriptors.Descriptor) (Mode, []CommandRule, bool) { return p.CommandMode(d, pathDirs) }
}
