package main

import (
	"path/filepath"
	"testing"
)

// TestVerificationScriptNobody runs the plan_verification_writes testscript
// as an ordinary user: a verification command's writes are thrown away,
// never promoted, whoever runs act (docs/sandbox.md, "Verification").
func TestVerificationScriptNobody(t *testing.T) {
	root, err := filepath.Abs(".")
	must(t, err)
	asNobody(t, "TestScript$/^plan_verification_writes$", "ACT_TEST_ROOT="+root)
}
