package run

import (
	"os"
	"path/filepath"
	"testing"
)

// TestProjectRoot: act run from a subdirectory of a project scopes the
// project (the top of its git work tree, found by what is on disk), and
// runs the command in the subdirectory; a home directory or / is never the
// project, nor a ".git" that is no git directory.
func TestProjectRoot(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	proj := filepath.Join(home, "src", "proj")
	sub := filepath.Join(proj, "test", "unit")
	for _, d := range []string{sub, filepath.Join(proj, ".git")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// Not yet a git directory: no HEAD.
	if got := ProjectRoot(sub, []string{home}); got != sub {
		t.Errorf("a .git without HEAD: %s, want %s", got, sub)
	}
	if err := os.WriteFile(filepath.Join(proj, ".git", "HEAD"), []byte("ref: refs/heads/main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := ProjectRoot(sub, []string{home}); got != proj {
		t.Errorf("ProjectRoot(%s) = %s, want %s", sub, got, proj)
	}
	// A linked worktree's .git is a file.
	wt := filepath.Join(home, "wt")
	os.MkdirAll(filepath.Join(wt, "pkg"), 0o755)
	os.WriteFile(filepath.Join(wt, ".git"), []byte("gitdir: "+filepath.Join(proj, ".git", "worktrees", "wt")+"\n"), 0o644)
	if got := ProjectRoot(filepath.Join(wt, "pkg"), []string{home}); got != wt {
		t.Errorf("a linked worktree: %s, want %s", got, wt)
	}
	// A git directory in the home itself (dotfiles) is not the project.
	os.MkdirAll(filepath.Join(home, ".git"), 0o755)
	os.WriteFile(filepath.Join(home, ".git", "HEAD"), []byte("ref: refs/heads/main\n"), 0o644)
	plain := filepath.Join(home, "notes")
	os.MkdirAll(plain, 0o755)
	if got := ProjectRoot(plain, []string{home}); got != plain {
		t.Errorf("below a home with .git: %s, want %s", got, plain)
	}

	ws, workdir, err := Workspace(sub, "", []string{home}, func(d string) (string, error) { return d, nil })
	if err != nil || ws != proj || workdir != sub {
		t.Errorf("Workspace = %s, %s, %v; want the project %s, run in %s", ws, workdir, err, proj, sub)
	}
	ws, workdir, err = Workspace(sub, sub, []string{home}, func(d string) (string, error) { return d, nil })
	if err != nil || ws != sub || workdir != sub {
		t.Errorf("--workspace: %s, %s, %v", ws, workdir, err)
	}
}
