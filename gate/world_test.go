package gate

// The world the lifecycle and refusal tests drive the gate in: a real tree
// in a temporary directory, a state dir of its own, the built-in default
// policy widened to the tree, and a clock the test moves. Plans are made,
// applied, denied and rolled back through the gate's own API, as the CLI
// and the MCP server do; what the tests assert is read back from the state
// dir (Load), the real tree and the verified audit log.

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/act-project/act/audit"
	"github.com/act-project/act/descriptors"
	"github.com/act-project/act/internal/lifecycle"
	"github.com/act-project/act/internal/outcome"
	"github.com/act-project/act/internal/problem"
	"github.com/act-project/act/internal/state"
	"github.com/act-project/act/plan"
	"github.com/act-project/act/policy"
)

// A world is one test's tree, state dir, policy and clock.
type world struct {
	t *testing.T
	g *Gate
	// root holds the real tree; proj is the descriptors' scope, and
	// elsewhere a directory beside it, outside every scope.
	root, proj, elsewhere string
	now                   time.Time
}

// newWorld makes a world whose tree holds files (paths relative to root,
// "proj/..." or "elsewhere/..."), with the default policy: FILE_WRITE of a
// file in the workspace is LOW and allowed, a delete is MEDIUM and needs a
// person.
func newWorld(t *testing.T, files map[string]string) *world {
	t.Helper()
	root := t.TempDir()
	w := &world{t: t, root: root, proj: filepath.Join(root, "proj"), elsewhere: filepath.Join(root, "elsewhere")}
	for _, dir := range []string{w.proj, w.elsewhere} {
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(root, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	pol, err := policy.Default("")
	if err != nil {
		t.Fatal(err)
	}
	// Wherever TMPDIR is, the tree is an allowed root and a workspace
	// (where a write may be LOW).
	pol.AllowedRoots = append(pol.AllowedRoots, root)
	pol.Workspaces = append(pol.Workspaces, root)
	pol.Modes.Types = map[descriptors.ActionType]policy.Mode{}
	// The clock starts now, to the second: the audit log and the state
	// dir's files carry the real time, and the plans the test's.
	w.now = time.Now().UTC().Truncate(time.Second)
	w.g = &Gate{
		Home:     state.Dir{Root: t.TempDir()},
		Policy:   pol,
		Now:      func() time.Time { return w.now },
		EnvHome:  "/home/u",
		UserHome: "/home/u",
	}
	return w
}

// advance moves the clock.
func (w *world) advance(d time.Duration) { w.now = w.now.Add(d) }

// descriptorHead is every test descriptor's common part; $ID is its action
// id, $CREATED its created_at (a minute before the world's start), $P the
// scope, $REQUIRED its confirmation.required, $COOLDOWN its
// cooldown_on_repeat and $PRE its paths_exist.
const descriptorHead = `descriptor_version: "1.0"
action_id: $ID
created_at: "$CREATED"
created_by: ai
intent_summary: Exercise the gate's lifecycle.
risk_level: LOW
scope:
  filesystem: {paths: [$P], recursive: true}
  network: {required: false}
  ui: {required: false}
resources: {max_cpu_ms: 1000, max_memory_mb: 64, max_disk_mb: 1, max_duration_ms: 2000}
sandbox: {required: true, sandbox_type: container, allow_network: false, max_runs: 1}
rollback: {supported: true, rollback_type: filesystem_snapshot, rollback_scope: declared_effects_only}
confirmation: {required: $REQUIRED, reason: "", cooldown_on_repeat: $COOLDOWN}
audit: {log: true, log_level: SUMMARY, retain_days: 30}
preconditions: {paths_exist: [$PRE], network_available: false, user_idle: false}
`

// A spec is what varies between the test descriptors.
type spec struct {
	id       string
	cooldown bool // confirmation.cooldown_on_repeat
	required bool // confirmation.required
	// pre lists the paths that must exist (preconditions.paths_exist).
	pre []string
	// body is the action-specific part: action_type, effects, operation;
	// $P stands for the scope directory.
	body string
	// network asks for the network (scope.network.required and
	// sandbox.allow_network).
	network bool
}

// writeBody is a FILE_WRITE of content to proj/name, declared as a modify
// (or, with create, a create) of it.
func writeBody(name, content string, create bool) string {
	kind := "modify"
	if create {
		kind = "create"
	}
	fx := map[string]string{"create": "[]", "modify": "[]"}
	fx[kind] = "[$P/" + name + "]"
	return `action_type: FILE_WRITE
effects:
  filesystem: {create: ` + fx["create"] + `, modify: ` + fx["modify"] + `, delete: []}
  network: false
  system_state_change: false
operation: {path: $P/` + name + `, content: "` + strings.ReplaceAll(content, "\n", `\n`) + `"}
`
}

// deleteBody is a FILE_DELETE of proj/name.
func deleteBody(name string) string {
	return `action_type: FILE_DELETE
effects:
  filesystem: {create: [], modify: [], delete: [$P/` + name + `]}
  network: false
  system_state_change: false
operation: {paths: [$P/` + name + `]}
`
}

// descriptor loads and checks s as act validate does, failing the test on
// any problem, and returns it with its canonical digest. $P stands for the
// scope directory in s.body and s.pre.
func (w *world) descriptor(s spec) (*descriptors.Descriptor, string) {
	w.t.Helper()
	text := strings.NewReplacer(
		"$PRE", strings.Join(s.pre, ", "),
		"$ID", s.id,
		"$CREATED", w.now.Add(-time.Minute).Format(time.RFC3339),
		"$COOLDOWN", boolText(s.cooldown),
		"$REQUIRED", boolText(s.required),
		"$P", w.proj,
	).Replace(descriptorHead + s.body)
	text = strings.ReplaceAll(text, "$P", w.proj)
	if s.network {
		text = strings.NewReplacer("network: {required: false}", "network: {required: true}", "allow_network: false", "allow_network: true").Replace(text)
	}
	d, doc, probs := descriptors.Load("d.yaml", []byte(text))
	if probs == nil {
		probs = descriptors.Check(d, doc, descriptors.CheckOptions{Now: w.now, StateDir: w.g.Home.Root})
	}
	if probs != nil {
		w.t.Fatalf("the test descriptor is invalid:\n%v\n%s", probs, text)
	}
	_, digest, err := plan.Canonical(d)
	if err != nil {
		w.t.Fatal(err)
	}
	return d, digest
}

func boolText(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

// tryPlan runs the gate's sequence for a dry run of s, as act plan does.
func (w *world) tryPlan(s spec) (*plan.Plan, error) {
	w.t.Helper()
	d, digest := w.descriptor(s)
	canon, _, err := plan.Canonical(d)
	if err != nil {
		w.t.Fatal(err)
	}
	p, _, err := w.g.Plan(context.Background(), d, plan.Options{
		StateDir:  w.g.Home.Root,
		Policy:    w.g.Policy,
		File:      "d.yaml",
		Now:       w.g.Now,
		Host:      fakeHost(),
		Canonical: canon,
		Digest:    digest,
	}, false)
	return p, err
}

// plan plans s and fails the test unless the plan is saved, planned.
func (w *world) plan(s spec) *Entry {
	w.t.Helper()
	p, err := w.tryPlan(s)
	if err != nil {
		w.t.Fatalf("plan %s: %v", s.id, err)
	}
	e := w.load(p.ID)
	if e.State != lifecycle.Planned {
		w.t.Fatalf("a plan just made is %s, want planned", e.State)
	}
	return e
}

// fakeHost is a host with room to spare, no network and no terminal.
func fakeHost() plan.Host {
	return plan.Host{
		FreeBytes:        func(string) (uint64, error) { return 1 << 40, nil },
		NetworkAvailable: func() (bool, error) { return false, nil },
		LastInput:        func() (time.Time, bool) { return time.Time{}, false },
	}
}

// load is the gate's store's entry of plan id now.
func (w *world) load(id string) *Entry {
	w.t.Helper()
	e, err := w.g.Load(id)
	if err != nil {
		w.t.Fatalf("Load(%s): %v", id, err)
	}
	return e
}

// wantState checks where plan id stands now.
func (w *world) wantState(id string, want lifecycle.State) {
	w.t.Helper()
	if got := w.load(id).State; got != want {
		w.t.Errorf("plan %s is %s, want %s", id, got, want)
	}
}

// apply applies the saved plan id now with approval ap, as act apply
// PLAN_ID does (no one to ask).
func (w *world) apply(id string, ap Approval) (*Admission, error) {
	w.t.Helper()
	adm, _, err := w.g.Apply(context.Background(), w.load(id), ap, nil, nil)
	return adm, err
}

// mustApply applies plan id with --confirm and fails the test unless it
// is promoted.
func (w *world) mustApply(id string) {
	w.t.Helper()
	if _, err := w.apply(id, NewApproval(ViaFlag)); err != nil {
		w.t.Fatalf("apply %s: %v", id, err)
	}
	w.wantState(id, lifecycle.Applied)
}

// rollback rolls back action id, unforced.
func (w *world) rollback(id string) error {
	w.t.Helper()
	_, err := w.g.Rollback(context.Background(), id, false, Approval{}, nil, nil)
	return err
}

// deny denies plan id.
func (w *world) deny(id string) error {
	w.t.Helper()
	_, err := w.g.Deny(context.Background(), id, "not now")
	return err
}

// file is the content of the real file root/name, or "<none>".
func (w *world) file(name string) string {
	w.t.Helper()
	b, err := os.ReadFile(filepath.Join(w.root, name))
	if errors.Is(err, os.ErrNotExist) {
		return "<none>"
	}
	if err != nil {
		w.t.Fatal(err)
	}
	return string(b)
}

// wantFile checks the content of the real file root/name ("<none>": it
// does not exist).
func (w *world) wantFile(name, want string) {
	w.t.Helper()
	if got := w.file(name); got != want {
		w.t.Errorf("%s holds %q, want %q", name, got, want)
	}
}

// events lists the names of the audit records of action id, oldest first,
// from the verified log.
func (w *world) events(actionID string) []string {
	w.t.Helper()
	found, err := audit.Find(w.g.Home.Audit(), actionID, "")
	if err != nil {
		w.t.Fatalf("the audit log: %v", err)
	}
	var out []string
	for _, f := range found {
		out = append(out, f.Event)
	}
	return out
}

// wantNewEvents checks that the records of action id since before (an
// earlier events) are exactly want.
func (w *world) wantNewEvents(actionID string, before []string, want ...string) {
	w.t.Helper()
	got := w.events(actionID)
	if len(got) < len(before) {
		w.t.Fatalf("the audit log lost records of %s: had %v, has %v", actionID, before, got)
	}
	if added := got[len(before):]; strings.Join(added, " ") != strings.Join(want, " ") {
		w.t.Errorf("new records of %s: %v, want %v", actionID, added, want)
	}
}

// wantRule checks that err is a problem list whose first rule is rule,
// with the exit code of outcome o.
func wantRule(t *testing.T, err error, rule string, o outcome.Outcome) problem.List {
	t.Helper()
	var probs problem.List
	if !errors.As(err, &probs) || len(probs) == 0 {
		t.Fatalf("got %v, want a refusal %s", err, rule)
	}
	if probs[0].Rule != rule {
		t.Errorf("refused by %s (%s), want %s", probs[0].Rule, probs[0].Message, rule)
	}
	if got := outcome.ForLayer(probs.Layer()); got.Code != o.Code {
		t.Errorf("%s ends in exit %d, want %d", rule, got.Code, o.Code)
	}
	return probs
}

// wantConfirmation checks that err is a confirmation required, of rule
// (confirm.required or confirm.not-accepted), one of whose reasons says
// why.
func wantConfirmation(t *testing.T, err error, rule, why string) *ConfirmationRequired {
	t.Helper()
	var need *ConfirmationRequired
	if !errors.As(err, &need) {
		t.Fatalf("got %v, want a confirmation required (%s)", err, rule)
	}
	if need.Rule() != rule {
		t.Errorf("rule %s, want %s (%v)", need.Rule(), rule, need)
	}
	if o := need.Outcome(); o.Code != outcome.Queued.Code {
		t.Errorf("exit %d, want %d", o.Code, outcome.Queued.Code)
	}
	if why != "" && !strings.Contains(strings.Join(need.Why, "\n"), why) {
		t.Errorf("reasons %q do not say %q", need.Why, why)
	}
	return need
}
