package sandbox_test

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/act-project/act/diff"
	"github.com/act-project/act/sandbox"
)

// randomOps returns a random sequence of n write operations on a few
// names, so that they meet each other's results: composites of the
// operations act carries out.
func randomOps(rng *rand.Rand, n int) []op {
	paths := []string{"a", "b", "c", "a/b", "a/c", "b/a", "a/b/c", "srcdir", "srcdir/sub", "srcdir/a", "ln", "src"}
	modes := []fs.FileMode{0o644, 0o600, 0o755, 0o700, 0o750 | fs.ModeSetgid}
	if os.Geteuid() != 0 {
		// Directories an ordinary user cannot search cannot be compared.
		modes = []fs.FileMode{0o755, 0o700, 0o750 | fs.ModeSetgid, 0o1777}
	}
	var ops []op
	for range n {
		p, q := paths[rng.IntN(len(paths))], paths[rng.IntN(len(paths))]
		m := modes[rng.IntN(len(modes))]
		data := []byte(fmt.Sprint(rng.IntN(3)))
		var o op
		switch rng.IntN(7) {
		case 0, 1:
			o = op{"write " + p, func(s sandbox.System, r string) (string, error) {
				return "", s.WriteFile(filepath.Join(r, p), data, m)
			}}
		case 2:
			o = op{"mkdir " + p, func(s sandbox.System, r string) (string, error) {
				return "", s.Mkdir(filepath.Join(r, p), m)
			}}
		case 3:
			o = op{"remove " + p, func(s sandbox.System, r string) (string, error) {
				return "", s.Remove(filepath.Join(r, p))
			}}
		case 4:
			o = op{"removeall " + p, func(s sandbox.System, r string) (string, error) {
				return "", s.RemoveAll(filepath.Join(r, p))
			}}
		case 5:
			o = op{"rename " + p + " " + q, func(s sandbox.System, r string) (string, error) {
				return "", s.Rename(filepath.Join(r, p), filepath.Join(r, q))
			}}
		case 6:
			o = op{"chmod " + p, func(s sandbox.System, r string) (string, error) {
				return "", s.Chmod(filepath.Join(r, p), m)
			}}
		}
		ops = append(ops, o)
	}
	return ops
}

// TestLayerRandom runs random sequences of operations through a
// LayerSystem, the real filesystem on a copy and, as root, a kernel
// overlay, and checks after each sequence that the three agree: same
// results, merged view = real copy, lower unchanged, Compare = the
// whole-tree oracle = Compare of the overlay's upper dir.
func TestLayerRandom(t *testing.T) {
	t.Parallel()
	n := 60
	if testing.Short() {
		n = 10
	}
	overlay := os.Getenv(childEnv) == "" && canMountOverlay(t) == nil
	rng := rand.New(rand.NewPCG(4, 2))
	for i := range n {
		seq := randomOps(rng, 10)
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			c := setup(t, prior{name: "random", lower: xdir})
			cp := filepath.Join(tempDir(t), "copy")
			if err := sandbox.CopyTree(c.r, cp); err != nil {
				t.Fatal(err)
			}
			real := osSystem{from: c.r, to: cp}

			var ov *sandbox.LayerSystem
			var viaMount osSystem
			if overlay {
				ov = sandbox.NewLayerSystem(sandbox.RealSystem{}, filepath.Join(tempDir(t), "layer"))
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
					t.Fatal(err)
				}
				defer unix.Unmount(mnt, 0)
				viaMount = osSystem{from: c.r, to: mnt}
			}

			var log []string
			for _, o := range seq {
				_, gotErr := o.run(c.layer, c.r)
				log = append(log, fmt.Sprintf("%s: %s", o.name, errClass(gotErr)))
				if errors.Is(gotErr, sandbox.ErrSymlinkInPath) {
					continue // the real filesystem would follow the link
				}
				_, wantErr := o.run(real, c.r)
				if g, w := errClass(gotErr), errClass(wantErr); g != w {
					t.Fatalf("%s: layer %s (%v), real %s (%v)\nsequence: %q", o.name, g, gotErr, w, wantErr, log)
				}
				if overlay {
					_, ovErr := o.run(viaMount, c.r)
					if g, w := errClass(gotErr), errClass(ovErr); g != w {
						t.Fatalf("%s: layer %s, overlay %s (%v)\nsequence: %q", o.name, g, w, ovErr, log)
					}
				}
			}
			merged := snapshot(t, c.layer, c.r, false)
			if d := cmp.Diff(snapshot(t, real, c.r, false), merged); d != "" {
				t.Fatalf("merged view differs from the real tree (-real +merged):\n%s\nsequence: %q", d, log)
			}
			if d := cmp.Diff(c.before, snapshot(t, sandbox.RealSystem{}, c.r, true)); d != "" {
				t.Fatalf("the lower tree changed (-before +after):\n%s", d)
			}
			changes, err := diff.Compare(c.layer.UpperDir(), []string{c.r}, sandbox.RealSystem{})
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(oracle(c.r, snapshot(t, sandbox.RealSystem{}, c.r, false), merged), changes, ignoreOwner); d != "" {
				t.Fatalf("Compare() mismatch with the oracle (-want +got):\n%s\nsequence: %q", d, log)
			}
			if overlay {
				if err := unix.Unmount(viaMount.to, 0); err != nil {
					t.Fatal(err)
				}
				ovChanges, err := diff.Compare(ov.UpperDir(), []string{c.r}, sandbox.RealSystem{})
				if err != nil {
					t.Fatal(err)
				}
				if d := cmp.Diff(ovChanges, changes); d != "" {
					t.Fatalf("Compare(layer) differs from Compare(overlay) (-overlay +layer):\n%s\nsequence: %q", d, log)
				}
			}
		})
	}
}
