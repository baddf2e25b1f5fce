package plan

// Build end to end (issue 4 part 8): descriptors loaded and checked as act
// validate does, then Build with a temporary state dir, a fixed clock and
// id and the default policy. Every test also proves that the real tree is
// unchanged, mtimes included, and that a refused plan leaves nothing under
// the state dir.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/act-project/act/descriptors"
	"github.com/act-project/act/diff"
	"github.com/act-project/act/internal/lifecycle"
	"github.com/act-project/act/internal/problem"
	"github.com/act-project/act/policy"
	"github.com/act-project/act/sandbox"
	"github.com/act-project/act/sandbox/isolate"
)

// buildNow is the fixed clock: a minute after the descriptors' created_at.
var buildNow = time.Date(2026, 11, 22, 0, 1, 0, 0, time.UTC)

const buildID = "0123456789abcdef"

// buildTree is the real tree every Build test starts from; s is the scope.
var buildTree = map[string]mxEntry{
	"s":             mxDir("0755"),
	"s/app":         mxFile("binary\x00\x01", "0755"),
	"s/a.tmp":       mxFile("tmp a\n", "0644"),
	"s/b.tmp":       mxFile("tmp b\n", "0600"),
	"s/config.json": mxFile("{\n  \"port\": 80,\n  \"debug\": true\n}\n", "0640"),
	"s/target":      mxFile("target\n", "0644"),
	"s/link":        mxLink("target"),
	"s/old":         mxDir("0755"),
	"s/old/x":       mxFile("x\n", "0644"),
}

// buildDescriptor loads and checks a descriptor whose action-specific part
// is body, with $S standing for the scope directory, the way act validate
// does; it fails the test on any problem.
func buildDescriptor(t *testing.T, s, stateDir, body string) *descriptors.Descriptor {
	t.Helper()
	text := `descriptor_version: "1.0"
action_id: 9b2f4c1e-7a3d-4e8b-9c0f-1d2e3f4a5b6c
created_at: "2026-11-22T00:00:00Z"
created_by: ai
intent_summary: Exercise plan.Build end to end.
risk_level: LOW
sandbox: {required: true, sandbox_type: container, allow_network: false, max_runs: 1}
rollback: {supported: true, rollback_type: filesystem_snapshot, rollback_scope: declared_effects_only}
confirmation: {required: false, reason: "", cooldown_on_repeat: false}
audit: {log: true, log_level: SUMMARY, retain_days: 30}
` + strings.ReplaceAll(body, "$S", s)
	d, doc, probs := descriptors.Load("d.yaml", []byte(text))
	if probs == nil {
		probs = descriptors.Check(d, doc, descriptors.CheckOptions{Now: buildNow, StateDir: stateDir})
	}
	if probs != nil {
		t.Fatalf("the test descriptor is invalid:\n%v\n%s", probs, text)
	}
	return d
}

// buildEnv is one Build test's world.
type buildEnv struct {
	root, s, stateDir string
	before            map[string]mxNode
	pol               *policy.Policy
	// ready is the check Build waits for (Ahead.Check), record the
	// record the plan is saved with (Draft.Save), planDir the spares.
	ready   func() error
	record  func(*Plan) error
	planDir func(string, []string) string
}

func newBuildEnv(t *testing.T) *buildEnv {
	t.Helper()
	e := &buildEnv{root: mxTempDir(t), stateDir: t.TempDir()}
	e.s = filepath.Join(e.root, "s")
	mxBuild(t, e.root, buildTree)
	e.before = mxSnapshot(t, e.root)
	pol, err := policy.Default("")
	if err != nil {
		t.Fatal(err)
	}
	pol.AllowedRoots = append(pol.AllowedRoots, e.root) // wherever TMPDIR is
	e.pol = pol
	return e
}

