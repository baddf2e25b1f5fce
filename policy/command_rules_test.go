package policy

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/act-project/act/descriptors"
	"github.com/act-project/act/internal/problem"
)

// commandDescriptor is a COMMAND_EXECUTION descriptor of argv in dir, with
// env and stdin, and verification commands verify.
func commandDescriptor(dir string, argv []string, env map[string]string, stdin string, verify ...[]string) *descriptors.Descriptor {
	d := descriptors.Built("test", descriptors.CommandExecutionOp{Argv: argv, Workdir: dir, Env: env, Stdin: stdin}, nil,
		descriptors.FilesystemScope{Paths: []string{dir}, Recursive: true}, descriptors.Resources{}, true)
	if len(verify) > 0 {
		d.Verification = &descriptors.Verification{Commands: verify}
	}
	return d
}

// rulesOf parses a policy file of command rules.
func rulesOf(t *testing.T, yaml string) *Policy {
	t.Helper()
	p, err := Parse("p.yaml", []byte("command_rules:\n"+yaml), userHome)
	if err != nil {
		t.Fatalf("Parse(%q): %v", yaml, err)
	}
	return p
}

// systemPath is a PATH of the system's trees only.
var systemPath = []string{"/usr/local/bin", "/usr/bin", "/bin"}

// TestCommandRuleWholeInvocation: an approving rule matches the program,
// every argument and the env and stdin of the command, never a tail it
// does not name (issue 33: go test -exec, make --eval).
func TestCommandRuleWholeInvocation(t *testing.T) {
	for _, prog := range []string{"true", "sh"} {
		if _, err := exec.LookPath(prog); err != nil {
			t.Skipf("%s is not installed", prog)
		}
	}
	p := rulesOf(t, `
  - {argv: ["true", test], mode: allow}
  - {argv: ["true", run, "*"], mode: allow}
  - {argv: ["true", vet, "**"], mode: allow}
  - {argv: ["true", env], env: {CI: "1", GOFLAGS: "*"}, mode: allow}
  - {argv: [sh], stdin: any, mode: confirm}
  - {argv: ["true", both, "**"], mode: allow}
  - {argv: ["true", both, x], mode: confirm}
`)
	dir := t.TempDir()
	for _, c := range []struct {
		argv  []string
		env   map[string]string
		stdin string
		want  Mode // "": no rule decides
	}{
		{argv: []string{"true", "test"}, want: Allow},
		{argv: []string{"true", "test", "-exec", "sh -c 'touch ../other/Makefile'"}}, // go test -exec
		{argv: []string{"true", "test", "--eval", "x:=$(shell id)"}},                 // make test --eval
		{argv: []string{"true", "test", "./..."}},
		{argv: []string{"true"}},
		{argv: []string{"true", "run", "./cmd"}, want: Allow},
		{argv: []string{"true", "run", "-exec=sh"}},
		{argv: []string{"true", "run", "SHELL=/tmp/x"}}, // make's NAME=value
		{argv: []string{"true", "run", "@args"}},        // a file of more arguments
		{argv: []string{"true", "run", "+nightly"}},
		{argv: []string{"true", "run", ""}},
		{argv: []string{"true", "run", "a", "b"}},
		{argv: []string{"true", "vet"}, want: Allow},
		{argv: []string{"true", "vet", "-vettool=/tmp/x", "./..."}, want: Allow}, // "**": any flag, as the rule says
		{argv: []string{"true", "env"}, want: Allow},
		{argv: []string{"true", "env"}, env: map[string]string{"CI": "1", "GOFLAGS": "-exec=x"}, want: Allow},
		{argv: []string{"true", "env"}, env: map[string]string{"CI": "0"}},
		{argv: []string{"true", "env"}, env: map[string]string{"LD_PRELOAD": "/tmp/x.so"}},
		{argv: []string{"true", "test"}, env: map[string]string{"MAKEFLAGS": "--eval=x"}}, // env counts
		{argv: []string{"true", "test"}, env: map[string]string{"PATH": "/usr/bin"}},
		{argv: []string{"true", "test"}, stdin: "x"},
		{argv: []string{"sh"}, stdin: "rm -rf ~", want: Confirm},
		{argv: []string{"true", "both", "x"}, want: Confirm}, // the strictest of those that match
		{argv: []string{"true", "both", "y"}, want: Allow},
	} {
		d := commandDescriptor(dir, c.argv, c.env, c.stdin)
		got, _, ok := p.CommandMode(d, systemPath)
		if !ok {
			got = ""
		}
		if got != c.want {
			t.Errorf("%q env %v stdin %q: mode %q, want %q", c.argv, c.env, c.stdin, got, c.want)
		}
	}
	// Every command of the plan must match: a verification command that
	// matches none leaves the plan to its type and risk.
	if _, _, ok := p.CommandMode(commandDescriptor(dir, []string{"true", "test"}, nil, "", []string{"true", "test", "-x"}), systemPath); ok {
		t.Error("a plan with an unmatched verification command got the rules' mode")
	}
	if m, _, ok := p.CommandMode(commandDescriptor(dir, []string{"true", "test"}, nil, "", []string{"true", "vet", "./..."}), systemPath); !ok || m != Allow {
		t.Errorf("a plan whose every command matches: %q %v, want allow", m, ok)
	}
}

