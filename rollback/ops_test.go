package rollback

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/act-project/act/descriptors"
	"github.com/act-project/act/diff"
	"github.com/act-project/act/internal/lifecycle"
	"github.com/act-project/act/internal/state"
	"github.com/act-project/act/internal/treesnap"
	"github.com/act-project/act/plan"
	"github.com/act-project/act/policy"
)

// An entry is what a snapshot records of one path.
type entry = treesnap.Entry

// snap records the tree under root (treesnap.Take), failing t on error.
func snap(t *testing.T, root string) map[string]entry {
	t.Helper()
	snap, err := treesnap.Take(root)
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

func ok(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// mkTree creates root and tree's entries: "dir/" a directory, "-> x" a
// symlink to x, anything else a file with that content (mode 0644).
func mkTree(t *testing.T, root string, tree map[string]string) {
	t.Helper()
	ok(t, os.MkdirAll(root, 0o755))
	for name, content := range tree {
		p := filepath.Join(root, name)
		ok(t, os.MkdirAll(filepath.Dir(p), 0o755))
		switch {
		case strings.HasSuffix(name, "/"):
			ok(t, os.MkdirAll(p, 0o755))
		case strings.HasPrefix(content, "-> "):
			ok(t, os.Symlink(strings.TrimPrefix(content, "-> "), p))
		default:
			ok(t, os.WriteFile(p, []byte(content), 0o644))
		}
	}
}

// A fixture is a real tree, a layer of new content and a backup
// directory, laid out as apply lays them out. With cross, the tree is on
// another filesystem (tmpfs) than the layer and backups, so new content is
// staged and pre-images are copied.
type fixture struct {
	t                    *testing.T
	tree, layer, backups string
	cross                bool
	n                    int
}

func newFixture(t *testing.T, cross bool, tree, layer map[string]string) *fixture {
	t.Helper()
	base := t.TempDir()
	f := &fixture{t: t, tree: filepath.Join(base, "tree"), layer: filepath.Join(base, "layer"), backups: filepath.Join(base, "backups"), cross: cross}
	if cross {
		dir, err := os.MkdirTemp("/dev/shm", "act-ops-")
		if err != nil {
			t.Skipf("no /dev/shm: %v", err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		da, _ := device(dir)
		db, _ := device(base)
		if da == db {
			t.Skip("/dev/shm is on the temporary directory's filesystem")
		}
		f.tree = filepath.Join(dir, "tree")
	}
	mkTree(t, f.tree, tree)
	mkTree(t, f.layer, layer)
	ok(t, os.MkdirAll(f.backups, 0o700))
	return f
}

// op returns an op of kind on name, its fields filled as applyOps fills
// them: a backup where something stands at name, Src in the layer, a stage
// beside the target and a copied backup across filesystems.
func (f *fixture) op(kind OpKind, name string) Op {
	o := Op{Kind: kind, Path: filepath.Join(f.tree, name), Change: f.n}
	if _, err := os.Lstat(o.Path); err == nil && kind != OpMkdir && kind != OpChmod {
		o.Backup = filepath.Join(f.backups, fmt.Sprint(f.n))
		o.BackupCopy = f.cross
	}
	if kind == OpPut {
		o.Src = filepath.Join(f.layer, name)
		// A file or link of the layer is copied as the plan recorded it
		// (Op.stageVerified), on one filesystem as across two; a
		// directory (a backup, rolling back) only across two.
		fi, err := os.Lstat(o.Src)
		switch {
		case err == nil && fi.Mode().IsRegular():
			b, err := os.ReadFile(o.Src)
			ok(f.t, err)
			o.SHA256, o.Size, o.Mode = sha(b), int64(len(b)), diff.FormatMode(fi.Mode())
		case err == nil && fi.Mode()&fs.ModeSymlink != 0:
			o.Target, err = os.Readlink(o.Src)
			ok(f.t, err)
		}
		if f.cross || o.SHA256 != "" || o.Target != "" {
			o.Stage = stageName(nil, o.Path, "0123456789abcdef", EventApply, f.n)
		}
	}
	f.n++
	return o
}

// pinsFor pins the directories from / to path's, as a plan pins its
// scope roots.
func pinsFor(t *testing.T, path string) []plan.PathID {
	t.Helper()
	pins, err := plan.ScopeRootIDs([]string{filepath.Dir(path)})
	ok(t, err)
	return pins
}

// withDirs runs f with the directories of o's path pinned.
func withDirs(o *Op, f func(*dirs) error) error {
	pins, err := plan.ScopeRootIDs([]string{filepath.Dir(o.Path)})
	if err != nil {
		return err
	}
	d := newDirs(pins)
	defer d.close()
	return f(d)
}

// backUpIn is o.backUp on o's path opened through d.
func backUpIn(d *dirs, o *Op, keep bool) error {
	dfd, base, err := d.at(o.Path)
	if err != nil {
		return err
	}
	return o.backUp(dfd, base, keep)
}

// leftovers fails t if anything act makes on the way is still there.
func (f *fixture) leftovers(ops []Op) {
	f.t.Helper()
	for _, o := range ops {
		for _, p := range []string{o.Stage, o.partial(), o.Path + ".act-restore"} {
			if p == "" || p == ".partial" {
				continue
			}
			if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
				f.t.Errorf("left behind: %s", p)
			}
		}
	}
}

// TestUndoPartial puts each op kind in the states a crash can leave it in
// — not started, part-way (a backup link made but the new entry not renamed
// in; the old entry renamed out but the new one not in; a backup copy cut
// short; a copied tree partly removed; a directory made but its mode not
// set) and done — and checks that undoing it, as recovery does after the
// op's Step record, gives back exactly the tree before, twice in a row (a
// crash during recovery repeats the undo), with the new content still in
// the layer for a later apply.
func TestUndoPartial(t *testing.T) {
	t.Parallel()
	tree := map[string]string{
		"file.txt":       "old content\n",
		"link":           "-> file.txt",
		"dir/a.txt":      "a\n",
		"dir/sub/b.txt":  "b\n",
		"dir/sub/empty/": "",
		"dir/ln":         "-> sub/b.txt",
		"plain/":         "",
	}
	layer := map[string]string{
		"file.txt": "new content\n",
		"link":     "-> dir",
		"new.txt":  "brand new\n",
		"newdir/x": "x\n",
		"dir":      "a file where a directory was\n",
	}
	type step func(t *testing.T, o *Op)
	var (
		nothing step = func(*testing.T, *Op) {}
		done    step = func(t *testing.T, o *Op) { ok(t, withDirs(o, func(d *dirs) error { return o.do(d) })) }
		keep    step = func(t *testing.T, o *Op) { ok(t, withDirs(o, func(d *dirs) error { return backUpIn(d, o, true) })) }  // linked or copied, not replaced
		moveOut step = func(t *testing.T, o *Op) { ok(t, withDirs(o, func(d *dirs) error { return backUpIn(d, o, false) })) } // old out, new not in
		// partialCopy: a backup copy cut short by the crash.
		partialCopy step = func(t *testing.T, o *Op) {
			ok(t, copyDurable(unix.AT_FDCWD, o.Path, unix.AT_FDCWD, o.partial()))
			filepath.WalkDir(o.partial(), func(p string, d fs.DirEntry, err error) error {
				if err == nil && d.Type().IsRegular() {
					os.Truncate(p, 1)
				}
				return err
			})
		}
		// partlyRemoved: the whole copy is in place and the tree at Path
		// is being removed.
		partlyRemoved step = func(t *testing.T, o *Op) {
			ok(t, copyDurable(unix.AT_FDCWD, o.Path, unix.AT_FDCWD, o.partial()))
			ok(t, os.Rename(o.partial(), o.Backup))
			ok(t, os.RemoveAll(filepath.Join(o.Path, "sub")))
		}
		mkdirNoMode step = func(t *testing.T, o *Op) { ok(t, os.Mkdir(o.Path, 0o700)) }
	)
	cases := []struct {
		name  string
		kind  OpKind
		path  string
		mode  string // OpMkdir and OpChmod
		cross []bool // which layouts the case applies to
		steps map[string]step
	}{
		{"put-over-file", OpPut, "file.txt", "", []bool{false, true},
			map[string]step{"nothing": nothing, "backed-up": keep, "moved-out": moveOut, "done": done}},
		{"put-over-file-copy-cut", OpPut, "file.txt", "", []bool{true},
			map[string]step{"partial-copy": partialCopy}},
		{"put-over-symlink", OpPut, "link", "", []bool{false, true},
			map[string]step{"backed-up": keep, "done": done}},
		{"put-new", OpPut, "new.txt", "", []bool{false, true},
			map[string]step{"nothing": nothing, "done": done}},
		{"put-new-dir", OpPut, "newdir", "", []bool{false, true},
			map[string]step{"nothing": nothing, "done": done}},
		{"remove-file", OpRemove, "file.txt", "", []bool{false, true},
			map[string]step{"nothing": nothing, "done": done}},
		{"remove-dir", OpRemove, "dir", "", []bool{false, true},
			map[string]step{"nothing": nothing, "done": done}},
		{"remove-dir-copy-cut", OpRemove, "dir", "", []bool{true},
			map[string]step{"partial-copy": partialCopy, "copied-partly-removed": partlyRemoved}},
		{"mkdir", OpMkdir, "made", "0750", []bool{false, true},
			map[string]step{"nothing": nothing, "made-mode-unset": mkdirNoMode, "done": done}},
		{"chmod-dir", OpChmod, "plain", "0500", []bool{false, true},
			map[string]step{"nothing": nothing, "done": done}},
		{"chmod-file", OpChmod, "file.txt", "0600", []bool{false, true},
			map[string]step{"done": done}},
	}
	for _, tc := range cases {
		for _, cross := range tc.cross {
			for sname, st := range tc.steps {
				layout := map[bool]string{false: "same-fs", true: "cross-fs"}[cross]
				t.Run(tc.name+"/"+layout+"/"+sname, func(t *testing.T) {
					t.Parallel()
					f := newFixture(t, cross, tree, layer)
					before := snap(t, f.tree)
					layerBefore := snap(t, f.layer)
					o := f.op(tc.kind, tc.path)
					switch tc.kind {
					case OpMkdir:
						o.Mode = tc.mode
					case OpChmod:
						o.Mode, o.ModeBefore = tc.mode, "0755"
						if tc.path == "file.txt" {
							o.ModeBefore = "0644"
						}
					}
					ops := []Op{o}
					d := newDirs(pinsFor(t, o.Path))
					defer d.close()
					ok(t, stage(d, ops)) // as execute: before any Step record
					var ino uint64
					if o.Kind == OpPut {
						var err error
						ino, err = o.newInode(d)
						ok(t, err)
					}
					st(t, &ops[0])
					for round := 1; round <= 2; round++ {
						if err := undoAll(d, ops, []uint64{ino}); err != nil {
							t.Fatalf("undo, round %d: %v", round, err)
						}
						if d := cmp.Diff(before, snap(t, f.tree)); d != "" {
							t.Fatalf("undo, round %d: the tree is not as before (-want +got):\n%s", round, d)
						}
					}
					if d := cmp.Diff(layerBefore, snap(t, f.layer)); d != "" {
						t.Errorf("the layer lost its new content (-want +got):\n%s", d)
					}
					f.leftovers(ops)
				})
			}
		}
	}
}

// crash is the panic an in-process crash point raises.
type crash struct{}

// crashAt makes the nth crash point from now panic with crash{}.
func crashAt(n int) {
	seen := 0
	CrashPoint = func() {
		if seen++; seen == n {
			panic(crash{})
		}
	}
}

// crashed runs f and reports whether a crash point stopped it.
func crashed(t *testing.T, f func() error) (stopped bool, err error) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(crash); !ok {
				panic(r)
			}
			stopped = true
		}
	}()
	return false, f()
}

