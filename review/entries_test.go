package review

import (
	"strings"
	"testing"

	"github.com/act-project/act/diff"
)

// TestReviewEntries: the lines a person reads of a change list — paths
// relative to the innermost workspace (absolute outside, after a line
// saying so), a delete and a create of the same content as one rename
// (files by sha256, symlinks by target, never across types), and a .git
// directory's internals counted but for its hooks and config.
func TestReviewEntries(t *testing.T) {
	s := func(v string) *string { return &v }
	n := func(v int64) *int64 { return &v }
	changes := []diff.Change{
		{Path: "/w/.git/HEAD", Kind: diff.Modify, Type: diff.TypeFile, SHA256Before: s("1"), SHA256After: s("2")},
		{Path: "/w/.git/config", Kind: diff.Modify, Type: diff.TypeFile, SHA256Before: s("3"), SHA256After: s("4")},
		{Path: "/w/.git/hooks/pre-commit", Kind: diff.Create, Type: diff.TypeFile, SHA256After: s("5")},
		{Path: "/w/.git/index", Kind: diff.Modify, Type: diff.TypeFile, SHA256Before: s("6"), SHA256After: s("7")},
		{Path: "/w/.git/objects/ab", Kind: diff.Create, Type: diff.TypeDir},
		{Path: "/w/.git/objects/ab/cd", Kind: diff.Create, Type: diff.TypeFile, SHA256After: s("a")},
		{Path: "/w/.git/objects/ab/ef", Kind: diff.Create, Type: diff.TypeFile, SHA256After: s("a")},
		{Path: "/w/.git/refs/heads/main", Kind: diff.Modify, Type: diff.TypeFile, SHA256Before: s("8"), SHA256After: s("9")},
		{Path: "/w/a.txt", Kind: diff.Delete, Type: diff.TypeFile, SHA256Before: s("same"), SizeBefore: n(4)},
		{Path: "/w/link", Kind: diff.Delete, Type: diff.TypeSymlink, LinkBefore: s("t")},
		{Path: "/w/link2", Kind: diff.Create, Type: diff.TypeSymlink, LinkAfter: s("t")},
		{Path: "/w/sub/b.txt", Kind: diff.Create, Type: diff.TypeFile, SHA256After: s("same"), SizeAfter: n(4)},
		{Path: "/w/sub/c.txt", Kind: diff.Create, Type: diff.TypeFile, SHA256After: s("same"), SizeAfter: n(4)},
		{Path: "/w/sub/in/d.txt", Kind: diff.Create, Type: diff.TypeFile, SHA256After: s("d")},
		{Path: "/x/e.txt", Kind: diff.Delete, Type: diff.TypeFile, SHA256Before: s("d")},
	}
	st := Styles{}
	var got []string
	ws := "\x00"
	for _, e := range reviewEntries(changes, []string{"/w", "/w/sub/in"}) {
		if e.ws != ws {
			got = append(got, workspaceHeader(e.ws))
			ws = e.ws
		}
		_, line, _ := entryLine(st, changes, e)
		got = append(got, line)
	}
	want := []string{
		"in /w:",
		"· .git: 2 objects, 2 refs, index",
		"~ modify file .git/config",
		"+ create file .git/hooks/pre-commit",
		"→ rename file a.txt → sub/b.txt",
		"→ rename symlink link → link2",
		"+ create file sub/c.txt",
		"in /w/sub/in:",
		"→ rename file /x/e.txt → /w/sub/in/d.txt",
	}
	// The rename across a workspace's edge names both absolute, under no
	// workspace: it comes last.
	want = append(want[:7], "elsewhere:", "→ rename file /x/e.txt → /w/sub/in/d.txt")
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if renames(reviewEntries(changes, nil)) != 3 {
		t.Errorf("renames = %d, want 3", renames(reviewEntries(changes, nil)))
	}
}

