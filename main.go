// Command act stands between an AI agent and the machine: it validates the
// actions an agent proposes, dry-runs them in a sandbox, and applies and
// rolls back exactly the reviewed change. See README.md.
package main

import (
	"os"

	"github.com/act-project/act/cmd"
)

func main() { os.Exit(cmd.Main(os.Args, cmd.OSStdio())) }
