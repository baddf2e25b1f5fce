package promotion

// End-to-end tests of promotion (docs/promotion.md), through the test CLI in
// separate processes, on real files: a crash matrix that SIGKILLs act at
// every crash point of an apply, a rollback and a recovery; apply → rollback
// round trips for every operation kind, on the state dir's filesystem and on
// another one, as root and as an ordinary user; and concurrent applies and
// rollbacks of one state dir.

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/act-project/act/audit"
	"github.com/act-project/act/internal/clitest"
	"github.com/act-project/act/internal/state"
	"github.com/act-project/act/internal/treesnap"
	"github.com/act-project/act/plan"
	"github.com/act-project/act/rollback"
	"github.com/act-project/act/sandbox/isolate"
)

// The composite of the crash matrix: it creates a file, modifies a file and
// its mode, deletes a file, changes a directory's mode, replaces a
// directory (holding a file, a subdirectory and a symlink) with a file, and
// creates a directory without owner write permission (set after its
// contents, last) and an ordinary one.
const compositeID = "11111111-2222-4333-8444-555555555555"

var compositeTree = map[string]string{
	"mod.txt":          "old\n",
	"del.txt":          "delete me\n",
	"keep.txt":         "untouched\n",
	"empty/":           "",
	"swap/sub/s.txt":   "s\n",
	"swap/link":        "-> ../mod.txt",
	"swap/sub/deeper/": "",
}

const compositeOps = `action_type: MULTI_STEP_COMPOSITE
effects:
  filesystem:
    create: [$P/new.txt, $P/locked, $P/empty, $P/swap, $P/cache]
    modify: [$P/mod.txt, $P/empty, $P/swap]
    delete: [$P/del.txt, $P/swap, $P/empty]
  network: false
  system_state_change: false
steps:
  - action_type: FILE_WRITE
    effects: {filesystem: {create: [$P/new.txt], modify: [], delete: []}, network: false, system_state_change: false}
    operation: {path: $P/new.txt, content: "new\n"}
  - action_type: FILE_WRITE
    effects: {filesystem: {create: [], modify: [$P/mod.txt], delete: []}, network: false, system_state_change: false}
    operation: {path: $P/mod.txt, content: "modified\n", mode: "0600"}
  - action_type: FILE_DELETE
    effects: {filesystem: {create: [], modify: [], delete: [$P/del.txt]}, network: false, system_state_change: false}
    operation: {paths: [$P/del.txt]}
  - action_type: DIRECTORY_DELETE
    effects: {filesystem: {create: [], modify: [$P/empty], delete: [$P/empty]}, network: false, system_state_change: false}
    operation: {path: $P/empty}
  - action_type: DIRECTORY_CREATE
    effects: {filesystem: {create: [$P/empty], modify: [$P/empty], delete: []}, network: false, system_state_change: false}
    operation: {path: $P/empty, mode: "0700"}
  - action_type: DIRECTORY_DELETE
    effects: {filesystem: {create: [], modify: [], delete: [$P/swap]}, network: false, system_state_change: false}
    operation: {path: $P/swap}
  - action_type: FILE_WRITE
    effects: {filesystem: {create: [$P/swap], modify: [$P/swap], delete: []}, network: false, system_state_change: false}
    operation: {path: $P/swap, content: "was a directory\n"}
  - action_type: DIRECTORY_CREATE
    effects: {filesystem: {create: [$P/locked], modify: [], delete: []}, network: false, system_state_change: false}
    operation: {path: $P/locked, mode: "0555"}
  - action_type: DIRECTORY_CREATE
    effects: {filesystem: {create: [$P/cache], modify: [], delete: []}, network: false, system_state_change: false}
    operation: {path: $P/cache, mode: "0755"}
`

// descriptorHead is everything of a descriptor but its action type,
// effects and operation; $P is the project directory (the scope), $ID the
// action id.
const descriptorHead = `descriptor_version: "1.0"
action_id: $ID
created_at: "2026-11-22T00:00:00Z"
created_by: ai
intent_summary: Change the project.
risk_level: LOW
scope:
  filesystem: {paths: [$P], recursive: true}
  network: {required: false}
  ui: {required: false}
resources: {max_cpu_ms: 5000, max_memory_mb: 256, max_disk_mb: 4, max_duration_ms: 10000}
sandbox: {required: true, sandbox_type: container, allow_network: false, max_runs: 1}
rollback: {supported: true, rollback_type: filesystem_snapshot, rollback_scope: declared_effects_only}
confirmation: {required: false, reason: "", cooldown_on_repeat: false}
audit: {log: true, log_level: SUMMARY, retain_days: 30}
preconditions: {paths_exist: [], network_available: false, user_idle: false}
`

// A world is one project tree with its own act state dir and policy.
type world struct {
	t          *testing.T
	root       string // the project: the descriptor's scope
	home       string // ACT_HOME
	policy     string
	descriptor string
	id         string
}

