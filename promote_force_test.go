package main

// A forced rollback never loses what a person did after the apply: the
// crash matrix of a forced rollback over a tree changed since the apply
// (files edited, a file replaced by a directory, entries added inside a
// directory the apply created), and a property test over random trees,
// random applies and random changes.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// driftComposite changes the applied composite as a person might: it edits
// a file the apply created and one it modified, replaces the file the
// apply put where a directory was by a directory holding a file, and adds
// a file and a nested directory to a directory the apply created. It
// returns the content each saved path must hold, by path relative to the
// project.
func driftComposite(t *testing.T, w *world) map[string]string {
	t.Helper()
	want := map[string]string{
		"new.txt":                  "edited new\n",
		"mod.txt":                  "edited mod\n",
		"swap/x.txt":               "a directory again\n",
		"cache/user.txt":           "important\n",
		"cache/sub/deeper/d.txt":   "deep\n",
		"cache/sub/deeper/e/f.txt": "deeper still\n",
	}
	must(t, os.Remove(filepath.Join(w.root, "swap")))
	for rel, content := range want {
		p := filepath.Join(w.root, rel)
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.WriteFile(p, []byte(content), 0o644))
	}
	must(t, os.Chmod(filepath.Join(w.root, "cache/sub"), 0o750))
	return want
}

// requireSaved fails unless every path of want is kept, with its content,
// under the action's saved directory.
func requireSaved(t *testing.T, w *world, want map[string]string) {
	t.Helper()
	saved := filepath.Join(w.home, "backups", w.id, "saved")
	for rel, content := range want {
		got, err := os.ReadFile(filepath.Join(saved, w.root, rel))
		if err != nil || string(got) != content {
			t.Fatalf("the saved copy of %s: %q, %v; want %q", rel, got, err, content)
		}
	}
	fi, err := os.Stat(filepath.Join(saved, w.root, "cache/sub"))
	if err != nil || fi.Mode().Perm() != 0o750 {
		t.Fatalf("the saved cache/sub: %v, %v; want mode 0750", fi, err)
	}
}

// TestCrashForcedRollback kills `act rollback --force --confirm` of the
// applied and then changed composite at each of its crash points in turn.
// After recovery the tree must be exactly the changed one (nothing saved
// is left behind; a forced rollback then succeeds) or exactly the
// original, with every changed entry kept under the saved directory.
func TestCrashForcedRollback(t *testing.T) {
	t.Parallel()
	t.Run("same-fs", func(t *testing.T) { t.Parallel(); crashForcedRollback(t, "") })
	t.Run("cross-fs", func(t *testing.T) { t.Parallel(); crashForcedRollback(t, crossBase(t)) })
}

func crashForcedRollback(t *testing.T, base string) {
	if base != "" {
		base = filepath.Join(base, "forced")
		must(t, os.Mkdir(base, 0o755))
	}
	before, _ := reference(t, baseFor(t, base, "ref"))
	var sawBefore, sawAfter, killedRecoveries int
	n := 1
	for ; ; n++ {
		if n > 300 {
			t.Fatal("the rollback never completes")
		}
		w := composite(t, baseFor(t, base, fmt.Sprint(n)))
		planID := w.plan()
		w.ok(0, "apply", "--confirm", planID)
		want := driftComposite(t, w)
		drifted := snapshot(t, w.root)
		r := w.ok(8, "rollback", w.id)
		for _, rel := range []string{"new.txt", "mod.txt", "swap", "cache/user.txt", "cache/sub"} {
			if !strings.Contains(r.stderr, "rollback.target-changed: "+filepath.Join(w.root, rel)+": ") {
				t.Fatalf("the refusal does not name %s\n%s", rel, r)
			}
		}
		w.requireTree("changed", drifted)
		r = w.act(n, "rollback", "--force", "--confirm", w.id)
		if !r.killed {
			if r.code != 0 {
				t.Fatalf("crash point %d not reached, but:\n%s", n, r)
			}
			w.requireTree("original", before)
			requireSaved(t, w, want)
			w.settled()
			break
		}
		killedRecoveries += w.recoverBy(n%4, planID)
		w.settled()
		switch {
		case w.is(drifted):
			sawAfter++
			if st := w.state(); st != "applied" {
				t.Fatalf("N=%d: the tree is the changed one but the action is %q", n, st)
			}
			w.ok(0, "rollback", "--force", "--confirm", w.id)
		case w.is(before):
			sawBefore++
			if st := w.state(); st != "rolled_back" {
				t.Fatalf("N=%d: the tree is the original but the action is %q", n, st)
			}
		default:
			t.Fatalf("N=%d: after recovery the tree is neither the original (-) nor the changed (+) one:\n%s\nwant (changed):\n%s",
				n, cmp.Diff(before, snapshot(t, w.root)), cmp.Diff(drifted, snapshot(t, w.root)))
		}
		w.requireTree("original", before)
		requireSaved(t, w, want)
		w.settled()
	}
	t.Logf("%d crash points: %d recovered to changed, %d to rolled back; %d recoveries killed", n-1, sawAfter, sawBefore, killedRecoveries)
	if sawBefore == 0 || sawAfter == 0 {
		t.Errorf("the matrix missed a case: recovered to rolled back %d, to changed %d", sawBefore, sawAfter)
	}
}
