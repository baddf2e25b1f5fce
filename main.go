// Command act stands between an AI agent and the machine: it validates the
// actions an agent proposes, dry-runs them in a sandbox, and applies and
// rolls back exactly the reviewed change. See README.md.
package main

import (
	"os"
	"slices"

	"github.com/act-project/act/cmd"
	// Maps in the heap the process is about to use, before the other
	// packages' initialisation touches it page by page.
	_ "github.com/act-project/act/internal/prefault"
	"github.com/act-project/act/internal/startheap"
	"github.com/act-project/act/sandbox/isolate"
)

func main() {
	startheap.Adjust(32 << 20)
	// An ordinary user without a memory cgroup, where a systemd user
	// manager runs, gets a delegated user scope for the commands' memory
	// cap: act re-executes itself in one (docs/sandbox-process.md). Only
	// the commands that may run a sandbox pay for it.
	if slices.ContainsFunc(os.Args[1:], func(a string) bool { return slices.Contains(sandboxCommands, a) }) {
		isolate.EnterUserScope(os.Args[1:])
	}
	os.Exit(cmd.Main(os.Args, cmd.OSStdio()))
}

// sandboxCommands are the command words that may run commands in the
// sandbox.
var sandboxCommands = []string{"plan", "apply", "run", "mcp", "hook"}
