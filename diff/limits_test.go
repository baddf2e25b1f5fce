package diff_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/act-project/act/diff"
	"github.com/act-project/act/sandbox"
)

// TestCompareLimits: CompareExtra stops at the first entry past its
// limits with a *LimitError naming the limit; an entry that is a change
// whatever its hash counts at once, a file copied up unchanged never, and
// every entry's name (a whiteout's too) counts as bytes of the layer.
func TestCompareLimits(t *testing.T) {
	long := strings.Repeat("n", 200)
	tests := []struct {
		name     string
		real     []node
		upper    []node
		lim      diff.Limits
		want     *diff.LimitError // nil: no error
		nChanges int
	}{{
		name:  "changes-over",
		upper: files("new", 10, ""),
		lim:   diff.Limits{MaxChanges: 3},
		want:  &diff.LimitError{Limit: 3, Seen: 4},
	}, {
		name:     "changes-at",
		upper:    files("new", 10, ""),
		lim:      diff.Limits{MaxChanges: 10},
		nChanges: 10,
	}, {
		name:  "deletes-count",
		real:  files("old", 5, "x"),
		upper: whiteouts("old", 5),
		lim:   diff.Limits{MaxChanges: 4},
		want:  &diff.LimitError{Limit: 4, Seen: 5},
	}, {
		name:  "mode-change-counts",
		real:  files("f", 5, "x"),
		upper: modes(files("f", 5, "x"), 0o600),
		lim:   diff.Limits{MaxChanges: 4},
		want:  &diff.LimitError{Limit: 4, Seen: 5},
	}, {
		// Files copied up unchanged are no change: never counted.
		name:  "copied-up-unchanged",
		real:  files("f", 10, "same"),
		upper: files("f", 10, "same"),
		lim:   diff.Limits{MaxChanges: 1},
	}, {
		// A same-size content change is known only once hashed: it does
		// not stop the walk (CheckChanges counts the result).
		name:     "same-size-content",
		real:     files("f", 10, "old"),
		upper:    files("f", 10, "new"),
		lim:      diff.Limits{MaxChanges: 1},
		nChanges: 10,
	}, {
		name:  "names-count",
		upper: []node{file(long, 0o644, "")},
		lim:   diff.Limits{MaxBytes: 199},
		want:  &diff.LimitError{Bytes: true, Limit: 199, Seen: 200},
	}, {
		// Whiteouts over nothing real are no change, but take room.
		name:  "whiteout-names-count",
		upper: whiteouts(long, 2),
		lim:   diff.Limits{MaxBytes: 300},
		want:  &diff.LimitError{Bytes: true, Limit: 300, Seen: 2 * int64(len(long)+1)},
	}, {
		name:  "content-counts",
		upper: []node{file("f", 0o644, strings.Repeat("x", 100))},
		lim:   diff.Limits{MaxBytes: 100},
		want:  &diff.LimitError{Bytes: true, Limit: 100, Seen: 101},
	}, {
		name:     "bytes-at",
		upper:    []node{file("f", 0o644, strings.Repeat("x", 99))},
		lim:      diff.Limits{MaxBytes: 100},
		nChanges: 1,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := filepath.Join(t.TempDir(), "scope")
			mk(t, s, tc.real)
			upper := filepath.Join(t.TempDir(), "upper")
			mk(t, upper+s, tc.upper)
			changes, _, err := diff.CompareExtra(upper, []string{s}, sandbox.RealSystem{}, tc.lim)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("CompareExtra() = %v, want no error", err)
				}
				if len(changes) != tc.nChanges {
					t.Errorf("CompareExtra() = %d changes, want %d", len(changes), tc.nChanges)
				}
				return
			}
			var le *diff.LimitError
			if !errors.As(err, &le) {
				t.Fatalf("CompareExtra() = %v, want a *LimitError", err)
			}
			if d := cmp.Diff(tc.want, le); d != "" {
				t.Errorf("LimitError mismatch (-want +got):\n%s", d)
			}
		})
	}
}

