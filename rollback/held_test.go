package rollback

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/act-project/act/descriptors"
	"github.com/act-project/act/internal/problem"
	"github.com/act-project/act/internal/state"
	"github.com/act-project/act/plan"
	"github.com/act-project/act/policy"
)

// heldPlan builds, as act plan does, a plan that creates a.txt and
// modifies b.txt in a project of its own, and returns it with its state
// dir, the project and the layer's copies of the two files.
func heldPlan(t *testing.T, id string) (*plan.Plan, state.Dir, string, []string) {
	t.Helper()
	base := t.TempDir()
	proj, home := filepath.Join(base, "proj"), state.Dir{Root: filepath.Join(base, "state")}
	mkTree(t, proj, map[string]string{"b.txt": "b\n"})
	src := strings.NewReplacer("$P", proj, "$ID", id).Replace(`descriptor_version: "1.0"
action_id: $ID
created_at: "2026-11-22T00:00:00Z"
created_by: ai
intent_summary: Write two files.
risk_level: LOW
scope:
  filesystem: {paths: [$P], recursive: true}
  network: {required: false}
  ui: {required: false}
resources: {max_cpu_ms: 1000, max_memory_mb: 64, max_disk_mb: 1, max_duration_ms: 2000}
sandbox: {required: true, sandbox_type: container, allow_network: false, max_runs: 1}
rollback: {supported: true, rollback_type: filesystem_snapshot, rollback_scope: declared_effects_only}
confirmation: {required: false, reason: "", cooldown_on_repeat: false}
audit: {log: true, log_level: SUMMARY, retain_days: 30}
preconditions: {paths_exist: [], network_available: false, user_idle: false}
action_type: MULTI_STEP_COMPOSITE
effects:
  filesystem: {create: [$P/a.txt], modify: [$P/b.txt], delete: []}
  network: false
  system_state_change: false
steps:
  - action_type: FILE_WRITE
    effects: {filesystem: {create: [$P/a.txt], modify: [], delete: []}, network: false, system_state_change: false}
    operation: {path: $P/a.txt, content: "reviewed a\n", mode: "0640"}
  - action_type: FILE_WRITE
    effects: {filesystem: {create: [], modify: [$P/b.txt], delete: []}, network: false, system_state_change: false}
    operation: {path: $P/b.txt, content: "reviewed b\n"}
`)
	d, _, probs := descriptors.Load("d.yaml", []byte(src))
	if probs != nil {
		t.Fatal(probs)
	}
	pol, err := policy.Parse("policy.yaml", []byte("allowed_roots: ["+base+"]\n"), "")
	ok(t, err)
	now := func() time.Time { return time.Date(2026, 11, 22, 0, 10, 0, 0, time.UTC) }
	p, err := plan.Build(context.Background(), d, plan.Options{StateDir: home.Root, Policy: pol, Decision: pol.Decide(d, now()), Now: now, Host: plan.DefaultHost()})
	ok(t, err)
	layer := plan.UpperDir(home.Root, p.ID)
	return p, home, proj, []string{layer + filepath.Join(proj, "a.txt"), layer + filepath.Join(proj, "b.txt")}
}

// holdOpen opens each name for writing, as a descriptor that outlived
// whoever opened it (a process that escaped a dry run, an agent's process
// of the same user) holds it, and returns the descriptors.
func holdOpen(t *testing.T, names []string) []int {
	t.Helper()
	var fds []int
	for _, n := range names {
		fd, err := unix.Open(n, unix.O_WRONLY|unix.O_CLOEXEC, 0)
		ok(t, err)
		t.Cleanup(func() { unix.Close(fd) })
		fds = append(fds, fd)
	}
	return fds
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// TestApplyHeldDescriptor: a descriptor held open on a layer file must not
// change what apply promotes. Promotion copies each layer file into a new
// file of its own, hashing the bytes it writes, so that a write through a
// descriptor of the layer's file after apply reaches nothing promoted
// (before, the layer's own inode was renamed into place, and the write
// landed in the real file after apply had checked it); and a write
// between apply's checks and the copy is refused (apply.layer-changed,
// exit 8), nothing changed.
func TestApplyHeldDescriptor(t *testing.T) {
	defer func() { CrashPoint = nil }()
	t.Run("after", func(t *testing.T) {
		p, home, proj, layer := heldPlan(t, "55555555-6666-4777-8888-999999999991")
		fds := holdOpen(t, layer)
		_, err := Apply(context.Background(), home, p, Options{Now: time.Now})
		ok(t, err)
		for _, fd := range fds {
			if _, err := unix.Pwrite(fd, []byte("TROJAN\n"), 0); err != nil {
				t.Fatal(err)
			}
		}
		for i, c := range p.Changes {
			b, err := os.ReadFile(c.Path)
			ok(t, err)
			if sha(b) != *c.SHA256After {
				t.Errorf("%s after a write through a descriptor of %s: %q, not the reviewed content (sha256 %.12s)", c.Path, layer[i], b, *c.SHA256After)
			}
		}
		if b, _ := os.ReadFile(filepath.Join(proj, "a.txt")); string(b) != "reviewed a\n" {
			t.Errorf("a.txt holds %q", b)
		}
	})
	t.Run("between", func(t *testing.T) {
		p, home, proj, layer := heldPlan(t, "55555555-6666-4777-8888-999999999992")
		before := snap(t, proj)
		fds := holdOpen(t, layer)
		// The first point after apply's checks: the journal is begun,
		// nothing is copied or moved yet.
		CrashPoint = func() {
			CrashPoint = nil
			for _, fd := range fds {
				if _, err := unix.Pwrite(fd, []byte("TROJAN\n"), 0); err != nil {
					t.Error(err)
				}
			}
		}
		_, err := Apply(context.Background(), home, p, Options{Now: time.Now})
		CrashPoint = nil
		var probs problem.List
		if !errors.As(err, &probs) || len(probs) == 0 || probs[0].Rule != RuleLayerChanged || probs.Layer() != problem.Conflict {
			t.Fatalf("Apply after the layer changed under it: %v, want %s (exit 8)", err, RuleLayerChanged)
		}
		if !strings.Contains(probs[0].Message, "its content changed") {
			t.Errorf("the refusal: %s", probs[0].Message)
		}
		if d := cmp.Diff(before, snap(t, proj)); d != "" {
			t.Errorf("the refused apply changed the tree (-want +got):\n%s", d)
		}
		if NeedsRecovery(home) {
			t.Error("a journal is left")
		}
	})
}
