package plan

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/act-project/act/internal/lifecycle"
)

// TestLoadTornPlan: save does not fsync, so a power cut may leave a plan's
// directory with plan.json empty, cut short or zero-filled. Load refuses
// such a plan with an error (never a panic, never a plan), and a missing
// one is ErrNotFound.
func TestLoadTornPlan(t *testing.T) {
	state := t.TempDir()
	const id = "0123456789abcdef"
	p := &Plan{ID: id, ActionID: "a", Descriptor: []byte(`{"a":1}`), State: lifecycle.Planned}
	tmp := filepath.Join(state, "plans", ".tmp-x")
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := save(tmp, filepath.Join(state, "plans"), p, nil); err != nil {
		t.Fatal(err)
	}
	whole, err := os.ReadFile(filepath.Join(Dir(state, id), "plan.json"))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := Load(state, id); err != nil || got.ID != id {
		t.Fatalf("Load of a whole plan: %v, %v", got, err)
	}
	for name, b := range map[string][]byte{
		"empty": {},
		"cut":   whole[:len(whole)/2],
		"zeros": make([]byte, len(whole)),
	} {
		if err := os.WriteFile(filepath.Join(Dir(state, id), "plan.json"), b, 0o600); err != nil {
			t.Fatal(err)
		}
		if got, err := Load(state, id); err == nil || errors.Is(err, ErrNotFound) {
			t.Errorf("%s plan.json: Load = %v, %v; want an error other than not found", name, got, err)
		}
	}
	if err := os.Remove(filepath.Join(Dir(state, id), "plan.json")); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(state, id); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing plan.json: Load error %v, want ErrNotFound", err)
	}
}

// TestLoadHugePlan: plan.json is the agent's to write, so Load reads no
// more of it than a plan act saved can hold (MaxPlanRecord and its
// newline): a larger one is refused, saying so, before it is read.
func TestLoadHugePlan(t *testing.T) {
	state := t.TempDir()
	const id = "0123456789abcdef"
	if err := os.MkdirAll(Dir(state, id), 0o700); err != nil {
		t.Fatal(err)
	}
	// Sparse: 128 MiB that take no room.
	if err := os.WriteFile(filepath.Join(Dir(state, id), "plan.json"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(filepath.Join(Dir(state, id), "plan.json"), 2*MaxPlanRecord); err != nil {
		t.Fatal(err)
	}
	got, err := Load(state, id)
	if err == nil || !strings.Contains(err.Error(), "more than act writes") {
		t.Errorf("Load of a 128 MiB plan.json = %v, %v; want an error saying it is larger than act writes", got, err)
	}
}
