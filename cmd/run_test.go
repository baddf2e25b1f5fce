package cmd

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestRunArgs: after act run's command word, the first argument starts
// the command line, and everything after it is the command's, flags too.
func TestRunArgs(t *testing.T) {
	app := newApp(DefaultEnv(Stdio{In: &bytes.Buffer{}, Out: &bytes.Buffer{}, Err: &bytes.Buffer{}}))
	for _, tt := range []struct{ in, want []string }{
		{[]string{"act", "run", "go", "test", "./..."}, []string{"act", "run", "go", "test", "./..."}},
		{[]string{"act", "run", "--workspace", "w", "sh", "-c", "x", "--json"}, []string{"act", "run", "--workspace", "w", "--", "sh", "-c", "x", "--json"}},
		{[]string{"act", "run", "--json", "--", "sh", "-c", "x"}, []string{"act", "--json", "run", "--", "sh", "-c", "x"}},
		{[]string{"act", "run", "--confirm", "ls", "--confirm"}, []string{"act", "run", "--confirm", "--", "ls", "--confirm"}},
	} {
		got, err := normalizeArgs(app, tt.in)
		if err != nil {
			t.Errorf("normalizeArgs(%q): %v", tt.in, err)
			continue
		}
		if d := cmp.Diff(tt.want, got); d != "" {
			t.Errorf("normalizeArgs(%q) mismatch (-want +got):\n%s", tt.in, d)
		}
	}
}
