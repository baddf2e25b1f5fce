package hook

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/act-project/act/gate"
)

// Who answers Claude Code's permission prompt, when act answers "ask"
// (docs/agents.md, "Who answers"): a person in an attended session (the
// terminal UI, an IDE's or the desktop app's); a program in a headless one
// (claude -p, the Agent SDK) that names one (--permission-prompt-tool, or
// the SDK's canUseTool); no one otherwise — Claude Code then denies the
// question itself, so act queues the plan instead of asking.

// An answerer is who would answer act's question at Claude Code's prompt.
type answerer struct {
	// reported is where the yes comes from, for the record
	// (gate.ReportedAgentPrompt, gate.ReportedPromptProgram); "" when no
	// one would answer.
	reported string
	// unseen says why no one would see the question; "" when someone
	// would.
	unseen string
}

// maxAncestors bounds the walk from the hook up to Claude Code's process.
const maxAncestors = 16

// claudeAnswerer is who would answer act's question on the call in,
// from the permission mode (promptUnseen) and the hook's environment,
// which Claude Code sets: CLAUDE_CODE_SESSION_ATTENDED ("1" a person is
// there, "0" not), else CLAUDE_CODE_ENTRYPOINT ("cli" is the terminal
// UI); in an unattended session, the command line of Claude Code's own
// process (CLAUDE_PID, an ancestor of the hook) names a permission-prompt
// program. Without these, no one: act fails closed, queuing the plan.
func claudeAnswerer(host Host, in *hookInput) answerer {
	if why := promptUnseen(in); why != "" {
		return answerer{unseen: why}
	}
	attended, known := host.Getenv("CLAUDE_CODE_SESSION_ATTENDED"), true
	switch attended {
	case "1":
		return answerer{reported: gate.ReportedAgentPrompt}
	case "0":
	default:
		known = false
		switch host.Getenv("CLAUDE_CODE_ENTRYPOINT") {
		case "cli", "claude-vscode", "claude-desktop":
			return answerer{reported: gate.ReportedAgentPrompt}
		}
	}
	if promptProgram(host) {
		return answerer{reported: gate.ReportedPromptProgram}
	}
	if !known && host.Getenv("CLAUDE_CODE_ENTRYPOINT") == "" {
		return answerer{unseen: "the hook's environment names no Claude Code session (CLAUDE_CODE_SESSION_ATTENDED, CLAUDE_CODE_ENTRYPOINT), so act cannot tell that a person would see its question"}
	}
	return answerer{unseen: fmt.Sprintf("no person can answer Claude Code's questions in this session: it runs headless (CLAUDE_CODE_ENTRYPOINT=%s: claude -p or the Agent SDK) and names no permission-prompt program, so Claude Code would deny act's question unasked",
		strconvQuote(host.Getenv("CLAUDE_CODE_ENTRYPOINT")))}
}

func strconvQuote(s string) string {
	if s == "" {
		return "unset"
	}
	return strconv.Quote(s)
}

// promptProgram says Claude Code's process, CLAUDE_PID when it is an
// ancestor of this one, was started with a program to answer its
// permission prompts: --permission-prompt-tool (an MCP tool, or stdio:
// the Agent SDK's canUseTool), or --permission-prompts host.
func promptProgram(host Host) bool {
	pid, err := strconv.Atoi(host.Getenv("CLAUDE_PID"))
	if err != nil || pid <= 1 || !isAncestor(pid) {
		return false
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	args := strings.Split(string(bytes.TrimRight(data, "\x00")), "\x00")
	for i, a := range args {
		switch {
		case a == "--":
			return false
		case a == "--permission-prompt-tool" && i+1 < len(args) && args[i+1] != "",
			strings.HasPrefix(a, "--permission-prompt-tool=") && a != "--permission-prompt-tool=",
			a == "--permission-prompts" && i+1 < len(args) && args[i+1] == "host",
			a == "--permission-prompts=host":
			return true
		}
	}
	return false
}

// isAncestor says pid is this process's parent, or its parent's, … (at
// most maxAncestors up).
func isAncestor(pid int) bool {
	p := os.Getppid()
	for range maxAncestors {
		if p == pid {
			return true
		}
		if p <= 1 {
			return false
		}
		var err error
		if p, err = parentOf(p); err != nil {
			return false
		}
	}
	return false
}

// parentOf is the parent of process pid, from /proc/PID/stat (its fourth
// field, after the command name in parentheses, which may hold any
// character).
func parentOf(pid int) (int, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 2 {
		return 0, fmt.Errorf("/proc/%d/stat: too short", pid)
	}
	return strconv.Atoi(f[1])
}
