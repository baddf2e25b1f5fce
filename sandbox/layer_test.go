package sandbox_test

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"golang.org/x/sys/unix"

	"github.com/act-project/act/diff"
	"github.com/act-project/act/sandbox"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// childEnv marks a test process started by TestLayerUnprivileged.
const childEnv = "ACT_SANDBOX_TEST_UNPRIVILEGED"

// base is the lower tree every matrix case starts from, besides x.
var base = []spec{
	{Path: "src", Mode: 0o644, Data: "src\n"},
	{Path: "srcdir/", Mode: 0o755},
	{Path: "srcdir/a", Mode: 0o600, Data: "a\n"},
	{Path: "srcdir/link", Link: "a"},
	{Path: "srcdir/sub/", Mode: 0o750},
	{Path: "srcdir/sub/b", Mode: 0o644, Data: "b\n"},
	{Path: "keep", Mode: 0o644, Data: "keep\n"},
	{Path: "ln", Link: "keep"},
}

// A prior is the state of the path x before an operation: what the lower
// tree holds there, and the operations that already went into the layer.
type prior struct {
	name  string
	lower []spec
	prep  []func(s sandbox.System, r string) error
}

var xdir = []spec{
	{Path: "x/", Mode: 0o755},
	{Path: "x/c", Mode: 0o644, Data: "c\n"},
	{Path: "x/d/", Mode: 0o755},
	{Path: "x/d/e", Mode: 0o644, Data: "e\n"},
}

var priors = []prior{
	{name: "absent"},
	{name: "file", lower: []spec{{Path: "x", Mode: 0o644, Data: "old\n"}}},
	{name: "file-0600", lower: []spec{{Path: "x", Mode: 0o600, Data: "old\n"}}},
	{name: "file-readonly", lower: []spec{{Path: "x", Mode: 0o444, Data: "old\n"}}},
	{name: "dir", lower: xdir},
	{name: "dir-empty", lower: []spec{{Path: "x/", Mode: 0o755}}},
	{name: "dir-readonly", lower: []spec{{Path: "x/", Mode: 0o555}, {Path: "x/c", Mode: 0o644, Data: "c\n"}}},
	{name: "symlink", lower: []spec{{Path: "x", Link: "src"}}},
	{name: "layer-file", prep: ops(func(s sandbox.System, r string) error {
		return s.WriteFile(filepath.Join(r, "x"), []byte("layer\n"), 0o644)
	})},
	{name: "layer-modified", lower: []spec{{Path: "x", Mode: 0o644, Data: "old\n"}}, prep: ops(func(s sandbox.System, r string) error {
		return s.WriteFile(filepath.Join(r, "x"), []byte("mod\n"), 0o644)
	})},
	{name: "layer-whiteout", lower: []spec{{Path: "x", Mode: 0o644, Data: "old\n"}}, prep: ops(func(s sandbox.System, r string) error {
		return s.Remove(filepath.Join(r, "x"))
	})},
	{name: "layer-dir-whiteout", lower: xdir, prep: ops(func(s sandbox.System, r string) error {
		return s.RemoveAll(filepath.Join(r, "x"))
	})},
	{name: "layer-opaque", lower: xdir, prep: ops(
		func(s sandbox.System, r string) error { return s.RemoveAll(filepath.Join(r, "x")) },
		func(s sandbox.System, r string) error { return s.Mkdir(filepath.Join(r, "x"), 0o755) },
		func(s sandbox.System, r string) error {
			return s.WriteFile(filepath.Join(r, "x/c"), []byte("c2\n"), 0o644)
		},
	)},
	{name: "layer-copied-up", lower: xdir, prep: ops(func(s sandbox.System, r string) error {
		return s.WriteFile(filepath.Join(r, "x/d/e"), []byte("e2\n"), 0o644)
	})},
	{name: "layer-dir-new", prep: ops(
		func(s sandbox.System, r string) error { return s.Mkdir(filepath.Join(r, "x"), 0o700) },
		func(s sandbox.System, r string) error {
			return s.WriteFile(filepath.Join(r, "x/c"), []byte("new c\n"), 0o644)
		},
	)},
}

