package diff_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"golang.org/x/sys/unix"

	"github.com/act-project/act/diff"
	"github.com/act-project/act/sandbox"
)

// node is one entry of a test tree. Kind is file, dir, symlink, and in a
// layer also whiteout, opaque (an opaque dir) and fifo.
type node struct {
	path string
	kind string
	mode fs.FileMode
	data string
}

func file(p string, mode fs.FileMode, data string) node { return node{p, "file", mode, data} }
func dir(p string, mode fs.FileMode) node               { return node{p, "dir", mode, ""} }
func opaque(p string, mode fs.FileMode) node            { return node{p, "opaque", mode, ""} }
func symlink(p, target string) node                     { return node{p, "symlink", 0, target} }
func whiteout(p string) node                            { return node{p, "whiteout", 0, ""} }

// mk creates nodes under root (parents first), with exact modes.
func mk(t testing.TB, root string, nodes []node) {
	t.Helper()
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		p := filepath.Join(root, n.path)
		var err error
		switch n.kind {
		case "file":
			if err = os.WriteFile(p, []byte(n.data), 0o600); err == nil {
				err = os.Chmod(p, n.mode)
			}
		case "dir", "opaque":
			if err = os.Mkdir(p, 0o700); err == nil || n.path == "." {
				err = os.Chmod(p, n.mode)
			}
			if err == nil && n.kind == "opaque" {
				err = unix.Lsetxattr(p, "user.overlay.opaque", []byte("y"), 0)
			}
		case "symlink":
			err = os.Symlink(n.data, p)
		case "whiteout":
			err = unix.Mknod(p, unix.S_IFCHR, 0)
		case "fifo":
			err = unix.Mkfifo(p, 0o644)
		default:
			t.Fatalf("unknown kind %q", n.kind)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// sides of a change, for the expectations.
type side struct {
	typ, mode, data, link string
}

func fs_(mode, data string) *side { return &side{typ: "file", mode: mode, data: data} }
func ds(mode string) *side        { return &side{typ: "dir", mode: mode} }
func ls(target string) *side      { return &side{typ: "symlink", link: target} }

func sum(s string) *string {
	h := sha256.Sum256([]byte(s))
	v := hex.EncodeToString(h[:])
	return &v
}

func ptr[T any](v T) *T { return &v }

// change builds the expected Change of path from before to after.
func change(path string, k diff.Kind, before, after *side) diff.Change {
	c := diff.Change{Path: path, Kind: k}
	fill := func(s *side, mode **string, size **int64, hash **string, link **string) {
		c.Type = s.typ
		switch s.typ {
		case "file":
			*mode, *size, *hash = ptr(s.mode), ptr(int64(len(s.data))), sum(s.data)
		case "dir":
			*mode = ptr(s.mode)
		case "symlink":
			*link = ptr(s.link)
		}
	}
	if before != nil {
		fill(before, &c.ModeBefore, &c.SizeBefore, &c.SHA256Before, &c.LinkBefore)
	}
	if after != nil {
		fill(after, &c.ModeAfter, &c.SizeAfter, &c.SHA256After, &c.LinkAfter)
	}
	return c
}

// TestCompare reads hand-built layers: every rule of the layer format and
// of the change list, case by case.
func TestCompare(t *testing.T) {
	type tcase struct {
		name  string
		real  []node // under the scope root S
		layer []node // under <upper>/S
		roots []string
		want  func(s string) []diff.Change // s is the scope root
	}
	tests := []tcase{
		{
			name:  "empty layer",
			real:  []node{file("a", 0o644, "a")},
			layer: nil,
			want:  func(s string) []diff.Change { return nil },
		},
		{
			name:  "create file",
			layer: []node{file("a", 0o640, "new\n")},
			want: func(s string) []diff.Change {
				return []diff.Change{change(s+"/a", diff.Create, nil, fs_("0640", "new\n"))}
			},
		},
		{
			name:  "modify content",
			real:  []node{file("a", 0o644, "old\n")},
			layer: []node{file("a", 0o644, "new\n")},
			want: func(s string) []diff.Change {
				return []diff.Change{change(s+"/a", diff.Modify, fs_("0644", "old\n"), fs_("0644", "new\n"))}
			},
		},
		{
			name:  "modify mode only",
			real:  []node{file("a", 0o644, "same")},
			layer: []node{file("a", 0o4755, "same")},
			want: func(s string) []diff.Change {
				return []diff.Change{change(s+"/a", diff.Modify, fs_("0644", "same"), fs_("0755", "same"))}
			},
		},
		{
			name:  "setuid, setgid and sticky are part of the mode",
			real:  []node{file("a", 0o755, "x"), dir("d", 0o777)},
			layer: []node{file("a", 0o755|fs.ModeSetuid|fs.ModeSetgid, "x"), dir("d", 0o777|fs.ModeSticky)},
			want: func(s string) []diff.Change {
				return []diff.Change{
					change(s+"/a", diff.Modify, fs_("0755", "x"), fs_("6755", "x")),
					change(s+"/d", diff.Modify, ds("0777"), ds("1777")),
				}
			},
		},
		{
			name:  "a file copied up unchanged is no change",
			real:  []node{dir("d", 0o750), file("d/a", 0o600, "same"), file("d/b", 0o600, "b")},
			layer: []node{dir("d", 0o750), file("d/a", 0o600, "same")},
			want:  func(s string) []diff.Change { return nil },
		},
		{
			name:  "whiteout of a file",
			real:  []node{file("a", 0o600, "gone")},
			layer: []node{whiteout("a")},
			want: func(s string) []diff.Change {
				return []diff.Change{change(s+"/a", diff.Delete, fs_("0600", "gone"), nil)}
			},
		},
		{
			name:  "whiteout of a directory is one change",
			real:  []node{dir("d", 0o755), file("d/a", 0o644, "a"), dir("d/e", 0o700), file("d/e/f", 0o644, "f")},
			layer: []node{whiteout("d")},
			want: func(s string) []diff.Change {
				return []diff.Change{change(s+"/d", diff.Delete, ds("0755"), nil)}
			},
		},
		{
			name:  "whiteout of a symlink",
			real:  []node{symlink("l", "../elsewhere")},
			layer: []node{whiteout("l")},
			want: func(s string) []diff.Change {
				return []diff.Change{change(s+"/l", diff.Delete, ls("../elsewhere"), nil)}
			},
		},
		{
			name:  "whiteout over nothing is no change",
			layer: []node{whiteout("a")},
			want:  func(s string) []diff.Change { return nil },
		},
		{
			name: "opaque directory lists the real children it hides",
			real: []node{dir("d", 0o755), file("d/a", 0o644, "a"), file("d/b", 0o644, "b"),
				dir("d/sub", 0o755), file("d/sub/c", 0o644, "c"), symlink("d/l", "a")},
			layer: []node{opaque("d", 0o755), file("d/a", 0o644, "a"), file("d/new", 0o644, "n")},
			want: func(s string) []diff.Change {
				return []diff.Change{
					change(s+"/d/b", diff.Delete, fs_("0644", "b"), nil),
					change(s+"/d/l", diff.Delete, ls("a"), nil),
					change(s+"/d/new", diff.Create, nil, fs_("0644", "n")),
					change(s+"/d/sub", diff.Delete, ds("0755"), nil),
				}
			},
		},
		{
			name: "below an opaque directory every directory hides the real one",
			real: []node{dir("d", 0o755), dir("d/sub", 0o755), file("d/sub/c", 0o644, "c"),
				file("d/sub/e", 0o644, "e")},
			layer: []node{opaque("d", 0o700), dir("d/sub", 0o755), file("d/sub/c", 0o644, "c"),
				whiteout("d/sub/e")},
			want: func(s string) []diff.Change {
				return []diff.Change{
					change(s+"/d", diff.Modify, ds("0755"), ds("0700")),
					change(s+"/d/sub/e", diff.Delete, fs_("0644", "e"), nil),
				}
			},
		},
		{
			name:  "opaque directory over a real file",
			real:  []node{file("d", 0o644, "was a file")},
			layer: []node{opaque("d", 0o755), file("d/a", 0o644, "a")},
			want: func(s string) []diff.Change {
				return []diff.Change{
					change(s+"/d", diff.Delete, fs_("0644", "was a file"), nil),
					change(s+"/d", diff.Create, nil, ds("0755")),
					change(s+"/d/a", diff.Create, nil, fs_("0644", "a")),
				}
			},
		},
		{
			name:  "plain directory over a real file: the real file is not a parent",
			real:  []node{file("d", 0o644, "f")},
			layer: []node{dir("d", 0o755), file("d/a", 0o644, "a")},
			want: func(s string) []diff.Change {
				return []diff.Change{
					change(s+"/d", diff.Delete, fs_("0644", "f"), nil),
					change(s+"/d", diff.Create, nil, ds("0755")),
					change(s+"/d/a", diff.Create, nil, fs_("0644", "a")),
				}
			},
		},
		{
			name:  "file over a directory",
			real:  []node{dir("d", 0o755), file("d/a", 0o644, "a")},
			layer: []node{file("d", 0o600, "now a file")},
			want: func(s string) []diff.Change {
				return []diff.Change{
					change(s+"/d", diff.Delete, ds("0755"), nil),
					change(s+"/d", diff.Create, nil, fs_("0600", "now a file")),
				}
			},
		},
		{
			name:  "symlink changes",
			real:  []node{symlink("a", "x"), symlink("b", "y"), file("c", 0o644, "c"), symlink("d", "same")},
			layer: []node{symlink("a", "x2"), file("b", 0o644, "b"), symlink("c", "c.real"), symlink("d", "same")},
			want: func(s string) []diff.Change {
				return []diff.Change{
					change(s+"/a", diff.Modify, ls("x"), ls("x2")),
					change(s+"/b", diff.Delete, ls("y"), nil),
					change(s+"/b", diff.Create, nil, fs_("0644", "b")),
					change(s+"/c", diff.Delete, fs_("0644", "c"), nil),
					change(s+"/c", diff.Create, nil, ls("c.real")),
				}
			},
		},
		{
			name:  "new directory tree",
			layer: []node{dir("n", 0o750), dir("n/m", 0o700), file("n/m/f", 0o600, "f"), symlink("n/l", "m")},
			want: func(s string) []diff.Change {
				return []diff.Change{
					change(s+"/n", diff.Create, nil, ds("0750")),
					change(s+"/n/l", diff.Create, nil, ls("m")),
					change(s+"/n/m", diff.Create, nil, ds("0700")),
					change(s+"/n/m/f", diff.Create, nil, fs_("0600", "f")),
				}
			},
		},
		{
			name:  "the directories above the root are structure, not changes",
			layer: []node{},
			want:  func(s string) []diff.Change { return nil },
		},
		{
			name:  "the scope root's own mode",
			layer: []node{dir(".", 0o700)},
			want: func(s string) []diff.Change {
				return []diff.Change{change(s, diff.Modify, ds("0755"), ds("0700"))}
			},
		},
		{
			name:  "paths order: a directory's contents right after it, delete before create",
			layer: []node{file("a.txt", 0o644, "1"), dir("a", 0o755), file("a/b", 0o644, "2"), file("a-b", 0o644, "3")},
			real:  []node{symlink("a", "x")},
			want: func(s string) []diff.Change {
				return []diff.Change{
					change(s+"/a", diff.Delete, ls("x"), nil),
					change(s+"/a", diff.Create, nil, ds("0755")),
					change(s+"/a/b", diff.Create, nil, fs_("0644", "2")),
					change(s+"/a-b", diff.Create, nil, fs_("0644", "3")),
					change(s+"/a.txt", diff.Create, nil, fs_("0644", "1")),
				}
			},
		},
		{
			name:  "only the roots are compared",
			real:  []node{dir("in", 0o755), dir("out", 0o755)},
			layer: []node{dir("in", 0o755), file("in/a", 0o644, "a"), dir("out", 0o700), file("out/b", 0o644, "b")},
			roots: []string{"in", "in/a", "in/"},
			want: func(s string) []diff.Change {
				return []diff.Change{change(s+"/in/a", diff.Create, nil, fs_("0644", "a"))}
			},
		},
		{
			name:  "a whited-out root is deleted",
			real:  []node{dir("r", 0o755), file("r/a", 0o644, "a")},
			layer: []node{whiteout("r")},
			roots: []string{"r"},
			want: func(s string) []diff.Change {
				return []diff.Change{change(s+"/r", diff.Delete, ds("0755"), nil)}
			},
		},
		{
			name:  "a root below a whiteout is deleted",
			real:  []node{dir("p", 0o755), dir("p/r", 0o711)},
			layer: []node{whiteout("p")},
			roots: []string{"p/r"},
			want: func(s string) []diff.Change {
				return []diff.Change{change(s+"/p/r", diff.Delete, ds("0711"), nil)}
			},
		},
		{
			name:  "a root below an opaque directory and not in the layer is deleted",
			real:  []node{dir("p", 0o755), dir("p/r", 0o711), dir("p/q", 0o755)},
			layer: []node{opaque("p", 0o755)},
			roots: []string{"p/r"},
			want: func(s string) []diff.Change {
				return []diff.Change{change(s+"/p/r", diff.Delete, ds("0711"), nil)}
			},
		},
		{
			name:  "a root below an opaque directory hides its real children",
			real:  []node{dir("p", 0o755), dir("p/r", 0o755), file("p/r/a", 0o644, "a"), file("p/r/b", 0o644, "b")},
			layer: []node{opaque("p", 0o755), dir("p/r", 0o755), file("p/r/a", 0o644, "a")},
			roots: []string{"p/r"},
			want: func(s string) []diff.Change {
				return []diff.Change{change(s+"/p/r/b", diff.Delete, fs_("0644", "b"), nil)}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := filepath.Join(t.TempDir(), "scope")
			mk(t, s, tt.real)
			upper := filepath.Join(t.TempDir(), "upper")
			mk(t, upper+s, tt.layer)
			roots := []string{s}
			if tt.roots != nil {
				roots = nil
				for _, r := range tt.roots {
					roots = append(roots, filepath.Join(s, r))
				}
			}
			got, err := diff.Compare(upper, roots, sandbox.RealSystem{})
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want(s), got, ignoreOwner); d != "" {
				t.Errorf("Compare() mismatch (-want +got):\n%s", d)
			}
		})
	}
}

func TestCompareErrors(t *testing.T) {
	s := filepath.Join(t.TempDir(), "scope")
	mk(t, s, nil)
	upper := filepath.Join(t.TempDir(), "upper")
	mk(t, upper+s, []node{{path: "p", kind: "fifo"}})
	if _, err := diff.Compare(upper, []string{s}, sandbox.RealSystem{}); err == nil || !strings.Contains(err.Error(), "unsupported file type") {
		t.Errorf("a fifo in the layer: got %v, want unsupported file type", err)
	}
	if _, err := diff.Compare(upper, []string{"relative"}, sandbox.RealSystem{}); err == nil {
		t.Error("a relative root: got no error")
	}
	got, err := diff.Compare(filepath.Join(t.TempDir(), "missing"), []string{s}, sandbox.RealSystem{})
	if err != nil || got != nil {
		t.Errorf("a missing upper dir: got %v, %v; want no changes", got, err)
	}
}

// TestCompareTrustedOpaque reads the xattr form of an overlay mounted
// without userxattr, which only root can write.
func TestCompareTrustedOpaque(t *testing.T) {
	s := filepath.Join(t.TempDir(), "scope")
	mk(t, s, []node{dir("d", 0o755), file("d/a", 0o644, "a")})
	upper := filepath.Join(t.TempDir(), "upper")
	mk(t, upper+s, []node{dir("d", 0o755)})
	if err := unix.Lsetxattr(upper+s+"/d", "trusted.overlay.opaque", []byte("y"), 0); err != nil {
		t.Skipf("cannot set a trusted xattr (needs root): %v", err)
	}
	got, err := diff.Compare(upper, []string{s}, sandbox.RealSystem{})
	if err != nil {
		t.Fatal(err)
	}
	want := []diff.Change{change(s+"/d/a", diff.Delete, fs_("0644", "a"), nil)}
	if d := cmp.Diff(want, got, ignoreOwner); d != "" {
		t.Errorf("Compare() mismatch (-want +got):\n%s", d)
	}
}

// countingTree counts the calls Compare makes on the real tree.
type countingTree struct {
	diff.Tree
	lstat, open, readDir int
}

func (c *countingTree) Lstat(p string) (fs.FileInfo, error) { c.lstat++; return c.Tree.Lstat(p) }
func (c *countingTree) Open(p string) (io.ReadCloser, error) {
	c.open++
	return c.Tree.Open(p)
}
func (c *countingTree) ReadDir(p string) ([]fs.DirEntry, error) {
	c.readDir++
	return c.Tree.ReadDir(p)
}

// TestCompareCostFollowsTheChange checks that Compare looks only at the
// real twins of what the layer holds: never a directory listing of the
// real tree unless a directory is opaque, and one lstat per layer entry.
func TestCompareCostFollowsTheChange(t *testing.T) {
	s := filepath.Join(t.TempDir(), "scope")
	var real []node
	for i := range 20 {
		real = append(real, dir(fmt.Sprintf("d%02d", i), 0o755))
		for j := range 50 {
			real = append(real, file(fmt.Sprintf("d%02d/f%02d", i, j), 0o644, "x"))
		}
	}
	mk(t, s, real)
	l := sandbox.NewLayerSystem(sandbox.RealSystem{}, t.TempDir())
	for _, err := range []error{
		l.WriteFile(s+"/d03/f07", []byte("y"), 0o644),
		l.WriteFile(s+"/d03/new", []byte("n"), 0o644),
		l.Remove(s + "/d11/f00"),
		l.RemoveAll(s + "/d12"),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	tree := &countingTree{Tree: sandbox.RealSystem{}}
	got, err := diff.Compare(l.UpperDir(), []string{s}, tree)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 {
		t.Errorf("got %d changes, want 4:\n%v", len(got), got)
	}
	// Layer entries: the root, d03, f07, new, d11, f00, d12.
	if tree.lstat > 7 || tree.readDir != 0 || tree.open > 3 {
		t.Errorf("Compare made %d lstat, %d readdir, %d open calls on the real tree of 1,020 entries; want ≤ 7, 0, ≤ 3",
			tree.lstat, tree.readDir, tree.open)
	}
}

func TestChangeJSON(t *testing.T) {
	c := change("/s/a", diff.Create, nil, fs_("0644", ""))
	data, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"path":"/s/a","kind":"create","type":"file","mode_before":null,"mode_after":"0644","size_before":null,"size_after":0,` +
		`"sha256_before":null,"sha256_after":"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"}`
	if string(data) != want {
		t.Errorf("json.Marshal(Change):\n got %s\nwant %s", data, want)
	}
	l := change("/s/l", diff.Modify, ls("a"), ls("b"))
	data, _ = json.Marshal(l)
	if !strings.Contains(string(data), `"mode_before":null`) || !strings.Contains(string(data), `"link_before":"a","link_after":"b"`) {
		t.Errorf("json.Marshal(symlink Change) = %s", data)
	}
}

func TestSummary(t *testing.T) {
	changes := []diff.Change{{Kind: diff.Create}, {Kind: diff.Create}, {Kind: diff.Modify},
		{Kind: diff.Delete}, {Kind: diff.Delete}, {Kind: diff.Delete}}
	c, m, d := diff.Summary(changes)
	if c != 2 || m != 1 || d != 3 {
		t.Errorf("Summary() = %d, %d, %d; want 2, 1, 3", c, m, d)
	}
}

func TestMode(t *testing.T) {
	for _, tt := range []struct {
		mode fs.FileMode
		s    string
	}{
		{0o644, "0644"},
		{0, "0000"},
		{0o755 | fs.ModeSetuid, "4755"},
		{0o750 | fs.ModeSetgid, "2750"},
		{0o777 | fs.ModeSticky, "1777"},
		{0o777 | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky, "7777"},
	} {
		if got := diff.FormatMode(tt.mode | fs.ModeDir); got != tt.s {
			t.Errorf("FormatMode(%v) = %q, want %q", tt.mode, got, tt.s)
		}
		if got, err := diff.ParseMode(tt.s); err != nil || got != tt.mode {
			t.Errorf("ParseMode(%q) = %v, %v; want %v", tt.s, got, err, tt.mode)
		}
	}
	for _, bad := range []string{"644", "0o644", "08", "10000", "", "-644"} {
		if _, err := diff.ParseMode(bad); err == nil {
			t.Errorf("ParseMode(%q): no error", bad)
		}
	}
}

// ignoreOwner leaves OwnerBefore to TestCompareOwner: the tests' trees are
// owned by whoever runs them.
var ignoreOwner = cmpopts.IgnoreFields(diff.Change{}, "OwnerBefore")

// TestCompareOwner: a change of a real entry names its owner before, so
// that a person sees when a promotion would give it another (it is owned
// by the user act runs as after).
func TestCompareOwner(t *testing.T) {
	root := t.TempDir()
	layer := t.TempDir()
	real := filepath.Join(root, "r")
	if err := os.MkdirAll(real, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(real, "f"), []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(layer+real, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(layer+real+"/f", []byte("new\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(layer+real+"/g", []byte("created\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := diff.Compare(layer, []string{real}, sandbox.RealSystem{})
	if err != nil {
		t.Fatal(err)
	}
	uid := uint32(os.Geteuid())
	for _, c := range got {
		switch {
		case c.Path == real+"/f" && (c.OwnerBefore == nil || *c.OwnerBefore != uid):
			t.Errorf("modify of %s: owner before %v, want uid %d", c.Path, c.OwnerBefore, uid)
		case c.Path == real+"/g" && c.OwnerBefore != nil:
			t.Errorf("create of %s: owner before %d, want none", c.Path, *c.OwnerBefore)
		}
	}
	if len(got) != 2 {
		t.Errorf("Compare() = %d changes, want 2: %+v", len(got), got)
	}
}
