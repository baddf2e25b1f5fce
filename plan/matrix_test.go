package plan

// The convergence matrix (every file state against every operation): every file
// operation act carries out × every prior state of the path it targets,
// s/t in a scope s.
//
// For each cell the operation runs twice: into a LayerSystem over the real
// tree (what plan does), diffed with diff.Compare; and on the real system
// over a copy of the tree, whose change list is computed independently by
// comparing snapshots before and after. The two must agree — the same
// changes, or the same OpError rules — and the dry run must leave the real
// tree exactly as it was, mtimes, ctimes and inodes included.
//
// Each cell's outcome is recorded in testdata/matrix/matrix.golden, as root
// and, where it differs, as an ordinary user (TestMatrixOrdinaryUser re-runs
// the matrix under setpriv as nobody; an ordinary user running go test meets
// the second outcome directly). Regenerate with
//
//	go test ./plan -run 'TestMatrix' -update
//
// as root (so that both outcomes are recorded), and review the diff.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/act-project/act/descriptors"
	"github.com/act-project/act/diff"
	"github.com/act-project/act/sandbox"
)

func init() {
	// Another test file of the package may define -update too: share it.
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite golden files")
	}
}

// updating reports whether -update was given.
func updating() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

const (
	matrixGolden = "testdata/matrix/matrix.golden"
	// matrixChildEnv, set in the environment of the child that
	// TestMatrixOrdinaryUser starts, names the file in which TestMatrix
	// writes its outcomes instead of checking them.
	matrixChildEnv = "ACT_TEST_MATRIX_OUT"
	// mxWorkers is how many cells run at once.
	mxWorkers = 8
)

// mxPrior is the content of the files of the prior trees: JSON that is
// YAML too, so that CONFIG_CHANGE has something to edit in either format.
const mxPrior = "{\"c\": true, \"k\": \"old\"}\n"

// An mxEntry is one entry of a prior tree; for a symlink, content is the
// (relative) target, so that a copy of the tree links within the copy.
type mxEntry struct{ typ, mode, content string }

func mxFile(content, mode string) mxEntry { return mxEntry{"file", mode, content} }
func mxDir(mode string) mxEntry           { return mxEntry{"dir", mode, ""} }
func mxLink(target string) mxEntry        { return mxEntry{"symlink", "", target} }

// mxBase is in every prior tree: the scope s with a file f for symlinks
// to point at and a file src to move. (The trees are kept small: creating
// entries is most of the matrix's cost.)
var mxBase = map[string]mxEntry{
	"s":     mxDir("0755"),
	"s/f":   mxFile(mxPrior, "0644"),
	"s/src": mxFile("src\n", "0644"),
}

// An mxState is a prior state of the target s/t: the entries at s/t and
// below.
type mxState struct {
	name    string
	entries map[string]mxEntry
}

var mxStates = []mxState{
	{"absent", nil},
	{"file", map[string]mxEntry{"s/t": mxFile(mxPrior, "0644")}},
	{"file-mode", map[string]mxEntry{"s/t": mxFile(mxPrior, "4750")}},
	{"file-ro", map[string]mxEntry{"s/t": mxFile(mxPrior, "0444")}},
	{"dir-empty", map[string]mxEntry{"s/t": mxDir("0755")}},
	{"dir", map[string]mxEntry{
		"s/t": mxDir("0755"), "s/t/a": mxFile("a\n", "0644"),
		"s/t/sub": mxDir("0700"), "s/t/sub/b": mxFile("b\n", "0600"),
	}},
	{"dir-mode", map[string]mxEntry{"s/t": mxDir("3775"), "s/t/a": mxFile("a\n", "0644")}},
	{"dir-ro", map[string]mxEntry{"s/t": mxDir("0555"), "s/t/a": mxFile("a\n", "0644")}},
	{"symlink-file", map[string]mxEntry{"s/t": mxLink("f")}},
	{"symlink-dir", map[string]mxEntry{"s/t": mxLink("d"), "s/d": mxDir("0755"), "s/d/x": mxFile("x\n", "0644")}},
	{"symlink-out", map[string]mxEntry{"s/t": mxLink("../out/secret"), "out": mxDir("0755"), "out/secret": mxFile(mxPrior, "0644")}},
	{"symlink-dangling", map[string]mxEntry{"s/t": mxLink("nope")}},
}

