// Package hook is the door of agent harnesses' tool hooks: Claude Code's
// PreToolUse and PostToolUse (https://code.claude.com/docs/en/hooks) and
// Codex CLI's PreToolUse, with the Codex patch parser's descriptors
// (docs/agents.md). It translates a hook input into a typed descriptor
// (a Write, Edit or MultiEdit into a FILE_WRITE, a Bash into the command
// act run makes, an apply_patch into its steps), asks the gate (check,
// dry run, gate.Submit, gate.Adopt) and translates the gate's decision
// into the harness's answer, every text through package review.
//
// A harness runs a tool when its hook errs or exits with any code but 2,
// so the hook fails closed: every error, panic or timeout is returned to
// the caller, which exits 2 with it on stderr, blocking the tool call.
// What the policy allows of a Write, Edit or MultiEdit the hook promotes
// itself, so that act rollback undoes it; an allowed Bash becomes act
// apply --as-command PLAN_ID.
package hook

import (
	"github.com/act-project/act/doors"
	"github.com/act-project/act/internal/agentsetup"
	"github.com/act-project/act/internal/state"
)

// A Host is what a hook needs of the act process that runs it (cmd's).
type Host interface {
	// Getenv is the hook's environment (CLAUDE_PROJECT_DIR).
	Getenv(key string) string
	// StateDir is act's state directory.
	StateDir() (state.Dir, error)
	// Workspace makes dir, an absolute directory, a workspace of this
	// session — under an allowed root of the policy, not holding act's
	// state dir — and returns it as kept: resolved through links.
	Workspace(dir string) (string, error)
	// Door is the door of the harness named name, under the policy now
	// and with this session's workspaces (call it after Workspace); its
	// ActLine names act by its absolute path.
	Door(name string) (*doors.Door, error)
	// Replacement is the command that replaces a Bash call, act apply
	// --as-command PLAN_ID: it runs in the agent's own shell, so it names
	// the state dir always.
	Replacement(id string) string
	// ClaudePlaces is where Claude Code keeps its settings, from the
	// hook's environment (its deny rules: claudeDenies).
	ClaudePlaces() agentsetup.Places
}
