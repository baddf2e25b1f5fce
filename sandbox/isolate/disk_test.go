package isolate

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/act-project/act/diff"
	"github.com/act-project/act/sandbox"
)

// TestDiskCapLayerAsInPlace: with a disk cap the command's overlays have
// their upper dirs on the sandbox's tmpfs, seeded with what the layer held
// (file operations of earlier steps, made here by sandbox.LayerSystem as
// act makes them) and copied back after the run. The command sees the
// earlier content, and the layer ends exactly as it does when the overlays
// write it in place (no disk cap): the same entries, modes, contents,
// whiteouts, opaque dirs, symlinks and xattrs, and the same diff. A seeded
// file the command did not touch is left as it was on disk (same inode).
func TestDiskCapLayerAsInPlace(t *testing.T) {
	requireIsolation(t)
	base := t.TempDir()
	scope := filepath.Join(base, "scope")
	real := map[string]string{
		"keep.txt": "keep\n", "gone.txt": "gone\n", "mod.txt": "mod\n", "del-real.txt": "x\n",
		"d/x": "dx\n", "rdir/a": "a\n", "mv-real.txt": "mv\n",
	}
	for name, content := range real {
		p := filepath.Join(scope, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Date(2001, 2, 3, 4, 5, 6, 7000, time.UTC)
	hasPython := false
	if _, err := exec.LookPath("python3"); err == nil {
		hasPython = true
	}
	script := `set -e
cat new.txt d/y seeded-mod.txt
test ! -e gone.txt && test ! -e d/x
echo more >> mod.txt
echo more >> seeded-mod.txt
mv seeded-mv.txt renamed.txt
mv mv-real.txt renamed-real.txt
rm del-real.txt upper-only.txt
rm -r rdir && mkdir rdir && echo n > rdir/n
ln -s new.txt link
mkdir -p e/f && echo z > e/f/z && chmod 0700 e
echo s > stamped && touch -d @1000000000 stamped
chmod 0600 keep.txt
`
	if hasPython {
		script += `python3 -c 'import os; os.setxattr("e/f/z", "user.test", b"1"); os.setxattr("seeded-mod.txt", "user.more", b"2")'` + "\n"
	}

	// One run into layer dir ld, with or without the disk cap.
	run := func(ld string, diskMB int64) (*sandbox.LayerSystem, *Result, uint64) {
		t.Helper()
		l := sandbox.NewLayerSystem(sandbox.RealSystem{}, ld)
		must := func(err error) {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
		}
		must(l.WriteFile(filepath.Join(scope, "new.txt"), []byte("from a file operation\n"), 0o640))
		must(l.WriteFile(filepath.Join(scope, "seeded-mod.txt"), []byte("seeded\n"), 0o644))
		must(l.WriteFile(filepath.Join(scope, "seeded-mv.txt"), []byte("to be renamed\n"), 0o644))
		must(l.WriteFile(filepath.Join(scope, "upper-only.txt"), []byte("to be removed\n"), 0o644))
		must(l.Remove(filepath.Join(scope, "gone.txt")))
		must(l.RemoveAll(filepath.Join(scope, "d")))
		must(l.Mkdir(filepath.Join(scope, "d"), 0o750))
		must(l.WriteFile(filepath.Join(scope, "d/y"), []byte("dy\n"), 0o644))
		must(l.CopyUpDir(scope))
		newTxt := l.Upper(filepath.Join(scope, "new.txt"))
		must(os.Chtimes(newTxt, old, old))
		must(syscall.Setxattr(newTxt, "user.seeded", []byte("yes"), 0))
		fi, err := os.Stat(newTxt)
		must(err)
		sc := Scope{Path: scope, Upper: l.Upper(scope)}
		if diskMB == 0 {
			sc.Work = ld + ".work"
			must(os.Mkdir(sc.Work, 0o700))
			t.Cleanup(func() { RemoveWorkDir(sc.Work) })
		}
		res := sh(t, "cd "+scope+" && "+script, []Scope{sc}, Limits{DiskMB: diskMB})
		return l, res, fi.Sys().(*syscall.Stat_t).Ino
	}
	inPlace, resA, _ := run(filepath.Join(base, "a"), 0)
	mustExit(t, resA, 0)
	onTmpfs, resB, ino := run(filepath.Join(base, "b"), 16)
	mustExit(t, resB, 0)
	if want := "from a file operation\ndy\nseeded\n"; string(resB.Stdout) != want {
		t.Errorf("the command saw %q, want %q", resB.Stdout, want)
	}
	if resB.CapHit != nil {
		t.Errorf("cap %v", resB.CapHit)
	}

	a := layerEntries(t, inPlace.UpperDir(), false)
	b := layerEntries(t, onTmpfs.UpperDir(), false)
	if d := cmp.Diff(a, b); d != "" {
		t.Errorf("the layer differs from the one written in place (-in place +tmpfs):\n%s", d)
	}
	rel := func(p string) string { return filepath.Join(scope, p)[1:] }
	for _, p := range []string{"new.txt", "stamped"} {
		ta := layerEntries(t, inPlace.UpperDir(), true)[rel(p)]
		tb := layerEntries(t, onTmpfs.UpperDir(), true)[rel(p)]
		if ta != tb {
			t.Errorf("%s: %s in place, %s through the tmpfs", p, ta, tb)
		}
	}
	for _, want := range []string{"new.txt", "seeded-mod.txt", "renamed.txt", "d/y", "rdir/n", "e/f/z", "link", "gone.txt", "del-real.txt", "renamed-real.txt"} {
		if _, ok := b[rel(want)]; !ok {
			t.Errorf("the layer lacks %s", want)
		}
	}
	for _, gone := range []string{"upper-only.txt", "seeded-mv.txt", "d/x"} {
		if _, ok := b[rel(gone)]; ok {
			t.Errorf("the layer holds %s", gone)
		}
	}
	fi, err := os.Stat(onTmpfs.Upper(filepath.Join(scope, "new.txt")))
	if err != nil || fi.Sys().(*syscall.Stat_t).Ino != ino {
		t.Errorf("the untouched seeded file was rewritten: %v", err)
	}
	if resB.Usage.DiskBytes != treeBytes(onTmpfs.UpperDir()) {
		t.Errorf("usage %d bytes, the layer holds %d", resB.Usage.DiskBytes, treeBytes(onTmpfs.UpperDir()))
	}

	ca, err := diff.Compare(inPlace.UpperDir(), []string{scope}, sandbox.RealSystem{})
	if err != nil {
		t.Fatal(err)
	}
	cb, err := diff.Compare(onTmpfs.UpperDir(), []string{scope}, sandbox.RealSystem{})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(ca, cb); d != "" {
		t.Errorf("the diff differs (-in place +tmpfs):\n%s", d)
	}
	t.Logf("%d changes, e.g. %v", len(cb), fmt.Sprint(cb[0].Path, " ", cb[0].Kind))
}

// TestUppers: with Spec.Uppers, init hands the parent each scope's tmpfs
// upper as it starts to copy it out, and what the parent reads there
// (diff.SumTree) is what the copy in the layer holds, file by file, to
// the modification time. A run that discards its changes, or writes its
// layer in place (no disk cap), hands over nothing.
func TestUppers(t *testing.T) {
	requireIsolation(t)
	var scopes []Scope
	for _, name := range []string{"a", "b"} {
		base := filepath.Join(t.TempDir(), name)
		scopes = append(scopes, newScope(t, base, map[string]string{"gone.txt": "x\n", "kept.txt": "k\n"}))
	}
	script := `set -e
for s in "$@"; do
  cd "$s"
  echo text > new.txt
  mkdir -p d/e && head -c 3000000 /dev/zero | tr '\0' 'x' > d/e/big
  printf 'a\0b' > d/bin
  : > d/empty
  rm gone.txt
  echo more >> kept.txt
  ln -s new.txt link
  mkfifo fifo
  touch -d @1000000000 new.txt
done`
	var mu sync.Mutex
	var wg sync.WaitGroup
	got := map[int]map[string]diff.FileSum{}
	calls := map[int]int{}
	spec := Spec{Argv: append([]string{"sh", "-c", script, "sh"}, scopes[0].Path, scopes[1].Path), Env: pathEnv, Scopes: scopes,
		Limits: Limits{DiskMB: 64, WallMs: 20_000},
		Uppers: func(k int, dir *os.File) {
			mu.Lock()
			calls[k]++
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer dir.Close()
				sums := map[string]diff.FileSum{}
				diff.SumTree(dir, 0, func(rel string, s diff.FileSum) bool { sums[rel] = s; return true })
				mu.Lock()
				got[k] = sums
				mu.Unlock()
			}()
		}}
	res, err := Run(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	mustExit(t, res, 0)
	wg.Wait()
	if d := cmp.Diff(map[int]int{0: 1, 1: 1}, calls); d != "" {
		t.Fatalf("Uppers calls by scope (-want +got):\n%s", d)
	}
	for k, sc := range scopes {
		want := map[string]diff.FileSum{}
		err := filepath.WalkDir(sc.Upper, func(p string, e fs.DirEntry, err error) error {
			if err != nil || !e.Type().IsRegular() {
				return err
			}
			fi, err := e.Info()
			if err != nil {
				return err
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(sc.Upper, p)
			sum := sha256.Sum256(data)
			want[rel] = diff.FileSum{Size: fi.Size(), ModTime: fi.ModTime().UnixNano(), SHA256: hex.EncodeToString(sum[:]),
				Binary: bytes.IndexByte(data[:min(len(data), diff.SniffSize)], 0) >= 0 || len(data) > diff.MaxTextSize}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(want) != 5 {
			t.Errorf("scope %d: the layer holds %d files, want the 5 the command wrote: %v", k, len(want), want)
		}
		if d := cmp.Diff(want, got[k]); d != "" {
			t.Errorf("scope %d: the sums of the tmpfs upper against the layer's files (-layer +sums):\n%s", k, d)
		}
	}

	for _, c := range []struct {
		name string
		l    Limits
		disc bool
	}{{"discard", Limits{DiskMB: 64, WallMs: 20_000}, true}, {"in place", Limits{WallMs: 20_000}, false}} {
		handed := 0
		sc := newScope(t, t.TempDir(), nil)
		res, err := Run(context.Background(), Spec{Argv: []string{"sh", "-c", "echo x > f"}, Env: pathEnv, Workdir: sc.Path, Scopes: []Scope{sc},
			Limits: c.l, Discard: c.disc, Uppers: func(_ int, dir *os.File) { handed++; dir.Close() }})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		mustExit(t, res, 0)
		if handed != 0 {
			t.Errorf("%s: Uppers called %d times, want none", c.name, handed)
		}
	}
}
