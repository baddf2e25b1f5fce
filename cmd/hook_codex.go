package cmd

import (
	"github.com/urfave/cli/v2"

	"github.com/act-project/act/doors/hook"
)

func newHookCodexCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:      "codex",
		Usage:     "a Codex CLI PreToolUse hook: shell commands and apply_patch dry-run and applied by act",
		UsageText: "act hook codex --workspace DIR [--timeout DURATION]",
		Description: `Reads one PreToolUse hook input (JSON) on stdin, as Codex CLI sends it
   (https://developers.openai.com/codex/hooks), and prints its decision as
   the JSON hookSpecificOutput on stdout. Codex enforces only "deny", so
   every decision is a deny; its reason tells the model what act did.

   A shell command (tool "Bash") becomes a COMMAND_EXECUTION of sh -c
   COMMAND in the workspace, as act run makes it; an apply_patch becomes
   the FILE_WRITE, FILE_DELETE and DIRECTORY_CREATE steps of the patch
   (the new content of an updated file worked out from the file as it is;
   a patch whose lines are not in the file, or that names a path outside
   the workspace, is refused). Each is planned (dry-run) and decided by
   the policy: allowed, act promotes the plan itself (act rollback undoes
   it) and denies the call, the reason saying it was applied as action
   ACTION_ID, with a command's captured output and exit status; a person
   needed, the plan waits in act pending and the reason names the
   "act apply PLAN_ID --confirm" a person runs; blocked, the reason says
   why. Any other tool: no output (Codex decides as without act).

   The workspace is --workspace (Codex sets no project variable, and the
   input's cwd is the agent's to move); it must lie under an allowed root
   of the policy. Act fails closed: malformed input, any error, and no
   decision within --timeout (default 50s) exit 2 with the reason on
   stderr, which blocks the tool call.

EXAMPLES:
   echo '{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"go test ./..."},"cwd":"'"$PWD"'"}' | act hook codex --workspace "$PWD"

` + endsWith("a decision printed (or nothing: a tool act does not handle)", 2).
			note(2, "blocked: bad input, an error or the timeout (the reason on stderr)").help(),
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "workspace", Usage: "the directory the agent may change (required; never the input's cwd)"},
			&cli.DurationFlag{Name: "timeout", Value: hookTimeout, Usage: "decide within this long, else block"},
		},
		Action: hookAction(env, hook.Codex),
	}
}
