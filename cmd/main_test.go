package cmd

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/act-project/act/internal/outcome"
)

func TestNormalizeArgs(t *testing.T) {
	app := newApp(DefaultEnv(Stdio{In: &bytes.Buffer{}, Out: &bytes.Buffer{}, Err: &bytes.Buffer{}}))
	for _, tt := range []struct {
		in, want []string
		err      bool
	}{
		{in: []string{"act", "validate", "d.yaml", "--json"}, want: []string{"act", "--json", "validate", "d.yaml"}},
		{in: []string{"act", "validate", "d.yaml", "--home", "h", "--policy=p"}, want: []string{"act", "--home", "h", "--policy=p", "validate", "d.yaml"}},
		{in: []string{"act", "--json", "schema", "--jsonschema"}, want: []string{"act", "--json", "schema", "--jsonschema"}},
		{in: []string{"act", "schema", "--jsonschema", "--json"}, want: []string{"act", "--json", "schema", "--jsonschema"}},
		{in: []string{"act", "validate", "-"}, want: []string{"act", "validate", "-"}},
		{in: []string{"act", "validate", "--", "-d.yaml"}, want: []string{"act", "validate", "--", "-d.yaml"}},
		{in: []string{"act", "validate", "--frob", "d.yaml"}, want: []string{"act", "validate", "--frob", "d.yaml"}},
		{in: []string{"act", "--version"}, want: []string{"act", "--version"}},
		{in: []string{"act", "frobnicate"}, err: true},
		{in: []string{"act", "--json", "--"}, err: true},
	} {
		got, err := normalizeArgs(app, tt.in)
		if (err != nil) != tt.err {
			t.Errorf("normalizeArgs(%q) error = %v, want error %v", tt.in, err, tt.err)
			continue
		}
		if d := cmp.Diff(tt.want, got); !tt.err && d != "" {
			t.Errorf("normalizeArgs(%q) mismatch (-want +got):\n%s", tt.in, d)
		}
	}
}

func TestExitCodeTable(t *testing.T) {
	for code, want := range map[int]string{0: "valid", 1: "error", 2: "error", 3: "invalid", 4: "blocked", 5: "failed", 6: "rejected", 9: "not_found"} {
		if got := statusOf(outcome.ForCode(code), "valid"); got != want {
			t.Errorf("statusOf(%d) = %q, want %q", code, got, want)
		}
	}
}

// TestEveryCommandHelp checks that every command's help has a one-line
// summary, a usage line, examples and its exit status.
func TestEveryCommandHelp(t *testing.T) {
	app := NewApp()
	for _, c := range app.VisibleCommands() {
		if c.Name == "policy" {
			continue // its help is the policy layers'; checked there
		}
		switch {
		case c.Usage == "" || strings.Contains(c.Usage, "\n"):
			t.Errorf("%s: no one-line summary", c.Name)
		case !strings.HasPrefix(c.UsageText, "act "+c.Name):
			t.Errorf("%s: usage %q does not start with act %s", c.Name, c.UsageText, c.Name)
		case !strings.Contains(c.Description, "EXAMPLES:\n   act "):
			t.Errorf("%s: no examples", c.Name)
		case !strings.Contains(c.Description, "EXIT STATUS:\n   0"):
			t.Errorf("%s: no exit status", c.Name)
		}
	}
}
