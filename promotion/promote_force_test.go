package promotion

// A forced rollback never loses what a person did after the apply: the
// crash matrix of a forced rollback over a tree changed since the apply
// (files edited, a file replaced by a directory, entries added inside a
// directory the apply created), and a property test over random trees,
// random applies and random changes.

import (
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/act-project/act/internal/treesnap"
	"github.com/act-project/act/sandbox/isolate"
)

// driftComposite changes the applied composite as a person might: it edits
// a file the apply created and one it modified, replaces the file the
// apply put where a directory was by a directory holding a file, and adds
// a file and a nested directory to a directory the apply created. It
// returns the content each saved path must hold, by path relative to the
// project.
func driftComposite(t *testing.T, w *world) map[string]string {
	t.Helper()
	want := map[string]string{
		"new.txt":                  "edited new\n",
		"mod.txt":                  "edited mod\n",
		"swap/x.txt":               "a directory again\n",
		"cache/user.txt":           "important\n",
		"cache/sub/deeper/d.txt":   "deep\n",
		"cache/sub/deeper/e/f.txt": "deeper still\n",
	}
	must(t, os.Remove(filepath.Join(w.root, "swap")))
	for rel, content := range want {
		p := filepath.Join(w.root, rel)
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.WriteFile(p, []byte(content), 0o644))
	}
	must(t, os.Chmod(filepath.Join(w.root, "cache/sub"), 0o750))
	return want
}

// requireSaved fails unless every path of want is kept, with its content,
// under the action's saved directory.
func requireSaved(t *testing.T, w *world, want map[string]string) {
	t.Helper()
	saved := filepath.Join(w.home, "backups", w.id, "saved")
	for rel, content := range want {
		got, err := os.ReadFile(filepath.Join(saved, w.root, rel))
		if err != nil || string(got) != content {
			t.Fatalf("the saved copy of %s: %q, %v; want %q", rel, got, err, content)
		}
	}
	fi, err := os.Stat(filepath.Join(saved, w.root, "cache/sub"))
	if err != nil || fi.Mode().Perm() != 0o750 {
		t.Fatalf("the saved cache/sub: %v, %v; want mode 0750", fi, err)
	}
}

// TestCrashForcedRollback kills `act rollback --force --confirm` of the
// applied and then changed composite at each of its crash points in turn.
// After recovery the tree must be exactly the changed one (nothing saved
// is left behind; a forced rollback then succeeds) or exactly the
// original, with every changed entry kept under the saved directory.
func TestCrashForcedRollback(t *testing.T) {
	t.Parallel()
	t.Run("same-fs", func(t *testing.T) { t.Parallel(); crashForcedRollback(t, "") })
	t.Run("cross-fs", func(t *testing.T) { t.Parallel(); crashForcedRollback(t, crossBase(t)) })
}