// matrixOps is one op of every kind over f, in apply's order: directory
// permission opened first, contents, directories closed last.
func matrixOps(f *fixture) []Op {
	open := f.op(OpChmod, "ro")
	open.Mode, open.ModeBefore = "0755", "0555"
	mk := f.op(OpMkdir, "made")
	mk.Mode = "0750"
	closeDir := f.op(OpChmod, "plain")
	closeDir.Mode, closeDir.ModeBefore = "0500", "0755"
	return []Op{
		open,
		f.op(OpPut, "ro/in.txt"),
		f.op(OpPut, "file.txt"),
		f.op(OpPut, "link"),
		f.op(OpPut, "new.txt"),
		f.op(OpRemove, "gone.txt"),
		f.op(OpRemove, "dir"),
		f.op(OpPut, "dir"),
		mk,
		f.op(OpPut, "made/inside.txt"),
		closeDir,
	}
}

// TestExecuteCrashMatrix crashes execute, in process, at each of its crash
// points in turn over one op of every kind, and recovery (replay) at each
// of its own, on one filesystem and across two: after recovery the tree is
// exactly as before, or, once the Commit record is written, exactly as
// after. (The CLI's crash matrix, with SIGKILL, is TestCrashApply in package
// main.) It sets CrashPoint, so it does not run in parallel.
func TestExecuteCrashMatrix(t *testing.T) {
	tree := map[string]string{
		"file.txt":      "old\n",
		"link":          "-> file.txt",
		"gone.txt":      "gone\n",
		"dir/a.txt":     "a\n",
		"dir/sub/b.txt": "b\n",
		"dir/ln":        "-> a.txt",
		"plain/":        "",
		"ro/":           "",
	}
	layer := map[string]string{
		"ro/in.txt":       "in\n",
		"file.txt":        "new\n",
		"link":            "-> dir",
		"new.txt":         "brand new\n",
		"dir":             "now a file\n",
		"made/inside.txt": "inside\n",
	}
	defer func() { CrashPoint = nil }()
	for _, cross := range []bool{false, true} {
		t.Run(map[bool]string{false: "same-fs", true: "cross-fs"}[cross], func(t *testing.T) {
			fresh := func() (*fixture, []Op) {
				f := newFixture(t, cross, tree, layer)
				ok(t, os.Chmod(filepath.Join(f.tree, "ro"), 0o555))
				return f, matrixOps(f)
			}
			f, ops := fresh()
			before := snap(t, f.tree)
			CrashPoint = nil
			ok(t, execute(filepath.Join(t.TempDir(), "j"), Begin{Event: EventApply, ActionID: "a", Steps: ops}, nil))
			after := snap(t, f.tree)
			if cmp.Equal(before, after) {
				t.Fatal("the ops changed nothing")
			}
			var points, recoveryKills int
			for n := 1; ; n++ {
				f, ops := fresh()
				jpath := filepath.Join(t.TempDir(), "j")
				crashAt(n)
				stopped, err := crashed(t, func() error {
					return execute(jpath, Begin{Event: EventApply, ActionID: "a", Steps: ops}, nil)
				})
				CrashPoint = nil
				if !stopped {
					ok(t, err)
					if d := cmp.Diff(after, snap(t, f.tree)); d != "" {
						t.Fatalf("uncrashed: not the after tree:\n%s", d)
					}
					points = n - 1
					break
				}
				recs, st, err := Read(jpath)
				ok(t, err)
				want := after
				if st == Started {
					want = before
					// Recovery itself crashes at each of its points in turn.
					for m := 1; ; m++ {
						crashAt(m)
						stopped, err := crashed(t, func() error {
							recs, _, err := Read(jpath)
							if err != nil {
								return err
							}
							return replay(jpath, recs)
						})
						CrashPoint = nil
						if !stopped {
							ok(t, err)
							break
						}
						recoveryKills++
					}
					recs, st, err = Read(jpath)
					ok(t, err)
					if st != Reverted {
						t.Fatalf("N=%d: journal %s after recovery", n, st)
					}
				} else if st != Committed {
					t.Fatalf("N=%d: journal %s", n, st)
				}
				if _, isRevert := recs[len(recs)-1].(Revert); st == Reverted && !isRevert {
					t.Fatalf("N=%d: journal does not end with Revert", n)
				}
				if d := cmp.Diff(want, snap(t, f.tree)); d != "" {
					t.Fatalf("N=%d (journal %s): the tree is neither before nor after (-want +got):\n%s", n, st, d)
				}
				f.leftovers(ops)
			}
			t.Logf("%d crash points, %d recoveries crashed", points, recoveryKills)
		})
	}
}

