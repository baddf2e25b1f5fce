package plan

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/act-project/act/descriptors"
	"github.com/act-project/act/internal/problem"
	"github.com/act-project/act/policy"
	"github.com/act-project/act/sandbox/isolate"
)

// leakEnv names, in the child TestRejectedPlanLeavesNothingNobody starts,
// the directory its parent made.
const leakEnv = "_ACT_TEST_LEAK_BASE"

// TestRejectedPlanLeavesNothing: a command that leaves directories of mode
// 000 and 555 (with files in them) and is then rejected leaves nothing of
// its plan behind: no plans/.tmp-*.
func TestRejectedPlanLeavesNothing(t *testing.T) {
	if err := isolate.Available(); err != nil {
		t.Skipf("no isolation here: %v", err)
	}
	base := os.Getenv(leakEnv)
	if base == "" {
		base = t.TempDir()
	}
	_, err := buildScript(t, base, "5c6d7e8f-9a0b-4c1d-8e2f-3a4b5c6d7e01",
		"mkdir -p a/b r/q && echo x > a/b/f && echo y > r/q/g && chmod 000 a/b a && chmod 555 r/q r")
	if err == nil {
		t.Fatal("the plan was not rejected")
	}
	noPlansLeft(t, base)
}

// buildScript plans a COMMAND_EXECUTION of the shell script in base/s, with
// act's state in base/state and the scope's files in create declared.
func buildScript(t *testing.T, base, id, script string, create ...string) (*Plan, error) {
	t.Helper()
	return buildScriptWith(t, base, id, script, nil, create...)
}

// buildScriptWith is buildScript with ready as Options.Ready.
func buildScriptWith(t *testing.T, base, id, script string, ready func() error, create ...string) (*Plan, error) {
	t.Helper()
	d, pol := scriptDescriptor(t, base, id, script, create...)
	return Build(t.Context(), d, Options{StateDir: filepath.Join(base, "state"), Policy: pol, Decision: pol.Decide(d, buildNow),
		File: "d.yaml", Now: func() time.Time { return buildNow }, Ahead: Ahead{Check: StartCheck(ready)}})
}

// scriptDescriptor is a COMMAND_EXECUTION of script in base/s that
// creates create (below base/s), and a default policy that allows base.
func scriptDescriptor(t *testing.T, base, id, script string, create ...string) (*descriptors.Descriptor, *policy.Policy) {
	t.Helper()
	scope := filepath.Join(base, "s")
	mustDo(t, os.MkdirAll(scope, 0o755))
	paths := []string{}
	for _, c := range create {
		paths = append(paths, filepath.Join(scope, c))
	}
	text := `descriptor_version: "1.0"
action_id: ` + id + `
created_at: "2026-11-22T00:00:00Z"
created_by: ai
intent_summary: Run a script.
risk_level: MEDIUM
action_type: COMMAND_EXECUTION
scope: {filesystem: {paths: [` + scope + `], recursive: true}, network: {required: false}, ui: {required: false}}
resources: {max_cpu_ms: 2000, max_memory_mb: 128, max_disk_mb: 4, max_duration_ms: 5000}
sandbox: {required: true, sandbox_type: container, allow_network: false, max_runs: 1}
rollback: {supported: true, rollback_type: filesystem_snapshot, rollback_scope: declared_effects_only}
confirmation: {required: false, reason: "", cooldown_on_repeat: false}
audit: {log: true, log_level: SUMMARY, retain_days: 30}
preconditions: {paths_exist: [], network_available: false, user_idle: false}
effects: {filesystem: {create: ` + js(paths) + `, modify: [], delete: []}, network: false, system_state_change: false}
operation: {argv: [sh, -c, ` + js(script) + `], workdir: ` + scope + `}
`
	d, _, probs := descriptors.Load("d.yaml", []byte(text))
	if probs != nil {
		t.Fatal(probs)
	}
	pol, err := policy.Default("")
	if err != nil {
		t.Fatal(err)
	}
	pol.AllowedRoots = []string{base}
	if memoryTotal {
		pol.Resources.MemoryEnforcement = policy.MemoryTotal
	}
	return d, pol
}