func crashForcedRollback(t *testing.T, base string) {
	if base != "" {
		base = filepath.Join(base, "forced")
		must(t, os.Mkdir(base, 0o755))
	}
	before, _ := reference(t, baseFor(t, base, "ref"))
	// setUp applies the composite in a world of its own, changes it, and
	// checks that a plain rollback is refused.
	setUp := func(t *testing.T, name string) (w *world, planID string, want map[string]string, drifted map[string]entry) {
		w = composite(t, baseFor(t, base, name))
		planID = w.plan()
		w.ok(0, "apply", "--confirm", planID)
		want = driftComposite(t, w)
		drifted = snapshot(t, w.root)
		r := w.ok(8, "rollback", w.id)
		for _, rel := range []string{"new.txt", "mod.txt", "swap", "cache/user.txt", "cache/sub"} {
			if !strings.Contains(r.stderr, "rollback.target-changed: "+filepath.Join(w.root, rel)+": ") {
				t.Fatalf("the refusal does not name %s\n%s", rel, r)
			}
		}
		w.requireTree("changed", drifted)
		return w, planID, want, drifted
	}
	// The whole forced rollback, which no crash point stops, counts them.
	w, _, want, _ := setUp(t, "whole")
	r, points := w.whole("rollback", "--force", "--confirm", w.id)
	if r.code != 0 || r.killed {
		t.Fatalf("the whole forced rollback:\n%s", r)
	}
	w.requireTree("original", before)
	requireSaved(t, w, want)
	w.settled()
	var sawBefore, sawAfter, killedRecoveries atomic.Int64
	crashEach(t, points, func(t *testing.T, n int) {
		w, planID, want, drifted := setUp(t, fmt.Sprint(n))
		r := w.act(n, "rollback", "--force", "--confirm", w.id)
		if !r.killed {
			t.Fatalf("crash point %d of %d not reached, but:\n%s", n, points, r)
		}
		killedRecoveries.Add(int64(w.recoverBy(n%4, planID)))
		w.settled()
		switch {
		case w.is(drifted):
			sawAfter.Add(1)
			if st := w.state(); st != "applied" {
				t.Fatalf("N=%d: the tree is the changed one but the action is %q", n, st)
			}
			w.ok(0, "rollback", "--force", "--confirm", w.id)
		case w.is(before):
			sawBefore.Add(1)
			if st := w.state(); st != "rolled_back" {
				t.Fatalf("N=%d: the tree is the original but the action is %q", n, st)
			}
		default:
			t.Fatalf("N=%d: after recovery the tree is neither the original (-) nor the changed (+) one:\n%s\nwant (changed):\n%s",
				n, cmp.Diff(before, snapshot(t, w.root)), cmp.Diff(drifted, snapshot(t, w.root)))
		}
		w.requireTree("original", before)
		requireSaved(t, w, want)
		w.settled()
	})
	t.Logf("%d crash points: %d recovered to changed, %d to rolled back; %d recoveries killed", points, sawAfter.Load(), sawBefore.Load(), killedRecoveries.Load())
	if sawBefore.Load() == 0 || sawAfter.Load() == 0 {
		t.Errorf("the matrix missed a case: recovered to rolled back %d, to changed %d", sawBefore.Load(), sawAfter.Load())
	}
}

// TestRollbackNothingLost is the property "rollback loses no byte a
// person had": for random trees, random applies (every operation kind,
// composites, commands) and random changes made after the apply (add,
// edit, delete, chmod, a file replaced by a directory and back), a plain
// rollback either refuses and changes nothing or restores the pre-apply
// tree exactly; a forced one restores it, and every file the person added
// or edited after the apply is then either in the restored tree or under
// the saved directory, at its own path, with its content.
// TestRollbackNothingLostNobody runs it as an ordinary user.
func TestRollbackNothingLost(t *testing.T) {
	t.Parallel()
	// Batches of independent iterations, until the generator has shown
	// each kind of rollback (at once, refused, then forced), at most
	// maxIterations: 24 usually do; a run stops early only once all have
	// been seen, so the strength check below can still fail.
	batch, maxIterations := 24, 72
	if testing.Short() {
		batch, maxIterations = 8, 8
	}
	sandboxErr := isolate.Available()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("ACT_TEST_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("ACT_TEST_SEED=%q: not a seed (a decimal number below 2^64)", s)
		}
	}
	t.Logf("seed %d (ACT_TEST_SEED=%d replays it)", seed, seed)
	var applied, refused, forced, plain atomic.Int64
	iterations := 0
	for iterations < maxIterations && (iterations == 0 || refused.Load() == 0 || forced.Load() == 0 || plain.Load() == 0) {
		// The iterations are independent, each with its own stream of
		// the seed, and run in parallel.
		from := iterations
		iterations += batch
		t.Run(fmt.Sprintf("iterations-%d-%d", from, iterations-1), func(t *testing.T) {
			for i := from; i < iterations; i++ {
				t.Run(fmt.Sprint(i), func(t *testing.T) {
					t.Parallel()
					nothingLost(t, i, seed, sandboxErr == nil, &applied, &refused, &forced, &plain)
				})
			}
		})
		if t.Failed() {
			return
		}
	}
	t.Logf("%d iterations: %d applied; %d rolled back at once, %d refused, %d then forced", iterations, applied.Load(), plain.Load(), refused.Load(), forced.Load())
	if applied.Load() < int64(iterations/2) || refused.Load() == 0 || forced.Load() == 0 {
		t.Errorf("the generator is too weak: %d of %d applied, %d refused, %d forced", applied.Load(), iterations, refused.Load(), forced.Load())
	}
}