// TestExecuteRevertsOnFailure makes an op fail part-way through a
// promotion — a directory appears, between the plan and the op, where a
// file is to be created — and checks that everything done before it is
// undone (RevertedError), that the journal ends with Revert, and that the
// tree is as before but for that directory, which is someone else's.
func TestExecuteRevertsOnFailure(t *testing.T) {
	tree := map[string]string{"file.txt": "old\n", "gone.txt": "gone\n", "dir/a.txt": "a\n"}
	layer := map[string]string{"file.txt": "new\n", "new.txt": "new\n", "z-last.txt": "last\n"}
	defer func() { CrashPoint = nil }()
	for _, cross := range []bool{false, true} {
		t.Run(map[bool]string{false: "same-fs", true: "cross-fs"}[cross], func(t *testing.T) {
			f := newFixture(t, cross, tree, layer)
			mk := f.op(OpMkdir, "made")
			mk.Mode = "0755"
			ops := []Op{f.op(OpPut, "file.txt"), f.op(OpPut, "new.txt"), f.op(OpRemove, "gone.txt"), f.op(OpRemove, "dir"), mk, f.op(OpPut, "z-last.txt")}
			intruder := filepath.Join(f.tree, "z-last.txt")
			before := snap(t, f.tree)
			// Crash points: Begin, staging, then two per op. After op 2
			// is done, the intruder appears.
			seen := 0
			CrashPoint = func() {
				if seen++; seen == 2+2*2 {
					ok(t, os.Mkdir(intruder, 0o755))
				}
			}
			jpath := filepath.Join(t.TempDir(), "j")
			err := execute(jpath, Begin{Event: EventApply, ActionID: "a", Steps: ops}, nil)
			CrashPoint = nil
			var rev *RevertedError
			if !errors.As(err, &rev) || !errors.Is(err, fs.ErrExist) {
				t.Fatalf("execute: %v, want a RevertedError wrapping ErrExist", err)
			}
			if rev.Op.Path != intruder {
				t.Errorf("failed op %s, want the one on %s", rev.Op.Path, intruder)
			}
			recs, st, err := Read(jpath)
			ok(t, err)
			if _, isRevert := recs[len(recs)-1].(Revert); st != Reverted || !isRevert {
				t.Errorf("journal %s, last record %T; want Reverted, Revert", st, recs[len(recs)-1])
			}
			got := snap(t, f.tree)
			if _, ok := got["z-last.txt"]; !ok {
				t.Error("the intruding directory is gone: it was not act's to remove")
			}
			delete(got, "z-last.txt")
			if d := cmp.Diff(before, got); d != "" {
				t.Errorf("the tree is not as before (-want +got):\n%s", d)
			}
			f.leftovers(ops)
		})
	}
}