// TestCompareStopsEarly: past a limit the walk stops at once — a layer of
// 3,000 new entries under MaxChanges 10 costs about 10 lstat calls on the
// real tree, not 3,000 — in one directory as in a deep chain of them.
func TestCompareStopsEarly(t *testing.T) {
	t.Run("wide", func(t *testing.T) {
		s := filepath.Join(t.TempDir(), "scope")
		mk(t, s, nil)
		upper := filepath.Join(t.TempDir(), "upper")
		mk(t, upper+s, files("f", 3000, ""))
		tree := &countingTree{Tree: sandbox.RealSystem{}}
		_, _, err := diff.CompareExtra(upper, []string{s}, tree, diff.Limits{MaxChanges: 10})
		var le *diff.LimitError
		if !errors.As(err, &le) {
			t.Fatalf("CompareExtra() = %v, want a *LimitError", err)
		}
		if tree.lstat > 12 {
			t.Errorf("CompareExtra made %d lstat calls on the real tree, want at most 12", tree.lstat)
		}
	})
	t.Run("deep", func(t *testing.T) {
		s := filepath.Join(t.TempDir(), "scope")
		mk(t, s, nil)
		upper := filepath.Join(t.TempDir(), "upper")
		p := upper + s
		for range 1000 {
			p = filepath.Join(p, "d")
		}
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		tree := &countingTree{Tree: sandbox.RealSystem{}}
		_, _, err := diff.CompareExtra(upper, []string{s}, tree, diff.Limits{MaxChanges: 10})
		var le *diff.LimitError
		if !errors.As(err, &le) || le.Bytes {
			t.Fatalf("CompareExtra() = %v, want a *LimitError of changes", err)
		}
		if tree.lstat > 12 {
			t.Errorf("CompareExtra made %d lstat calls on the real tree, want at most 12", tree.lstat)
		}
		// Without a limit, all 1,000 are changes.
		changes, err := diff.Compare(upper, []string{s}, sandbox.RealSystem{})
		if err != nil || len(changes) != 1000 {
			t.Errorf("Compare() = %d changes, %v; want 1000", len(changes), err)
		}
	})
}

// TestComparePathBytes: every entry the walk keeps costs its whole path,
// so a deep chain of short names stops at MaxPathBytes though its names
// alone are far below MaxBytes; without the limit it is all changes.
func TestComparePathBytes(t *testing.T) {
	s := filepath.Join(t.TempDir(), "scope")
	mk(t, s, nil)
	upper := filepath.Join(t.TempDir(), "upper")
	p := upper + s
	for range 300 {
		p = filepath.Join(p, "dddddddddd")
	}
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
	mk(t, p, files("f", 50, ""))
	// The paths: the scope's own (a directory of the layer, unchanged),
	// then 300 directories and 50 files, each of them len(s) and 11 bytes
	// a level long; the names, 11 bytes a level.
	paths := int64(len(s))
	for i := 1; i <= 300; i++ {
		paths += int64(len(s) + 11*i)
	}
	for i := range 50 {
		paths += int64(len(s) + 11*300 + 1 + len(fmt.Sprintf("f%d", i)))
	}
	lim := diff.Limits{MaxBytes: 1 << 20, MaxPathBytes: paths - 1}
	_, _, err := diff.CompareExtra(upper, []string{s}, sandbox.RealSystem{}, lim)
	var le *diff.LimitError
	if !errors.As(err, &le) || !le.Paths || le.Bytes || le.Limit != paths-1 || le.Seen != paths {
		t.Fatalf("CompareExtra() = %v (%+v), want a *LimitError of %d path bytes seen", err, le, paths)
	}
	lim.MaxPathBytes = paths
	changes, x, err := diff.CompareExtra(upper, []string{s}, sandbox.RealSystem{}, lim)
	if err != nil || len(changes) != 350 {
		t.Fatalf("CompareExtra() at the limit = %d changes, %v; want 350", len(changes), err)
	}
	// An empty layer file is known without reading it.
	last := changes[len(changes)-1]
	if last.Type != diff.TypeFile || *last.SizeAfter != 0 || *last.SHA256After != "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" || x.Binary(last) {
		t.Errorf("an empty file's change: %+v", last)
	}
}

