package descriptors

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// testOptions are the host facts every test checks against: a clock just
// after the examples' created_at, and a user "tester".
var testOptions = CheckOptions{
	Now:      time.Date(2026, 11, 22, 0, 1, 0, 0, time.UTC),
	Home:     "/home/tester",
	UserHome: "/home/tester",
	StateDir: "/home/tester/.local/state/act",
}

// loadCheck runs Load and, when it succeeds, Check: what act validate does
// before the policy.
func loadCheck(t *testing.T, name string, data []byte) (*Descriptor, []string) {
	t.Helper()
	d, doc, probs := Load(name, data)
	if probs == nil {
		probs = Check(d, doc, testOptions)
	}
	var lines []string
	for _, p := range probs {
		lines = append(lines, p.Error())
	}
	return d, lines
}

// TestExamples proves that every file in examples/ is a valid descriptor,
// that there is one per action type, and that the composite has at least
// four steps.
func TestExamples(t *testing.T) {
	files, err := filepath.Glob("../examples/*")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[ActionType]string{}
	ids := map[string]string{}
	for _, f := range files {
		ext := filepath.Ext(f)
		if ext != ".yaml" && ext != ".json" {
			continue
		}
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			d, probs := loadCheck(t, filepath.Base(f), data)
			if len(probs) > 0 {
				t.Fatalf("problems:\n%s", strings.Join(probs, "\n"))
			}
			if prev, dup := seen[d.ActionType]; dup {
				t.Errorf("%s: second example of %s (first: %s)", f, d.ActionType, prev)
			}
			seen[d.ActionType] = f
			if prev, dup := ids[d.ActionID]; dup {
				t.Errorf("%s: action_id %s already used by %s", f, d.ActionID, prev)
			}
			ids[d.ActionID] = f
			want := strings.ToLower(string(d.ActionType))
			if d.ActionType == MultiStepComposite {
				want = "composite"
				if len(d.Steps) < 4 {
					t.Errorf("the composite example has %d steps, want at least 4", len(d.Steps))
				}
			}
			if base := strings.TrimSuffix(filepath.Base(f), ext); base != want {
				t.Errorf("an example of %s is named %s, want %s%s", d.ActionType, base, want, ext)
			}
			if ext == ".yaml" && !strings.HasPrefix(string(data), "# ") {
				t.Errorf("%s does not start with a comment saying what it does", f)
			}
		})
	}
	for _, at := range ActionTypes {
		if _, ok := seen[at]; !ok {
			t.Errorf("no example of %s", at)
		}
	}
}