func ops(f ...func(s sandbox.System, r string) error) []func(s sandbox.System, r string) error {
	return f
}

// An op is one System call on the tree rooted at r. Its result, rendered
// as a string, must be the same through every System.
type op struct {
	name string
	run  func(s sandbox.System, r string) (string, error)
}

func x(r string, rel ...string) string { return filepath.Join(append([]string{r, "x"}, rel...)...) }

var matrixOps = []op{
	{"write", func(s sandbox.System, r string) (string, error) {
		return "", s.WriteFile(x(r), []byte("new\n"), 0o640)
	}},
	{"write-same", func(s sandbox.System, r string) (string, error) {
		return "", s.WriteFile(x(r), []byte("old\n"), 0o644)
	}},
	{"write-setuid", func(s sandbox.System, r string) (string, error) {
		return "", s.WriteFile(x(r), []byte("new\n"), 0o750|fs.ModeSetuid)
	}},
	{"write-inside", func(s sandbox.System, r string) (string, error) {
		return "", s.WriteFile(x(r, "new.txt"), []byte("n\n"), 0o600)
	}},
	{"write-deep", func(s sandbox.System, r string) (string, error) {
		return "", s.WriteFile(filepath.Join(r, "srcdir/sub/new"), []byte("deep\n"), 0o644)
	}},
	{"mkdir", func(s sandbox.System, r string) (string, error) { return "", s.Mkdir(x(r), 0o750) }},
	{"mkdir-inside", func(s sandbox.System, r string) (string, error) { return "", s.Mkdir(x(r, "d2"), 0o770|fs.ModeSetgid) }},
	{"remove", func(s sandbox.System, r string) (string, error) { return "", s.Remove(x(r)) }},
	{"removeall", func(s sandbox.System, r string) (string, error) { return "", s.RemoveAll(x(r)) }},
	{"remove-inside", func(s sandbox.System, r string) (string, error) { return "", s.Remove(x(r, "c")) }},
	{"removeall-then-write", func(s sandbox.System, r string) (string, error) {
		if err := s.RemoveAll(x(r)); err != nil {
			return "", err
		}
		return "", s.WriteFile(x(r), []byte("again\n"), 0o644)
	}},
	{"rename-away", func(s sandbox.System, r string) (string, error) {
		return "", s.Rename(x(r), filepath.Join(r, "y"))
	}},
	{"rename-file-in", func(s sandbox.System, r string) (string, error) {
		return "", s.Rename(filepath.Join(r, "src"), x(r))
	}},
	{"rename-link-in", func(s sandbox.System, r string) (string, error) {
		return "", s.Rename(filepath.Join(r, "ln"), x(r))
	}},
	{"rename-dir-in", func(s sandbox.System, r string) (string, error) {
		return "", s.Rename(filepath.Join(r, "srcdir"), x(r))
	}},
	{"chmod", func(s sandbox.System, r string) (string, error) { return "", s.Chmod(x(r), 0o700) }},
	{"chmod-sticky", func(s sandbox.System, r string) (string, error) { return "", s.Chmod(x(r), 0o777|fs.ModeSticky) }},
	{"chmod-root", func(s sandbox.System, r string) (string, error) { return "", s.Chmod(r, 0o700) }},
	{"lstat", func(s sandbox.System, r string) (string, error) {
		fi, err := s.Lstat(x(r))
		if err != nil {
			return "", err
		}
		size := fi.Size()
		if fi.IsDir() {
			size = 0 // directory sizes differ between filesystems
		}
		return fmt.Sprintf("%s %v %d", fi.Name(), fi.Mode(), size), nil
	}},
	{"open", func(s sandbox.System, r string) (string, error) {
		f, err := s.Open(x(r))
		if err != nil {
			return "", err
		}
		defer f.Close()
		data, err := io.ReadAll(f)
		return string(data), err
	}},
	{"readdir", func(s sandbox.System, r string) (string, error) { return readDir(s, x(r)) }},
	{"readdir-root", func(s sandbox.System, r string) (string, error) { return readDir(s, r) }},
	{"readlink", func(s sandbox.System, r string) (string, error) { return s.Readlink(x(r)) }},
}

