package cmd

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/act-project/act/doors"
	"github.com/act-project/act/doors/hook"
	"github.com/act-project/act/internal/agentsetup"
	"github.com/act-project/act/internal/outcome"
	"github.com/act-project/act/internal/state"
)

// act hook claude-code and act hook codex (docs/agents.md): the flags,
// help and exit codes of the hook door; package doors/hook answers.

// hookTimeout is how long the hook takes to decide, by default: below
// Claude Code's own default hook timeout (600 s), whose expiry would let
// the tool run.
const hookTimeout = 50 * time.Second

// hookName names the descriptor the hook makes, where positions would
// name a file.
const hookName = "<act hook>"

func newHookCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:      "hook",
		Usage:     "answer an agent's hook before a tool runs (claude-code, codex)",
		UsageText: "act hook claude-code|codex [--workspace DIR] [--timeout DURATION]\n   act hook install|check claude-code|codex [--project DIR]",
		Description: `Hooks an agent harness runs before a tool call; see docs/agents.md.

EXAMPLES:
   act hook claude-code --workspace ~/src/proj
   act hook codex --workspace ~/src/proj
   act hook install codex --project ~/src/proj

` + endsWith("a decision printed (or nothing: a tool act does not handle)", 1, 2, 5).
			note(2, "blocked: bad input, an error or the timeout (the reason on stderr)").note(5, "install, check: a set-up not safe").help(),
		Subcommands: []*cli.Command{{
			Name:      "claude-code",
			Usage:     "a Claude Code PreToolUse hook: Write, Edit, MultiEdit and Bash dry-run by act",
			UsageText: "act hook claude-code [--workspace DIR] [--timeout DURATION]",
			Description: `Reads one PreToolUse hook input (JSON) on stdin, as Claude Code sends it
   (https://code.claude.com/docs/en/hooks), and prints its decision as the
   JSON hookSpecificOutput (permissionDecision allow, ask or deny) on stdout.

   Write, Edit and MultiEdit become a FILE_WRITE (content, or exact-match
   edits); Bash becomes a COMMAND_EXECUTION of sh -c COMMAND in the
   workspace, as act run makes it. Each is planned (dry-run) and decided by
   the policy: allowed, act promotes a Write, Edit or MultiEdit itself (act
   rollback undoes it) and answers "deny", saying it was applied; a Bash
   runs with its command replaced by "act apply --as-command PLAN_ID",
   which promotes exactly the reviewed diff and ends as the command did
   (its output, its exit code) — or, when it changed nothing, recorded as
   run by the hook and replaced by a "cat" of the output it printed in the
   sandbox; a person needed, "ask" with act's plan and
   reasons (Bash: the replacement gets --confirm); when the policy counts
   only a terminal or a signature as a person's yes, "deny" and the plan
   stays in act pending; blocked, "deny" with the reason. A command still
   running in the sandbox at four fifths of --timeout is stopped and
   answered by the policy's hooks.cannot_dry_run. Any other tool: no output
   (Claude Code decides as without act).

   Installed as a PostToolUse hook too, it records a Write or Edit a person
   allowed at the prompt, which Claude Code's tool wrote, as an action act
   rollback undoes — only if the file is exactly what the person was shown.

   The workspace (--workspace, default $CLAUDE_PROJECT_DIR; never the
   input's cwd, which the agent moves) must lie under
   an allowed root of the policy; its changes can be LOW only inside the
   policy's workspaces (act hook install adds the project), as act run's.
   Act fails closed: malformed input, any error, and no decision
   within --timeout (default 50s) exit 2, which blocks the tool call.

EXAMPLES:
   echo '{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"go test ./..."},"cwd":"'"$PWD"'"}' | act hook claude-code

` + endsWith("a decision printed (or nothing: a tool act does not handle)", 2).
				note(2, "blocked: bad input, an error or the timeout (the reason on stderr)").help(),
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "workspace", Usage: "the directory the agent may change (default $CLAUDE_PROJECT_DIR; never the input's cwd)"},
				&cli.DurationFlag{Name: "timeout", Value: hookTimeout, Usage: "decide within this long, else deny"},
			},
			Action: hookAction(env, hook.ClaudeCode),
		}, newHookCodexCommand(env), newHookInstallCommand(env), newHookCheckCommand(env)},
		Action: func(c *cli.Context) error {
			return hookBlock(env, errors.New("act hook takes a harness: act hook claude-code or act hook codex"))
		},
	}
}

