package main

import (
	"path/filepath"
	"testing"
)

// TestWorkspaceSessionNobody runs the workspace_session_narrows
// testscript as an ordinary user (docs/policy.md, "Workspaces"): neither
// act run's working directory nor a door's --workspace widens where
// changes flow without a person, or moves where dot-directories are
// counted from, whoever runs act.
func TestWorkspaceSessionNobody(t *testing.T) {
	root, err := filepath.Abs(".")
	must(t, err)
	asNobody(t, "TestScript$/^workspace_session_narrows$", "ACT_TEST_ROOT="+root)
}
