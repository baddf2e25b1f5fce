package plan

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/act-project/act/sandbox"
)

// waitSpare waits for s's spare to be made: it receives the spare and
// puts it back, under s.mu as Take and Close receive it. The two minutes
// are a liveness bound, not a speed one.
func waitSpare(t *testing.T, s *SpareDirs) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case sp := <-s.ready:
		s.ready <- sp
	case <-time.After(2 * time.Minute):
		t.Fatal("hung: no spare plan directory was made in two minutes")
	}
}

// takeSpare waits for s's spare to be made and takes it for scopes.
func takeSpare(t *testing.T, s *SpareDirs, plans string, scopes []string) string {
	t.Helper()
	waitSpare(t, s)
	dir := s.Take(plans, scopes)
	if dir == "" {
		t.Fatal("the spare plan directory was not taken")
	}
	return dir
}

// TestSpareDirs: a spare is a fresh temporary plan directory holding only
// an empty layer directory; a Build that takes it saves the plan from it;
// a spare gc removed is not taken; Close leaves nothing behind.
func TestSpareDirs(t *testing.T) {
	e := newBuildEnv(t)
	plans := filepath.Join(e.stateDir, "plans")
	s := NewSpareDirs(e.stateDir)
	if got := s.Take(filepath.Join(t.TempDir(), "plans"), nil); got != "" {
		t.Errorf("Take of another state dir's plans = %q, want none", got)
	}

	dir := takeSpare(t, s, plans, []string{e.s})
	if filepath.Dir(dir) != plans || !strings.HasPrefix(filepath.Base(dir), ".tmp-") {
		t.Errorf("spare %s is not a temporary directory of %s", dir, plans)
	}
	var names []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		rel, _ := filepath.Rel(dir, p)
		names = append(names, rel)
		return err
	})
	if strings.Join(names, " ") != ". layer" {
		t.Errorf("spare holds %q, want only an empty layer directory", names)
	}

	// A Build given the spare saves its plan from it (the next spare,
	// made meanwhile, is removed first: Build checks that it leaves no
	// temporary directory behind).
	s.Close()
	e.planDir = func(p string, _ []string) string {
		if p != plans {
			t.Errorf("PlanDir(%q), want %q", p, plans)
		}
		return dir
	}
	body := fileWriteBody("1", "", "{create: [$S/new], modify: [], delete: []}", `{path: $S/new, content: "x\n", create_only: true}`)
	p, err := e.build(t, buildDescriptor(t, e.s, e.stateDir, body))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(dir); !os.IsNotExist(err) {
		t.Errorf("the spare is still there after the plan was saved from it (%v)", err)
	}
	if _, err := Load(e.stateDir, p.ID); err != nil {
		t.Fatal(err)
	}

	// A spare act gc removed is not taken.
	s = NewSpareDirs(e.stateDir)
	waitSpare(t, s)
	ents, _ := os.ReadDir(plans)
	for _, ent := range ents {
		if strings.HasPrefix(ent.Name(), ".tmp-") {
			sandbox.RemoveAll(filepath.Join(plans, ent.Name()))
		}
	}
	if got := s.Take(plans, nil); got != "" {
		t.Errorf("Take returned %s, which act gc removed", got)
	}

	s.Close()
	ents, _ = os.ReadDir(plans)
	for _, ent := range ents {
		if strings.HasPrefix(ent.Name(), ".tmp-") {
			t.Errorf("Close left plans/%s", ent.Name())
		}
	}
}

// TestSpareDirsScopes: the next spare's layer holds the scope roots of
// the plan that took the one before, copied up; it is taken by a plan of
// the same scope roots only, and only while they are as CopyUpDir would
// make them now: a scope root whose mode changed meanwhile makes the
// spare unused (and removed).
func TestSpareDirsScopes(t *testing.T) {
	e := newBuildEnv(t)
	plans := filepath.Join(e.stateDir, "plans")
	scopes := []string{e.s}
	s := NewSpareDirs(e.stateDir)
	defer s.Close()
	sandbox.RemoveAll(takeSpare(t, s, plans, scopes)) // the next is made for scopes

	dir := takeSpare(t, s, plans, scopes)
	l := sandbox.NewLayerSystem(sandbox.RealSystem{}, filepath.Join(dir, "layer"))
	if !l.CopiedUp(e.s) {
		t.Errorf("the spare's layer does not hold %s copied up", e.s)
	}
	want := mxSnapshot(t, e.root)["s"]
	fi, err := os.Stat(l.Upper(e.s))
	if err != nil || fmt.Sprintf("%04o", fi.Mode().Perm()) != want.Mode {
		t.Errorf("the copied-up scope root: %v, %v; want mode %s", fi, err, want.Mode)
	}
	sandbox.RemoveAll(dir)

	// Another scope: the spare made for scopes is not taken.
	waitSpare(t, s)
	if got := s.Take(plans, []string{filepath.Join(e.root, "other")}); got != "" {
		t.Errorf("a spare made for %v was taken for another scope: %s", scopes, got)
	}
	// That Take made the next for the other scope: not taken for scopes
	// either, and the next is for scopes again.
	waitSpare(t, s)
	if got := s.Take(plans, scopes); got != "" {
		t.Errorf("a spare made for another scope was taken for %v: %s", scopes, got)
	}
	// The same scope, whose mode changed since the spare was made.
	waitSpare(t, s)
	if err := os.Chmod(e.s, 0o700); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(e.s, 0o755)
	if got := s.Take(plans, scopes); got != "" {
		t.Errorf("a spare whose scope root's mode changed was taken: %s", got)
	}
}
