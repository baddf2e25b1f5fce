package gate

import (
	"strings"
	"testing"

	"github.com/act-project/act/descriptors"
	"github.com/act-project/act/diff"
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
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := &descriptors.Descriptor{ActionType: c.typ, RiskLevel: descriptors.RiskLow}
			r := Assess(d, c.changes, RiskRules{Homes: descriptors.HomeRoots("/home/u"), SensitivePaths: []string{"/p/secret/**"}})
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
	// A declared risk above the assessment stands.
	d := &descriptors.Descriptor{ActionType: descriptors.FileWrite, RiskLevel: descriptors.RiskHigh}
	if r := Assess(d, nil, RiskRules{}); r.Effective() != descriptors.RiskHigh {
		t.Fatalf("effective %s, want the declared HIGH", r.Effective())
	}
}