func readDir(s sandbox.System, p string) (string, error) {
	ents, err := s.ReadDir(p)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name()+":"+e.Type().String())
	}
	return strings.Join(names, " "), err
}

// matrixCase is one prior × op, set up: the lower tree at R (lower), a
// LayerSystem over it, and the strict snapshot of the lower.
type matrixCase struct {
	r      string
	layer  *sandbox.LayerSystem
	before map[string]entry
}

func setup(t *testing.T, p prior) matrixCase {
	t.Helper()
	r := filepath.Join(tempDir(t), "lower")
	build(t, r, append(append([]spec{}, base...), p.lower...))
	return matrixCase{
		r:      r,
		layer:  sandbox.NewLayerSystem(sandbox.RealSystem{}, filepath.Join(tempDir(t), "layer")),
		before: snapshot(t, sandbox.RealSystem{}, r, true),
	}
}

func runPrep(t *testing.T, s sandbox.System, r string, p prior) {
	t.Helper()
	for i, f := range p.prep {
		if err := f(s, r); err != nil {
			t.Fatalf("prep %d: %v", i, err)
		}
	}
}

// TestLayerMatrix runs every operation against every prior state of the
// path, through a LayerSystem and through the real filesystem on a copy of
// the tree, and checks that:
//   - both give the same result or the same class of error;
//   - the merged view of the layer equals the real copy afterwards;
//   - the lower tree is unchanged, to the nanosecond of its mtimes and ctimes;
//   - diff.Compare of the layer equals the changes between the whole trees
//     before and after (the oracle), and testdata/layer_matrix.golden.
func TestLayerMatrix(t *testing.T) {
	t.Parallel()
	var sections []section
	complete := true
	for _, p := range priors {
		for _, o := range matrixOps {
			name := p.name + "/" + o.name
			t.Run(name, func(t *testing.T) {
				unprivileged := os.Geteuid() != 0
				if unprivileged && p.name == "dir-readonly" {
					// As root, the golden file has no permission errors.
					complete = false
					if strings.HasPrefix(o.name, "removeall") {
						t.Skip("unprivileged: a LayerSystem does not check write permission on the real directories below one it deletes")
					}
				}
				c := setup(t, p)
				cp := filepath.Join(tempDir(t), "copy")
				if err := sandbox.CopyTree(c.r, cp); err != nil {
					t.Fatal(err)
				}
				real := osSystem{from: c.r, to: cp}
				runPrep(t, c.layer, c.r, p)
				runPrep(t, real, c.r, p)
				mergedBefore := snapshot(t, c.layer, c.r, false)

				got, gotErr := o.run(c.layer, c.r)
				symlinkInPath := p.name == "symlink" && strings.HasSuffix(o.name, "-inside")
				switch {
				case symlinkInPath:
					if !errors.Is(gotErr, sandbox.ErrSymlinkInPath) {
						t.Fatalf("%s through a symlink: got %v, want ErrSymlinkInPath", o.name, gotErr)
					}
				default:
					want, wantErr := o.run(real, c.r)
					if g, w := errClass(gotErr), errClass(wantErr); g != w || got != want {
						t.Fatalf("%s: got (%q, %s), want (%q, %s) [%v]", o.name, got, g, want, w, gotErr)
					}
				}

				merged := snapshot(t, c.layer, c.r, false)
				if symlinkInPath {
					if d := cmp.Diff(mergedBefore, merged); d != "" {
						t.Errorf("a refused operation changed the merged view (-before +after):\n%s", d)
					}
				} else if d := cmp.Diff(snapshot(t, real, c.r, false), merged); d != "" {
					t.Errorf("merged view differs from the real tree (-real +merged):\n%s", d)
				}
				if d := cmp.Diff(c.before, snapshot(t, sandbox.RealSystem{}, c.r, true)); d != "" {
					t.Fatalf("the lower tree changed (-before +after):\n%s", d)
				}

				changes, err := diff.Compare(c.layer.UpperDir(), []string{c.r}, sandbox.RealSystem{})
				if err != nil {
					t.Fatal(err)
				}
				lowerView := snapshot(t, sandbox.RealSystem{}, c.r, false)
				if d := cmp.Diff(oracle(c.r, lowerView, merged), changes, ignoreOwner); d != "" {
					t.Errorf("Compare() mismatch with the whole-tree oracle (-want +got):\n%s", d)
				}
				if !unprivileged || p.name != "dir-readonly" {
					sections = append(sections, section{name, fmt.Sprintf("%s %q\n%s", errClass(gotErr), got, compact(c.r, changes))})
				}
			})
		}
	}
	checkSections(t, "testdata/layer_matrix.golden", sections, complete)
}

