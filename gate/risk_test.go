package gate

import (
	"os"
	"strings"
	"testing"

	"github.com/act-project/act/descriptors"
	"github.com/act-project/act/diff"
	"github.com/act-project/act/policy"
)

func TestAssess(t *testing.T) {
	mode := func(m string) *string { return &m }
	file := func(path, kind, before, after string) diff.Change {
		c := diff.Change{Path: path, Kind: diff.Kind(kind), Type: diff.TypeFile}
		if before != "" {
			c.ModeBefore = mode(before)
		}
		if after != "" {
			c.ModeAfter = mode(after)
		}
		return c
	}
	owned := func(c diff.Change, uid uint32) diff.Change { c.OwnerBefore = &uid; return c }
	many := make([]diff.Change, 21)
	for i := range many {
		many[i] = file("/p/f"+strings.Repeat("x", i), "delete", "0644", "")
	}
	cases := []struct {
		name    string
		typ     descriptors.ActionType
		changes []diff.Change
		want    descriptors.RiskLevel
		reason  string
	}{
		{"a plain write", descriptors.FileWrite, []diff.Change{file("/p/a.txt", "create", "", "0644")}, descriptors.RiskLow, ""},
		{"a command", descriptors.CommandExecution, nil, descriptors.RiskMedium, "runs a command"},
		{"a package manager", descriptors.PackageInstall, nil, descriptors.RiskMedium, "package manager"},
		{"one delete", descriptors.FileWrite, []diff.Change{file("/p/a.txt", "delete", "0644", "")}, descriptors.RiskMedium, "deletes 1 path"},
		{"many deletes", descriptors.FileDelete, many, descriptors.RiskHigh, "more than the host's 20"},
		{"setuid", descriptors.FileWrite, []diff.Change{file("/p/sh", "modify", "0755", "4755")}, descriptors.RiskHigh, "setuid"},
		{"a new executable", descriptors.FileWrite, []diff.Change{file("/p/run", "create", "", "0755")}, descriptors.RiskHigh, "new executable"},
		{"a .pth file", descriptors.FileWrite, []diff.Change{file("/p/.venv/lib/python3.11/site-packages/evil.pth", "create", "", "0644")}, descriptors.RiskHigh, ".pth"},
		{"a git hook", descriptors.FileWrite, []diff.Change{file("/p/.git/hooks/pre-commit", "create", "", "0644")}, descriptors.RiskHigh, "git"},
		{"a shell rc file", descriptors.FileWrite, []diff.Change{file("/home/u/.bashrc", "modify", "0644", "0644")}, descriptors.RiskHigh, "shell start-up"},
		{"a sensitive path", descriptors.FileWrite, []diff.Change{file("/p/secret/x", "create", "", "0644")}, descriptors.RiskHigh, "sensitive"},
		{"outside every workspace", descriptors.FileWrite, []diff.Change{file("/q/a.txt", "create", "", "0644")}, descriptors.RiskMedium, "outside every workspace"},
		{"a symlink", descriptors.FileWrite, []diff.Change{{Path: "/p/l", Kind: diff.Create, Type: diff.TypeSymlink}}, descriptors.RiskMedium, "symlink"},
		{"another user's file", descriptors.FileWrite, []diff.Change{owned(file("/p/theirs", "modify", "0644", "0644"), 1234)}, descriptors.RiskMedium, "another user's: promoted, it stays theirs"},
		{"an existing setuid file written", descriptors.FileWrite, []diff.Change{file("/p/su", "modify", "4755", "0755")}, descriptors.RiskHigh, "setuid"},
		{"an executable replaced", descriptors.FileWrite, []diff.Change{file("/p/tool", "modify", "0755", "0644")}, descriptors.RiskHigh, "replaces an executable"},
		{"a home dot-file", descriptors.FileWrite, []diff.Change{file("/home/u/.config/app.toml", "modify", "0644", "0644")}, descriptors.RiskHigh, "dot-file"},
		{"a program on PATH", descriptors.FileWrite, []diff.Change{file("/home/u/.cargo/bin/cargo", "modify", "0644", "0644")}, descriptors.RiskHigh, "program on PATH"},
		{"a program in $PATH", descriptors.FileWrite, []diff.Change{file("/opt/tools/bin/python3", "create", "", "0644")}, descriptors.RiskHigh, "program on PATH"},
		{"a .git file", descriptors.FileWrite, []diff.Change{file("/p/sub/.git", "create", "", "0644")}, descriptors.RiskHigh, "git"},
		{"a project's .npmrc", descriptors.FileWrite, []diff.Change{file("/p/.npmrc", "create", "", "0644")}, descriptors.RiskHigh, "runs code"},
		{"bash aliases", descriptors.FileWrite, []diff.Change{file("/home/u/.bash_aliases", "create", "", "0644")}, descriptors.RiskHigh, "start-up"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := &descriptors.Descriptor{ActionType: c.typ, RiskLevel: descriptors.RiskLow}
			r := Assess(d, c.changes, RiskRules{Homes: descriptors.HomeRoots("/home/u"), SensitivePaths: []string{"/p/secret/**"},
				InWorkspace: func(p string) bool { return !strings.HasPrefix(p, "/q/") }, UID: uint32(os.Geteuid()), PathDirs: []string{"/opt/tools/bin"}})
			if r.Assessed != c.want {
				t.Fatalf("assessed %s, want %s (%v)", r.Assessed, c.want, r.Reasons)
			}
			if c.reason != "" && !strings.Contains(strings.Join(r.Reasons, "\n"), c.reason) {
				t.Fatalf("reasons %q do not say %q", r.Reasons, c.reason)
			}
			if r.Effective() != c.want {
				t.Fatalf("effective %s, want %s", r.Effective(), c.want)
			}
		})
	}
	// A command is graded by its diff (risk.commands: by_diff) once its
	// dry run ended; not when it did not (Unplanned), not with the
	// network, and not under always_medium.
	byDiff := RiskRules{InWorkspace: func(string) bool { return true }, CommandsByDiff: true, UID: uint32(os.Geteuid())}
	cmd := &descriptors.Descriptor{ActionType: descriptors.CommandExecution, RiskLevel: descriptors.RiskLow}
	write := []diff.Change{file("/p/a.txt", "create", "", "0644")}
	if r := Assess(cmd, write, byDiff); r.Assessed != descriptors.RiskLow {
		t.Errorf("a command writing a plain file, by diff: %s %q, want LOW", r.Assessed, r.Reasons)
	}
	if r := Assess(cmd, []diff.Change{file("/p/run", "create", "", "0755")}, byDiff); r.Assessed != descriptors.RiskHigh {
		t.Errorf("a command making an executable, by diff: %s %q, want HIGH", r.Assessed, r.Reasons)
	}
	unplanned := byDiff
	unplanned.Unplanned = true
	if r := Assess(cmd, nil, unplanned); r.Assessed != descriptors.RiskMedium || !strings.Contains(strings.Join(r.Reasons, ""), "did not end") {
		t.Errorf("a command whose dry run did not end: %s %q, want MEDIUM", r.Assessed, r.Reasons)
	}
	netCmd := *cmd
	netCmd.Sandbox.AllowNetwork, netCmd.Scope.Network.Required = true, true
	if r := Assess(&netCmd, write, byDiff); r.Assessed != descriptors.RiskMedium || !strings.Contains(strings.Join(r.Reasons, ""), "network") {
		t.Errorf("a command with the network: %s %q, want MEDIUM", r.Assessed, r.Reasons)
	}
	always := byDiff
	always.CommandsByDiff = false
	if r := Assess(cmd, nil, always); r.Assessed != descriptors.RiskMedium || !strings.Contains(strings.Join(r.Reasons, ""), "always_medium") {
		t.Errorf("a command under always_medium: %s %q, want MEDIUM", r.Assessed, r.Reasons)
	}
	// A declared risk above the assessment stands.
	d := &descriptors.Descriptor{ActionType: descriptors.FileWrite, RiskLevel: descriptors.RiskHigh}
	if r := Assess(d, nil, RiskRules{}); r.Effective() != descriptors.RiskHigh {
		t.Fatalf("effective %s, want the declared HIGH", r.Effective())
	}
}