// build runs Build as act plan does, then checks that the real tree is
// unchanged and that no temporary plan directory is left behind.
func (e *buildEnv) build(t *testing.T, d *descriptors.Descriptor) (*Plan, error) {
	t.Helper()
	dec := e.pol.Decide(d, buildNow)
	if len(dec.Blocked) > 0 {
		t.Fatalf("the policy blocks the test descriptor: %v", dec.Blocked)
	}
	opts := Options{
		StateDir: e.stateDir,
		Policy:   e.pol,
		File:     "d.yaml",
		Now:      func() time.Time { return buildNow },
		NewID:    func() string { return buildID },
		Host: Host{
			FreeBytes:        func(string) (uint64, error) { return 1 << 40, nil },
			NetworkAvailable: func() (bool, error) { return false, nil },
			LastInput:        func() (time.Time, bool) { return time.Time{}, false },
		},
	}
	if e.ready != nil {
		opts.Ahead.Check = StartCheck(e.ready)
	}
	if e.planDir != nil {
		opts.Ahead.Dirs = spareFunc(e.planDir)
	}
	// As the gate's sequence does: a draft, then its save with the record.
	var p *Plan
	dr, err := DryRun(context.Background(), d, opts)
	if err == nil {
		p, err = dr.Save(Assessment{Decision: dec}, e.record)
	}
	if d := cmp.Diff(e.before, mxSnapshot(t, e.root)); d != "" {
		t.Errorf("Build touched the real tree (-before +after):\n%s", d)
	}
	ents, _ := os.ReadDir(filepath.Join(e.stateDir, "plans"))
	for _, ent := range ents {
		if strings.HasPrefix(ent.Name(), ".tmp-") {
			t.Errorf("Build left %s behind", filepath.Join("plans", ent.Name()))
		}
	}
	return p, err
}