// A section is the outcome of one case in a golden file: "## name" and
// the text.
type section struct{ name, text string }

// checkSections compares sections with the golden file name (or, with
// -update, writes them). An incomplete run checks the sections it has.
func checkSections(t *testing.T, name string, got []section, complete bool) {
	t.Helper()
	if t.Failed() {
		return
	}
	var b strings.Builder
	for _, s := range got {
		fmt.Fprintf(&b, "## %s\n%s", s.name, s.text)
	}
	if *update {
		if !complete || testing.Short() {
			t.Fatal("-update needs a complete run, as root")
		}
		if err := os.WriteFile(name, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if complete {
		if d := cmp.Diff(string(data), b.String()); d != "" {
			t.Errorf("%s mismatch (-want +got):\n%s", name, d)
		}
		return
	}
	want := map[string]string{}
	for _, part := range strings.Split(string(data), "## ")[1:] {
		n, text, _ := strings.Cut(part, "\n")
		want[n] = text
	}
	for _, s := range got {
		if d := cmp.Diff(want[s.name], s.text); d != "" {
			t.Errorf("%s, section %s mismatch (-want +got):\n%s", name, s.name, d)
		}
	}
}

// TestLayerOverlayEquivalence proves that one diff serves both kinds of
// layer: for every prior × op of the matrix, the same operations carried
// out with os calls through a kernel overlay mount (lower = the real tree,
// upper = a second layer's Upper(root), userxattr) leave an upper dir that
// diff.Compare reads as exactly the changes of the LayerSystem's layer,
// and give the same results on the way.
func TestLayerOverlayEquivalence(t *testing.T) {
	t.Parallel()
	if os.Getenv(childEnv) != "" {
		t.Skip("unprivileged: mounting needs root")
	}
	if err := canMountOverlay(t); err != nil {
		if errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.ENODEV) {
			t.Skipf("cannot mount overlayfs here (%v): EPERM means no CAP_SYS_ADMIN, ENODEV no overlay in the kernel", err)
		}
		t.Fatalf("mount overlay: %v", err)
	}

	for _, p := range priors {
		for _, o := range matrixOps {
			t.Run(p.name+"/"+o.name, func(t *testing.T) {
				c := setup(t, p)
				runPrep(t, c.layer, c.r, p)
				got, gotErr := o.run(c.layer, c.r)

				// The same through a kernel overlay.
				ov := sandbox.NewLayerSystem(sandbox.RealSystem{}, filepath.Join(tempDir(t), "layer"))
				if err := ov.CopyUpDir(c.r); err != nil {
					t.Fatal(err)
				}
				mnt, work := filepath.Join(tempDir(t), "mnt"), filepath.Join(filepath.Dir(ov.UpperDir()), "work")
				for _, d := range []string{mnt, work} {
					if err := os.Mkdir(d, 0o755); err != nil {
						t.Fatal(err)
					}
				}
				opts := fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s,userxattr", c.r, ov.Upper(c.r), work)
				if err := unix.Mount("overlay", mnt, "overlay", 0, opts); err != nil {
					t.Fatalf("mount overlay %s: %v", opts, err)
				}
				mounted := true
				unmount := func() {
					if mounted {
						if err := unix.Unmount(mnt, 0); err != nil {
							t.Fatalf("unmount: %v", err)
						}
						mounted = false
					}
				}
				defer unmount()
				viaMount := osSystem{from: c.r, to: mnt}
				runPrep(t, viaMount, c.r, p)
				want, wantErr := o.run(viaMount, c.r)
				if errors.Is(gotErr, sandbox.ErrSymlinkInPath) {
					// The kernel follows the link; act refuses before.
				} else if g, w := errClass(gotErr), errClass(wantErr); g != w || got != want {
					t.Fatalf("%s: layer gave (%q, %s), overlay (%q, %s)", o.name, got, g, want, w)
				}
				unmount()

				layerChanges, err := diff.Compare(c.layer.UpperDir(), []string{c.r}, sandbox.RealSystem{})
				if err != nil {
					t.Fatal(err)
				}
				overlayChanges, err := diff.Compare(ov.UpperDir(), []string{c.r}, sandbox.RealSystem{})
				if err != nil {
					t.Fatal(err)
				}
				if errors.Is(gotErr, sandbox.ErrSymlinkInPath) {
					return
				}
				if d := cmp.Diff(overlayChanges, layerChanges); d != "" {
					t.Errorf("Compare(LayerSystem layer) differs from Compare(overlay upper) (-overlay +layer):\n%s", d)
				}
				if d := cmp.Diff(c.before, snapshot(t, sandbox.RealSystem{}, c.r, true)); d != "" {
					t.Fatalf("the lower tree changed (-before +after):\n%s", d)
				}
			})
		}
	}
}

// canMountOverlay mounts and unmounts a small overlay with userxattr.
func canMountOverlay(t *testing.T) error {
	dir := tempDir(t)
	for _, d := range []string{"lower", "upper", "work", "mnt"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	opts := fmt.Sprintf("lowerdir=%s/lower,upperdir=%s/upper,workdir=%s/work,userxattr", dir, dir, dir)
	if err := unix.Mount("overlay", filepath.Join(dir, "mnt"), "overlay", 0, opts); err != nil {
		return err
	}
	return unix.Unmount(filepath.Join(dir, "mnt"), 0)
}

// TestLayerShape checks the layer's on-disk form, entry by entry: what
// overlayfs would find in the upper dir. It is not parallel: a case sets
// the process's umask (the parallel tests run after it).
func TestLayerShape(t *testing.T) {
	type want struct {
		rel  string // relative to the root
		kind string // "absent", "whiteout", "opaque", "dir", "file", "symlink"
		mode fs.FileMode
	}
	tests := []struct {
		name  string
		lower []spec
		run   func(s sandbox.System, r string) error
		want  []want
	}{
		{
			name:  "remove lower file is a whiteout",
			lower: []spec{{Path: "f", Mode: 0o644, Data: "f"}},
			run:   func(s sandbox.System, r string) error { return s.Remove(filepath.Join(r, "f")) },
			want:  []want{{rel: "f", kind: "whiteout"}},
		},
		{
			name: "remove layer-only file leaves nothing",
			run: func(s sandbox.System, r string) error {
				if err := s.WriteFile(filepath.Join(r, "f"), nil, 0o644); err != nil {
					return err
				}
				return s.Remove(filepath.Join(r, "f"))
			},
			want: []want{{rel: "f", kind: "absent"}},
		},
		{
			name:  "removeall lower dir is one whiteout",
			lower: xdir,
			run:   func(s sandbox.System, r string) error { return s.RemoveAll(filepath.Join(r, "x")) },
			want:  []want{{rel: "x", kind: "whiteout"}},
		},
		{
			name:  "mkdir over a deleted lower dir is opaque",
			lower: xdir,
			run: func(s sandbox.System, r string) error {
				if err := s.RemoveAll(filepath.Join(r, "x")); err != nil {
					return err
				}
				return s.Mkdir(filepath.Join(r, "x"), 0o711)
			},
			want: []want{{rel: "x", kind: "opaque", mode: 0o711}, {rel: "x/c", kind: "absent"}},
		},
		{
			name:  "copy-up of ancestors is plain with the lower modes",
			lower: []spec{{Path: "a/", Mode: 0o751}, {Path: "a/b/", Mode: 0o705}},
			run: func(s sandbox.System, r string) error {
				return s.WriteFile(filepath.Join(r, "a/b/f"), []byte("f"), 0o640)
			},
			want: []want{{rel: "a", kind: "dir", mode: 0o751}, {rel: "a/b", kind: "dir", mode: 0o705}, {rel: "a/b/f", kind: "file", mode: 0o640}},
		},
		{
			name:  "copy-up through a read-only lower dir",
			lower: []spec{{Path: "ro/", Mode: 0o555}, {Path: "ro/w/", Mode: 0o755}},
			run: func(s sandbox.System, r string) error {
				return s.WriteFile(filepath.Join(r, "ro/w/f"), []byte("f"), 0o600)
			},
			want: []want{{rel: "ro", kind: "dir", mode: 0o555}, {rel: "ro/w", kind: "dir", mode: 0o755}, {rel: "ro/w/f", kind: "file", mode: 0o600}},
		},
		{
			name:  "chmod copies a file up with its content",
			lower: []spec{{Path: "f", Mode: 0o644, Data: "content"}},
			run:   func(s sandbox.System, r string) error { return s.Chmod(filepath.Join(r, "f"), 0o755|fs.ModeSetgid) },
			want:  []want{{rel: "f", kind: "file", mode: 0o755 | fs.ModeSetgid}},
		},
		{
			name: "write ignores the umask",
			run: func(s sandbox.System, r string) error {
				old := syscall.Umask(0o077)
				defer syscall.Umask(old)
				return s.WriteFile(filepath.Join(r, "f"), nil, 0o666)
			},
			want: []want{{rel: "f", kind: "file", mode: 0o666}},
		},
		{
			name:  "rename of a lower file moves a copy and whites out the source",
			lower: []spec{{Path: "f", Mode: 0o604, Data: "f"}},
			run: func(s sandbox.System, r string) error {
				return s.Rename(filepath.Join(r, "f"), filepath.Join(r, "g"))
			},
			want: []want{{rel: "f", kind: "whiteout"}, {rel: "g", kind: "file", mode: 0o604}},
		},
		{
			name:  "rename of a dir over a whiteout is opaque",
			lower: []spec{{Path: "d/", Mode: 0o755}, {Path: "d/f", Mode: 0o644}, {Path: "e/", Mode: 0o700}, {Path: "e/g", Mode: 0o644}},
			run: func(s sandbox.System, r string) error {
				if err := s.RemoveAll(filepath.Join(r, "e")); err != nil {
					return err
				}
				return s.Rename(filepath.Join(r, "d"), filepath.Join(r, "e"))
			},
			want: []want{{rel: "d", kind: "whiteout"}, {rel: "e", kind: "opaque", mode: 0o755}, {rel: "e/f", kind: "file", mode: 0o644}, {rel: "e/g", kind: "absent"}},
		},
		{
			name:  "rename of a new dir over a whiteout moves it and makes it opaque",
			lower: []spec{{Path: "e/", Mode: 0o700}, {Path: "e/g", Mode: 0o644}},
			run: func(s sandbox.System, r string) error {
				for _, err := range []error{
					s.Mkdir(filepath.Join(r, "n"), 0o751),
					s.WriteFile(filepath.Join(r, "n/f"), []byte("f"), 0o600),
					s.RemoveAll(filepath.Join(r, "e")),
				} {
					if err != nil {
						return err
					}
				}
				return s.Rename(filepath.Join(r, "n"), filepath.Join(r, "e"))
			},
			want: []want{{rel: "n", kind: "absent"}, {rel: "e", kind: "opaque", mode: 0o751}, {rel: "e/f", kind: "file", mode: 0o600}, {rel: "e/g", kind: "absent"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := filepath.Join(tempDir(t), "lower")
			build(t, r, tt.lower)
			before := snapshot(t, sandbox.RealSystem{}, r, true)
			l := sandbox.NewLayerSystem(sandbox.RealSystem{}, tempDir(t))
			if err := tt.run(l, r); err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				u := l.Upper(filepath.Join(r, w.rel))
				fi, err := os.Lstat(u)
				got := "absent"
				var mode fs.FileMode
				switch {
				case errors.Is(err, fs.ErrNotExist):
				case err != nil:
					t.Fatal(err)
				case fi.Mode().Type() == fs.ModeDevice|fs.ModeCharDevice && fi.Sys().(*syscall.Stat_t).Rdev == 0:
					got = "whiteout"
				case fi.IsDir():
					got, mode = "dir", fi.Mode()&^fs.ModeDir
					var buf [8]byte
					if n, err := unix.Lgetxattr(u, sandbox.OpaqueXattr, buf[:]); err == nil && string(buf[:n]) == "y" {
						got = "opaque"
					}
				case fi.Mode().IsRegular():
					got, mode = "file", fi.Mode()
					if data, err := os.ReadFile(filepath.Join(r, w.rel)); err == nil {
						if up, _ := os.ReadFile(u); !bytes.Equal(up, data) {
							t.Errorf("%s: copied-up content %q, lower %q", w.rel, up, data)
						}
					}
				default:
					got = fi.Mode().Type().String()
				}
				if got != w.kind || (w.mode != 0 && mode != w.mode) {
					t.Errorf("%s in the upper dir: got %s %v, want %s %v", w.rel, got, mode, w.kind, w.mode)
				}
			}
			if d := cmp.Diff(before, snapshot(t, sandbox.RealSystem{}, r, true)); d != "" {
				t.Errorf("the lower tree changed (-before +after):\n%s", d)
			}
		})
	}
}

// TestLayerErrors checks path resolution: intermediate symlinks, in the
// layer or below, are refused; an upper non-directory ancestor is
// ENOTDIR; a whiteout or opaque directory hides what is below.
func TestLayerErrors(t *testing.T) {
	r := filepath.Join(tempDir(t), "lower")
	build(t, r, []spec{
		{Path: "dir/", Mode: 0o755},
		{Path: "dir/f", Mode: 0o644, Data: "f"},
		{Path: "lowlink", Link: "dir"},
		{Path: "gone/", Mode: 0o755},
		{Path: "gone/f", Mode: 0o644, Data: "f"},
		{Path: "op/", Mode: 0o755},
		{Path: "op/f", Mode: 0o644, Data: "f"},
		{Path: "file", Mode: 0o644, Data: "f"},
	})
	l := sandbox.NewLayerSystem(sandbox.RealSystem{}, tempDir(t))
	p := func(rel string) string { return filepath.Join(r, rel) }
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(l.CopyUpDir(r))
	must(os.Symlink("dir", l.Upper(p("uplink")))) // a symlink already in the layer
	must(l.RemoveAll(p("gone")))
	must(l.RemoveAll(p("op")))
	must(l.Mkdir(p("op"), 0o755))
	must(l.WriteFile(p("upfile"), []byte("u"), 0o644))

	tests := []struct {
		name string
		err  error
		want string
	}{
		{"lower symlink in path", l.WriteFile(p("lowlink/g"), nil, 0o644), "ErrSymlinkInPath"},
		{"upper symlink in path", l.Mkdir(p("uplink/g"), 0o755), "ErrSymlinkInPath"},
		{"lstat through symlink", errOf(l.Lstat(p("lowlink/f"))), "ErrSymlinkInPath"},
		{"upper file ancestor", l.WriteFile(p("upfile/g"), nil, 0o644), "ENOTDIR"},
		{"lower file ancestor", errOf(l.Lstat(p("file/g"))), "ENOTDIR"},
		{"whited-out ancestor", errOf(l.Lstat(p("gone/f"))), "ErrNotExist"},
		{"whited-out path", errOf(l.Lstat(p("gone"))), "ErrNotExist"},
		{"opaque hides lower", errOf(l.Lstat(p("op/f"))), "ErrNotExist"},
		{"removeall below whiteout", l.RemoveAll(p("gone/f")), "ok"},
		{"remove absent", l.Remove(p("nothing")), "ErrNotExist"},
		{"mkdir existing", l.Mkdir(p("dir"), 0o755), "ErrExist"},
		{"remove non-empty", l.Remove(p("dir")), "ENOTEMPTY"},
		{"rename into itself", l.Rename(p("dir"), p("dir/sub")), "EINVAL"},
		{"relative path", errOf(l.Lstat("rel/path")), "EINVAL"},
		{"unclean path", errOf(l.Lstat(r + "/dir/../file")), "EINVAL"},
		{"open dir", errOf(l.Open(p("dir"))), "EISDIR"},
		{"open symlink", errOf(l.Open(p("lowlink"))), "ELOOP"},
		{"chmod symlink", l.Chmod(p("lowlink"), 0o600), "EOPNOTSUPP"},
		{"readlink file", errOf(l.Readlink(p("file"))), "EINVAL"},
		{"readdir file", errOf(l.ReadDir(p("file"))), "ENOTDIR"},
		{"remove root", l.RemoveAll("/"), "EBUSY"},
	}
	for _, tt := range tests {
		if got := errClass(tt.err); got != tt.want {
			t.Errorf("%s: got %s (%v), want %s", tt.name, got, tt.err, tt.want)
		}
		var pe *fs.PathError
		if tt.err != nil && (!errors.As(tt.err, &pe) || strings.Contains(pe.Path, l.UpperDir())) {
			t.Errorf("%s: %v is not a *fs.PathError on the real path", tt.name, tt.err)
		}
	}
	ents, err := l.ReadDir(r)
	must(err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if d := cmp.Diff([]string{"dir", "file", "lowlink", "op", "upfile", "uplink"}, names); d != "" {
		t.Errorf("merged ReadDir (-want +got):\n%s", d)
	}
}

func errOf[T any](_ T, err error) error { return err }

// TestLayerUnprivileged runs the LayerSystem tests again as an ordinary
// user (nobody), since plans are made by whoever runs act: whiteouts by
// mknod and user.* xattrs must work without privilege.
func TestLayerUnprivileged(t *testing.T) {
	t.Parallel()
	if os.Getenv(childEnv) != "" {
		t.Skip("already the unprivileged child")
	}
	if os.Geteuid() != 0 {
		t.Skip("not root: the other tests already ran unprivileged")
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("setpriv (util-linux) is not installed: cannot switch to an ordinary user")
	}
	if testing.Short() {
		t.Skip("-short")
	}
	dir := tempDir(t)
	for d := dir; d != "/"; d = filepath.Dir(d) {
		if fi, err := os.Stat(d); err == nil && fi.Mode()&0o005 != 0o005 {
			if err := os.Chmod(d, fi.Mode()|0o005); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.Chmod(d, fi.Mode()) })
		}
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "sandbox.test")
	// A hard link where it can be: a copy written here while another
	// test's goroutine forks may still be open for writing in that child
	// when it is run ("text file busy").
	if os.Link(self, bin) != nil {
		data, err := os.ReadFile(self)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(bin, data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(tmp, 0o1777); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "--",
		bin, "-test.run=^TestLayer(Matrix|Shape|Errors|Random|OverlayEquivalence)$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), childEnv+"=1", "TMPDIR="+tmp)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("as uid 65534: %v\n%s", err, out)
	}
	pass, skip := bytes.Count(out, []byte("--- PASS")), bytes.Count(out, []byte("--- SKIP"))
	t.Logf("as uid 65534: %d passed, %d skipped", pass, skip)
	if pass < len(priors)*len(matrixOps)/2 {
		t.Errorf("as uid 65534, too few tests ran:\n%s", out)
	}
}

// ignoreOwner leaves out the owner before of a change, which the oracle
// does not model (diff's own tests check it).
var ignoreOwner = cmpopts.IgnoreFields(diff.Change{}, "OwnerBefore")
