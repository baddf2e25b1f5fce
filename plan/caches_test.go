package plan

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/act-project/act/internal/state"
)

// TestSandboxCachesOwnDirs: the sandbox's caches are act's own directories
// in the state dir. A caches/ (or a cache's directory) that is a symlink —
// planted to point into a real project — is refused, not followed: else
// the sandbox would mount that project read-write, its writes never
// diffed or reviewed. Nothing is made in the link's target.
func TestSandboxCachesOwnDirs(t *testing.T) {
	home := t.TempDir()
	proj := filepath.Join(t.TempDir(), "proj")
	if err := os.Mkdir(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	caches := []string{filepath.Join(home, ".cache", "go-build")}

	// caches/ itself a symlink.
	st := t.TempDir()
	if err := os.Symlink(proj, state.Dir{Root: st}.Caches()); err != nil {
		t.Fatal(err)
	}
	if got, _, err := SandboxCaches(st, home, caches, nil, nil); err == nil {
		t.Errorf("caches/ a symlink into a project: got %+v, want a refusal", got)
	}
	// One cache's directory a symlink.
	st2 := t.TempDir()
	if err := os.Mkdir(state.Dir{Root: st2}.Caches(), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(proj, state.Dir{Root: st2}.Cache(".cache/go-build")); err != nil {
		t.Fatal(err)
	}
	if got, _, err := SandboxCaches(st2, home, caches, nil, nil); err == nil {
		t.Errorf("a cache's directory a symlink into a project: got %+v, want a refusal", got)
	}
	if ents, _ := os.ReadDir(proj); len(ents) != 0 {
		t.Errorf("the project got %d entries, want none", len(ents))
	}

	// Another user's directory (root can make one): refused too.
	if os.Geteuid() == 0 {
		st3 := t.TempDir()
		if err := os.Mkdir(state.Dir{Root: st3}.Caches(), 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(state.Dir{Root: st3}.Caches(), 65534, 65534); err != nil {
			t.Fatal(err)
		}
		if got, _, err := SandboxCaches(st3, home, caches, nil, nil); err == nil {
			t.Errorf("caches/ of uid 65534 for root: got %+v, want a refusal", got)
		}
	}

	// The ordinary case still works: made, and made again.
	st4 := t.TempDir()
	for range 2 {
		got, _, err := SandboxCaches(st4, home, caches, nil, nil)
		if err != nil || len(got) != 1 {
			t.Fatalf("SandboxCaches = %+v, %v; want one cache", got, err)
		}
	}
}
