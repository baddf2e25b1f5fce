package plan

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/act-project/act/descriptors"
	"github.com/act-project/act/internal/digest"
	"github.com/act-project/act/policy"
	"github.com/act-project/act/sandbox/isolate"
)

// TestCommandSumsBesideCopy: a COMMAND_EXECUTION's files are summed in the
// sandbox's tmpfs upper beside init's copy into the layer, and each
// digest the plan records is the layer file's own (the copy's, read
// again here). A command that writes nothing is summed to nothing.
func TestCommandSumsBesideCopy(t *testing.T) {
	if err := isolate.Available(); err != nil {
		t.Skipf("no isolation here: %v", err)
	}
	base := t.TempDir()
	scope := filepath.Join(base, "s")
	mustDo(t, os.MkdirAll(scope, 0o755))
	mustDo(t, os.WriteFile(filepath.Join(scope, "old.txt"), []byte("old\n"), 0o644))
	script := `set -e
echo more >> old.txt
mkdir d && head -c 2000000 /dev/zero | tr '\0' 'y' > d/big
printf 'a\0b' > d/bin
: > empty`
	text := `descriptor_version: "1.0"
action_id: 5c6d7e8f-9a0b-4c1d-8e2f-3a4b5c6d7e77
created_at: "2026-11-22T00:00:00Z"
created_by: ai
intent_summary: Run a script.
risk_level: MEDIUM
action_type: COMMAND_EXECUTION
scope: {filesystem: {paths: [` + scope + `], recursive: true}, network: {required: false}, ui: {required: false}}
resources: {max_cpu_ms: 5000, max_memory_mb: 128, max_disk_mb: 16, max_duration_ms: 10000}
sandbox: {required: true, sandbox_type: container, allow_network: false, max_runs: 1}
rollback: {supported: true, rollback_type: filesystem_snapshot, rollback_scope: declared_effects_only}
confirmation: {required: false, reason: "", cooldown_on_repeat: false}
audit: {log: true, log_level: SUMMARY, retain_days: 30}
preconditions: {paths_exist: [], network_available: false, user_idle: false}
effects: {filesystem: {create: [` + scope + `/**], modify: [` + scope + `/old.txt], delete: []}, network: false, system_state_change: false}
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
	dr, err := DryRun(t.Context(), d, Options{StateDir: filepath.Join(base, "state"), Policy: pol, Decision: pol.Decide(d, buildNow),
		File: "d.yaml", Now: func() time.Time { return buildNow }})
	if err != nil {
		t.Fatal(err)
	}
	if dr.sums == nil {
		t.Fatal("a COMMAND_EXECUTION's draft was not summed beside the copy")
	}
	summed := 0
	for _, c := range dr.Changes {
		if c.SHA256After == nil {
			continue
		}
		if _, ok := dr.sums.sums[c.Path]; ok {
			summed++
		}
		got, err := digest.File(filepath.Join(dr.UpperDir(), c.Path))
		if err != nil {
			t.Fatal(err)
		}
		if got != *c.SHA256After {
			t.Errorf("%s: the plan records %s, the layer holds %s", c.Path, *c.SHA256After, got)
		}
	}
	// old.txt, d/big, d/bin and empty: every file the command wrote.
	if summed != 4 {
		t.Errorf("%d of the plan's files were summed, want 4: %+v", summed, dr.sums.sums)
	}
}
