package diff_test

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/act-project/act/diff"
	"github.com/act-project/act/sandbox"
)

func sha(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// TestSumTree sums every regular file of a tree as the diff would read
// it, and nothing else: no symlink is followed, a FIFO is never opened
// (the test would hang), and what lies deeper than the walk goes is left
// to the diff.
func TestSumTree(t *testing.T) {
	root := t.TempDir()
	big := strings.Repeat("line\n", diff.MaxTextSize/5+1)
	files := map[string]string{
		"a.txt":         "text\n",
		"empty":         "",
		"bin":           "\x00\x01",
		"d/e/late-nul":  strings.Repeat("x", diff.SniffSize) + "\x00",
		"d/big.txt":     big,
		"name with\nnl": "odd\n",
	}
	for p, data := range files {
		must(t, os.MkdirAll(filepath.Join(root, filepath.Dir(p)), 0o755))
		must(t, os.WriteFile(filepath.Join(root, p), []byte(data), 0o644))
	}
	outside := filepath.Join(t.TempDir(), "outside")
	must(t, os.WriteFile(outside, []byte("not the tree's"), 0o644))
	must(t, os.Symlink(outside, filepath.Join(root, "link")))
	must(t, os.Symlink(filepath.Dir(outside), filepath.Join(root, "dirlink")))
	must(t, syscall.Mkfifo(filepath.Join(root, "d/fifo"), 0o644))
	deep := root
	for range 70 {
		deep = filepath.Join(deep, "z")
	}
	must(t, os.MkdirAll(deep, 0o755))
	must(t, os.WriteFile(filepath.Join(deep, "deep"), []byte("too deep"), 0o644))

	dir, err := os.Open(root)
	must(t, err)
	defer dir.Close()
	got := map[string]diff.FileSum{}
	diff.SumTree(dir, 0, func(rel string, s diff.FileSum) bool {
		got[rel] = s
		return true
	})
	want := map[string]diff.FileSum{}
	for p, data := range files {
		fi, err := os.Lstat(filepath.Join(root, p))
		must(t, err)
		want[p] = diff.FileSum{Size: int64(len(data)), ModTime: fi.ModTime().UnixNano(), SHA256: sha(data),
			Binary: p == "bin" || p == "d/big.txt"}
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("SumTree (-want +got):\n%s", d)
	}

	// found's false stops the walk.
	n := 0
	diff.SumTree(dir, 0, func(string, diff.FileSum) bool { n++; return n < 2 })
	if n != 2 {
		t.Errorf("SumTree went on after found returned false: %d calls, want 2", n)
	}
}

// TestSumTreeSparse: a sparse file that claims more than the bytes the
// walk may read is not read (a tmpfs under a 1 MiB cap holds a file of a
// terabyte of holes, which the copy-out and the diff refuse unread), and
// the walk ends there.
func TestSumTreeSparse(t *testing.T) {
	root := t.TempDir()
	must(t, os.WriteFile(filepath.Join(root, "a"), []byte("small\n"), 0o644))
	f, err := os.Create(filepath.Join(root, "b-sparse"))
	must(t, err)
	must(t, f.Truncate(1<<40))
	must(t, f.Close())
	dir, err := os.Open(root)
	must(t, err)
	defer dir.Close()
	var got []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		diff.SumTree(dir, 1<<20, func(rel string, _ diff.FileSum) bool { got = append(got, rel); return true })
	}()
	select {
	case <-done:
	case <-time.After(2 * time.Minute): // a hang guard: a terabyte of zeros takes ten minutes to hash
		t.Fatal("SumTree read the sparse file")
	}
	if len(got) > 1 || (len(got) == 1 && got[0] != "a") {
		t.Errorf("SumTree summed %v; want at most a, never the sparse file", got)
	}
}

// TestCompareSums: a layer file whose size and modification time are its
// sum's is not read (the sum's digest is recorded, whatever the file
// holds); any other is read, and the plan records what it holds.
func TestCompareSums(t *testing.T) {
	base := t.TempDir()
	realRoot := filepath.Join(base, "real")
	upper := filepath.Join(base, "upper")
	scope := filepath.Join(realRoot, "s")
	must(t, os.MkdirAll(scope, 0o755))
	must(t, os.WriteFile(filepath.Join(scope, "same"), []byte("old\n"), 0o644))
	lay := filepath.Join(upper, scope)
	must(t, os.MkdirAll(lay, 0o755))
	for name, data := range map[string]string{"same": "new\n", "moved": "abc\n", "grown": "abc\n"} {
		must(t, os.WriteFile(filepath.Join(lay, name), []byte(data), 0o644))
	}
	when := time.Unix(1_700_000_000, 123)
	for _, name := range []string{"same", "moved", "grown"} {
		must(t, os.Chtimes(filepath.Join(lay, name), when, when))
	}
	sums := map[string]diff.FileSum{
		// Size and time agree: this digest stands for the file.
		filepath.Join(scope, "same"): {Size: 4, ModTime: when.UnixNano(), SHA256: sha("NEW\n")},
		// Another time, another size: read again.
		filepath.Join(scope, "moved"): {Size: 4, ModTime: when.UnixNano() + 1, SHA256: sha("xyz\n")},
		filepath.Join(scope, "grown"): {Size: 3, ModTime: when.UnixNano(), SHA256: sha("ab\n")},
	}
	asked := map[string]bool{}
	changes, x, err := diff.CompareExtra(upper, []string{scope}, sandbox.RealSystem{}, diff.Limits{Sums: func(p string) (diff.FileSum, bool) {
		asked[p] = true
		s, ok := sums[p]
		return s, ok
	}})
	must(t, err)
	got := map[string]string{}
	for _, c := range changes {
		if c.SHA256After != nil {
			got[filepath.Base(c.Path)] = *c.SHA256After
		}
	}
	want := map[string]string{"same": sha("NEW\n"), "moved": sha("abc\n"), "grown": sha("abc\n")}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("digests (-want +got):\n%s", d)
	}
	if len(asked) != 3 {
		t.Errorf("Sums asked for %v, want the layer's three files", asked)
	}
	if x.LayerBytes != int64(len("same")+len("moved")+len("grown")+3*4) {
		t.Errorf("LayerBytes = %d: a summed file's size counts as a read one's", x.LayerBytes)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