// TestApplyRevertsOnFailure is TestExecuteRevertsOnFailure through Apply,
// from a real plan: the failed promotion leaves the tree as before, no
// journal and no action record, and the plan, now stale, is refused.
func TestApplyRevertsOnFailure(t *testing.T) {
	defer func() { CrashPoint = nil }()
	base := t.TempDir()
	proj, home := filepath.Join(base, "proj"), state.Dir{Root: filepath.Join(base, "state")}
	mkTree(t, proj, map[string]string{"b.txt": "b\n", "c.txt": "c\n"})
	src := strings.NewReplacer("$P", proj).Replace(`descriptor_version: "1.0"
action_id: 44444444-5555-4666-8777-888888888888
created_at: "2026-11-22T00:00:00Z"
created_by: ai
intent_summary: Change the project.
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
  filesystem: {create: [$P/a.txt, $P/e.txt], modify: [$P/b.txt], delete: [$P/c.txt]}
  network: false
  system_state_change: false
steps:
  - action_type: FILE_WRITE
    effects: {filesystem: {create: [$P/a.txt], modify: [], delete: []}, network: false, system_state_change: false}
    operation: {path: $P/a.txt, content: "a\n"}
  - action_type: FILE_WRITE
    effects: {filesystem: {create: [], modify: [$P/b.txt], delete: []}, network: false, system_state_change: false}
    operation: {path: $P/b.txt, content: "b2\n"}
  - action_type: FILE_DELETE
    effects: {filesystem: {create: [], modify: [], delete: [$P/c.txt]}, network: false, system_state_change: false}
    operation: {paths: [$P/c.txt]}
  - action_type: FILE_WRITE
    effects: {filesystem: {create: [$P/e.txt], modify: [], delete: []}, network: false, system_state_change: false}
    operation: {path: $P/e.txt, content: "e\n"}
`)
	d, _, probs := descriptors.Load("d.yaml", []byte(src))
	if probs != nil {
		t.Fatal(probs)
	}
	pol, err := policy.Parse("policy.yaml", []byte("allowed_roots: ["+base+"]\n"), "")
	ok(t, err)
	now := func() time.Time { return time.Date(2026, 11, 22, 0, 10, 0, 0, time.UTC) }
	dec := pol.Decide(d, now())
	if len(dec.Blocked) > 0 {
		t.Fatal(dec.Blocked)
	}
	p, err := plan.Build(context.Background(), d, plan.Options{StateDir: home.Root, Policy: pol, Decision: dec, Now: now, Host: plan.DefaultHost()})
	ok(t, err)
	before := snap(t, proj)
	intruder := filepath.Join(proj, "e.txt")
	seen := 0
	CrashPoint = func() {
		if seen++; seen == 4 { // after the first op (a.txt) is done
			ok(t, os.Mkdir(intruder, 0o755))
		}
	}
	_, err = Apply(context.Background(), home, p, Options{Now: now})
	CrashPoint = nil
	var rev *RevertedError
	if !errors.As(err, &rev) {
		t.Fatalf("Apply: %v, want a RevertedError", err)
	}
	got := snap(t, proj)
	delete(got, "e.txt")
	if d := cmp.Diff(before, got); d != "" {
		t.Errorf("the tree is not as before (-want +got):\n%s", d)
	}
	if NeedsRecovery(home) {
		t.Error("a journal is left")
	}
	if _, err := LoadAction(home, d.ActionID); !errors.Is(err, plan.ErrNotFound) {
		t.Errorf("action record after a reverted apply: %v", err)
	}
	// e.txt is a directory now: the plan is stale, and nothing changes.
	_, err = Apply(context.Background(), home, p, Options{Now: now})
	if err == nil || !strings.Contains(err.Error(), "changed since the plan") {
		t.Errorf("second Apply: %v, want a stale plan", err)
	}
	ok(t, os.Remove(intruder))
	if d := cmp.Diff(before, snap(t, proj)); d != "" {
		t.Errorf("the stale apply changed the tree (-want +got):\n%s", d)
	}
	// With the intruder gone, the same plan promotes.
	out, err := Apply(context.Background(), home, p, Options{Now: now})
	ok(t, err)
	if out.Action == nil || out.Action.State != lifecycle.Applied {
		t.Fatalf("Apply: %+v", out)
	}
}