// wantNoPlan checks that nothing was saved.
func (e *buildEnv) wantNoPlan(t *testing.T) {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(e.stateDir, "plans"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	for _, ent := range ents {
		t.Errorf("a refused Build left plans/%s", ent.Name())
	}
	if _, err := Load(e.stateDir, buildID); !errors.Is(err, ErrNotFound) {
		t.Errorf("Load() of a refused plan = %v, want ErrNotFound", err)
	}
}

// problemList returns err's problem list, failing the test when it is not one.
func problemList(t *testing.T, err error) problem.List {
	t.Helper()
	var probs problem.List
	if !errors.As(err, &probs) {
		t.Fatalf("Build() = %v, want a problem.List", err)
	}
	return probs
}

// ruleLayers summarises problems as rule, field and layer.
func ruleLayers(probs []problem.Problem) []string {
	var out []string
	for _, p := range probs {
		out = append(out, p.Rule+" "+p.Field+" "+p.Layer.String())
	}
	return out
}

// digestOf is the sha256 of s as diff.Change reports it.
func digestOf(s string) *string {
	h := sha256.Sum256([]byte(s))
	return mxStr(hex.EncodeToString(h[:]))
}

// sizeOf is the size of s as diff.Change reports it.
func sizeOf(s string) *int64 {
	n := int64(len(s))
	return &n
}

// TestBuildSaves plans a composite that creates, modifies and deletes, and
// checks the plan, its files under the state dir and its round trip.
func TestBuildSaves(t *testing.T) {
	e := newBuildEnv(t)
	d := buildDescriptor(t, e.s, e.stateDir, `action_type: MULTI_STEP_COMPOSITE
scope:
  filesystem: {paths: [$S], recursive: true}
  network: {required: false}
  ui: {required: false}
resources: {max_cpu_ms: 1000, max_memory_mb: 64, max_disk_mb: 1, max_duration_ms: 2000}
preconditions:
  paths_exist: [$S/app]
  paths_absent: [$S/release]
  sha256: {$S/app: `+*digestOf("binary\x00\x01")+`}
  network_available: false
  user_idle: false
effects:
  filesystem:
    create: [$S/release, $S/release/VERSION, $S/release/app]
    modify: [$S/config.json]
    delete: [$S/app, "$S/*.tmp", $S/old]
  network: false
  system_state_change: false
steps:
  - action_type: DIRECTORY_CREATE
    effects: {filesystem: {create: [$S/release], modify: [], delete: []}, network: false, system_state_change: false}
    operation: {path: $S/release, mode: "0750"}
  - action_type: FILE_WRITE
    effects: {filesystem: {create: [$S/release/VERSION], modify: [], delete: []}, network: false, system_state_change: false}
    operation: {path: $S/release/VERSION, content: "1.4.0\n", create_only: true}
  - action_type: FILE_MOVE
    effects: {filesystem: {create: [$S/release/app], modify: [], delete: [$S/app]}, network: false, system_state_change: false}
    operation: {from: $S/app, to: $S/release/app}
  - action_type: FILE_DELETE
    effects: {filesystem: {create: [], modify: [], delete: ["$S/*.tmp"]}, network: false, system_state_change: false}
    operation: {paths: ["$S/*.tmp"]}
  - action_type: CONFIG_CHANGE
    effects: {filesystem: {create: [], modify: [$S/config.json], delete: []}, network: false, system_state_change: false}
    operation: {path: $S/config.json, format: json, set: {port: 8080}, unset: [debug]}
  - action_type: DIRECTORY_DELETE
    effects: {filesystem: {create: [], modify: [], delete: [$S/old]}, network: false, system_state_change: false}
    operation: {path: $S/old}
`)
	p, err := e.build(t, d)
	if err != nil {
		t.Fatalf("Build() = %v", err)
	}
	config := "{\n  \"port\": 8080\n}\n"
	want := []diff.Change{
		{Path: e.s + "/a.tmp", Kind: diff.Delete, Type: diff.TypeFile, ModeBefore: mxStr("0644"), SizeBefore: sizeOf("tmp a\n"), SHA256Before: digestOf("tmp a\n")},
		{Path: e.s + "/app", Kind: diff.Delete, Type: diff.TypeFile, ModeBefore: mxStr("0755"), SizeBefore: sizeOf("binary\x00\x01"), SHA256Before: digestOf("binary\x00\x01")},
		{Path: e.s + "/b.tmp", Kind: diff.Delete, Type: diff.TypeFile, ModeBefore: mxStr("0600"), SizeBefore: sizeOf("tmp b\n"), SHA256Before: digestOf("tmp b\n")},
		{Path: e.s + "/config.json", Kind: diff.Modify, Type: diff.TypeFile,
			ModeBefore: mxStr("0640"), SizeBefore: sizeOf(buildTree["s/config.json"].content), SHA256Before: digestOf(buildTree["s/config.json"].content),
			ModeAfter: mxStr("0640"), SizeAfter: sizeOf(config), SHA256After: digestOf(config)},
		{Path: e.s + "/old", Kind: diff.Delete, Type: diff.TypeDir, ModeBefore: mxStr("0755")},
		{Path: e.s + "/release", Kind: diff.Create, Type: diff.TypeDir, ModeAfter: mxStr("0750")},
		{Path: e.s + "/release/VERSION", Kind: diff.Create, Type: diff.TypeFile, ModeAfter: mxStr("0644"), SizeAfter: sizeOf("1.4.0\n"), SHA256After: digestOf("1.4.0\n")},
		{Path: e.s + "/release/app", Kind: diff.Create, Type: diff.TypeFile, ModeAfter: mxStr("0755"), SizeAfter: sizeOf("binary\x00\x01"), SHA256After: digestOf("binary\x00\x01")},
	}
	if d := cmp.Diff(want, p.Changes, cmpopts.IgnoreFields(diff.Change{}, "OwnerBefore", "OwnerAfter")); d != "" {
		t.Errorf("Plan.Changes mismatch (-want +got):\n%s", d)
	}
	if c, m, dl := diff.Summary(p.Changes); c != 3 || m != 1 || dl != 4 {
		t.Errorf("diff.Summary() = %d, %d, %d; want 3, 1, 4", c, m, dl)
	}
	canon, digest, err := Canonical(d)
	if err != nil {
		t.Fatal(err)
	}
	wantPlan := &Plan{
		ID: buildID, ActionID: d.ActionID, DescriptorDigest: digest, Descriptor: canon,
		File: "d.yaml", ActionType: "MULTI_STEP_COMPOSITE", RiskLevel: "LOW",
		CreatedAt: buildNow, State: lifecycle.Planned,
		Mode: "allow", ModeSource: policy.SourceRiskDefault, Reason: p.Reason,
		Changes: p.Changes, Warnings: []problem.Problem{},
		// the files' content, and the names of the layer's entries
		// (whiteouts of a.tmp, app, b.tmp and old; config.json, release
		// and its VERSION and app)
		LayerBytes: int64(len("1.4.0\n") + len("binary\x00\x01") + len(config) +
			len("a.tmp"+"app"+"b.tmp"+"old"+"config.json"+"release"+"VERSION"+"app")),
	}
	roots, err := ScopeRootIDs(d.Scope.Filesystem.Paths)
	if err != nil || len(roots) < 2 || roots[0].Path != "/" || roots[len(roots)-1].Path != e.s {
		t.Fatalf("ScopeRootIDs = %v, %v; want / … %s", roots, err, e.s)
	}
	wantPlan.ScopeRoots = roots
	wantPlan.Scope = d.Scope.Filesystem.Paths
	if d := cmp.Diff(wantPlan, p); d != "" {
		t.Errorf("Build() mismatch (-want +got):\n%s", d)
	}
	if p.Reason == "" {
		t.Errorf("Plan.Reason is empty")
	}

	for _, f := range []string{"plan.json", "layer"} {
		if _, err := os.Stat(filepath.Join(Dir(e.stateDir, buildID), f)); err != nil {
			t.Errorf("the saved plan lacks %s: %v", f, err)
		}
	}
	checkRoundTrip(t, e.stateDir, p)
	// The saved layer is the plan: diffed again, it gives the same changes.
	layer := sandbox.NewLayerSystem(sandbox.RealSystem{}, LayerDir(e.stateDir, buildID))
	again, err := diff.Compare(layer.UpperDir(), d.Scope.Filesystem.Paths, sandbox.RealSystem{})
	if err != nil {
		t.Fatal(err)
	}
	diff.SetOwnersAfter(again) // as the plan does
	if d := cmp.Diff(p.Changes, again); d != "" {
		t.Errorf("diff.Compare() of the saved layer mismatch (-plan +layer):\n%s", d)
	}
}

// fileWriteBody is the body of a FILE_WRITE descriptor; effects and operation
// are YAML flow mappings.
func fileWriteBody(maxDiskMB, pre, effects, operation string) string {
	if !strings.Contains(pre, "paths_exist") {
		pre += ", paths_exist: [$S]"
	}
	return `action_type: FILE_WRITE
scope:
  filesystem: {paths: [$S], recursive: false}
  network: {required: false}
  ui: {required: false}
resources: {max_cpu_ms: 1000, max_memory_mb: 64, max_disk_mb: ` + maxDiskMB + `, max_duration_ms: 2000}
preconditions: {network_available: false, user_idle: false` + pre + `}
effects: {filesystem: ` + effects + `, network: false, system_state_change: false}
operation: ` + operation + "\n"
}

// TestBuildPreconditions: each failed precondition is a problem of layer
// Precondition, and nothing is saved.
func TestBuildPreconditions(t *testing.T) {
	e := newBuildEnv(t)
	d := buildDescriptor(t, e.s, e.stateDir, fileWriteBody("1",
		`, paths_exist: [$S/missing], paths_absent: [$S/target], sha256: {$S/config.json: `+*digestOf("other")+`}`,
		`{create: [$S/new], modify: [], delete: []}`,
		`{path: $S/new, content: "x"}`))
	_, err := e.build(t, d)
	want := []string{
		"precondition.path-missing preconditions.paths_exist[0] precondition",
		"precondition.path-present preconditions.paths_absent[0] precondition",
		"precondition.sha256-mismatch preconditions.sha256[\"" + e.s + "/config.json\"] precondition",
	}
	if d := cmp.Diff(want, ruleLayers(problemList(t, err))); d != "" {
		t.Errorf("Build() problems mismatch (-want +got):\n%s", d)
	}
	e.wantNoPlan(t)
}

// TestBuildRejected: a dry run whose changes the descriptor does not allow
// is refused with problems of layer Rejected, and nothing is saved.
func TestBuildRejected(t *testing.T) {
	tests := []struct {
		name string
		body string
		// edit changes the loaded descriptor where a descriptor file
		// cannot say what the test needs.
		edit func(d *descriptors.Descriptor)
		want []string
	}{{
		// The static check sees the link declared; the dry run writes
		// through it to the target.
		name: "undeclared-effect",
		body: fileWriteBody("1", "", `{create: [], modify: [$S/link], delete: []}`, `{path: $S/link, content: "new"}`),
		want: []string{"effects.undeclared-change effects.filesystem.modify rejected"},
	}, {
		// A descriptor is at most 1 MiB, so the 2 MiB are set in Go.
		name: "disk-cap",
		body: fileWriteBody("1", "", `{create: [$S/big], modify: [], delete: []}`, `{path: $S/big, content: ""}`),
		edit: func(d *descriptors.Descriptor) {
			op := d.Op.(descriptors.FileWriteOp)
			op.Content = mxStr(strings.Repeat("x", 2<<20))
			d.Op = op
		},
		want: []string{"resources.disk-cap-exceeded resources.max_disk_mb rejected"},
	}, {
		name: "operation-refused",
		body: fileWriteBody("1", "", `{create: [$S/target], modify: [], delete: []}`, `{path: $S/target, content: "x", create_only: true}`),
		want: []string{"op.create-only-exists operation.path rejected"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newBuildEnv(t)
			d := buildDescriptor(t, e.s, e.stateDir, tc.body)
			if tc.edit != nil {
				tc.edit(d)
			}
			p, err := e.build(t, d)
			if err == nil {
				t.Fatalf("Build() = plan with changes %v, want an error", p.Changes)
			}
			probs := problemList(t, err)
			if d := cmp.Diff(tc.want, ruleLayers(probs)); d != "" {
				t.Errorf("Build() problems mismatch (-want +got):\n%s", d)
			}
			e.wantNoPlan(t)
		})
	}
}

// TestBuildWarnings: a declared effect that did not happen is a warning,
// saved with the plan.
func TestBuildWarnings(t *testing.T) {
	e := newBuildEnv(t)
	d := buildDescriptor(t, e.s, e.stateDir, fileWriteBody("1", "",
		`{create: [$S/new], modify: [$S/new, $S/target], delete: ["$S/*.tmp"]}`,
		`{path: $S/new, content: "x"}`))
	p, err := e.build(t, d)
	if err != nil {
		t.Fatalf("Build() = %v", err)
	}
	want := []string{
		"effects.not-happened effects.filesystem.modify[1] rejected",
		"effects.not-happened effects.filesystem.delete[0] rejected",
	}
	if d := cmp.Diff(want, ruleLayers(p.Warnings)); d != "" {
		t.Errorf("Plan.Warnings mismatch (-want +got):\n%s", d)
	}
	wantChanges := []diff.Change{
		{Path: e.s + "/new", Kind: diff.Create, Type: diff.TypeFile, ModeAfter: mxStr("0644"), SizeAfter: sizeOf("x"), SHA256After: digestOf("x")},
	}
	if d := cmp.Diff(wantChanges, p.Changes, cmpopts.IgnoreFields(diff.Change{}, "OwnerAfter")); d != "" {
		t.Errorf("Plan.Changes mismatch (-want +got):\n%s", d)
	}
	checkRoundTrip(t, e.stateDir, p)
}

// checkRoundTrip checks that Load gives back p, and that the descriptor it
// holds still hashes to its digest.
func checkRoundTrip(t *testing.T, stateDir string, p *Plan) {
	t.Helper()
	loaded, err := Load(stateDir, p.ID)
	if err != nil {
		t.Fatalf("Load() = %v", err)
	}
	if d := cmp.Diff(p, loaded); d != "" {
		t.Errorf("Load() mismatch (-built +loaded):\n%s", d)
	}
	for what, desc := range map[string]string{"built": string(p.Descriptor), "loaded": string(loaded.Descriptor)} {
		if got := *digestOf(desc); got != p.DescriptorDigest {
			t.Errorf("the %s plan's descriptor hashes to %s, not its digest %s", what, got, p.DescriptorDigest)
		}
	}
}

// TestBuildReadyRecord: Ready is the caller's last check before anything
// runs (its refusal ends the plan, nothing saved, nothing run); Record runs
// beside the save, and a plan is moved into place only once recorded.
func TestBuildReadyRecord(t *testing.T) {
	body := fileWriteBody("1", "", "{create: [$S/new], modify: [], delete: []}", `{path: $S/new, content: "x\n", create_only: true}`)
	refused := errors.New("the gate refused")
	t.Run("ready refuses", func(t *testing.T) {
		e := newBuildEnv(t)
		recorded := false
		e.ready = func() error { return refused }
		e.record = func(*Plan) error { recorded = true; return nil }
		if _, err := e.build(t, buildDescriptor(t, e.s, e.stateDir, body)); !errors.Is(err, refused) {
			t.Fatalf("Build() = %v, want Ready's error", err)
		}
		if recorded {
			t.Error("a plan Ready refused was recorded")
		}
		e.wantNoPlan(t)
	})
	t.Run("record fails", func(t *testing.T) {
		e := newBuildEnv(t)
		e.record = func(*Plan) error { return refused }
		if _, err := e.build(t, buildDescriptor(t, e.s, e.stateDir, body)); !errors.Is(err, refused) {
			t.Fatalf("Build() = %v, want Record's error", err)
		}
		e.wantNoPlan(t)
	})
	t.Run("recorded", func(t *testing.T) {
		e := newBuildEnv(t)
		var got *Plan
		e.ready = func() error { return nil }
		e.record = func(p *Plan) error { got = p; return nil }
		p, err := e.build(t, buildDescriptor(t, e.s, e.stateDir, body))
		if err != nil {
			t.Fatal(err)
		}
		if got != p {
			t.Errorf("Record got plan %p, want the one Build returned (%p)", got, p)
		}
		if _, err := Load(e.stateDir, p.ID); err != nil {
			t.Errorf("the recorded plan was not saved: %v", err)
		}
	})
}

// TestBuildReadyCommand: with a command, Ready is called once, by the
// sandbox before it runs the command (isolate.Spec.Before, which
// TestBefore covers): its refusal is Build's error and leaves no plan; its
// nil lets the command run.
func TestBuildReadyCommand(t *testing.T) {
	if err := isolate.Available(); err != nil {
		t.Skipf("no isolation here: %v", err)
	}
	refused := errors.New("the gate refused")
	for _, tt := range []struct {
		name string
		err  error
	}{{"refused", refused}, {"passed", nil}} {
		t.Run(tt.name, func(t *testing.T) {
			base := t.TempDir()
			if os.Getenv(leakEnv) != "" {
				base = filepath.Join(os.Getenv(leakEnv), tt.name)
				mustDo(t, os.Mkdir(base, 0o755))
			}
			calls := 0
			ranEarly := false
			p, err := buildScriptWith(t, base, "5c6d7e8f-9a0b-4c1d-8e2f-3a4b5c6d7e02", "echo ran > ran",
				func() error {
					calls++
					// Not a wait for anything: a slow Ready is the case
					// under test. Had the command not been held back
					// by it, its file would be in the plan's layer on
					// disk by the end of it.
					time.Sleep(300 * time.Millisecond)
					ranEarly = ranEarly || layerHolds(t, filepath.Join(base, "state", "plans"), "ran")
					return tt.err
				}, "ran")
			if calls != 1 || ranEarly {
				t.Errorf("Ready called %d times, the command run before it: %v; want once, and not", calls, ranEarly)
			}
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("Build() = %v, want Ready's error", err)
				}
				noPlansLeft(t, base)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Commands) != 1 || len(p.Changes) != 1 {
				t.Errorf("commands %+v, changes %+v; want the command's run and its file", p.Commands, p.Changes)
			}
		})
	}
}

// layerHolds reports whether a file named name is anywhere below dir.
func layerHolds(t *testing.T, dir, name string) bool {
	t.Helper()
	found := false
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Name() == name && !d.IsDir() {
			found = true
		}
		return nil
	})
	return found
}

// TestBuildReadyCommandNobody runs TestBuildReadyCommand as an ordinary
// user.
func TestBuildReadyCommandNobody(t *testing.T) {
	if os.Getenv(leakEnv) != "" {
		t.Skip("in the child")
	}
	dir := nobodyDir(t)
	base := filepath.Join(dir, "ready")
	mustDo(t, os.Mkdir(base, 0o755))
	mustDo(t, os.Chown(base, 65534, 65534))
	runAsNobody(t, dir, "TestBuildReadyCommand", leakEnv+"="+base)
}

// spareFunc is a plan.Spares of a function.
type spareFunc func(plans string, scopes []string) string

func (f spareFunc) Take(plans string, scopes []string) string { return f(plans, scopes) }