// nothingLost is iteration i of TestRollbackNothingLost: a random tree,
// apply, changes and rollback from stream i of seed, counted in applied,
// refused (a plain rollback), forced and plain (rolled back at once).
func nothingLost(t *testing.T, i int, seed uint64, sandbox bool, applied, refused, forced, plain *atomic.Int64) {
	g := &gen{rng: rand.New(rand.NewPCG(seed, uint64(i))), sandbox: sandbox}
	tree := g.tree()
	ops := g.apply(tree)
	id := fmt.Sprintf("33333333-4444-4555-8666-%012d", i)
	w := newWorld(t, "", id, tree, ops)
	before := snapshot(t, w.root)
	r := w.act(0, "apply", "--confirm", w.descriptor)
	if r.code != 0 {
		// A random action may be refused at plan (a precondition, an
		// operation on something that is not there): nothing changed.
		w.requireTree("original", before)
		return
	}
	applied.Add(1)
	after := snapshot(t, w.root)
	g.drift(w.root)
	drifted := snapshot(t, w.root)
	mine := map[string]treesnap.Entry{} // what the person made or changed
	for p, e := range drifted {
		if e.Type == "file" && after[p] != e {
			mine[p] = e
		}
	}
	r = w.act(0, "rollback", w.id)
	switch r.code {
	case 0:
		plain.Add(1)
		requireRolledBack(t, w, before, after, drifted, r)
		requireKept(t, w, mine, r)
		return
	case 8:
		refused.Add(1)
		w.requireTree("changed", drifted)
	default:
		t.Fatalf("iteration %d: rollback\n%s\nops:\n%s", i, r, ops)
	}
	r = w.act(0, "rollback", "--force", "--confirm", w.id)
	switch r.code {
	case 0:
		forced.Add(1)
		requireRolledBack(t, w, before, after, drifted, r)
		requireKept(t, w, mine, r)
	case 8: // a directory to restore into is gone: refused, forced or not
		if !strings.Contains(r.stderr, "make the directory again") {
			t.Fatalf("iteration %d: forced rollback\n%s\nops:\n%s", i, r, ops)
		}
		w.requireTree("changed", drifted)
	default:
		t.Fatalf("iteration %d: forced rollback\n%s\nops:\n%s", i, r, ops)
	}
	w.settled()
}

// TestRollbackNothingLostNobody runs TestRollbackNothingLost as an
// ordinary user.
func TestRollbackNothingLostNobody(t *testing.T) { asNobody(t, "TestRollbackNothingLost") }

// requireRolledBack fails unless every path the apply changed is back as
// it was before it, and every other path is as the person left it, or
// (when a directory the apply created held it) saved at its own path.
func requireRolledBack(t *testing.T, w *world, before, after, drifted map[string]treesnap.Entry, r run) {
	t.Helper()
	now := snapshot(t, w.root)
	saved, err := treesnap.Take(filepath.Join(w.home, "backups", w.id, "saved", w.root))
	must(t, err)
	paths := map[string]bool{}
	for _, m := range []map[string]treesnap.Entry{before, after, drifted, now} {
		for p := range m {
			paths[p] = true
		}
	}
	for p := range paths {
		b, inB := before[p]
		a, inA := after[p]
		n, inN := now[p]
		if inB != inA || b != a { // the apply changed p
			if inB != inN || b != n {
				t.Fatalf("%s, changed by the apply, is %+v (present %v) after the rollback, not %+v (present %v)\n%s", p, n, inN, b, inB, r)
			}
			continue
		}
		d, inD := drifted[p]
		if inD == inN && d == n {
			continue
		}
		if sv, ok := saved[p]; ok && !inN && inD && sv.Type == d.Type && sv.SHA256 == d.SHA256 {
			continue
		}
		t.Fatalf("%s, not changed by the apply, is %+v (present %v) after the rollback; the person left %+v (present %v)\n%s", p, n, inN, d, inD, r)
	}
}