func TestShortIntent(t *testing.T) {
	for in, want := range map[string]string{
		"Fix the build.":            "Fix the build.",
		"two\nlines\there":          "two lines here",
		strings.Repeat("word ", 20): "word word word word word word word word word word word…",
	} {
		if got := ShortIntent(in); got != want {
			t.Errorf("ShortIntent(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestReviewGitRunsCode: what git runs or obeys inside a .git directory is
// shown in full, not counted, wherever it is: a submodule's hooks and
// config (.git/modules/NAME/), a worktree's config, the attributes that
// pick a filter the config names. Only the internals that run nothing
// (objects, refs, logs, the index, HEAD and the like) are counted.
func TestReviewGitRunsCode(t *testing.T) {
	s := func(v string) *string { return &v }
	changes := []diff.Change{
		{Path: "/w/.git/objects/ab/cd", Kind: diff.Create, Type: diff.TypeFile, SHA256After: s("a")},
		{Path: "/w/.git/COMMIT_EDITMSG", Kind: diff.Create, Type: diff.TypeFile, SHA256After: s("m")},
		{Path: "/w/.git/modules/sub/hooks/post-checkout", Kind: diff.Create, Type: diff.TypeFile, SHA256After: s("h")},
		{Path: "/w/.git/modules/sub/config", Kind: diff.Modify, Type: diff.TypeFile, SHA256Before: s("1"), SHA256After: s("2")},
		{Path: "/w/.git/config.worktree", Kind: diff.Create, Type: diff.TypeFile, SHA256After: s("3")},
		{Path: "/w/.git/info/attributes", Kind: diff.Create, Type: diff.TypeFile, SHA256After: s("4")},
	}
	st := Styles{}
	var got []string
	for _, e := range reviewEntries(changes, []string{"/w"}) {
		_, line, _ := entryLine(st, changes, e)
		got = append(got, line)
	}
	want := []string{
		"· .git: 1 object, 1 other file",
		"+ create file .git/modules/sub/hooks/post-checkout",
		"~ modify file .git/modules/sub/config",
		"+ create file .git/config.worktree",
		"+ create file .git/info/attributes",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestReviewDependencies: an install's hundreds of files are one line per
// package (node_modules/NAME and @SCOPE/NAME, a package's own
// node_modules with it, site-packages/NAME with its .dist-info, a .venv's
// other files, a Go vendor/ whose modules.txt changed), with what each
// holds; a file that runs code later (a .pth) and a package with one
// change are shown in full, and a vendor/ without a manifest's change is
// the project's own code.
func TestReviewDependencies(t *testing.T) {
	s := func(v string) *string { return &v }
	c := func(path string, kind diff.Kind) diff.Change {
		ch := diff.Change{Path: path, Kind: kind, Type: diff.TypeFile}
		if kind != diff.Delete {
			ch.SHA256After = s(path)
		}
		if kind != diff.Create {
			ch.SHA256Before = s(path + "0")
		}
		return ch
	}
	changes := []diff.Change{
		c("/w/package.json", diff.Modify),
		{Path: "/w/node_modules/kleur", Kind: diff.Create, Type: diff.TypeDir},
		c("/w/node_modules/kleur/index.js", diff.Create),
		c("/w/node_modules/kleur/package.json", diff.Create),
		c("/w/node_modules/@types/node/index.d.ts", diff.Create),
		c("/w/node_modules/@types/node/package.json", diff.Modify),
		c("/w/node_modules/a/node_modules/b/x.js", diff.Create),
		c("/w/node_modules/a/y.js", diff.Delete),
		c("/w/node_modules/lone/z.js", diff.Modify),
		c("/w/.venv/lib/python3.12/site-packages/requests/api.py", diff.Create),
		c("/w/.venv/lib/python3.12/site-packages/requests-2.31.0.dist-info/METADATA", diff.Create),
		c("/w/.venv/lib/python3.12/site-packages/evil.pth", diff.Create),
		c("/w/.venv/bin/normalizer", diff.Create),
		c("/w/.venv/pyvenv.cfg", diff.Modify),
		c("/w/vendor/modules.txt", diff.Modify),
		c("/w/vendor/golang.org/x/text/a.go", diff.Create),
		c("/w/vendor/golang.org/x/text/b/c.go", diff.Create),
		c("/w/app/vendor/lib/one.js", diff.Modify),
		c("/w/app/vendor/lib/two.js", diff.Modify),
	}
	var got []string
	for _, e := range reviewEntries(changes, []string{"/w"}) {
		_, line, _ := entryLine(Styles{}, changes, e)
		got = append(got, line)
	}
	want := []string{
		"~ modify file package.json",
		"· node_modules/kleur: 3 created",
		"· node_modules/@types/node: 1 created, 1 modified",
		"· node_modules/a: 1 created, 1 deleted",
		"~ modify file node_modules/lone/z.js",
		"· .venv/lib/python3.12/site-packages/requests: 2 created",
		"+ create file .venv/lib/python3.12/site-packages/evil.pth",
		"· .venv: 1 created, 1 modified",
		"~ modify file vendor/modules.txt",
		"· vendor/golang.org/x/text: 2 created",
		"~ modify file app/vendor/lib/one.js",
		"~ modify file app/vendor/lib/two.js",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