// TestExecuteRevertsReadOnly makes an op fail as an ordinary user would
// see it fail: its directory is read-only, so the rename into it is
// refused (EACCES) after other ops have run. Root is not refused, so as
// root the test runs itself again as uid 65534.
func TestExecuteRevertsReadOnly(t *testing.T) {
	if os.Geteuid() == 0 {
		asNobody(t, "TestExecuteRevertsReadOnly")
		return
	}
	t.Parallel()
	for _, cross := range []bool{false, true} {
		t.Run(map[bool]string{false: "same-fs", true: "cross-fs"}[cross], func(t *testing.T) {
			f := newFixture(t, cross, map[string]string{"file.txt": "old\n", "gone.txt": "g\n", "ro/x": "x\n"},
				map[string]string{"file.txt": "new\n", "new.txt": "n\n", "ro/y": "y\n"})
			ops := []Op{f.op(OpPut, "file.txt"), f.op(OpPut, "new.txt"), f.op(OpRemove, "gone.txt"), f.op(OpPut, "ro/y")}
			// The stage of ro/y cannot be made in ro: put it beside.
			ops[3].Stage = filepath.Join(f.tree, ".act-ro-y")
			ro := filepath.Join(f.tree, "ro")
			ok(t, os.Chmod(ro, 0o555))
			t.Cleanup(func() { os.Chmod(ro, 0o755) })
			before := snap(t, f.tree)
			jpath := filepath.Join(t.TempDir(), "j")
			err := execute(jpath, Begin{Event: EventApply, ActionID: "a", Steps: ops}, nil)
			var rev *RevertedError
			if !errors.As(err, &rev) || !errors.Is(err, fs.ErrPermission) {
				t.Fatalf("execute: %v, want a RevertedError wrapping EACCES", err)
			}
			recs, st, err := Read(jpath)
			ok(t, err)
			if _, isRevert := recs[len(recs)-1].(Revert); st != Reverted || !isRevert {
				t.Errorf("journal %s, last record %T; want Reverted, Revert", st, recs[len(recs)-1])
			}
			if d := cmp.Diff(before, snap(t, f.tree)); d != "" {
				t.Errorf("the tree is not as before (-want +got):\n%s", d)
			}
			f.leftovers(ops)
		})
	}
}