// noPlansLeft fails t if base/state holds any plan, whole or part-made.
func noPlansLeft(t *testing.T, base string) {
	t.Helper()
	ents, _ := os.ReadDir(filepath.Join(base, "state", "plans"))
	for _, e := range ents {
		t.Errorf("left behind: plans/%s", e.Name())
	}
}

// TestRejectedPlanLeavesNothingNobody runs it as an ordinary user, who
// cannot remove what it cannot enter.
func TestRejectedPlanLeavesNothingNobody(t *testing.T) {
	if os.Getenv(leakEnv) != "" {
		t.Skip("in the child")
	}
	dir := nobodyDir(t)
	base := filepath.Join(dir, "leak")
	mustDo(t, os.Mkdir(base, 0o755))
	mustDo(t, os.Chown(base, 65534, 65534))
	runAsNobody(t, dir, "TestRejectedPlanLeavesNothing", leakEnv+"="+base)
}

// memCapEnv marks the child TestMemoryCapRefusedWithoutCgroup starts; its
// value is the directory its parent made.
const memCapEnv = "_ACT_TEST_MEMCAP_BASE"

// memoryTotal makes buildScript's policy demand a total memory cap
// (resources.memory_enforcement: total).
var memoryTotal bool

// TestMemoryCapRefusedWithoutCgroup: as an ordinary user with no writable
// memory cgroup, a command with a memory cap runs under RLIMIT_AS per
// process, and the plan says it is not a total cap (op.memory-per-process);
// where the policy demands a total cap it is refused before it runs,
// saying what is missing (issue 12 item 9: rlimits would not bound the
// command's processes together, nor the kernel's buffers they hold).
func TestMemoryCapRefusedWithoutCgroup(t *testing.T) {
	base := os.Getenv(memCapEnv)
	if base == "" {
		dir := nobodyDir(t)
		if err := isolate.Available(); err != nil {
			t.Skipf("no isolation here: %v", err)
		}
		base = filepath.Join(dir, "memcap")
		mustDo(t, os.Mkdir(base, 0o755))
		mustDo(t, os.Chown(base, 65534, 65534))
		runAsNobodyIn(t, nil, dir, "TestMemoryCapRefusedWithoutCgroup", memCapEnv+"="+base)
		return
	}
	p, err := buildScript(t, base, "5c6d7e8f-9a0b-4c1d-8e2f-3a4b5c6d7e01", "touch ran", "ran")
	if err != nil || len(p.Commands) != 1 || p.Commands[0].Caps["memory"] != isolate.MemoryPerProcess {
		t.Fatalf("an ordinary user without a memory cgroup, per_process: %v, %v", p, err)
	}
	if !slices.ContainsFunc(p.Warnings, func(w problem.Problem) bool { return w.Rule == "op.memory-per-process" }) {
		t.Errorf("the plan does not say the memory cap is per process: %v", p.Warnings)
	}
	memoryTotal = true
	defer func() { memoryTotal = false }()
	p, err = buildScript(t, filepath.Join(base, "total"), "5c6d7e8f-9a0b-4c1d-8e2f-3a4b5c6d7e02", "touch ran", "ran")
	if p != nil || !errors.Is(err, isolate.ErrUnavailable) ||
		!strings.Contains(err.Error(), "no writable memory cgroup, and the policy demands a total memory cap (resources.memory_enforcement: total); run as root or in a delegated cgroup (systemd-run --user --scope -p Delegate=yes") {
		t.Fatalf("an ordinary user without a memory cgroup, total: plan %v, error %v", p != nil, err)
	}
	t.Log(err)
	noPlansLeft(t, filepath.Join(base, "total"))
}
