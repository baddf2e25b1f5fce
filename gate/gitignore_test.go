package gate

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// gitCmd runs git in dir with no configuration but the repository's (a
// repository the test made), failing t on an error.
func gitCmd(t *testing.T, dir string, args ...string) string {
	t.Helper()
	c := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "init.defaultBranch=main", "-c", "core.fsmonitor=false"}, args...)...)
	c.Dir = dir
	c.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "HOME="+dir, "GIT_AUTHOR_DATE=2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE=2026-01-01T00:00:00Z")
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func needGit(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
}

// TestWildmatch: git's glob rules, cases from gitignore(5) and git's own
// wildmatch tests.
func TestWildmatch(t *testing.T) {
	for _, c := range []struct {
		pat, text string
		pathname  bool
		want      bool
	}{
		{"foo", "foo", true, true},
		{"foo", "bar", true, false},
		{"*", "foo/bar", true, false},
		{"*", "foo/bar", false, true},
		{"**", "foo/bar", true, true},
		{"**/foo", "foo", true, true},
		{"**/foo", "a/b/foo", true, true},
		{"abc/**", "abc/x/y", true, true},
		{"abc/**", "abc", true, false},
		{"a/**/b", "a/b", true, true},
		{"a/**/b", "a/x/y/b", true, true},
		{"a/**b", "a/x/b", true, false},
		{"a/**b", "a/xb", true, true},
		{"*.c", "x.c", true, true},
		{"*.c", "d/x.c", true, false},
		{"?", "/", true, false},
		{"[a-c]x", "bx", true, true},
		{"[!a-c]x", "bx", true, false},
		{"[^a-c]x", "dx", true, true},
		{"[]]", "]", true, true},
		{"[!]]", "a", true, true},
		{"[[:digit:]]z", "5z", true, true},
		{"[[:alpha:][:digit:]]", "_", true, false},
		{"[[:upper:]]", "a", true, false},
		{`\*`, "*", true, true},
		{`\*`, "a", true, false},
		{"a[/]b", "a/b", true, false},
		{"a[/]b", "a/b", false, true},
		{"foo*bar", "foo/bar", true, false},
		{"foo**bar", "fooxbar", true, true},
		{"*/bar", "foo/bar", true, true},
		{"*/bar", "a/foo/bar", true, false},
		{"[abc", "a", true, false},
		{"-*-*-*-*-*-*-12-*-*-*-m-*-*-*", "-adobe-courier-bold-o-normal--12-120-75-75-m-70-iso8859-1", true, true},
	} {
		if got := wildmatch(c.pat, c.text, c.pathname); got != c.want {
			t.Errorf("wildmatch(%q, %q, pathname %t) = %t, want %t", c.pat, c.text, c.pathname, got, c.want)
		}
	}
}

// TestIgnoreLikeGit: what git lists as ignored and as untracked in a tree
// of ignore files and paths is what ignoreRules says, path for path.
func TestIgnoreLikeGit(t *testing.T) {
	needGit(t)
	dir := t.TempDir()
	gitCmd(t, dir, "init", "-q")
	files := map[string]string{
		".gitignore":       "# comment\n*.log\n!keep.log\n/build/\nnode_modules\ndocs/*.html\n!docs/index.html\n**/tmp/**\nspace\\ \ntrail   \n\\#hash\n\\!bang\ncache/\n!cache/keep\n*.[oa]\nsub/**/deep\n",
		"sub/.gitignore":   "*.txt\n!important.txt\n/local\nnested/\n",
		"sub/x/.gitignore": "!*.txt\n",
	}
	paths := []string{
		"a.log", "keep.log", "sub/keep.log", "build/out", "x/build/out", "build",
		"node_modules/m/index.js", "a/node_modules/b.js", "docs/a.html", "docs/index.html", "docs/x/a.html",
		"tmp/a", "x/tmp/y/z", "space ", "trail", "#hash", "!bang", "cache/a", "cache/keep", "lib.o", "lib.a", "lib.c",
		"sub/a.txt", "sub/important.txt", "sub/local", "sub/y/local", "sub/nested/f", "sub/y/nested/f",
		"sub/x/b.txt", "sub/deep", "sub/a/deep", "sub/a/b/deep/f", "plain.go", ".hidden", "x/.env",
	}
	for name, data := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range paths {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if name == "build" {
			continue // a directory: build/out is in it
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ignoredByGit := strings.Split(gitCmd(t, dir, "ls-files", "-z", "--others", "--ignored", "--exclude-standard"), "\x00")
	t.Logf("git ignores %q", ignoredByGit)
	rules := &ignoreRules{load: func(d string) []ignorePattern {
		data, _ := os.ReadFile(filepath.Join(dir, d, ".gitignore"))
		return parseIgnore(data, d)
	}}
	for _, name := range paths {
		if name == "build" {
			continue
		}
		want := slices.Contains(ignoredByGit, name)
		if got := rules.ignored(name, false); got != want {
			t.Errorf("%s: ignored %t, git says %t", name, got, want)
		}
	}
}
