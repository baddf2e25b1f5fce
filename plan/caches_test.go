package plan

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/act-project/act/internal/state"
	"github.com/act-project/act/sandbox/isolate"
)

// TestSandboxCachesNoLinks: the sandbox shows the person's own caches,
// each only where it is a directory reached from the home with no
// symbolic link on the way. A link planted on a cache's path (~/.cache
// pointing at a directory that holds ~/.ssh's keys, say) would otherwise
// show that directory, read-only, where the tool looks for its cache. A
// cache that is not there, a credential store and a hidden path are left
// out; a bind of home_visible that lies in a cache gives way to it.
func TestSandboxCachesNoLinks(t *testing.T) {
	home := t.TempDir()
	elsewhere := t.TempDir()
	mxBuild(t, home, map[string]mxEntry{
		"go":           mxDir("0755"),
		"go/pkg":       mxDir("0755"),
		"go/pkg/mod":   mxDir("0755"),
		".cargo":       mxDir("0755"),
		".cargo/git":   mxLink(elsewhere),
		".cache":       mxLink(elsewhere),
		".aws":         mxDir("0700"),
		".aws/x":       mxDir("0700"),
		".npm":         mxFile("not a directory\n", "0644"),
		".local":       mxDir("0755"),
		".local/share": mxDir("0755"),
	})
	mustDo(t, os.MkdirAll(filepath.Join(elsewhere, "go-build"), 0o755))
	caches := []string{
		filepath.Join(home, ".cache", "go-build"), filepath.Join(home, "go", "pkg", "mod"), filepath.Join(home, ".npm"),
		filepath.Join(home, ".cargo", "git"), filepath.Join(home, ".cargo", "registry"), filepath.Join(home, ".aws", "x"),
		filepath.Join(home, ".local", "share"),
	}
	binds := []string{filepath.Join(home, "go", "pkg", "mod", "sub"), filepath.Join(home, ".gitconfig")}
	got, keep := SandboxCaches(home, caches, []string{filepath.Join(home, ".local", "share", "keyrings")}, binds)
	want := []isolate.Cache{{Path: filepath.Join(home, "go", "pkg", "mod"), Dir: filepath.Join(home, "go", "pkg", "mod")}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("SandboxCaches (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{filepath.Join(home, ".gitconfig")}, keep); diff != "" {
		t.Errorf("binds kept (-want +got):\n%s", diff)
	}
	if got, _ := SandboxCaches("/nonexistent", caches, nil, nil); got != nil {
		t.Errorf("SandboxCaches for a home that is not there = %v, want none", got)
	}
}

// TestCachesDirOwnDir: act's own caches/ (act gc --caches empties it) is
// a directory of act's, never followed: a caches/ (or a cache's
// directory) that is a symlink planted to point into a real project is
// refused. Nothing is made in the link's target.
func TestCachesDirOwnDir(t *testing.T) {
	proj := filepath.Join(t.TempDir(), "proj")
	if err := os.Mkdir(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	st := t.TempDir()
	if err := os.Symlink(proj, state.Dir{Root: st}.Caches()); err != nil {
		t.Fatal(err)
	}
	if _, err := CachesDir(st); err == nil {
		t.Error("caches/ a symlink into a project: no error, want a refusal")
	}
	if ents, _ := os.ReadDir(proj); len(ents) != 0 {
		t.Errorf("the project got %d entries, want none", len(ents))
	}
	if os.Geteuid() == 0 {
		st3 := t.TempDir()
		if err := os.Mkdir(state.Dir{Root: st3}.Caches(), 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(state.Dir{Root: st3}.Caches(), 65534, 65534); err != nil {
			t.Fatal(err)
		}
		if _, err := CachesDir(st3); err == nil {
			t.Error("caches/ of uid 65534 for root: no error, want a refusal")
		}
	}
	st4 := t.TempDir()
	for range 2 {
		if _, err := CachesDir(st4); err != nil {
			t.Fatalf("CachesDir = %v; want it made, and made again", err)
		}
	}
}

// TestGoVerifiedEnv: with a persistent Go module cache, a command's go
// checks go.sum on every use: -mod=readonly comes last in GOFLAGS (the
// last -mod wins), and what would skip or replace the checksum database,
// or set that again from a go env file, is gone.
func TestGoVerifiedEnv(t *testing.T) {
	got := goVerifiedEnv([]string{"PATH=/bin", "GOFLAGS=-mod=mod -v", "GONOSUMDB=*", "GOPRIVATE=example.com", "GOSUMDB=sum.evil.example+key", "GOINSECURE=*", "GONOSUMCHECK=1", "GOENV=/s/env", "HOME=/h"})
	want := []string{"PATH=/bin", "HOME=/h", "GOFLAGS=-mod=mod -v -mod=readonly", "GOENV=off"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("goVerifiedEnv (-want +got):\n%s", diff)
	}
}
