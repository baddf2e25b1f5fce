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

// TestClearCachesOwn: act gc --caches empties act's own caches (the
// policy's persistent caches) whole, read-only module files included.
func TestClearCachesOwn(t *testing.T) {
	home := state.Dir{Root: t.TempDir()}
	mod := filepath.Join(home.Cache("go/pkg/mod"), "example.com", "m@v1.0.0")
	if err := os.MkdirAll(mod, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mod, "m.go"), []byte("package m\n"), 0o444); err != nil {
		t.Fatal(err)
	}
	c, err := (&Gate{Home: home}).ClearCaches()
	if err != nil || c.Caches != 1 || c.Bytes != 10 {
		t.Fatalf("ClearCaches = %+v, %v; want one cache of 10 bytes emptied", c, err)
	}
	if ents, _ := os.ReadDir(home.Caches()); len(ents) != 0 {
		t.Errorf("caches/ holds %d entries after act gc --caches, want none", len(ents))
	}
}
