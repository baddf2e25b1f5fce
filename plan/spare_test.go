package plan

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/act-project/act/sandbox"
)

// takeSpare waits (a little) for s's spare to be made and takes it.
func takeSpare(t *testing.T, s *SpareDirs, plans string) string {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if dir := s.Take(plans); dir != "" {
			return dir
		}
	}
	t.Fatal("no spare plan directory was made")
	return ""
}

// TestSpareDirs: a spare is a fresh temporary plan directory holding only
// an empty layer directory; a Build that takes it saves the plan from it;
// a spare gc removed is not taken; Close leaves nothing behind.
func TestSpareDirs(t *testing.T) {
	e := newBuildEnv(t)
	plans := filepath.Join(e.stateDir, "plans")
	s := NewSpareDirs(e.stateDir)
	if got := s.Take(filepath.Join(t.TempDir(), "plans")); got != "" {
		t.Errorf("Take of another state dir's plans = %q, want none", got)
	}

	dir := takeSpare(t, s, plans)
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
	e.planDir = func(p string) string {
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
	for deadline := time.Now().Add(5 * time.Second); len(s.ready) == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no spare plan directory was made")
		}
	}
	ents, _ := os.ReadDir(plans)
	for _, ent := range ents {
		if strings.HasPrefix(ent.Name(), ".tmp-") {
			sandbox.RemoveAll(filepath.Join(plans, ent.Name()))
		}
	}
	if got := s.Take(plans); got != "" {
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
