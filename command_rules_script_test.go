package main

import (
	"path/filepath"
	"testing"
)

// TestCommandRulesNobody runs the command_rules and command_rules_escapes
// testscripts as an ordinary user (docs/policy.md, "Command rules"): a
// rule matches the same whole invocations, and the escapes of issue 33 —
// go test -exec, make --eval, a true planted first on PATH, deny [rm]
// dodged by /bin/rm, env, sh -c and find -delete — stay closed, whoever
// runs act.
func TestCommandRulesNobody(t *testing.T) {
	root, err := filepath.Abs(".")
	must(t, err)
	asNobody(t, "TestScript$/^command_rules(_escapes)?$", "ACT_TEST_ROOT="+root, seedGoCacheEnv)
}