// TestAssessEveryHome: a $HOME pointed elsewhere (here "/") hides no
// home's files that run code later: root's, the password database's, and
// every /home/* are graded as the static rules know them.
func TestAssessEveryHome(t *testing.T) {
	mode := "0644"
	g := &Gate{EnvHome: "/", UserHome: "/home/u", Policy: testPolicy(t)}
	for _, path := range []string{"/root/.ssh/config", "/home/u/.ssh/config", "/home/other/.local/bin/python3", "/root/.bashrc"} {
		d := &descriptors.Descriptor{ActionType: descriptors.FileWrite, RiskLevel: descriptors.RiskLow}
		r := Assess(d, []diff.Change{{Path: path, Kind: diff.Modify, Type: diff.TypeFile, ModeBefore: &mode, ModeAfter: &mode}}, g.riskRules())
		if r.Assessed != descriptors.RiskHigh {
			t.Errorf("%s with HOME=/: assessed %s, want HIGH (%v)", path, r.Assessed, r.Reasons)
		}
	}
}

// TestImpliedTypes: what a plan's changes amount to.
func TestImpliedTypes(t *testing.T) {
	sum := func(s string) *string { return &s }
	file := func(path string, k diff.Kind, before, after string) diff.Change {
		c := diff.Change{Path: path, Kind: k, Type: diff.TypeFile}
		if before != "" {
			c.SHA256Before = sum(before)
		}
		if after != "" {
			c.SHA256After = sum(after)
		}
		return c
	}
	dir := func(path string, k diff.Kind) diff.Change {
		return diff.Change{Path: path, Kind: k, Type: diff.TypeDir}
	}
	cases := []struct {
		name    string
		changes []diff.Change
		want    string
	}{
		{"a delete", []diff.Change{file("/p/a", diff.Delete, "1", "")}, "FILE_DELETE:/p/a"},
		{"a move", []diff.Change{file("/p/a", diff.Delete, "1", ""), file("/p/b", diff.Create, "", "1")}, "FILE_MOVE:/p/a FILE_WRITE:/p/b"},
		{"a delete beside an unrelated write", []diff.Change{file("/p/a", diff.Delete, "1", ""), file("/p/b", diff.Create, "", "2")}, "FILE_DELETE:/p/a FILE_WRITE:/p/b"},
		{"a directory removed", []diff.Change{dir("/p/d", diff.Delete), file("/p/d/x", diff.Delete, "1", "")}, "FILE_DELETE:/p/d/x DIRECTORY_DELETE:/p/d"},
		{"a directory renamed", []diff.Change{dir("/p/d", diff.Delete), file("/p/d/x", diff.Delete, "1", ""), dir("/p/e", diff.Create), file("/p/e/x", diff.Create, "", "1")},
			"FILE_MOVE:/p/d/x,/p/d FILE_WRITE:/p/e/x DIRECTORY_CREATE:/p/e"},
		{"an edit", []diff.Change{file("/p/a", diff.Modify, "1", "2")}, "FILE_WRITE:/p/a"},
	}
	for _, c := range cases {
		var got []string
		for _, im := range impliedTypes(c.changes) {
			got = append(got, string(im.typ)+":"+strings.Join(im.paths, ","))
		}
		if g := strings.Join(got, " "); g != c.want {
			t.Errorf("%s: %s, want %s", c.name, g, c.want)
		}
	}
}