// An mxOp is one operation of the matrix, built for the scope directory s.
type mxOp struct {
	name      string
	recursive bool
	// doc describes the operation in the golden file.
	doc   string
	build func(s string) *descriptors.Descriptor
}

func mxStr(s string) *string { return &s }

func mxOne(op descriptors.Operation) *descriptors.Descriptor {
	return &descriptors.Descriptor{ActionType: op.Type(), Op: op}
}

func mxSteps(ops ...descriptors.Operation) *descriptors.Descriptor {
	d := &descriptors.Descriptor{ActionType: descriptors.MultiStepComposite}
	for _, op := range ops {
		d.Steps = append(d.Steps, descriptors.Step{ActionType: op.Type(), Op: op})
	}
	return d
}

var mxOps = []mxOp{
	{"read", false, `FILE_READ s/t`, func(s string) *descriptors.Descriptor {
		return mxOne(descriptors.FileReadOp{Path: s + "/t"})
	}},
	{"write", false, `FILE_WRITE s/t content "new\n"`, func(s string) *descriptors.Descriptor {
		return mxOne(descriptors.FileWriteOp{Path: s + "/t", Content: mxStr("new\n")})
	}},
	{"write-mode", false, `FILE_WRITE s/t content "new\n" mode 0640`, func(s string) *descriptors.Descriptor {
		return mxOne(descriptors.FileWriteOp{Path: s + "/t", Content: mxStr("new\n"), Mode: "0640"})
	}},
	{"write-chmod", false, `FILE_WRITE s/t with the prior content, mode 0600 (a mode change only)`, func(s string) *descriptors.Descriptor {
		return mxOne(descriptors.FileWriteOp{Path: s + "/t", Content: mxStr(mxPrior), Mode: "0600"})
	}},
	{"write-create-only", false, `FILE_WRITE s/t content "new\n" create_only`, func(s string) *descriptors.Descriptor {
		return mxOne(descriptors.FileWriteOp{Path: s + "/t", Content: mxStr("new\n"), CreateOnly: true})
	}},
	{"write-into", true, `FILE_WRITE s/t/new content "new\n" (recursive scope)`, func(s string) *descriptors.Descriptor {
		return mxOne(descriptors.FileWriteOp{Path: s + "/t/new", Content: mxStr("new\n")})
	}},
	{"delete", false, `FILE_DELETE [s/t]`, func(s string) *descriptors.Descriptor {
		return mxOne(descriptors.FileDeleteOp{Paths: []string{s + "/t"}})
	}},
	{"delete-r", true, `FILE_DELETE [s/t] (recursive scope)`, func(s string) *descriptors.Descriptor {
		return mxOne(descriptors.FileDeleteOp{Paths: []string{s + "/t"}})
	}},
	{"delete-glob", true, `FILE_DELETE ["s/t*"] (recursive scope)`, func(s string) *descriptors.Descriptor {
		return mxOne(descriptors.FileDeleteOp{Paths: []string{s + "/t*"}})
	}},
	{"move-from", false, `FILE_MOVE s/t → s/moved`, func(s string) *descriptors.Descriptor {
		return mxOne(descriptors.FileMoveOp{From: s + "/t", To: s + "/moved"})
	}},
	{"move-from-r", true, `FILE_MOVE s/t → s/moved (recursive scope)`, func(s string) *descriptors.Descriptor {
		return mxOne(descriptors.FileMoveOp{From: s + "/t", To: s + "/moved"})
	}},
	{"move-onto", false, `FILE_MOVE s/src → s/t`, func(s string) *descriptors.Descriptor {
		return mxOne(descriptors.FileMoveOp{From: s + "/src", To: s + "/t"})
	}},
	{"move-onto-overwrite", false, `FILE_MOVE s/src → s/t overwrite`, func(s string) *descriptors.Descriptor {
		return mxOne(descriptors.FileMoveOp{From: s + "/src", To: s + "/t", Overwrite: true})
	}},
	{"mkdir", false, `DIRECTORY_CREATE s/t mode 0750`, func(s string) *descriptors.Descriptor {
		return mxOne(descriptors.DirectoryCreateOp{Path: s + "/t", Mode: "0750"})
	}},
	{"mkdir-p", false, `DIRECTORY_CREATE s/t parents`, func(s string) *descriptors.Descriptor {
		return mxOne(descriptors.DirectoryCreateOp{Path: s + "/t", Parents: true})
	}},
	{"mkdir-p-deep", true, `DIRECTORY_CREATE s/t/x/y parents mode 0700 (recursive scope)`, func(s string) *descriptors.Descriptor {
		return mxOne(descriptors.DirectoryCreateOp{Path: s + "/t/x/y", Parents: true, Mode: "0700"})
	}},
	{"rmdir", false, `DIRECTORY_DELETE s/t`, func(s string) *descriptors.Descriptor {
		return mxOne(descriptors.DirectoryDeleteOp{Path: s + "/t"})
	}},
	{"rmdir-r", true, `DIRECTORY_DELETE s/t (recursive scope)`, func(s string) *descriptors.Descriptor {
		return mxOne(descriptors.DirectoryDeleteOp{Path: s + "/t"})
	}},
	{"config-json", false, `CONFIG_CHANGE s/t json set a.b="v" unset [c]`, func(s string) *descriptors.Descriptor {
		return mxOne(descriptors.ConfigChangeOp{Path: s + "/t", Format: "json", Set: map[string]any{"a.b": "v"}, Unset: []string{"c"}})
	}},
	{"config-yaml", false, `CONFIG_CHANGE s/t yaml set k="new" unset [c]`, func(s string) *descriptors.Descriptor {
		return mxOne(descriptors.ConfigChangeOp{Path: s + "/t", Format: "yaml", Set: map[string]any{"k": "new"}, Unset: []string{"c"}})
	}},
	{"composite-write-move-mkdir", true, `MULTI_STEP_COMPOSITE: FILE_WRITE s/t "step\n"; FILE_MOVE s/t → s/moved; DIRECTORY_CREATE s/t (recursive scope)`, func(s string) *descriptors.Descriptor {
		return mxSteps(
			descriptors.FileWriteOp{Path: s + "/t", Content: mxStr("step\n")},
			descriptors.FileMoveOp{From: s + "/t", To: s + "/moved"},
			descriptors.DirectoryCreateOp{Path: s + "/t"},
		)
	}},
	{"composite-recreate", true, `MULTI_STEP_COMPOSITE: DIRECTORY_DELETE s/t; DIRECTORY_CREATE s/t; FILE_WRITE s/t/a "a2\n" (recursive scope)`, func(s string) *descriptors.Descriptor {
		return mxSteps(
			descriptors.DirectoryDeleteOp{Path: s + "/t"},
			descriptors.DirectoryCreateOp{Path: s + "/t"},
			descriptors.FileWriteOp{Path: s + "/t/a", Content: mxStr("a2\n")},
		)
	}},
}