// requireKept fails unless each file of mine (paths relative to w.root) is
// in the tree or under the saved directory at its own path, with its
// content.
func requireKept(t *testing.T, w *world, mine map[string]treesnap.Entry, r run) {
	t.Helper()
	now := snapshot(t, w.root)
	saved, err := treesnap.Take(filepath.Join(w.home, "backups", w.id, "saved", w.root))
	must(t, err)
	for p, e := range mine {
		if got, ok := now[p]; ok && got.SHA256 == e.SHA256 {
			continue
		}
		if got, ok := saved[p]; ok && got.SHA256 == e.SHA256 && got.Mode == e.Mode {
			continue
		}
		t.Fatalf("%s (%s) is neither in the tree nor saved after\n%s", p, e.SHA256[:8], r)
	}
}

// A gen makes random trees, actions and changes.
type gen struct {
	rng     *rand.Rand
	sandbox bool
	n       int
}

func (g *gen) name(prefix string) string {
	g.n++
	return fmt.Sprintf("%s%d", prefix, g.n)
}

func (g *gen) content() string {
	return strings.Repeat(fmt.Sprintf("%x\n", g.rng.Uint64()), 1+g.rng.IntN(3))
}

// tree returns a random project: a few directories, files and a symlink,
// and always conf.json and two directories a and b.
func (g *gen) tree() map[string]string {
	tree := map[string]string{"conf.json": "{\n  \"port\": 80\n}\n", "a/": "", "b/": ""}
	dirs := []string{"", "a/", "b/"}
	for range 2 + g.rng.IntN(3) {
		d := dirs[g.rng.IntN(len(dirs))] + g.name("d") + "/"
		tree[d] = ""
		dirs = append(dirs, d)
	}
	for range 3 + g.rng.IntN(5) {
		tree[dirs[g.rng.IntN(len(dirs))]+g.name("f")+".txt"] = g.content()
	}
	tree["a/"+g.name("l")] = "-> ../conf.json"
	return tree
}

// pick returns a random existing path of kind "file", "dir" (never the
// root) from tree, relative to the project.
func (g *gen) pick(tree map[string]string, kind string) string {
	var ps []string
	for p, v := range tree {
		isDir := strings.HasSuffix(p, "/")
		if (kind == "dir") == isDir && !strings.HasPrefix(v, "-> ") {
			ps = append(ps, strings.TrimSuffix(p, "/"))
		}
	}
	slices.Sort(ps)
	return ps[g.rng.IntN(len(ps))]
}

const everything = `effects: {filesystem: {create: ["$P/**"], modify: ["$P/**"], delete: ["$P/**"]}, network: false, system_state_change: false}
`