// newWorld makes a project under base (t.TempDir() if ""), with the state
// dir under t.TempDir(), holding tree; ops is the descriptor's action part.
func newWorld(t *testing.T, base, id string, tree map[string]string, ops string) *world {
	t.Helper()
	tmp := t.TempDir()
	if base == "" {
		base = tmp
	}
	w := &world{t: t, root: filepath.Join(base, "proj"), home: filepath.Join(tmp, "state"), id: id}
	writeTree(t, w.root, tree)
	w.policy = filepath.Join(tmp, "policy.yaml")
	must(t, os.WriteFile(w.policy, []byte(fmt.Sprintf("allowed_roots: [%s]\n", base)), 0o644))
	w.descriptor = filepath.Join(tmp, "d.yaml")
	text := strings.NewReplacer("$P", w.root, "$ID", id).Replace(descriptorHead + ops)
	must(t, os.WriteFile(w.descriptor, []byte(text), 0o644))
	return w
}

// writeTree creates root and the entries of tree: "dir/" a directory,
// "-> target" a symlink, anything else a file with that content.
func writeTree(t *testing.T, root string, tree map[string]string) {
	t.Helper()
	must(t, os.MkdirAll(root, 0o755))
	for name, content := range tree {
		p := filepath.Join(root, name)
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		switch {
		case strings.HasSuffix(name, "/"):
			must(t, os.MkdirAll(p, 0o755))
		case strings.HasPrefix(content, "-> "):
			must(t, os.Symlink(strings.TrimPrefix(content, "-> "), p))
		default:
			must(t, os.WriteFile(p, []byte(content), 0o644))
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// An entry is what a snapshot records of one path.
type entry = treesnap.Entry

// snapshot records the tree under root (treesnap.Take), failing t on error.
func snapshot(t *testing.T, root string) map[string]entry {
	t.Helper()
	snap, err := treesnap.Take(root)
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

// A run is one act process's outcome.
type run struct {
	args           []string
	stdout, stderr string
	code           int
	killed         bool // by SIGKILL
}

func (r run) String() string {
	return fmt.Sprintf("act %s: exit %d, killed %v\nstdout:\n%s\nstderr:\n%s", strings.Join(r.args, " "), r.code, r.killed, r.stdout, r.stderr)
}

// act runs the test CLI in w; crashAt > 0 runs act-crash, killed at that
// crash point.
func (w *world) act(crashAt int, args ...string) run {
	w.t.Helper()
	var env []string
	if crashAt > 0 {
		env = []string{fmt.Sprintf("ACT_CRASH_AT=%d", crashAt)}
	}
	return w.actEnv(crashAt > 0, env, args...)
}

// whole runs act-crash in w with no crash point to stop at, and returns
// its outcome and how many crash points it passed.
func (w *world) whole(args ...string) (run, int) {
	w.t.Helper()
	tally := filepath.Join(w.t.TempDir(), "tally")
	r := w.actEnv(true, []string{"ACT_CRASH_AT=1000000000", "ACT_CRASH_TALLY=" + tally}, args...)
	fi, err := os.Stat(tally)
	if err != nil {
		w.t.Fatalf("no crash point passed: %v\n%s", err, r)
	}
	return r, int(fi.Size())
}

// actEnv runs the test CLI in w (act-crash if crash), env added to its
// environment.
func (w *world) actEnv(crash bool, extra []string, args ...string) run {
	w.t.Helper()
	name := "act"
	env := append(os.Environ(), "ACT_HOME="+w.home, "ACT_POLICY="+w.policy, "XDG_STATE_HOME=", "NO_COLOR=1", "TERM=dumb", "ACT_TEST_NOW=")
	if crash {
		name = "act-crash"
	}
	env = append(env, extra...)
	c := exec.Command(name, args...)
	c.Env = env
	c.Dir = filepath.Dir(w.home)
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	err := c.Run()
	r := run{args: args, stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			if ws.Signal() != syscall.SIGKILL {
				w.t.Fatalf("act died of %v\n%s", ws.Signal(), r)
			}
			r.killed = true
		}
	case err != nil:
		w.t.Fatalf("run %s: %v", name, err)
	}
	return r
}

// ok runs act and requires exit code want.
func (w *world) ok(want int, args ...string) run {
	w.t.Helper()
	r := w.act(0, args...)
	if r.code != want || r.killed {
		w.t.Fatalf("want exit %d\n%s", want, r)
	}
	return r
}

var planIDOut = regexp.MustCompile(`Plan id: ([0-9a-f]{16})`)

// plan plans w's descriptor and returns the plan id.
func (w *world) plan() string {
	w.t.Helper()
	r := w.ok(0, "plan", w.descriptor)
	m := planIDOut.FindStringSubmatch(r.stdout)
	if m == nil {
		w.t.Fatalf("no plan id\n%s", r)
	}
	return m[1]
}

// state is the action's record state, "" if it has none: the record act
// show prints the state of (rollback.LoadAction), read here rather than by
// an act process — the crash matrices read it a few hundred times, and
// what act show prints of it is shownState's and the scripts' to test.
func (w *world) state() string {
	w.t.Helper()
	a, err := rollback.LoadAction(state.Dir{Root: w.home}, w.id)
	if errors.Is(err, plan.ErrNotFound) {
		return ""
	}
	if err != nil {
		w.t.Fatalf("the action's record: %v", err)
	}
	return string(a.State)
}

// shownState is the action's record state from act show, "" if it has
// none.
func (w *world) shownState() string {
	w.t.Helper()
	r := w.act(0, "--json", "show", w.id)
	if r.code == 9 {
		return ""
	}
	var res struct {
		Data struct {
			State string `json:"state"`
		} `json:"data"`
	}
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &res) != nil {
		w.t.Fatalf("act show\n%s", r)
	}
	return res.Data.State
}

// settled checks that no journal is waiting, that nothing act makes in
// the tree (staged copies, partial backups, restore temporaries) is left,
// and that the audit log verifies: the verification act audit verify runs
// (audit.Verify; the worlds' policies name no witness), here rather than
// by an act process, twice per crash point; act audit verify itself is the
// scripts' to test.
func (w *world) settled() {
	w.t.Helper()
	ents, err := os.ReadDir(filepath.Join(w.home, "journal"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		w.t.Fatal(err)
	}
	for _, e := range ents {
		w.t.Errorf("journal left: %s", e.Name())
	}
	for name := range snapshot(w.t, filepath.Dir(w.root)) {
		if b := filepath.Base(name); strings.HasPrefix(b, ".act-") || strings.HasSuffix(b, ".act-restore") {
			w.t.Errorf("left in the tree: %s", name)
		}
	}
	if _, err := audit.Verify(filepath.Join(w.home, "audit"), audit.VerifyOptions{}); err != nil {
		w.t.Errorf("the audit log does not verify: %v", err)
	}
}

// recorded fails unless the audit log holds a record of the action with
// one of events: what it did is never left unrecorded.
func (w *world) recorded(n int, events ...string) {
	w.t.Helper()
	found, err := audit.Find(filepath.Join(w.home, "audit"), w.id, "")
	if err != nil {
		w.t.Fatalf("N=%d: %v", n, err)
	}
	var got []string
	for _, f := range found {
		if slices.Contains(events, f.Event) {
			return
		}
		got = append(got, f.Event)
	}
	w.t.Fatalf("N=%d: no %v record of action %s in the audit log, only %v", n, events, w.id, got)
}

// is reports whether the tree is exactly snap.
func (w *world) is(snap map[string]entry) bool {
	return cmp.Equal(snapshot(w.t, w.root), snap)
}

// requireTree fails unless the tree is exactly snap.
func (w *world) requireTree(what string, snap map[string]entry) {
	w.t.Helper()
	if d := cmp.Diff(snap, snapshot(w.t, w.root)); d != "" {
		w.t.Fatalf("the tree is not the %s tree (-want +got):\n%s", what, d)
	}
}

// recoverBy ends a crashed promotion the way variant says: 0 act recover
// (its report must agree with the tree), 1 and 2 other commands that recover
// first, 3 a recovery killed at each of its crash points in turn, then
// completed.
// It returns the number of recoveries killed.
func (w *world) recoverBy(variant int, planID string) int {
	w.t.Helper()
	switch variant {
	case 0:
		w.ok(0, "recover")
	case 1:
		w.ok(0, "validate", w.descriptor)
	case 2:
		w.ok(0, "show", planID)
	case 3:
		for m := 1; ; m++ {
			r := w.act(m, "recover")
			if !r.killed {
				if r.code != 0 {
					w.t.Fatalf("recover after %d killed recoveries\n%s", m-1, r)
				}
				return m - 1
			}
			if m > 100 {
				w.t.Fatal("recovery never completes")
			}
		}
	}
	return 0
}

// composite makes a world holding the crash matrix's composite, under base.
func composite(t *testing.T, base string) *world {
	return newWorld(t, base, compositeID, compositeTree, compositeOps)
}

// reference applies the composite once, uncrashed, and returns the trees
// before and after.
func reference(t *testing.T, base string) (before, after map[string]entry) {
	w := composite(t, base)
	before = snapshot(t, w.root)
	w.ok(0, "apply", "--confirm", w.descriptor)
	after = snapshot(t, w.root)
	if cmp.Equal(before, after) {
		t.Fatal("the composite changed nothing")
	}
	w.ok(0, "rollback", w.id)
	w.requireTree("original", before)
	return before, after
}

// crossBase returns a directory on another filesystem than t.TempDir(), or
// skips t.
func crossBase(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("/dev/shm", "act-test-")
	if err != nil {
		t.Skipf("no /dev/shm: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	var a, b syscall.Stat_t
	must(t, syscall.Stat(dir, &a))
	must(t, syscall.Stat(t.TempDir(), &b))
	if a.Dev == b.Dev {
		t.Skip("/dev/shm is on the same filesystem as the temporary directory")
	}
	return dir
}

// TestCrashApply kills `act apply` of the composite at each of its crash
// points in turn (N = 1, 2, … until it completes). After each kill a later
// act command recovers; the tree must then be exactly the original or
// exactly the applied one, the action's record must agree, and the plan
// must be promotable (before) or already applied (after) — and then roll
// back to exactly the original.
func TestCrashApply(t *testing.T) {
	t.Parallel()
	t.Run("same-fs", func(t *testing.T) { t.Parallel(); crashApply(t, "") })
	t.Run("cross-fs", func(t *testing.T) { t.Parallel(); crashApply(t, crossBase(t)) })
}

func crashApply(t *testing.T, base string) {
	if base != "" {
		base = filepath.Join(base, "apply")
		must(t, os.Mkdir(base, 0o755))
	}
	before, after := reference(t, baseFor(t, base, "ref"))
	// The whole apply, which no crash point stops, counts them.
	w := composite(t, baseFor(t, base, "whole"))
	r, points := w.whole("apply", "--confirm", w.plan())
	if r.code != 0 || r.killed {
		t.Fatalf("the whole apply:\n%s", r)
	}
	w.requireTree("applied", after)
	w.settled()
	var sawBefore, sawAfter, killedRecoveries atomic.Int64
	crashEach(t, points, func(t *testing.T, n int) {
		w := composite(t, baseFor(t, base, fmt.Sprint(n)))
		// Planned twice: the second planned record is deferred (its
		// log has a checkpoint by then), so one stands not yet synced
		// before the killed apply (docs/audit.md, "Durability").
		w.plan()
		planID := w.plan()
		r := w.act(n, "apply", "--confirm", planID)
		if !r.killed {
			t.Fatalf("crash point %d of %d not reached, but:\n%s", n, points, r)
		}
		killedRecoveries.Add(int64(w.recoverBy(n%4, planID)))
		w.settled()
		switch {
		case w.is(before):
			sawBefore.Add(1)
			if st := w.state(); st != "" {
				t.Fatalf("N=%d: the tree is the original but the action is %s", n, st)
			}
			r := w.ok(0, "apply", "--confirm", planID)
			if !strings.Contains(r.stdout, "Applied:") {
				t.Fatalf("N=%d: want a promotion\n%s", n, r)
			}
			w.requireTree("applied", after)
		case w.is(after):
			sawAfter.Add(1)
			w.recorded(n, audit.EventApplied, audit.EventRecovered)
			if st := w.state(); st != "applied" {
				t.Fatalf("N=%d: the tree is the applied one but the action is %q", n, st)
			}
			for _, arg := range []string{planID, w.descriptor} {
				r := w.ok(0, "apply", "--confirm", arg)
				if !strings.Contains(r.stdout, "already applied") {
					t.Fatalf("N=%d: want already applied\n%s", n, r)
				}
			}
			w.requireTree("applied", after)
		default:
			t.Fatalf("N=%d: after recovery the tree is neither the original (-) nor the applied (+) one:\n%s\nwant (applied):\n%s",
				n, cmp.Diff(before, snapshot(t, w.root)), cmp.Diff(after, snapshot(t, w.root)))
		}
		if st := w.state(); st != "applied" {
			t.Fatalf("N=%d: action is %q after apply", n, st)
		}
		w.ok(0, "rollback", w.id)
		w.requireTree("original", before)
		w.settled()
		if _, err := os.Lstat(filepath.Join(w.home, "backups", w.id)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("N=%d: backups of the action left after its rollback (%v)", n, err)
		}
	})
	t.Logf("%d crash points: %d recovered to before, %d to after; %d recoveries killed", points, sawBefore.Load(), sawAfter.Load(), killedRecoveries.Load())
	if sawBefore.Load() == 0 || sawAfter.Load() == 0 || killedRecoveries.Load() == 0 {
		t.Errorf("the matrix missed a case: recovered to before %d, to after %d; recoveries killed %d", sawBefore.Load(), sawAfter.Load(), killedRecoveries.Load())
	}
}

// crashEach runs point for each crash point n = 1 … points, each in a
// subtest of its own, in parallel, and returns once all have ended.
func crashEach(t *testing.T, points int, point func(t *testing.T, n int)) {
	t.Helper()
	if points == 0 {
		t.Fatal("a whole run passed no crash point")
	}
	t.Run("points", func(t *testing.T) {
		for n := 1; n <= points; n++ {
			t.Run(fmt.Sprintf("N=%d", n), func(t *testing.T) {
				t.Parallel()
				point(t, n)
			})
		}
	})
}

// baseFor is a fresh directory under base for one run, or "" (the run's
// own temporary directory) when base is "".
func baseFor(t *testing.T, base, name string) string {
	if base == "" {
		return ""
	}
	dir := filepath.Join(base, name)
	must(t, os.Mkdir(dir, 0o755))
	return dir
}

// TestCrashRollback kills `act rollback` of the applied composite at each
// of its crash points in turn. After recovery the tree must be exactly the
// applied one (and a rollback then succeeds) or exactly the original (and
// a rollback says already rolled back, exit 8).
func TestCrashRollback(t *testing.T) {
	t.Parallel()
	t.Run("same-fs", func(t *testing.T) { t.Parallel(); crashRollback(t, "") })
	t.Run("cross-fs", func(t *testing.T) { t.Parallel(); crashRollback(t, crossBase(t)) })
}

func crashRollback(t *testing.T, base string) {
	if base != "" {
		base = filepath.Join(base, "rollback")
		must(t, os.Mkdir(base, 0o755))
	}
	before, after := reference(t, baseFor(t, base, "ref"))
	// The whole rollback, which no crash point stops, counts them.
	w := composite(t, baseFor(t, base, "whole"))
	w.ok(0, "apply", "--confirm", w.plan())
	w.requireTree("applied", after)
	r, points := w.whole("rollback", w.id)
	if r.code != 0 || r.killed {
		t.Fatalf("the whole rollback:\n%s", r)
	}
	w.requireTree("original", before)
	w.settled()
	var sawBefore, sawAfter, killedRecoveries atomic.Int64
	crashEach(t, points, func(t *testing.T, n int) {
		w := composite(t, baseFor(t, base, fmt.Sprint(n)))
		planID := w.plan()
		w.ok(0, "apply", "--confirm", planID)
		// Planned again, refused (the deleted file is gone: exit 6): its
		// rejected record is deferred, and stands not yet synced before
		// the killed rollback (docs/audit.md, "Durability").
		w.ok(6, "plan", w.descriptor)
		w.requireTree("applied", after)
		r := w.act(n, "rollback", w.id)
		if !r.killed {
			t.Fatalf("crash point %d of %d not reached, but:\n%s", n, points, r)
		}
		killedRecoveries.Add(int64(w.recoverBy(n%4, planID)))
		w.settled()
		switch {
		case w.is(after):
			sawAfter.Add(1)
			if st := w.state(); st != "applied" {
				t.Fatalf("N=%d: the tree is the applied one but the action is %q", n, st)
			}
			w.ok(0, "rollback", w.id)
		case w.is(before):
			sawBefore.Add(1)
			w.recorded(n, audit.EventRolledBack, audit.EventRecovered)
			if st := w.state(); st != "rolled_back" {
				t.Fatalf("N=%d: the tree is the original but the action is %q", n, st)
			}
			r := w.ok(8, "rollback", w.id)
			if !strings.Contains(r.stderr, "already rolled back") {
				t.Fatalf("N=%d: want already rolled back\n%s", n, r)
			}
		default:
			t.Fatalf("N=%d: after recovery the tree is neither the original (-) nor the applied (+) one:\n%s\nwant (applied):\n%s",
				n, cmp.Diff(before, snapshot(t, w.root)), cmp.Diff(after, snapshot(t, w.root)))
		}
		w.requireTree("original", before)
		w.settled()
		if st := w.state(); st != "rolled_back" {
			t.Fatalf("N=%d: action is %q after rollback", n, st)
		}
		// Promote once: the rolled-back id is refused.
		w.ok(8, "apply", "--confirm", w.descriptor)
		if _, err := os.Lstat(filepath.Join(w.home, "backups", w.id)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("N=%d: backups of the action left after its rollback (%v)", n, err)
		}
	})
	t.Logf("%d crash points: %d recovered to applied, %d to rolled back; %d recoveries killed", points, sawAfter.Load(), sawBefore.Load(), killedRecoveries.Load())
	if sawBefore.Load() == 0 || sawAfter.Load() == 0 || killedRecoveries.Load() == 0 {
		t.Errorf("the matrix missed a case: recovered to rolled back %d, to applied %d; recoveries killed %d", sawBefore.Load(), sawAfter.Load(), killedRecoveries.Load())
	}
}

// A roundTrip case is one operation applied to a tree and rolled back.
type roundTrip struct {
	name    string
	tree    map[string]string
	ops     string // the descriptor's action part; $P is the project
	sandbox bool   // runs a command: needs isolation
}

var roundTrips = []roundTrip{
	{name: "file-write-create", tree: map[string]string{"a.txt": "a\n"}, ops: `action_type: FILE_WRITE
effects: {filesystem: {create: [$P/new.txt], modify: [], delete: []}, network: false, system_state_change: false}
operation: {path: $P/new.txt, content: "new\n", mode: "0640"}
`},
	{name: "file-write-overwrite", tree: map[string]string{"a.txt": "a\n"}, ops: `action_type: FILE_WRITE
effects: {filesystem: {create: [], modify: [$P/a.txt], delete: []}, network: false, system_state_change: false}
operation: {path: $P/a.txt, content: "rewritten\n", mode: "0600"}
`},
	{name: "file-delete", tree: map[string]string{"a.log": "a\n", "b.log": "bb\n", "keep.txt": "k\n"}, ops: `action_type: FILE_DELETE
effects: {filesystem: {create: [], modify: [], delete: ["$P/*.log"]}, network: false, system_state_change: false}
operation: {paths: ["$P/*.log"]}
`},
	{name: "file-move", tree: map[string]string{"from.txt": "moving\n", "d/": ""}, ops: `action_type: FILE_MOVE
effects: {filesystem: {create: [$P/d/to.txt], modify: [], delete: [$P/from.txt]}, network: false, system_state_change: false}
operation: {from: $P/from.txt, to: $P/d/to.txt}
`},
	{name: "file-move-overwrite", tree: map[string]string{"from.txt": "moving\n", "to.txt": "old target\n"}, ops: `action_type: FILE_MOVE
effects: {filesystem: {create: [], modify: [$P/to.txt], delete: [$P/from.txt]}, network: false, system_state_change: false}
operation: {from: $P/from.txt, to: $P/to.txt, overwrite: true}
`},
	{name: "directory-create", tree: map[string]string{"a.txt": "a\n"}, ops: `action_type: DIRECTORY_CREATE
effects: {filesystem: {create: [$P/x, $P/x/y], modify: [], delete: []}, network: false, system_state_change: false}
operation: {path: $P/x/y, parents: true, mode: "0750"}
`},
	{name: "directory-delete", tree: map[string]string{"old/a.txt": "a\n", "old/sub/b.txt": "b\n", "old/sub/deep/": "", "old/link": "-> sub/b.txt", "keep.txt": "k\n"}, ops: `action_type: DIRECTORY_DELETE
effects: {filesystem: {create: [], modify: [], delete: [$P/old]}, network: false, system_state_change: false}
operation: {path: $P/old}
`},
	{name: "config-change", tree: map[string]string{"conf.json": "{\n  \"name\": \"web\",\n  \"port\": 80,\n  \"debug\": false\n}\n"}, ops: `action_type: CONFIG_CHANGE
effects: {filesystem: {create: [], modify: [$P/conf.json], delete: []}, network: false, system_state_change: false}
operation: {path: $P/conf.json, format: json, set: {port: 8080, "tls.on": true}, unset: [debug]}
`},
	{name: "command-symlink", sandbox: true, tree: map[string]string{"target.txt": "t\n"}, ops: `action_type: COMMAND_EXECUTION
effects: {filesystem: {create: [$P/link], modify: [], delete: []}, network: false, system_state_change: false}
operation: {argv: [ln, -s, target.txt, $P/link], workdir: $P}
`},
	{name: "command-files", sandbox: true, tree: map[string]string{"mod.txt": "m\n", "old.txt": "o\n", "d/x": "x\n", "link": "-> mod.txt"}, ops: `action_type: COMMAND_EXECUTION
effects: {filesystem: {create: [$P/new.txt, $P/nd, $P/nd/f], modify: [$P/mod.txt, $P/link], delete: [$P/old.txt, $P/d, $P/link]}, network: false, system_state_change: false}
operation: {argv: [sh, -c, "echo new > new.txt && echo more >> mod.txt && chmod 0600 mod.txt && rm old.txt && rm -r d && mkdir -m 0700 nd && echo f > nd/f && ln -sfn new.txt link"], workdir: $P}
`},
	{name: "composite", tree: compositeTree, ops: compositeOps},
}

// TestRoundTrip applies each operation kind and rolls it back: the tree
// must come back exactly (paths, types, modes, owners, content, symlink
// targets), with nothing of act's left in it. Each runs with the project
// on the state dir's filesystem and on another (tmpfs), where new content
// is staged beside its target and pre-images are copied. TestRoundTripNobody
// runs it again as an ordinary user.
func TestRoundTrip(t *testing.T) {
	t.Parallel()
	sandboxErr := isolate.Available()
	for _, fsys := range []string{"same-fs", "cross-fs"} {
		for _, tc := range roundTrips {
			t.Run(fsys+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				if tc.sandbox && sandboxErr != nil {
					t.Skipf("commands need isolation, unavailable here: %v", sandboxErr)
				}
				base := ""
				if fsys == "cross-fs" {
					base = crossBase(t)
				}
				w := newWorld(t, base, "22222222-3333-4444-8555-666666666666", tc.tree, tc.ops)
				before := snapshot(t, w.root)
				w.ok(0, "apply", "--confirm", w.descriptor)
				applied := snapshot(t, w.root)
				if cmp.Equal(before, applied) {
					t.Fatal("the apply changed nothing")
				}
				w.settled()
				if st := w.shownState(); st != "applied" {
					t.Fatalf("action is %q after apply", st)
				}
				w.ok(0, "rollback", w.id)
				w.requireTree("original", before)
				w.settled()
				if st := w.shownState(); st != "rolled_back" {
					t.Fatalf("action is %q after rollback", st)
				}
				w.ok(8, "rollback", w.id)
			})
		}
	}
}

// TestRoundTripNobody runs TestRoundTrip as uid and gid 65534 (act runs as
// an ordinary user), in a copy of this test binary.
func TestRoundTripNobody(t *testing.T) { asNobody(t, "TestRoundTrip") }

// asNobody runs the test named test as uid and gid 65534, in a copy of
// this test binary (clitest.AsNobody).
func asNobody(t *testing.T, test string, env ...string) { clitest.AsNobody(t, test, nil, env...) }

// TestConcurrentPromotions runs 16 act processes at once against one state
// dir, twice: 8 actions applied, each by its plan id and, at the same time,
// by its descriptor (a repeat of the same action id); then 4 of them rolled
// back while each of the 8 is applied again. Every answer must be one the
// order of the lock allows, and at the end every action's record must match
// its files, with no journal left and nothing of one action in another's.
func TestConcurrentPromotions(t *testing.T) {
	t.Parallel()
	const n = 8
	tmp := t.TempDir()
	root := filepath.Join(tmp, "proj")
	home := filepath.Join(tmp, "state")
	policy := filepath.Join(tmp, "policy.yaml")
	must(t, os.WriteFile(policy, []byte(fmt.Sprintf("allowed_roots: [%s]\n", tmp)), 0o644))
	tree := map[string]string{}
	for i := range n {
		tree[fmt.Sprintf("shared/mod-%d.txt", i)] = fmt.Sprintf("original %d\n", i)
		tree[fmt.Sprintf("own-%d/del.txt", i)] = fmt.Sprintf("delete %d\n", i)
	}
	writeTree(t, root, tree)
	before := snapshot(t, root)
	ws := make([]*world, n)
	for i := range ws {
		id := fmt.Sprintf("33333333-4444-4555-8666-%012d", i)
		shared, own := filepath.Join(root, "shared"), filepath.Join(root, fmt.Sprintf("own-%d", i))
		ops := fmt.Sprintf(`action_type: MULTI_STEP_COMPOSITE
effects:
  filesystem: {create: [%[1]s/new-%[3]d.txt, %[2]s/made], modify: [%[1]s/mod-%[3]d.txt], delete: [%[2]s/del.txt]}
  network: false
  system_state_change: false
steps:
  - action_type: FILE_WRITE
    effects: {filesystem: {create: [%[1]s/new-%[3]d.txt], modify: [], delete: []}, network: false, system_state_change: false}
    operation: {path: %[1]s/new-%[3]d.txt, content: "new %[3]d\n"}
  - action_type: FILE_WRITE
    effects: {filesystem: {create: [], modify: [%[1]s/mod-%[3]d.txt], delete: []}, network: false, system_state_change: false}
    operation: {path: %[1]s/mod-%[3]d.txt, content: "modified %[3]d\n", mode: "0600"}
  - action_type: FILE_DELETE
    effects: {filesystem: {create: [], modify: [], delete: [%[2]s/del.txt]}, network: false, system_state_change: false}
    operation: {paths: [%[2]s/del.txt]}
  - action_type: DIRECTORY_CREATE
    effects: {filesystem: {create: [%[2]s/made], modify: [], delete: []}, network: false, system_state_change: false}
    operation: {path: %[2]s/made, mode: "0700"}
`, shared, own, i)
		w := &world{t: t, root: root, home: home, policy: policy, id: id,
			descriptor: filepath.Join(tmp, fmt.Sprintf("d%d.yaml", i))}
		text := strings.NewReplacer("$P", root, "$ID", id).Replace(descriptorHead + ops)
		must(t, os.WriteFile(w.descriptor, []byte(text), 0o644))
		ws[i] = w
	}
	plans := make([]string, n)
	for i, w := range ws {
		plans[i] = w.plan()
	}

	// all runs the jobs at once and returns their results, in order.
	all := func(jobs []func() run) []run {
		out := make([]run, len(jobs))
		var wg sync.WaitGroup
		for k, job := range jobs {
			wg.Add(1)
			go func() { defer wg.Done(); out[k] = job() }()
		}
		wg.Wait()
		return out
	}
	status := func(r run) string {
		var res struct {
			Status string `json:"status"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, r)
		}
		return res.Status
	}

	// Round 1: each action by its plan and by its descriptor, at once.
	var jobs []func() run
	for i, w := range ws {
		jobs = append(jobs,
			func() run { return w.act(0, "--json", "apply", "--confirm", plans[i]) },
			func() run { return w.act(0, "--json", "apply", "--confirm", w.descriptor) })
	}
	res := all(jobs)
	for i := range ws {
		got := []string{status(res[2*i]), status(res[2*i+1])}
		for k, r := range res[2*i : 2*i+2] {
			if r.code != 0 {
				t.Errorf("action %d, run %d: want exit 0\n%s", i, k, r)
			}
		}
		if !(got[0] == "succeeded" && got[1] == "already_applied") && !(got[0] == "already_applied" && got[1] == "succeeded") {
			t.Errorf("action %d: want one succeeded and one already_applied, got %v", i, got)
		}
	}

	// Round 2: the even actions rolled back while every action is applied
	// again by its plan id.
	jobs = nil
	for i, w := range ws {
		jobs = append(jobs, func() run { return w.act(0, "--json", "apply", "--confirm", plans[i]) })
		if i%2 == 0 {
			jobs = append(jobs, func() run { return w.act(0, "--json", "rollback", w.id) })
		} else {
			jobs = append(jobs, func() run { return w.act(0, "--json", "show", w.id) })
		}
	}
	res = all(jobs)
	for i := range ws {
		again, other := res[2*i], res[2*i+1]
		switch st := status(again); {
		case st == "already_applied" && again.code == 0:
		case again.code == 8 && i%2 == 0 && strings.Contains(again.stdout, `"rule": "apply.rolled-back"`):
			// after the rollback: an action id is promoted once
		default:
			t.Errorf("action %d: repeat apply answered %s\n%s", i, st, again)
		}
		if i%2 == 0 && (other.code != 0 || status(other) != "rolled_back") {
			t.Errorf("action %d: rollback\n%s", i, other)
		}
	}

	// The records match the files, action by action.
	want := map[string]entry{}
	for k, v := range before {
		want[k] = v
	}
	fileEntry := func(content string, mode fs.FileMode) entry {
		sum := sha256.Sum256([]byte(content))
		e := before["shared/mod-0.txt"]
		e.Mode, e.SHA256 = mode, hex.EncodeToString(sum[:])
		return e
	}
	for i, w := range ws {
		st := w.state()
		if want := map[bool]string{true: "rolled_back", false: "applied"}[i%2 == 0]; st != want {
			t.Errorf("action %d is %q, want %q", i, st, want)
		}
		if st != "applied" {
			continue
		}
		want[fmt.Sprintf("shared/new-%d.txt", i)] = fileEntry(fmt.Sprintf("new %d\n", i), 0o644)
		want[fmt.Sprintf("shared/mod-%d.txt", i)] = fileEntry(fmt.Sprintf("modified %d\n", i), 0o600)
		delete(want, fmt.Sprintf("own-%d/del.txt", i))
		made := before[fmt.Sprintf("own-%d", i)]
		made.Mode = 0o700
		want[fmt.Sprintf("own-%d/made", i)] = made
	}
	if d := cmp.Diff(want, snapshot(t, root)); d != "" {
		t.Errorf("the tree does not match the actions' records (-want +got):\n%s", d)
	}
	ws[0].settled()
	if r := ws[0].ok(0, "recover"); !strings.Contains(r.stdout, "Nothing to recover") {
		t.Errorf("recover found work:\n%s", r)
	}
}

// TestCrashApplyUnchanged kills `act apply` of a plan whose command changed
// nothing at each of its crash points in turn. Its journal has no steps,
// and its Begin record is made durable by the syncfs that makes the plan
// durable, not by fsyncs of its own (rollback/execute.go). After recovery
// the action is either not applied (and an apply then records it as ran)
// or applied and recorded as ran or recovered: never applied without a
// record. The tree is never touched, and the log verifies.
func TestCrashApplyUnchanged(t *testing.T) {
	t.Parallel()
	const id = "77777777-6666-4777-8888-999999999990"
	tree := map[string]string{"keep.txt": "k\n"}
	ops := `action_type: COMMAND_EXECUTION
effects: {filesystem: {create: [], modify: [], delete: []}, network: false, system_state_change: false}
operation: {argv: [cat, keep.txt], workdir: $P}
`
	w := newWorld(t, "", id, tree, ops)
	before := snapshot(t, w.root)
	r, points := w.whole("apply", "--confirm", w.plan())
	if r.code != 0 || r.killed {
		t.Fatalf("the whole apply:\n%s", r)
	}
	w.recorded(0, audit.EventRan)
	var sawBefore, sawAfter atomic.Int64
	crashEach(t, points, func(t *testing.T, n int) {
		w := newWorld(t, "", id, tree, ops)
		planID := w.plan()
		r := w.act(n, "apply", "--confirm", planID)
		if !r.killed {
			t.Fatalf("crash point %d of %d not reached, but:\n%s", n, points, r)
		}
		w.recoverBy(n%4, planID)
		w.settled()
		w.requireTree("original", before)
		switch st := w.state(); st {
		case "":
			sawBefore.Add(1)
			w.ok(0, "apply", "--confirm", planID)
			w.recorded(n, audit.EventRan)
		case "applied":
			sawAfter.Add(1)
			w.recorded(n, audit.EventRan, audit.EventRecovered)
		default:
			t.Fatalf("N=%d: the action is %q after recovery", n, st)
		}
		if st := w.state(); st != "applied" {
			t.Fatalf("N=%d: the action is %q after apply", n, st)
		}
		w.settled()
		w.requireTree("original", before)
	})
	t.Logf("%d crash points: %d recovered to before, %d to after", points, sawBefore.Load(), sawAfter.Load())
	if sawBefore.Load() == 0 || sawAfter.Load() == 0 {
		t.Errorf("the matrix missed a case: recovered to before %d, to after %d", sawBefore.Load(), sawAfter.Load())
	}
}