// mxDivergent lists the cells where the dry run and the real run may
// legitimately disagree, keyed "op/state" and by identity ("root" or
// "user"), with the reason. The golden file records both outcomes.
// None do now: the layer refuses to delete what the real run could not.
var mxDivergent = map[string]string{}

// mxDivergentSeen records the entries of mxDivergent that a cell used.
var mxDivergentSeen sync.Map

// mxKey names a cell.
func mxKey(op mxOp, st mxState) string { return op.name + "/" + st.name }

// TestMatrix runs the convergence matrix and checks each cell's outcome
// against the golden file.
func TestMatrix(t *testing.T) {
	outcomes := map[string][]string{}
	work := mxWorkDir(t)
	type cell struct {
		key    string
		op     mxOp
		root   string
		before map[string]mxNode
	}
	var cells []cell
	for _, st := range mxStates {
		// One real tree per state serves all the operations: each cell
		// proves that its dry run left it exactly as it was.
		root := filepath.Join(work, st.name)
		if err := os.Mkdir(root, 0o700); err != nil {
			t.Fatal(err)
		}
		entries := map[string]mxEntry{}
		for k, v := range mxBase {
			entries[k] = v
		}
		for k, v := range st.entries {
			entries[k] = v
		}
		mxBuild(t, root, entries)
		before := mxSnapshot(t, root)
		for _, op := range mxOps {
			cells = append(cells, cell{mxKey(op, st), op, root, before})
		}
	}
	// The cells wait on the filesystem, not the CPU: run a few at once,
	// more than -test.parallel (GOMAXPROCS) would allow.
	todo := make(chan cell)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range mxWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range todo {
				t.Run(c.key, func(t *testing.T) {
					out := runMatrixCell(t, c.key, c.op, c.root, c.before, c.root+"."+c.op.name)
					mu.Lock()
					outcomes[c.key] = out
					mu.Unlock()
				})
			}
		}()
	}
	for _, c := range cells {
		todo <- c
	}
	close(todo)
	wg.Wait()
	if len(outcomes) == len(cells) { // the whole matrix ran
		for k := range mxDivergent {
			if _, seen := mxDivergentSeen.Load(k); !seen && strings.HasSuffix(k, "@"+identity()) {
				t.Errorf("mxDivergent[%q]: the cell no longer diverges; remove the entry", k)
			}
		}
	}
	if out := os.Getenv(matrixChildEnv); out != "" {
		var b bytes.Buffer
		for _, op := range mxOps {
			for _, st := range mxStates {
				k := mxKey(op, st)
				fmt.Fprintf(&b, "== %s\n", k)
				for _, l := range outcomes[k] {
					fmt.Fprintf(&b, "%s\n", l)
				}
			}
		}
		if err := os.WriteFile(out, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if t.Failed() {
		return
	}
	checkMatrixGolden(t, identity(), outcomes)
}

// identity is "root" or "user": whose outcomes this process sees.
func identity() string {
	if os.Geteuid() == 0 {
		return "root"
	}
	return "user"
}

// TestMatrixOrdinaryUser runs TestMatrix again as nobody, in a child
// process under setpriv, and checks its outcomes against the golden file's
// ordinary-user outcomes.
func TestMatrixOrdinaryUser(t *testing.T) {
	if os.Getenv(matrixChildEnv) != "" {
		t.Skip("in the child")
	}
	dir := nobodyDir(t)
	out := filepath.Join(dir, "outcomes")
	runAsNobody(t, dir, "TestMatrix", matrixChildEnv+"="+out)
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	outcomes := map[string][]string{}
	var cur string
	for line := range strings.Lines(string(data)) {
		line = strings.TrimSuffix(line, "\n")
		if k, ok := strings.CutPrefix(line, "== "); ok {
			cur = k
			outcomes[cur] = []string{}
			continue
		}
		outcomes[cur] = append(outcomes[cur], line)
	}
	checkMatrixGolden(t, "user", outcomes)
}

// runMatrixCell runs the cell key, op on the real tree root whose
// snapshot is before, and returns its outcome: one line per change (or
// note, or error). The reference copy and the layer go in work+".copy" and
// work+".layer".
func runMatrixCell(t *testing.T, key string, op mxOp, root string, before map[string]mxNode, work string) []string {
	ctx := context.Background()

	// The reference: the operation on the real system, in a copy.
	copyRoot := work + ".copy"
	if err := sandbox.CopyTree(root, copyRoot); err != nil {
		t.Fatal(err)
	}
	refBefore := mxSnapshot(t, copyRoot)
	if d := cmp.Diff(mxContentOnly(before), mxContentOnly(refBefore)); d != "" {
		t.Fatalf("sandbox.CopyTree made a different tree (-original +copy):\n%s", d)
	}
	refRes, refErr := RunOps(ctx, mxDescriptor(op, copyRoot), sandbox.RealSystem{})
	refAfter := mxSnapshot(t, copyRoot)
	ref := mxReference(root, refBefore, refAfter)

	// The dry run: into a layer over the real tree, then diffed.
	layer := sandbox.NewLayerSystem(sandbox.RealSystem{}, work+".layer")
	d := mxDescriptor(op, root)
	res, err := RunOps(ctx, d, layer)
	var changes []diff.Change
	if err == nil {
		var cerr error
		if changes, cerr = diff.Compare(layer.UpperDir(), d.Scope.Filesystem.Paths, sandbox.RealSystem{}); cerr != nil {
			t.Fatalf("diff.Compare() = %v", cerr)
		}
	}
	if d := cmp.Diff(before, mxSnapshot(t, root)); d != "" {
		// The cells of a state share its tree and run at once: -run one
		// cell to be sure which touched it.
		t.Errorf("the dry run touched the real tree (-before +after):\n%s", d)
	}

	contents := mxContents(refBefore, refAfter)
	for _, c := range []string{"new\n", "step\n", "a2\n"} { // what a failed real run does not show
		sum := sha256.Sum256([]byte(c))
		contents[hex.EncodeToString(sum[:])] = c
	}
	layerOut := mxOutcome(t, root, changes, res, err, contents)
	refOut := mxOutcome(t, root, ref, refRes, refErr, contents)
	if refErr != nil && d.ActionType != descriptors.MultiStepComposite && len(ref) > 0 {
		t.Errorf("the real run failed (%v) and still changed the tree:\n%s", refErr, strings.Join(refOut, "\n"))
	}
	if err == nil && refErr == nil {
		if d := cmp.Diff(ref, changes, cmpopts.IgnoreFields(diff.Change{}, "OwnerBefore", "OwnerAfter")); d != "" {
			t.Errorf("diff.Compare() of the layer differs from the real run (-real +layer):\n%s", d)
		}
	}
	if slices.Equal(layerOut, refOut) {
		return layerOut
	}
	if reason, ok := mxDivergent[key+"@"+identity()]; ok {
		mxDivergentSeen.Store(key+"@"+identity(), true)
		t.Logf("known divergence: %s", reason)
	} else {
		t.Errorf("the dry run and the real run disagree:\nlayer:\n\t%s\nreal:\n\t%s",
			strings.Join(layerOut, "\n\t"), strings.Join(refOut, "\n\t"))
	}
	var out []string
	for _, l := range layerOut {
		out = append(out, "layer: "+l)
	}
	for _, l := range refOut {
		out = append(out, "real: "+l)
	}
	return out
}

// mxDescriptor builds op for the tree at root, with its scope.
func mxDescriptor(op mxOp, root string) *descriptors.Descriptor {
	d := op.build(root + "/s")
	d.Scope.Filesystem = descriptors.FilesystemScope{Paths: []string{root + "/s"}, Recursive: op.recursive}
	return d
}

// mxOutcome renders the result of one run: its changes (paths relative to
// root), notes, or its error.
func mxOutcome(t *testing.T, root string, changes []diff.Change, res *OpsResult, err error, contents map[string]string) []string {
	t.Helper()
	if err != nil {
		var many OpErrors
		var one *OpError
		switch {
		case errors.As(err, &many):
		case errors.As(err, &one):
			many = OpErrors{one}
		default:
			t.Errorf("RunOps() = %v, not an OpError", err)
			return []string{"error (not an OpError) " + err.Error()}
		}
		var out []string
		for _, e := range many {
			out = append(out, fmt.Sprintf("error %s (%s)", e.Rule, strings.Join(e.Field, ".")))
		}
		return out
	}
	var out []string
	for _, c := range changes {
		out = append(out, mxChangeLine(root, c, contents))
	}
	for _, n := range res.Notes {
		out = append(out, fmt.Sprintf("note %s (%s)", n.Rule, strings.Join(n.Field, ".")))
	}
	if len(out) == 0 {
		out = []string{"no change"}
	}
	return out
}

// mxChangeLine summarises c on one line: kind, type, path, then mode,
// content (by sha256, quoted when known) or link target, before → after.
func mxChangeLine(root string, c diff.Change, contents map[string]string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s %s", c.Kind, c.Type, strings.TrimPrefix(c.Path, root+"/"))
	pair := func(before, after *string, show func(string) string) {
		switch {
		case before == nil && after == nil:
		case before == nil:
			b.WriteString(" " + show(*after))
		case after == nil:
			b.WriteString(" " + show(*before))
		case *before == *after:
			b.WriteString(" " + show(*after))
		default:
			b.WriteString(" " + show(*before) + "→" + show(*after))
		}
	}
	pair(c.ModeBefore, c.ModeAfter, func(s string) string { return s })
	if c.SHA256Before != nil && c.SHA256After != nil && *c.SHA256Before == *c.SHA256After {
		b.WriteString(" (same content)")
	} else {
		pair(c.SHA256Before, c.SHA256After, func(sum string) string {
			if s, ok := contents[sum]; ok {
				return strconv.Quote(s)
			}
			return "sha256:" + sum[:12]
		})
	}
	pair(c.LinkBefore, c.LinkAfter, func(s string) string { return "-> " + s })
	return b.String()
}

// checkMatrixGolden compares the outcomes seen as who ("root" or "user")
// with the golden file, or records them there with -update.
func checkMatrixGolden(t *testing.T, who string, outcomes map[string][]string) {
	t.Helper()
	golden, err := readMatrixGolden(matrixGolden)
	if err != nil && !(updating() && errors.Is(err, fs.ErrNotExist)) {
		t.Fatal(err)
	}
	if updating() {
		for _, op := range mxOps {
			for _, st := range mxStates {
				k := mxKey(op, st)
				g := golden[k]
				if who == "root" {
					g.root = outcomes[k]
				} else {
					if g.root == nil {
						t.Fatalf("%s: no outcome as root in %s: run -update as root first", k, matrixGolden)
					}
					g.user = outcomes[k]
				}
				if slices.Equal(g.root, g.user) {
					g.user = nil
				}
				golden[k] = g
			}
		}
		if err := os.WriteFile(matrixGolden, formatMatrixGolden(golden), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	var want, got bytes.Buffer
	for _, op := range mxOps {
		for _, st := range mxStates {
			k := mxKey(op, st)
			g, ok := golden[k]
			if !ok {
				t.Errorf("%s: cell missing from %s (run -update)", k, matrixGolden)
				continue
			}
			w := g.root
			if who == "user" && g.user != nil {
				w = g.user
			}
			fmt.Fprintf(&want, "== %s\n%s\n", k, strings.Join(w, "\n"))
			fmt.Fprintf(&got, "== %s\n%s\n", k, strings.Join(outcomes[k], "\n"))
		}
	}
	if len(golden) != len(mxOps)*len(mxStates) {
		t.Errorf("%s has %d cells, the matrix %d (run -update)", matrixGolden, len(golden), len(mxOps)*len(mxStates))
	}
	if d := cmp.Diff(strings.Split(want.String(), "\n"), strings.Split(got.String(), "\n")); d != "" {
		t.Errorf("outcomes as %s differ from %s (-want +got):\n%s", who, matrixGolden, d)
	}
}

// A goldenCell is one cell's outcome as root, and as an ordinary user when
// that differs (else nil).
type goldenCell struct{ root, user []string }

// readMatrixGolden parses the golden file: "== op/state" starts a cell,
// "-- as an ordinary user" its second outcome, "#" a comment, and every
// other line, indented by a tab, is a line of the outcome.
func readMatrixGolden(name string) (map[string]goldenCell, error) {
	out := map[string]goldenCell{}
	f, err := os.Open(name)
	if err != nil {
		return out, err
	}
	defer f.Close()
	var key string
	var user bool
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "== "):
			key, user = strings.TrimPrefix(line, "== "), false
			if _, dup := out[key]; dup {
				return nil, fmt.Errorf("%s:%d: cell %s again", name, n, key)
			}
			out[key] = goldenCell{root: []string{}}
		case line == "-- as an ordinary user" && key != "":
			user = true
			g := out[key]
			g.user = []string{}
			out[key] = g
		case strings.HasPrefix(line, "\t") && key != "":
			g := out[key]
			if user {
				g.user = append(g.user, line[1:])
			} else {
				g.root = append(g.root, line[1:])
			}
			out[key] = g
		default:
			return nil, fmt.Errorf("%s:%d: unexpected line %q", name, n, line)
		}
	}
	return out, sc.Err()
}

