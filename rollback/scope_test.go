package rollback

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestScopeRoots checks the directories the stale check walks down from:
// a glob scope path stands for its literal leading directories, and a path
// belongs to the outermost root above it (never to itself).
func TestScopeRoots(t *testing.T) {
	roots := scopeRoots([]string{"/home/u/proj/", "/home/u/proj/sub", "/srv/*/data", "/tmp/x*"})
	if diff := cmp.Diff([]string{"/home/u/proj", "/home/u/proj/sub", "/srv", "/tmp"}, roots); diff != "" {
		t.Fatalf("scopeRoots (-want +got):\n%s", diff)
	}
	for _, tc := range []struct {
		path, root string
		ok         bool
	}{
		{"/home/u/proj/a/b", "/home/u/proj", true},
		{"/home/u/proj/sub/c", "/home/u/proj", true}, // the outermost root
		{"/home/u/proj/sub", "/home/u/proj", true},   // a nested root itself
		{"/home/u/proj", "", false},                  // a root itself: its parent is above the scope
		{"/home/u/project/a", "", false},             // a sibling with a common prefix
		{"/srv/web/data/f", "/srv", true},            // below a glob's literal part
		{"/etc/passwd", "", false},
	} {
		root, ok := rootOf(roots, tc.path)
		if root != tc.root || ok != tc.ok {
			t.Errorf("rootOf(%s) = %q, %v; want %q, %v", tc.path, root, ok, tc.root, tc.ok)
		}
	}
}
