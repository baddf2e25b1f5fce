package diff_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/act-project/act/diff"
	"github.com/act-project/act/sandbox"
)

// TestCompareExtra: what CompareExtra calls binary, Unified of the same
// two sides calls binary too, and every file binary by the NUL rule or by
// size is recorded (a text one never is).
func TestCompareExtra(t *testing.T) {
	big := strings.Repeat("line\n", diff.MaxTextSize/5+1)
	late := strings.Repeat("x", diff.SniffSize) + "\x00" // NUL past the sniffed head: text for Unified
	s := filepath.Join(t.TempDir(), "scope")
	mk(t, s, []node{
		file("bin-to-text", 0o644, "a\x00b"), file("text-to-bin", 0o644, "a\n"),
		file("text-to-text", 0o644, "a\n"), file("gone-bin", 0o644, "\x00"), file("gone-text", 0o644, "t\n"),
		file("same", 0o644, "copied up, unchanged\n"),
	})
	upper := filepath.Join(t.TempDir(), "upper")
	mk(t, upper+s, []node{
		file("bin-to-text", 0o644, "b\n"), file("text-to-bin", 0o644, "\x00"), file("text-to-text", 0o644, "b\n"),
		file("new-bin", 0o644, "abc\x00"), file("new-text", 0o644, "abc\n"), file("new-big", 0o644, big),
		file("new-late-nul", 0o644, late), file("new-empty", 0o644, ""),
		whiteout("gone-bin"), whiteout("gone-text"), file("same", 0o644, "copied up, unchanged\n"),
	})
	changes, bin, err := diff.CompareExtra(upper, []string{s}, sandbox.RealSystem{}, diff.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{
		"bin-to-text": true, "text-to-bin": true, "text-to-text": false, "new-bin": true, "new-text": false,
		"new-big": true, "new-late-nul": false, "new-empty": false, "gone-bin": true, "gone-text": false,
	}
	wantBytes := int64(0)
	for _, n := range []string{"b\n", "\x00", "b\n", "abc\x00", "abc\n", big, late, "", "copied up, unchanged\n"} {
		wantBytes += int64(len(n))
	}
	// and every upper entry's name, the whiteouts' too
	for _, n := range []string{"bin-to-text", "text-to-bin", "text-to-text", "new-bin", "new-text", "new-big",
		"new-late-nul", "new-empty", "gone-bin", "gone-text", "same"} {
		wantBytes += int64(len(n))
	}
	if bin.LayerBytes != wantBytes {
		t.Errorf("LayerBytes = %d, want %d", bin.LayerBytes, wantBytes)
	}
	if len(changes) != len(want) {
		t.Fatalf("%d changes, want %d: %+v", len(changes), len(want), changes)
	}
	for _, c := range changes {
		name := filepath.Base(c.Path)
		if got := bin.Binary(c); got != want[name] {
			t.Errorf("%s (%s): Of = %v, want %v", name, c.Kind, got, want[name])
		}
		var before, after *os.File
		if c.Kind != diff.Create {
			before = open(t, filepath.Join(s, name))
		}
		if c.Kind != diff.Delete {
			after = open(t, upper+c.Path)
		}
		_, _, binary, err := diff.Unified(c.Path, fileReader(before), fileReader(after), 0)
		if err != nil {
			t.Fatal(err)
		}
		if bin.Binary(c) && !binary {
			t.Errorf("%s: CompareExtra says binary, Unified says text", name)
		}
		if binary != want[name] {
			t.Errorf("%s: Unified binary = %v, want %v", name, binary, want[name])
		}
	}
	if _, _, err := diff.CompareExtra(upper, []string{"relative"}, sandbox.RealSystem{}, diff.Limits{}); err == nil {
		t.Error("CompareExtra of a relative root: no error")
	}
}

func open(t *testing.T, p string) *os.File {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// fileReader is f as an io.Reader, nil for an absent side (a nil *os.File in
// an interface would not be nil).
func fileReader(f *os.File) interface{ Read([]byte) (int, error) } {
	if f == nil {
		return nil
	}
	return f
}
