//go:build !urfave_cli_no_docs

package main

import (
	"strings"
	"testing"

	"github.com/act-project/act/cmd"
)

// TestManPage keeps cmd/act.1 (docs/act.1 links to it) in step with the
// CLI's help: it is what act man prints; -update rewrites it. Built with
// urfave_cli_no_docs, act has no renderer and this test is left out.
func TestManPage(t *testing.T) {
	got, err := cmd.ManPage(cmd.NewApp())
	if err != nil {
		t.Fatal(err)
	}
	checkGenerated(t, "cmd/act.1", []byte(got), "TestManPage")
	// The help's <home> is text, not a tag markdown would drop.
	if !strings.Contains(got, "else <home>/policy.yaml") {
		t.Errorf("the manual page drops <home>")
	}
	for _, c := range []string{"validate", "plan", "apply", "rollback", "pending", "deny", "history", "mcp"} {
		if !strings.Contains(got, ".SH "+c+"\n") {
			t.Errorf("the manual page does not describe %s", c)
		}
	}
}
