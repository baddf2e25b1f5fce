package plan

import (
	"os"
	"path/filepath"
	"testing"
)

// TestScopeRootIDsFile: a scope that names one file (a short descriptor's
// scope of a file in a home directory's root) pins the directories above
// it, not the file; its directory replaced is still caught, and a scope
// under a file is still refused.
func TestScopeRootIDsFile(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "home")
	if err := os.Mkdir(home, 0o755); err != nil {
		t.Fatal(err)
	}
	rc := filepath.Join(home, ".bashrc")
	if err := os.WriteFile(rc, []byte("x=1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ids, err := ScopeRootIDs([]string{rc})
	if err != nil {
		t.Fatal(err)
	}
	if last := ids[len(ids)-1].Path; last != home {
		t.Fatalf("the last pin is %s, want %s", last, home)
	}
	if moved := CheckScopeRootIDs(ids); len(moved) > 0 {
		t.Fatalf("nothing moved, yet: %v", moved)
	}
	if err := os.Rename(home, home+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(home, 0o755); err != nil {
		t.Fatal(err)
	}
	if moved := CheckScopeRootIDs(ids); moved[home] == "" {
		t.Errorf("the file's directory was replaced, unseen: %v", moved)
	}
	if _, err := ScopeRootIDs([]string{filepath.Join(home+".old", ".bashrc", "x")}); err == nil {
		t.Errorf("a scope below a file was taken")
	}
}