// hookAction is the action of act hook h.name: runHook, every panic and
// bad use exit 2.
func hookAction(env *Env, h *hook.Harness) cli.ActionFunc {
	return func(c *cli.Context) (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = hookBlock(env, fmt.Errorf("internal error: %v", r))
			}
		}()
		if c.NArg() > 0 {
			return hookBlock(env, fmt.Errorf("%s takes no arguments, got %q", h.Name, c.Args().First()))
		}
		if h.NeedsWorkspace != "" && c.String("workspace") == "" {
			return hookBlock(env, errors.New(h.NeedsWorkspace))
		}
		env.keepPolicy = true
		out, err := hook.Answer(c.Context, hookHost{env}, h, env.Stdio.In, c.String("workspace"), c.Duration("timeout"))
		if err != nil {
			return hookBlock(env, err)
		}
		if _, err := env.Stdio.Out.Write(out); err != nil {
			return hookBlock(env, err)
		}
		return nil
	}
}

// hookBlock ends the hook with exit 2 and err on stderr: Claude Code
// blocks the tool call and shows the reason to Claude.
func hookBlock(env *Env, err error) error {
	fmt.Fprintf(env.Stdio.Err, "act hook: blocked, act could not decide: %s\n", escapeLine(err.Error()))
	return &rendered{outcome.HookBlocked}
}

// hookActCommand is the shell command line of this act with args: the
// executable as the hook was started (a name found on PATH made
// absolute), its state dir and policy as every line act hands out names
// them (env.commandLine).
func hookActCommand(env *Env, args ...string) string {
	return env.commandLine(hookSelf(), args...)
}

// hookReplacement is the command that replaces a Bash call, act apply
// --as-command PLAN_ID: it runs in the agent's own shell, whose
// environment the agent shapes (an ACT_HOME exported there would name a
// state dir holding a plan of its making), so it names the hook's state
// dir always, the real user's default too.
func hookReplacement(env *Env, id string) string {
	home, err := env.stateDir()
	if err != nil || !env.defaultStateDir(home) || env.pinned != nil && *env.pinned != "" {
		return hookActCommand(env, "apply", "--as-command", id) // named already, or pinned
	}
	return env.commandLine(hookSelf(), "--home", home, "apply", "--as-command", id)
}

// hookSelf is the absolute path of this act.
func hookSelf() string {
	self := os.Args[0]
	if !strings.Contains(self, "/") {
		if p, err := exec.LookPath(self); err == nil {
			self = p
		}
	}
	if abs, err := filepath.Abs(self); err == nil && strings.Contains(self, "/") {
		self = abs
	}
	return self
}

// hookHost is what package hook needs of this act process.
type hookHost struct{ env *Env }

func (h hookHost) Getenv(key string) string { return h.env.Getenv(key) }

func (h hookHost) StateDir() (state.Dir, error) {
	dir, err := h.env.stateDir()
	return state.Dir{Root: dir}, err
}

func (h hookHost) Workspace(dir string) (string, error) {
	if err := h.env.addWorkspace(dir); err != nil {
		return "", err
	}
	return h.env.workspaces[len(h.env.workspaces)-1], nil
}

func (h hookHost) Door(name string) (*doors.Door, error) {
	h.env.caller = name // the door, in every record this decision writes
	pol, err := h.env.loadPolicy(&result{})
	if err != nil {
		return nil, err
	}
	door := h.env.door(pol)
	door.ActLine = func(args ...string) string { return hookActCommand(h.env, args...) }
	return door, nil
}

func (h hookHost) Replacement(id string) string { return hookReplacement(h.env, id) }

func (h hookHost) ClaudePlaces() agentsetup.Places { return hookPlaces(h.env) }
