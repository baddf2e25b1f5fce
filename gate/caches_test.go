package gate

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/act-project/act/internal/state"
)

// TestClearCachesNoFollow: act gc --caches empties act's own caches/ only.
// A caches/ that is a symlink planted to point into a real project is
// refused: before, every entry of the project was removed.
func TestClearCachesNoFollow(t *testing.T) {
	proj := filepath.Join(t.TempDir(), "proj")
	if err := os.MkdirAll(filepath.Join(proj, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(proj, "main.go"), []byte("package main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	home := state.Dir{Root: t.TempDir()}
	if err := os.Symlink(proj, home.Caches()); err != nil {
		t.Fatal(err)
	}
	g := &Gate{Home: home}
	if _, err := g.ClearCaches(); err == nil {
		t.Error("ClearCaches of a caches/ symlink: no error, want a refusal")
	}
	if ents, _ := os.ReadDir(proj); len(ents) != 2 {
		t.Errorf("the project holds %d entries after act gc --caches, want its 2", len(ents))
	}
}
