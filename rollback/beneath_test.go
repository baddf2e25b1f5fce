package rollback

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/act-project/act/plan"
)

// TestPromotionRace swaps a directory of the promotion for a symbolic link
// to a directory outside the scope while the promotion runs — after its
// checks and its journal's Begin record, before the ops — as a process
// racing act would (docs/sandbox-promotion.md). With the scope root pinned
// nothing lands outside: a directory below the root is opened without
// following a link (openat2, and the component walk of kernels without
// it), and the root itself must be the inode the plan recorded; without
// pins (a journal from before them) / stands as the pin and no link is
// followed at all. After each refused promotion, the rename by path that
// promotion used to make lands outside: the attack is real. As root, it
// runs again as an ordinary user.
func TestPromotionRace(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Run("nobody", func(t *testing.T) { asNobody(t, "TestPromotionRace") })
	}
	defer func() { CrashPoint = nil; openat2Missing = false }()
	for _, tc := range []struct {
		name   string
		swap   string // what is replaced by a link to outside, below base
		at     int    // the crash point the swap happens at
		pinned bool
		walk   bool
	}{
		{"below-root/openat2", "tree/sub", 2, true, false},
		{"below-root/walk", "tree/sub", 2, true, true},
		{"root-itself", "tree", 2, true, false},
		// Between two ops: the second goes on through the descriptor the
		// first opened, into the directory the plan found (now renamed).
		{"between-ops", "tree/sub", 4, true, false},
		{"unpinned", "tree/sub", 2, false, false},
		{"unpinned/walk", "tree/sub", 2, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := t.TempDir()
			tree, layer, outside := filepath.Join(base, "tree"), filepath.Join(base, "layer"), filepath.Join(base, "outside")
			mkTree(t, tree, map[string]string{"sub/keep.txt": "keep\n"})
			mkTree(t, layer, map[string]string{"sub/a.txt": "a\n", "sub/b.txt": "b\n"})
			ok(t, os.MkdirAll(filepath.Join(outside, "sub"), 0o755))
			var pins []plan.PathID
			if tc.pinned {
				var err error
				pins, err = plan.ScopeRootIDs([]string{tree})
				ok(t, err)
			}
			ops := []Op{
				{Kind: OpPut, Path: filepath.Join(tree, "sub/a.txt"), Src: filepath.Join(layer, "sub/a.txt"), Change: 0},
				{Kind: OpPut, Path: filepath.Join(tree, "sub/b.txt"), Src: filepath.Join(layer, "sub/b.txt"), Change: 1},
			}
			openat2Missing = tc.walk
			n := 0
			CrashPoint = func() {
				if n++; n != tc.at { // 2: after staging, before the first op
					return
				}
				victim := filepath.Join(base, tc.swap)
				ok(t, os.Rename(victim, victim+".moved"))
				target := filepath.Join(outside, strings.TrimPrefix(tc.swap, "tree"))
				ok(t, os.Symlink(target, victim))
			}
			err := execute(filepath.Join(base, "journal"), Begin{Event: EventApply, ActionID: "a", Steps: ops, Pins: pins}, nil)
			CrashPoint = nil
			ents, rerr := os.ReadDir(filepath.Join(outside, "sub"))
			ok(t, rerr)
			if len(ents) != 0 {
				t.Fatalf("the promotion wrote outside the scope: %v", ents)
			}
			if tc.at == 4 {
				ok(t, err)
				if _, err := os.Stat(filepath.Join(tree+"/sub.moved", "b.txt")); err != nil {
					t.Fatalf("the second op did not land in the planned directory: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("the promotion succeeded through a swapped directory")
			}
			if _, ok := err.(*RevertedError); !ok {
				t.Fatalf("want a reverted promotion, got %T: %v", err, err)
			}
			t.Logf("refused: %v", err)
			// The control: a rename by path, as promotion made before,
			// goes through the swapped link and lands outside.
			ok(t, os.Rename(ops[0].Src, ops[0].Path))
			if _, err := os.Stat(filepath.Join(outside, "sub", "a.txt")); err != nil {
				t.Fatalf("a rename by path did not land outside (%v): the test no longer shows the attack", err)
			}
		})
	}
}

// TestDirsWholeElements: the pin of a directory and the descriptors an op
// drops compare whole path elements: /a/bc is not below /a/b, and / holds
// everything.
func TestDirsWholeElements(t *testing.T) {
	d := newDirs([]plan.PathID{{Path: "/a/b", Ino: 1}, {Path: "/a", Ino: 2}})
	for dir, want := range map[string]string{
		"/a/b": "/a/b", "/a/b/c": "/a/b", "/a/bc": "/a", "/a": "/a", "/ab": "/", "/": "/",
	} {
		if got := d.pinOf(dir).Path; got != want {
			t.Errorf("pinOf(%s) = %s, want %s", dir, got, want)
		}
	}
	open := func(names ...string) {
		for _, n := range names {
			fd, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
			if err != nil {
				t.Fatal(err)
			}
			d.add(n, fd)
		}
	}
	left := func() []string { return slices.Sorted(maps.Keys(d.fds)) }
	open("/a", "/a/b", "/a/b/c", "/a/bc", "/ab")
	d.forget("/a/b")
	if got, want := left(), []string{"/a", "/a/bc", "/ab"}; !slices.Equal(got, want) || !slices.Equal(d.keys, want) {
		t.Errorf("after forget(/a/b): %v (keys %v), want %v", got, d.keys, want)
	}
	d.forget("/")
	if got := left(); len(got) != 0 || len(d.keys) != 0 {
		t.Errorf("after forget(/): %v (keys %v), want none", got, d.keys)
	}
	d.close()
}