// TestLessOrder: Less orders paths component by component ("/" before
// every other byte), as comparing them with "/" turned into NUL does.
func TestLessOrder(t *testing.T) {
	ref := func(a, b string) bool {
		return strings.ReplaceAll(a, "/", "\x00") < strings.ReplaceAll(b, "/", "\x00")
	}
	alphabet := []byte{'/', '-', '.', 'a', 'b', 0x01, 0xff}
	rnd := rand.New(rand.NewPCG(1, 2))
	word := func() string {
		b := make([]byte, rnd.IntN(6))
		for i := range b {
			b[i] = alphabet[rnd.IntN(len(alphabet))]
		}
		return string(b)
	}
	for range 20_000 {
		a, b := word(), word()
		got := diff.Less(diff.Change{Path: a, Kind: diff.Create}, diff.Change{Path: b, Kind: diff.Create})
		if got != ref(a, b) {
			t.Fatalf("Less(%q, %q) = %v, want %v", a, b, got, !got)
		}
	}
	if !diff.Less(diff.Change{Path: "/a/b"}, diff.Change{Path: "/a-b"}) {
		t.Error(`Less("/a/b", "/a-b") = false: a directory's contents come right after it`)
	}
}

// files are n files prefix0 … prefix<n-1> holding data.
func files(prefix string, n int, data string) []node {
	var out []node
	for i := range n {
		out = append(out, file(fmt.Sprintf("%s%d", prefix, i), 0o644, data))
	}
	return out
}

// whiteouts are n whiteouts prefix0 … prefix<n-1>.
func whiteouts(prefix string, n int) []node {
	var out []node
	for i := range n {
		out = append(out, whiteout(fmt.Sprintf("%s%d", prefix, i)))
	}
	return out
}

// modes gives every node of ns the mode m.
func modes(ns []node, m os.FileMode) []node {
	for i := range ns {
		ns[i].mode = m
	}
	return ns
}

// TestLayerSize: LayerSize of a scope's upper directory is CompareExtra's
// LayerBytes (names, whiteouts' too, and file sizes); it stops past its
// limit, and a missing directory holds nothing.
func TestLayerSize(t *testing.T) {
	s := filepath.Join(t.TempDir(), "scope")
	mk(t, s, []node{file("old", 0o644, "old"), dir("d", 0o755)})
	upper := filepath.Join(t.TempDir(), "upper")
	mk(t, upper+s, append([]node{file("new", 0o644, "12345"), whiteout("old"), dir("d", 0o755), dir("d/e", 0o700),
		file("d/e/deep", 0o600, strings.Repeat("x", 1000)), symlink("l", "/nowhere")}, files("f", 300, "y")...))
	_, x, err := diff.CompareExtra(upper, []string{s}, sandbox.RealSystem{}, diff.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	got, whole, err := diff.LayerSize(upper+s, 0)
	if err != nil || got != x.LayerBytes || !whole {
		t.Errorf("LayerSize() = %d, %v, %v; want CompareExtra's LayerBytes %d, whole", got, whole, err, x.LayerBytes)
	}
	if got, _, err := diff.LayerSize(upper+s, 100); err != nil || got <= 100 || got > 100+1000+4 {
		t.Errorf("LayerSize(limit 100) = %d, %v; want just past 100", got, err)
	}
	if got, whole, err := diff.LayerSize(filepath.Join(t.TempDir(), "missing"), 0); err != nil || got != 0 || !whole {
		t.Errorf("LayerSize(missing) = %d, %v, %v; want 0, whole, nil", got, whole, err)
	}
	// A directory it cannot read (mode 000, as an ordinary user) is not
	// counted, and said so; as root every directory reads.
	if err := os.Chmod(upper+s+"/d/e", 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(upper+s+"/d/e", 0o700) })
	got, whole, err = diff.LayerSize(upper+s, 0)
	switch {
	case err != nil:
		t.Errorf("LayerSize() over a mode 000 directory: %v", err)
	case os.Geteuid() == 0 && (got != x.LayerBytes || !whole):
		t.Errorf("LayerSize() as root over a mode 000 directory = %d, %v; want %d, whole", got, whole, x.LayerBytes)
	case os.Geteuid() != 0 && (got != x.LayerBytes-int64(len("deep")+1000) || whole):
		t.Errorf("LayerSize() over a mode 000 directory = %d, %v; want %d, not whole", got, whole, x.LayerBytes-int64(len("deep")+1000))
	}
}
