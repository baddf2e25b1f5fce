package isolate

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/act-project/act/sandbox"
)

// TestDiscard: a run with Spec.Discard sees the layer (seeded into its
// tmpfs uppers as any run with a disk cap), and leaves it exactly as it
// was: the same entries, contents, modes, times and inodes. Its Result
// names what the command changed, each path once, in the walk's order:
// files written, made, renamed, removed (whiteouts and layer entries gone),
// their modes and times changed; a new opaque directory; a new directory
// only where nothing below it is named. Seeded files it only read are not
// named.
func TestDiscard(t *testing.T) {
	requireIsolation(t)
	base := t.TempDir()
	scope := filepath.Join(base, "scope")
	for name, content := range map[string]string{
		"keep.txt": "keep\n", "gone.txt": "gone\n", "mod.txt": "mod\n", "del-real.txt": "x\n",
		"d/x": "dx\n", "rdir/a": "a\n", "mv-real.txt": "mv\n", "read.txt": "read\n",
	} {
		p := filepath.Join(scope, name)
		mustDo(t, os.MkdirAll(filepath.Dir(p), 0o755))
		mustDo(t, os.WriteFile(p, []byte(content), 0o644))
	}
	l := sandbox.NewLayerSystem(sandbox.RealSystem{}, filepath.Join(base, "layer"))
	mustDo(t, l.WriteFile(filepath.Join(scope, "new.txt"), []byte("from a file operation\n"), 0o640))
	mustDo(t, l.WriteFile(filepath.Join(scope, "seeded-mod.txt"), []byte("seeded\n"), 0o644))
	mustDo(t, l.WriteFile(filepath.Join(scope, "seeded-mv.txt"), []byte("to be renamed\n"), 0o644))
	mustDo(t, l.WriteFile(filepath.Join(scope, "upper-only.txt"), []byte("to be removed\n"), 0o644))
	mustDo(t, l.Remove(filepath.Join(scope, "gone.txt")))
	mustDo(t, l.RemoveAll(filepath.Join(scope, "d")))
	mustDo(t, l.Mkdir(filepath.Join(scope, "d"), 0o750))
	mustDo(t, l.WriteFile(filepath.Join(scope, "d/y"), []byte("dy\n"), 0o644))
	mustDo(t, l.CopyUpDir(scope))
	before := layerState(t, l.UpperDir())

	script := `set -e
cat new.txt d/y seeded-mod.txt read.txt rdir/a >/dev/null
test ! -e gone.txt && test ! -e d/x
echo more >> mod.txt
echo more >> seeded-mod.txt
mv seeded-mv.txt renamed.txt
mv mv-real.txt renamed-real.txt
rm del-real.txt upper-only.txt
rm -r rdir && mkdir rdir && echo n > rdir/n
ln -s new.txt link
mkdir -p e/f && echo z > e/f/z && chmod 0700 e
mkdir empty
echo s > stamped && touch -d @1000000000 stamped
chmod 0600 keep.txt
`
	res, err := Run(context.Background(), Spec{
		Argv: []string{"sh", "-c", "cd " + scope + " && " + script}, Env: pathEnv,
		Scopes: []Scope{{Path: scope, Upper: l.Upper(scope)}}, Limits: Limits{WallMs: 20_000, DiskMB: 4}, Discard: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	mustExit(t, res, 0)
	if d := cmp.Diff(before, layerState(t, l.UpperDir())); d != "" {
		t.Errorf("the layer changed (-before +after):\n%s", d)
	}
	var want []string
	for _, rel := range []string{
		"del-real.txt", "e/f/z", "empty", "keep.txt", "link", "mod.txt", "mv-real.txt", "rdir", "rdir/n",
		"renamed-real.txt", "renamed.txt", "seeded-mod.txt", "seeded-mv.txt", "stamped", "upper-only.txt",
	} {
		want = append(want, filepath.Join(scope, rel))
	}
	if d := cmp.Diff(want, res.Wrote); d != "" || res.WroteCount != int64(len(want)) {
		t.Errorf("Wrote (-want +got):\n%s\nWroteCount %d, want %d", d, res.WroteCount, len(want))
	}
}

// TestDiscardBounded: past MaxWrote paths the Result counts them all and
// names the first MaxWrote; a path too long to name is counted; a change
// of the scope's own mode names the scope; a run that writes nothing
// names nothing.
func TestDiscardBounded(t *testing.T) {
	requireIsolation(t)
	base := t.TempDir()
	s := newScope(t, base, map[string]string{"a": "a\n"})
	s.Work = ""
	run := func(script string) *Result {
		t.Helper()
		res, err := Run(context.Background(), Spec{
			Argv: []string{"sh", "-c", "cd " + s.Path + " && " + script}, Env: pathEnv,
			Scopes: []Scope{s}, Limits: Limits{WallMs: 20_000, DiskMB: 4}, Discard: true,
		})
		if err != nil {
			t.Fatal(err)
		}
		mustExit(t, res, 0)
		return res
	}
	res := run(`for i in $(seq 100 139); do echo $i > f$i; done`)
	if res.WroteCount != 40 || len(res.Wrote) != MaxWrote || res.Wrote[0] != filepath.Join(s.Path, "f100") {
		t.Errorf("40 files: Wrote %q, count %d; want the first %d of 40", res.Wrote, res.WroteCount, MaxWrote)
	}
	if res := run(`cat a >/dev/null`); res.WroteCount != 0 || len(res.Wrote) != 0 {
		t.Errorf("a read: Wrote %q, count %d; want nothing", res.Wrote, res.WroteCount)
	}
	if res := run(`chmod 0700 .`); res.WroteCount != 1 || len(res.Wrote) != 1 || res.Wrote[0] != s.Path {
		t.Errorf("chmod of the scope: Wrote %q, count %d; want the scope", res.Wrote, res.WroteCount)
	}
	// 16 levels of 250-byte names, then a file of a 200-byte name: past
	// PATH_MAX below the scope.
	long := strings.Repeat("d", 250)
	res = run(`for i in $(seq 16); do mkdir ` + long + ` && cd ` + long + ` || exit 1; done; echo x > ` + strings.Repeat("f", 200) + ` && cd ` + s.Path + ` && echo y > b`)
	if res.WroteCount != 2 || len(res.Wrote) != 1 || res.Wrote[0] != filepath.Join(s.Path, "b") {
		t.Errorf("a path too long: Wrote %q, count %d; want b named and the deep file counted", res.Wrote, res.WroteCount)
	}
	if ents, _ := os.ReadDir(s.Upper); len(ents) != 0 {
		t.Errorf("the layer holds %d entries, want none", len(ents))
	}
}

// TestDiscardDepthLimit: the walk that reports what a run wrote goes as
// deep as copy-out does (TestCopyOutDepthLimit), and past it fails the run
// saying so.
func TestDiscardDepthLimit(t *testing.T) {
	requireIsolation(t)
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed")
	}
	for _, c := range []struct {
		depth int
		err   string
	}{{2048, ""}, {2049, "more than 2048 nested directories"}} {
		t.Run(fmt.Sprint(c.depth), func(t *testing.T) {
			s, res, err := runDeep(t, c.depth, true)
			if c.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				mustExit(t, res, 0)
				if res.WroteCount != 1 || len(res.Wrote) != 0 {
					t.Errorf("Wrote %q, count %d; want the deep file counted, too long to name", res.Wrote, res.WroteCount)
				}
				if ents, _ := os.ReadDir(s.Upper); len(ents) != 0 {
					t.Errorf("the layer holds %d entries, want none", len(ents))
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Fatalf("Run = %v, %v; want an error saying %q", res, err, c.err)
			}
		})
	}
}

// TestDiscardNeedsDiskCap: without a disk cap the upper dirs are written in
// place, so a run that would discard them is refused before it starts.
func TestDiscardNeedsDiskCap(t *testing.T) {
	requireIsolation(t)
	s := newScope(t, t.TempDir(), nil)
	_, err := Run(context.Background(), Spec{Argv: []string{"true"}, Env: pathEnv, Scopes: []Scope{s}, Discard: true})
	if err == nil || !strings.Contains(err.Error(), "needs a disk cap") {
		t.Fatalf("Run = %v, want the refusal of a discard without a disk cap", err)
	}
}

// layerState is every entry below dir: type, mode, size, content digest,
// link target, mtime, ctime and inode.
func layerState(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		var st syscall.Stat_t
		if err := syscall.Lstat(p, &st); err != nil {
			return err
		}
		v := fmt.Sprintf("mode %o size %d mtime %d ctime %d ino %d", st.Mode, st.Size, st.Mtim.Nano(), st.Ctim.Nano(), st.Ino)
		switch {
		case d.Type().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			v += fmt.Sprintf(" sha256 %x", sha256.Sum256(b))
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			v += " -> " + target
		}
		rel, _ := filepath.Rel(dir, p)
		out[rel] = v
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func mustDo(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