func formatMatrixGolden(cells map[string]goldenCell) []byte {
	var b bytes.Buffer
	b.WriteString(`# The convergence matrix of plan/matrix_test.go: each file operation act
# carries out × each prior state of its target s/t (scope s, not recursive
# unless said). The prior tree always holds s/f (JSON 0644) and s/src; the
# states add s/t:
#   absent; file (JSON 0644); file-mode (4750); file-ro (0444);
#   dir-empty (0755); dir (0755: a, sub/ 0700, sub/b); dir-mode (3775: a);
#   dir-ro (0555: a); symlink-file (-> f); symlink-dir (-> d, with s/d/x);
#   symlink-out (-> ../out/secret, out/ outside the scope);
#   symlink-dangling (-> nope).
# A cell lists the changes diff.Compare found in the layer — identical to
# those of the same run on the real system — then the notes, or the
# OpError rules (field) when both runs refused. "layer:"/"real:" lines mark
# a known divergence. "-- as an ordinary user" gives the outcome as nobody
# where it differs from root's.
#
# Regenerate as root: go test ./plan -run TestMatrix -update
`)
	for _, op := range mxOps {
		fmt.Fprintf(&b, "\n# %s: %s\n", op.name, op.doc)
		for _, st := range mxStates {
			k := mxKey(op, st)
			g := cells[k]
			fmt.Fprintf(&b, "== %s\n", k)
			for _, l := range g.root {
				fmt.Fprintf(&b, "\t%s\n", l)
			}
			if g.user != nil {
				b.WriteString("-- as an ordinary user\n")
				for _, l := range g.user {
					fmt.Fprintf(&b, "\t%s\n", l)
				}
			}
		}
	}
	return b.Bytes()
}

