package policy

import (
	"slices"
	"strings"
	"testing"
)

func TestCheckWorkspace(t *testing.T) {
	for _, c := range []struct {
		dir, why string
	}{
		{"/tmp", ""},
		{"/home/u/proj", ""},
		{"/srv/data", ""},
		{"/", "whole filesystem"},
		{"/home/u", "home directory's root"},
		{"/home/other", "home directory's root"},
		{"/home", "home directory's root"},
		{"/root", "home directory's root"},
		{"/etc", "system tree /etc"},
		{"/usr/local/src", "system tree /usr"},
		{"tmp", "clean absolute"},
		{"/tmp/../etc", "clean absolute"},
	} {
		err := CheckWorkspace(c.dir, "/home/u")
		switch {
		case c.why == "" && err != nil:
			t.Errorf("CheckWorkspace(%s) = %v, want nil", c.dir, err)
		case c.why != "" && (err == nil || !strings.Contains(err.Error(), c.why)):
			t.Errorf("CheckWorkspace(%s) = %v, want one saying %q", c.dir, err, c.why)
		}
	}
}

// TestWorkspaceFile: a policy file's workspace that may not be one is an
// error at its line; a workspace outside every allowed root counts for
// nothing (InWorkspace).
func TestWorkspaceFile(t *testing.T) {
	_, err := Parse("p.yaml", []byte("workspaces: [/tmp/w, \"~\"]\n"), userHome)
	if err == nil || !strings.Contains(err.Error(), "p.yaml:1:") || !strings.Contains(err.Error(), RuleInvalidWorkspace) {
		t.Fatalf("Parse() error = %v, want %s at p.yaml:1", err, RuleInvalidWorkspace)
	}
	p, err := Parse("p.yaml", []byte("allowed_roots: [/tmp]\nworkspaces: [/tmp/w, /srv/w]\n"), userHome)
	if err != nil {
		t.Fatal(err)
	}
	if !p.InWorkspace("/tmp/w/a", p.Workspaces) || p.InWorkspace("/srv/w/a", p.Workspaces) || p.InWorkspace("/tmp/x", p.Workspaces) {
		t.Errorf("InWorkspace wrong for workspaces %v under roots %v", p.Workspaces, p.AllowedRoots)
	}
}

// TestWorkspacesAsWritten: the list act hook install adds a project to is
// the file's own, as written, or the default's when the file names none;
// a "~/…" entry names the project under the user's home.
func TestWorkspacesAsWritten(t *testing.T) {
	for _, c := range []struct {
		data string
		want []string
	}{
		{"", []string{"/tmp"}},
		{"# only a comment\n", []string{"/tmp"}},
		{"max_pending: 3\n", []string{"/tmp"}},
		{"workspaces: []\n", []string{}},
		{"workspaces: [~/src/a, /srv/b]\n", []string{"~/src/a", "/srv/b"}},
	} {
		got, err := WorkspacesAsWritten("p.yaml", []byte(c.data))
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("%q: %q, %v; want %q", c.data, got, err, c.want)
		}
	}
	for _, bad := range []string{"workspaces: /tmp\n", "workspaces: [1]\n", "[a]\n", "a: [\n"} {
		if _, err := WorkspacesAsWritten("p.yaml", []byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	if !ListsWorkspace([]string{"~/src/a"}, "/home/u/src/a", "/home/u") || ListsWorkspace([]string{"~/src/a"}, "/home/u/src", "/home/u") {
		t.Error("ListsWorkspace does not expand ~ as the policy does")
	}
}