// testPolicy is the built-in default policy for a user whose home is
// /home/u: no file of the host is read.
func testPolicy(t *testing.T) *policy.Policy {
	t.Helper()
	p, err := policy.Default("/home/u")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestAssessScopeSecrets: a command whose scope is a credential store, or
// holds one, sees it (the sandbox hides it otherwise): HIGH. A file
// operation in the same scope is not.
func TestAssessScopeSecrets(t *testing.T) {
	home := "/home/u"
	rules := RiskRules{Homes: []string{home}, UID: 0}
	for _, tt := range []struct {
		scope string
		cmd   bool
		high  bool
	}{
		{"/home/u/.ssh", true, true},
		{"/home/u", true, true},
		{"/home/u/proj", true, false},
		{"/home/u/.ssh", false, false},
	} {
		d := &descriptors.Descriptor{ActionType: descriptors.FileWrite}
		if tt.cmd {
			d.ActionType = descriptors.CommandExecution
		}
		d.Scope.Filesystem.Paths = []string{tt.scope}
		r := Assess(d, nil, rules)
		got := false
		for _, why := range r.Reasons {
			got = got || strings.Contains(why, "a credential store the sandbox hides otherwise")
		}
		if got != tt.high || (tt.high && r.Assessed != descriptors.RiskHigh) {
			t.Errorf("scope %s, command %v: %s %q, want HIGH %v", tt.scope, tt.cmd, r.Assessed, r.Reasons, tt.high)
		}
	}
}