// mxWorkDir makes the matrix's scratch directory, removed at the end of
// the test: on /dev/shm when it takes the overlay xattrs a layer needs,
// else in TMPDIR. The matrix tests act, not the disk, and its few thousand
// mkdirs cost twenty times more on a journaling disk (up to 1 ms each on
// a CI VM) than on tmpfs; the other tests of the package use TMPDIR. Not
// t.TempDir: the layer copies up every directory above the scope, so a
// shallow root saves a few mkdirs per cell.
func mxWorkDir(t *testing.T) string {
	for _, parent := range []string{"/dev/shm", os.TempDir()} {
		dir, err := os.MkdirTemp(parent, "act-matrix-")
		if err != nil {
			continue
		}
		t.Cleanup(func() {
			makeRemovable(dir)
			if err := os.RemoveAll(dir); err != nil {
				t.Error(err)
			}
		})
		if parent != "/dev/shm" || syscall.Setxattr(dir, sandbox.OpaqueXattr, []byte("y"), 0) == nil {
			return dir
		}
	}
	t.Fatal("cannot create a scratch directory")
	return ""
}

// mxTempDir is t.TempDir that can be removed even when the test left
// read-only directories in it.
func mxTempDir(t *testing.T) string {
	dir := t.TempDir()
	t.Cleanup(func() { makeRemovable(dir) }) // runs before TempDir's removal
	return dir
}

