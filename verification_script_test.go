package main

import (
	"path/filepath"
	"testing"

	"github.com/act-project/act/internal/clitest"
)

// TestVerificationScriptNobody runs the plan_verification_writes testscript
// as an ordinary user: a verification command's writes are thrown away,
// never promoted, whoever runs act (docs/sandbox.md, "Verification").
func TestVerificationScriptNobody(t *testing.T) {
	root, err := filepath.Abs(".")
	must(t, err)
	asNobody(t, "TestScript$/^plan_verification_writes$", "ACT_TEST_ROOT="+root)
}

// noCgroupEnv, among asNobody's env, runs the test without a memory cgroup.
const noCgroupEnv = clitest.NoCgroupEnv

// TestPlanCommandNobody runs the plan_memory_per_process testscript as an
// ordinary user without a memory cgroup: with the default policy a
// COMMAND_EXECUTION plans, its memory cap RLIMIT_AS per process and named
// so; with resources.memory_enforcement: total it is refused.
func TestPlanCommandNobody(t *testing.T) {
	root, err := filepath.Abs(".")
	must(t, err)
	asNobody(t, "TestScript$/^plan_memory_per_process$", "ACT_TEST_ROOT="+root, noCgroupEnv)
}

// TestScopeSecretsScriptNobody runs the sandbox_scope_secrets testscript as
// an ordinary user with a home of its own: a command scoped to a credential
// store is refused before it runs, and ~/.npmrc shows as a copy with a
// placeholder (docs/sandbox-filesystem.md).
func TestScopeSecretsScriptNobody(t *testing.T) {
	root, err := filepath.Abs(".")
	must(t, err)
	asNobody(t, "TestScript$/^sandbox_scope_secrets$", "ACT_TEST_ROOT="+root)
}

// TestRunNetworkScriptNobody runs the run_network testscript as an
// ordinary user: act run --network reaches the policy's allowed hosts
// through the egress proxy from the sandbox's own network namespace, and
// is refused where the policy gives sandboxed commands no network
// (docs/run.md, "The network"), whoever runs act.
func TestRunNetworkScriptNobody(t *testing.T) {
	root, err := filepath.Abs(".")
	must(t, err)
	asNobody(t, "TestScript$/^run_network$", "ACT_TEST_ROOT="+root)
}

// TestRunNpmTestScriptNobody runs testdata/script/run_npm_test.txtar as
// nobody, as the person who met EROFS in the masked home was.
func TestRunNpmTestScriptNobody(t *testing.T) {
	root, err := filepath.Abs(".")
	must(t, err)
	asNobody(t, "TestScript$/^run_npm_test$", "ACT_TEST_ROOT="+root)
}

// TestGCNobody runs the gc testscript as an ordinary user, for whom the
// mode 000 and 555 directories left in a layer are really in the way.
func TestGCNobody(t *testing.T) {
	root, err := filepath.Abs(".")
	must(t, err)
	asNobody(t, "TestScript$/^gc_retention$", "ACT_TEST_ROOT="+root)
}