// asNobody runs the test named name again, in a copy of this test binary,
// as uid and gid 65534; a failing child fails t. It skips t where setpriv
// is missing.
func asNobody(t *testing.T, name string) {
	t.Helper()
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skip("setpriv (util-linux) is not installed: cannot switch to an ordinary user")
	}
	dir, err := os.MkdirTemp("", "act-nobody-")
	ok(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	ok(t, os.Chmod(dir, 0o777))
	exe, err := os.Executable()
	ok(t, err)
	bin := filepath.Join(dir, "rollback.test")
	ok(t, copyDurable(unix.AT_FDCWD, exe, unix.AT_FDCWD, bin))
	ok(t, os.Chmod(bin, 0o755))
	c := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--", bin, "-test.run=^"+name+"$", "-test.count=1", "-test.v")
	c.Dir = dir
	for _, kv := range os.Environ() {
		switch k, _, _ := strings.Cut(kv, "="); k {
		case "TMPDIR", "HOME", "GOCOVERDIR":
		default:
			c.Env = append(c.Env, kv)
		}
	}
	c.Env = append(c.Env, "TMPDIR="+dir, "HOME="+dir)
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("%s as nobody: %v\n%s", name, err, out)
	}
	if !strings.Contains(string(out), "--- PASS: "+name) {
		t.Fatalf("%s as nobody did not pass:\n%s", name, out)
	}
	t.Logf("%s as nobody:\n%s", name, out)
}