// TestCommandRuleProgram: the program is the one the command's PATH finds,
// resolved as the sandbox's execvp resolves it; a bare name in a rule is a
// program root installed in a system tree, so a "true" first on the
// caller's PATH, or in the operation's env PATH, or named by a path, is
// not the rule's (issue 33). An absolute path in a rule is that file.
func TestCommandRuleProgram(t *testing.T) {
	sysTrue, err := exec.LookPath("true")
	if err != nil || rootProgram(sysTrue) != nil {
		t.Skipf("no true installed by root here (%s: %v)", sysTrue, err)
	}
	planted := t.TempDir()
	for _, name := range []string{"true", "tool"} {
		if err := os.WriteFile(filepath.Join(planted, name), []byte("#!/bin/sh\necho pwned\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(sysTrue, filepath.Join(planted, "linked")); err != nil {
		t.Fatal(err)
	}
	p := rulesOf(t, `
  - {argv: ["true"], mode: allow}
  - {argv: ["true"], env: {PATH: "*"}, mode: allow}
  - {argv: [`+filepath.Join(planted, "tool")+`], mode: allow}
  - {argv: [linked], mode: allow}
`)
	ws := t.TempDir()
	for _, c := range []struct {
		name string
		argv []string
		env  map[string]string
		path []string
		want bool
	}{
		{"system true", []string{"true"}, nil, systemPath, true},
		{"by its path", []string{sysTrue}, nil, nil, true},
		{"planted first on the caller's PATH", []string{"true"}, nil, append([]string{planted}, systemPath...), false},
		{"planted first on the operation's PATH", []string{"true"}, map[string]string{"PATH": planted + ":/usr/bin:/bin"}, systemPath, false},
		{"the operation's PATH, system", []string{"true"}, map[string]string{"PATH": "/usr/bin:/bin"}, []string{planted}, true},
		{"named by its planted path", []string{filepath.Join(planted, "true")}, nil, systemPath, false},
		{"a relative path", []string{"./true"}, nil, systemPath, false},
		{"an empty PATH entry, the workdir", []string{"true"}, nil, append([]string{""}, systemPath...), true}, // the workdir has none
		{"not found", []string{"true"}, nil, []string{t.TempDir()}, false},
		{"absolute rule, found on PATH", []string{"tool"}, nil, []string{planted}, true},
		{"absolute rule, another first", []string{"tool"}, nil, []string{ws, planted}, true}, // ws has none
		{"a link to the system's true, outside a system tree", []string{"linked"}, nil, []string{planted}, false},
	} {
		if c.name == "absolute rule, another first" {
			if err := os.WriteFile(filepath.Join(ws, "tool"), []byte("#!/bin/sh\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			c.want = false
		}
		d := commandDescriptor(ws, c.argv, c.env, "")
		m, _, ok := p.CommandMode(d, c.path)
		if got := ok && m == Allow; got != c.want {
			t.Errorf("%s: %q with PATH %q: matched %v, want %v", c.name, c.argv, c.path, got, c.want)
		}
	}
	// A PATH entry in one of the sandbox's caches: the sandbox shows act's
	// own cache there, which an earlier dry run may have filled.
	cache := t.TempDir()
	p.Sandbox.Caches = []string{cache}
	if _, _, ok := p.CommandMode(commandDescriptor(ws, []string{"true"}, nil, ""), append([]string{filepath.Join(cache, "bin")}, systemPath...)); ok {
		t.Error("a command whose PATH passes a cache before the program matched a rule")
	}
}

// TestCommandRuleDenyThroughWrappers: a deny rule refuses its program
// however it is reached — its path, env, nice, timeout, nohup, command,
// xargs, sh -c, bash -c, find -exec and -delete — and in any command of the
// plan, whatever the others (issue 33).
func TestCommandRuleDenyThroughWrappers(t *testing.T) {
	p := rulesOf(t, `
  - {argv: [rm], mode: deny}
  - {argv: [git, push], mode: deny}
  - {argv: [sh, "**"], mode: allow}
`)
	dir := t.TempDir()
	for _, argv := range [][]string{
		{"rm", "a.txt"},
		{"rm"},
		{"/bin/rm", "-rf", "a"},
		{"/usr/bin/rm", "a"},
		{"./rm", "a"},
		{"env", "rm", "a"},
		{"env", "-i", "X=1", "/bin/rm", "a"},
		{"nice", "-n", "10", "rm", "a"},
		{"timeout", "5", "rm", "a"},
		{"nohup", "rm", "a"},
		{"command", "rm", "a"},
		{"xargs", "-0", "rm"},
		{"sh", "-c", "rm a.txt"},
		{"bash", "-c", "cd . && /bin/rm -f a.txt"},
		{"sh", "-c", `r"m" a.txt`},
		{"sh", "-c", "echo $(rm a.txt)"},
		{"find", ".", "-name", "*.txt", "-exec", "rm", "{}", ";"},
		{"find", ".", "-name", "*.txt", "-delete"},
		{"git", "push", "--force"},
		{"sh", "-c", "git push origin main"},
	} {
		d := commandDescriptor(dir, argv, nil, "")
		m, used, ok := p.CommandMode(d, systemPath)
		if !ok || m != Deny {
			t.Errorf("%q: mode %q (%v), want deny", argv, m, ok)
		} else if len(used) == 0 || used[0].Mode != Deny {
			t.Errorf("%q: rules used %v", argv, used)
		}
	}
	for _, argv := range [][]string{
		{"sh", "-c", "echo rm"},
		{"git", "pull"},
		{"command", "-v", "rm"},
	} {
		if m, _, _ := p.CommandMode(commandDescriptor(dir, argv, nil, ""), systemPath); m == Deny {
			t.Errorf("%q: denied", argv)
		}
	}
	// A link to rm, by another name, is rm.
	if rm, err := exec.LookPath("rm"); err == nil {
		if err := os.Symlink(rm, filepath.Join(dir, "del")); err != nil {
			t.Fatal(err)
		}
		if m, _, _ := p.CommandMode(commandDescriptor(dir, []string{"./del", "x"}, nil, ""), systemPath); m != Deny {
			t.Errorf("./del, a link to rm: %q, want deny", m)
		}
	}
	// A deny rule counts even where another command of the plan matches no
	// rule at all.
	d := commandDescriptor(dir, []string{"unruled"}, nil, "", []string{"rm", "x"})
	if m, _, ok := p.CommandMode(d, systemPath); !ok || m != Deny {
		t.Errorf("rm beside an unruled command: %q %v, want deny", m, ok)
	}
	// Inside a step.
	d = descriptors.Built("steps", nil, []descriptors.Step{
		descriptors.BuiltStep(descriptors.CommandExecutionOp{Argv: []string{"true"}, Workdir: dir}),
		descriptors.BuiltStep(descriptors.CommandExecutionOp{Argv: []string{"sh", "-c", "rm -rf x"}, Workdir: dir}),
	}, descriptors.FilesystemScope{Paths: []string{dir}}, descriptors.Resources{}, true)
	if m, _, ok := p.CommandMode(d, systemPath); !ok || m != Deny {
		t.Errorf("rm in a step: %q %v, want deny", m, ok)
	}
}

// TestCommandRuleFile: an old prefix rule, and rules that are not ones,
// are refused when the policy is read, each at its file:line:col with
// policy.invalid-command-rule; "~" in a program path is the home.
func TestCommandRuleFile(t *testing.T) {
	for _, c := range []struct {
		file, field, msg string
	}{
		{"  - {prefix: [go, test], mode: allow}\n", "command_rules[0].prefix", `prefix rules, which matched any tail, are no longer read`},
		{"  - {argv: [], mode: allow}\n", "command_rules[0].argv", "argv is empty"},
		{"  - {prefix: [rm], mode: deny, stdin: any}\n", "command_rules[0].prefix", `prefix rules`},
		{"  - {argv: [\"*\", x], mode: allow}\n", "command_rules[0].argv[0]", `the program may not be "*"`},
		{"  - {argv: [\"**\"], mode: deny}\n", "command_rules[0].argv[0]", `the program may not be "**"`},
		{"  - {argv: [go, \"**\", x], mode: allow}\n", "command_rules[0].argv[1]", "may only be the last word"},
		{"  - {argv: [bin/go, test], mode: allow}\n", "command_rules[0].argv[0]", "not a bare program name nor a clean absolute path"},
		{"  - {argv: [/usr/../tmp/go], mode: allow}\n", "command_rules[0].argv[0]", "not a bare program name nor a clean absolute path"},
		{"  - {argv: [rm], env: {A: b}, mode: deny}\n", "command_rules[0].env", "a deny rule refuses the program whatever its env"},
		{"  - {argv: [rm], stdin: any, mode: deny}\n", "command_rules[0].stdin", "whatever its stdin"},
		{"  - {argv: [go], env: {\"1A\": b}, mode: allow}\n", `command_rules[0].env["1A"]`, "not an environment variable name"},
	} {
		_, err := Parse("p.yaml", []byte("workspaces: [/tmp]\ncommand_rules:\n"+c.file), userHome)
		var le *LoadError
		if !errors.As(err, &le) {
			t.Errorf("%q: accepted (%v)", c.file, err)
			continue
		}
		found := false
		for _, pr := range le.Problems {
			if pr.Field == c.field && pr.Rule == RuleInvalidCommandRule && strings.Contains(pr.Message, c.msg) {
				found = true
				if pr.File != "p.yaml" || pr.Line < 3 || pr.Column == 0 || pr.Layer != problem.Rule {
					t.Errorf("%q: problem at %s:%d:%d layer %v", c.file, pr.File, pr.Line, pr.Column, pr.Layer)
				}
			}
		}
		if !found {
			t.Errorf("%q: problems %v, want %s at %s saying %q", c.file, le.Problems, RuleInvalidCommandRule, c.field, c.msg)
		}
	}
	// A prefix rule is one problem, not also the schema's unknown field
	// and missing argv.
	_, err := Parse("p.yaml", []byte("command_rules:\n  - {prefix: [go, test], mode: allow}\n"), userHome)
	var le *LoadError
	if !errors.As(err, &le) || len(le.Problems) != 1 {
		t.Errorf("a prefix rule: %v, want one problem", err)
	}
	p := rulesOf(t, "  - {argv: [~/go/bin/staticcheck, \"**\"], mode: allow}\n")
	if got := p.CommandRules[0].Argv[0]; got != userHome+"/go/bin/staticcheck" {
		t.Errorf("~ in a program path: %q", got)
	}
	if _, err := Parse("p.yaml", []byte("command_rules: [{argv: [~/bin/x], mode: allow}]\n"), "/"); err == nil || !strings.Contains(err.Error(), RuleNoHome) {
		t.Errorf("~ with no home: %v, want %s", err, RuleNoHome)
	}
}

// TestCommandRulesUnderSystem: under a system policy, the user's approving
// rules are dropped and its deny rules kept.
func TestCommandRulesUnderSystem(t *testing.T) {
	sys := rulesOf(t, "  - {argv: [go, test], mode: allow}\n")
	user := rulesOf(t, "  - {argv: [make, \"**\"], mode: allow}\n  - {argv: [rm], mode: deny}\n  - {argv: [go, test], mode: allow}\n")
	got := tighten(sys, user, Origin{}).CommandRules
	want := []CommandRule{{Argv: []string{"go", "test"}, Mode: Allow}, {Argv: []string{"rm"}, Mode: Deny}}
	if len(got) != len(want) || !got[0].Equal(want[0]) || !got[1].Equal(want[1]) {
		t.Errorf("rules under the system policy: %v, want %v", got, want)
	}
}