// makeRemovable gives the owner full access to every directory below dir.
func makeRemovable(dir string) {
	filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err == nil && e.IsDir() {
			os.Chmod(p, 0o700)
		}
		return nil
	})
}

// mxBuild creates entries below root with exact modes: entries first, modes
// last and deepest first so that read-only directories get filled.
func mxBuild(t *testing.T, root string, entries map[string]mxEntry) {
	t.Helper()
	keys := make([]string, 0, len(entries))
	for k := range entries {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		e, p := entries[k], filepath.Join(root, k)
		var err error
		switch e.typ {
		case "file":
			err = os.WriteFile(p, []byte(e.content), 0o600)
		case "dir":
			err = os.Mkdir(p, 0o700)
		case "symlink":
			err = os.Symlink(e.content, p)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := len(keys) - 1; i >= 0; i-- {
		e := entries[keys[i]]
		if e.typ == "symlink" {
			continue
		}
		m, err := diff.ParseMode(e.mode)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Join(root, keys[i]), m); err != nil {
			t.Fatal(err)
		}
	}
}

// An mxNode is one entry of a snapshot.
type mxNode struct {
	Type   string // file, dir, symlink or other
	Mode   string // 4-digit octal, special bits included; files and dirs
	Size   int64
	SHA256 string
	Link   string
	// Content is the content of a file of at most 256 bytes, for the
	// golden file.
	Content string
	// What proves an entry untouched.
	Ino, Nlink, UID, GID, Rdev uint64
	MtimeNs, CtimeNs           int64
}

// mxSnapshot describes every entry below root and root itself ("."),
// reading the real filesystem directly.
func mxSnapshot(t *testing.T, root string) map[string]mxNode {
	t.Helper()
	out := map[string]mxNode{}
	err := filepath.WalkDir(root, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		st := fi.Sys().(*syscall.Stat_t)
		n := mxNode{
			Ino: st.Ino, MtimeNs: st.Mtim.Nano(), CtimeNs: st.Ctim.Nano(),
			Nlink: uint64(st.Nlink), UID: uint64(st.Uid), GID: uint64(st.Gid), Rdev: st.Rdev,
		}
		switch m := fi.Mode(); {
		case m.IsRegular():
			n.Type, n.Mode, n.Size = "file", diff.FormatMode(m), fi.Size()
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(data)
			n.SHA256 = hex.EncodeToString(sum[:])
			if len(data) <= 256 {
				n.Content = string(data)
			}
		case m.IsDir():
			n.Type, n.Mode = "dir", diff.FormatMode(m)
		case m&fs.ModeSymlink != 0:
			n.Type = "symlink"
			if n.Link, err = os.Readlink(p); err != nil {
				return err
			}
		default:
			n.Type, n.Mode = "other", m.String()
		}
		out[rel] = n
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// mxContentOnly drops from s what a copy does not keep: times, inodes,
// link counts.
func mxContentOnly(s map[string]mxNode) map[string]mxNode {
	out := map[string]mxNode{}
	for k, n := range s {
		n.Ino, n.MtimeNs, n.CtimeNs, n.Nlink = 0, 0, 0, 0
		out[k] = n
	}
	return out
}

// mxContents maps the sha256 of every small file in the snapshots to its
// content.
func mxContents(snaps ...map[string]mxNode) map[string]string {
	out := map[string]string{}
	for _, s := range snaps {
		for _, n := range s {
			if n.Type == "file" && int64(len(n.Content)) == n.Size {
				out[n.SHA256] = n.Content
			}
		}
	}
	return out
}

// mxReference computes the changes from before to after, two snapshots of
// a tree, the way diff.Compare reports them (see package diff): paths under
// root (the tree the dry run ran on); a deleted directory is one change
// covering its contents; a change of type is a delete and a create; a file
// is modified when its mode, size or content differs, a directory when its
// mode does, a symlink when its target does.
func mxReference(root string, before, after map[string]mxNode) []diff.Change {
	var paths []string
	for p := range before {
		paths = append(paths, p)
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			paths = append(paths, p)
		}
	}
	slices.SortFunc(paths, func(a, b string) int { return slices.Compare(strings.Split(a, "/"), strings.Split(b, "/")) })
	var out []diff.Change
	var gone []string
	covered := func(p string) bool {
		return slices.ContainsFunc(gone, func(g string) bool { return strings.HasPrefix(p, g+"/") })
	}
	change := func(p string, k diff.Kind, b, a *mxNode) {
		c := diff.Change{Path: root + "/" + p, Kind: k}
		set := func(n *mxNode, mode **string, size **int64, sum, link **string) {
			c.Type = n.Type
			switch n.Type {
			case "file":
				*mode, *size, *sum = mxStr(n.Mode), &n.Size, mxStr(n.SHA256)
			case "dir":
				*mode = mxStr(n.Mode)
			case "symlink":
				*link = mxStr(n.Link)
			}
		}
		if b != nil {
			set(b, &c.ModeBefore, &c.SizeBefore, &c.SHA256Before, &c.LinkBefore)
		}
		if a != nil {
			set(a, &c.ModeAfter, &c.SizeAfter, &c.SHA256After, &c.LinkAfter)
		}
		out = append(out, c)
	}
	del := func(p string, b mxNode) {
		if covered(p) {
			return
		}
		change(p, diff.Delete, &b, nil)
		if b.Type == "dir" {
			gone = append(gone, p)
		}
	}
	for _, p := range paths {
		if p == "." {
			continue
		}
		b, inB := before[p]
		a, inA := after[p]
		switch {
		case !inA:
			del(p, b)
		case !inB:
			change(p, diff.Create, nil, &a)
		case a.Type != b.Type:
			del(p, b)
			change(p, diff.Create, nil, &a)
		case a.Mode != b.Mode || a.SHA256 != b.SHA256 || a.Link != b.Link:
			change(p, diff.Modify, &b, &a)
		}
	}
	return out
}