// step returns one random file operation of tree (its action_type and
// operation lines), at indent.
func (g *gen) step(tree map[string]string, indent string) string {
	var s string
	switch g.rng.IntN(7) {
	case 0:
		s = fmt.Sprintf("action_type: FILE_WRITE\noperation: {path: $P/%s/%s, content: %q}\n", g.pick(tree, "dir"), g.name("w"), g.content())
	case 1:
		s = fmt.Sprintf("action_type: FILE_WRITE\noperation: {path: $P/%s, content: %q, mode: \"0600\"}\n", g.pick(tree, "file"), g.content())
	case 2:
		s = fmt.Sprintf("action_type: FILE_DELETE\noperation: {paths: [$P/%s]}\n", g.pick(tree, "file"))
	case 3:
		s = fmt.Sprintf("action_type: FILE_MOVE\noperation: {from: $P/%s, to: $P/%s/%s}\n", g.pick(tree, "file"), g.pick(tree, "dir"), g.name("m"))
	case 4:
		s = fmt.Sprintf("action_type: DIRECTORY_CREATE\noperation: {path: $P/%s/%s/%s, parents: true, mode: \"0755\"}\n", g.pick(tree, "dir"), g.name("n"), g.name("n"))
	case 5:
		s = fmt.Sprintf("action_type: DIRECTORY_DELETE\noperation: {path: $P/%s}\n", g.pick(tree, "dir"))
	default:
		s = fmt.Sprintf("action_type: CONFIG_CHANGE\noperation: {path: $P/conf.json, format: json, set: {port: %d}}\n", 1000+g.rng.IntN(9000))
	}
	lines := strings.SplitAfter(s+everything, "\n")
	return indent + strings.Join(lines, indent)
}

// apply returns a random action on tree: one file operation, a composite
// of two or three, or a command that makes directories and files.
func (g *gen) apply(tree map[string]string) string {
	switch g.rng.IntN(4) {
	case 0:
		return strings.TrimRight(g.step(tree, ""), " ")
	case 1:
		var b strings.Builder
		b.WriteString("action_type: MULTI_STEP_COMPOSITE\n" + everything + "steps:\n")
		for range 2 + g.rng.IntN(2) {
			st := g.step(tree, "    ")
			b.WriteString("  - " + strings.TrimPrefix(strings.TrimRight(st, " "), "    "))
		}
		return b.String()
	}
	if !g.sandbox {
		return strings.TrimRight(g.step(tree, ""), " ")
	}
	d := g.name("build")
	script := fmt.Sprintf("mkdir -p %s/obj && echo %x > %s/obj/o && echo x >> %s && chmod 0700 %s", d, g.rng.Uint64(), d, g.pick(tree, "file"), g.pick(tree, "dir"))
	return fmt.Sprintf("action_type: COMMAND_EXECUTION\n%soperation: {argv: [sh, -c, %q], workdir: $P}\n", everything, script)
}

// drift makes zero to three random changes under root, as a person might
// after the apply.
func (g *gen) drift(root string) {
	var files, dirs []string
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == root {
			return nil
		}
		switch {
		case d.Type().IsRegular():
			files = append(files, p)
		case d.IsDir():
			dirs = append(dirs, p)
		}
		return nil
	})
	dirs = append(dirs, root)
	for range g.rng.IntN(4) {
		switch k := g.rng.IntN(6); {
		case k == 0 || len(files) == 0: // add a file, or a directory holding one
			d := dirs[g.rng.IntN(len(dirs))]
			if g.rng.IntN(2) == 0 {
				d = filepath.Join(d, g.name("u"))
				os.Mkdir(d, 0o755)
			}
			os.WriteFile(filepath.Join(d, g.name("u")), []byte(g.content()), 0o644)
		case k == 1:
			os.WriteFile(files[g.rng.IntN(len(files))], []byte(g.content()), 0o644)
		case k == 2:
			os.Remove(files[g.rng.IntN(len(files))])
		case k == 3:
			os.Chmod(files[g.rng.IntN(len(files))], 0o604)
		case k == 4: // a file replaced by a directory holding a file
			i := g.rng.IntN(len(files))
			f := files[i]
			if os.Remove(f) == nil && os.Mkdir(f, 0o755) == nil {
				os.WriteFile(filepath.Join(f, "inside"), []byte(g.content()), 0o644)
				files = slices.Delete(files, i, i+1)
			}
		default: // a directory replaced by a file (only an empty one)
			if d := dirs[g.rng.IntN(len(dirs))]; d != root && os.Remove(d) == nil {
				os.WriteFile(d, []byte(g.content()), 0o644)
			}
		}
	}
}
