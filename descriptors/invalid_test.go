package descriptors

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files (testdata/invalid/*.problems.golden, docs/rules.md)")

// TestInvalid loads and checks every descriptor in testdata/invalid and
// compares the problems with <name>.problems.golden, one Problem.Error() per
// line. A file is named after the rule it is about, <rule-id>.yaml or
// <rule-id>__<variant>.yaml (or .json): that rule must be among its
// problems. With -update the goldens are rewritten.
func TestInvalid(t *testing.T) {
	files, err := filepath.Glob("testdata/invalid/*")
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	for _, r := range Rules() {
		known[r.ID] = true
	}
	covered := map[string]bool{}
	n := 0
	for _, f := range files {
		ext := filepath.Ext(f)
		if ext != ".yaml" && ext != ".json" {
			continue
		}
		n++
		name := filepath.Base(f)
		rule, _, _ := strings.Cut(strings.TrimSuffix(name, ext), "__")
		covered[rule] = true
		t.Run(name, func(t *testing.T) {
			if !known[rule] {
				t.Fatalf("the file name names %q, which is not a rule id of Rules()", rule)
			}
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			_, probs := loadCheck(t, name, data)
			got := []byte(strings.Join(probs, "\n") + "\n")
			golden := strings.TrimSuffix(f, ext) + ".problems.golden"
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("problems differ from %s:\ngot:\n%s\nwant:\n%s", golden, got, want)
			}
			found := false
			for _, p := range probs {
				if strings.Contains(p, ": "+rule+": ") {
					found = true
				}
			}
			if !found {
				t.Errorf("no %s problem among:\n%s", rule, got)
			}
		})
	}
	if n < 70 {
		t.Errorf("%d invalid cases, want at least 70", n)
	}
	for _, r := range Rules() {
		if r.Layer().String() != "policy" && !covered[r.ID] {
			t.Errorf("no invalid case for rule %s", r.ID)
		}
	}
	// Every golden has its descriptor.
	goldens, _ := filepath.Glob("testdata/invalid/*.problems.golden")
	for _, g := range goldens {
		base := strings.TrimSuffix(g, ".problems.golden")
		if _, err := os.Stat(base + ".yaml"); err == nil {
			continue
		}
		if _, err := os.Stat(base + ".json"); err == nil {
			continue
		}
		t.Errorf("%s has no descriptor", g)
	}
}
