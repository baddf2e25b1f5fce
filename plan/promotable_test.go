package plan

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/act-project/act/diff"
)

// promotableEnv names, in the child TestPromotableOrdinaryUser starts, the
// tree its parent made.
const promotableEnv = "_ACT_TEST_PROMOTABLE_BASE"

// TestPromotableOrdinaryUser checks, as nobody, that a plan whose changes
// the promotion could not make is refused at plan (op.permission-denied,
// naming each path), and that one it could make passes. The parent, root,
// makes a project the way a person's machine has one: a root-owned
// directory, a sticky one holding another user's file, another user's
// directory; the child is nobody.
func TestPromotableOrdinaryUser(t *testing.T) {
	if base := os.Getenv(promotableEnv); base != "" {
		promotableChild(t, base)
		return
	}
	dir := nobodyDir(t)
	base := filepath.Join(dir, "tree")
	for _, d := range []string{"rootdir", "sticky", "theirs", "mine", "mine/sub"} {
		mustDo(t, os.MkdirAll(filepath.Join(base, d), 0o755))
	}
	mustDo(t, os.Chmod(base, 0o755))
	for _, f := range []string{"rootdir/f", "sticky/theirs.txt", "sticky/mine.txt", "mine/f", "theirs/f"} {
		mustDo(t, os.WriteFile(filepath.Join(base, f), []byte("x\n"), 0o644))
	}
	mustDo(t, os.Chmod(filepath.Join(base, "sticky"), 0o777|os.ModeSticky))
	mustDo(t, os.Chown(filepath.Join(base, "sticky/theirs.txt"), 4242, 4242))
	mustDo(t, os.Chown(filepath.Join(base, "theirs"), 4242, 4242))
	for _, p := range []string{"sticky/mine.txt", "mine", "mine/f", "mine/sub"} {
		mustDo(t, os.Chown(filepath.Join(base, p), 65534, 65534))
	}
	runAsNobody(t, dir, "TestPromotableOrdinaryUser", promotableEnv+"="+base)
}

func promotableChild(t *testing.T, base string) {
	p := func(rel string) string { return filepath.Join(base, rel) }
	mode := func(m string) *string { return &m }
	state := t.TempDir()
	cases := []struct {
		name   string
		change diff.Change
		denied string // a part of the message, "" if permitted
	}{
		{"modify in a root-owned directory", diff.Change{Path: p("rootdir/f"), Kind: diff.Modify, Type: diff.TypeFile}, "is not writable by uid 65534"},
		{"create in a root-owned directory", diff.Change{Path: p("rootdir/new"), Kind: diff.Create, Type: diff.TypeFile}, "is not writable"},
		{"delete another's file in a sticky directory", diff.Change{Path: p("sticky/theirs.txt"), Kind: diff.Delete, Type: diff.TypeFile}, "is a sticky directory"},
		{"delete one's own file in a sticky directory", diff.Change{Path: p("sticky/mine.txt"), Kind: diff.Delete, Type: diff.TypeFile}, ""},
		{"chmod another's directory", diff.Change{Path: p("theirs"), Kind: diff.Modify, Type: diff.TypeDir, ModeBefore: mode("0755"), ModeAfter: mode("0700")}, "only by its owner"},
		{"modify in one's own directory", diff.Change{Path: p("mine/f"), Kind: diff.Modify, Type: diff.TypeFile}, ""},
		{"chmod one's own directory", diff.Change{Path: p("mine/sub"), Kind: diff.Modify, Type: diff.TypeDir, ModeBefore: mode("0755"), ModeAfter: mode("0700")}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			probs := checkPromotable([]diff.Change{c.change}, state)
			switch {
			case c.denied == "" && len(probs) > 0:
				t.Fatalf("refused: %v", probs)
			case c.denied != "" && (len(probs) != 1 || probs[0].Rule != "op.permission-denied" || probs[0].Field != c.change.Path || !strings.Contains(probs[0].Message, c.denied)):
				t.Fatalf("got %v, want one op.permission-denied for %s saying %q", probs, c.change.Path, c.denied)
			}
		})
	}
	// A directory the plan itself creates needs no permission check of
	// its own: its parent's is enough.
	probs := checkPromotable([]diff.Change{
		{Path: p("mine/new"), Kind: diff.Create, Type: diff.TypeDir},
		{Path: p("mine/new/f"), Kind: diff.Create, Type: diff.TypeFile},
	}, state)
	if len(probs) > 0 {
		t.Fatalf("a new directory in one's own directory: %v", probs)
	}
}
