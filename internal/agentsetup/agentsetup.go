// Package agentsetup installs act's hook into an agent's settings and
// checks a set-up for what would let a tool call run unreviewed.
//
// An agent runs a tool when its hook cannot decide: Claude Code when the
// hook is not found (exit 127), is killed at its timeout, or exits with
// any code but 2 — unless the hook says onFailure: block; Codex CLI in all
// those cases, and also when the hook is not trusted: Codex runs a hook of
// the user's or a project's only when the user's config.toml holds a
// trusted_hash of it, and skips any other silently. So a set-up fails open
// unless act's hook is there for every tool act decides, at an absolute
// path that exists, with a timeout longer than act's own decision time,
// and (Codex) trusted as it now reads.
//
// [Install] writes such a set-up: it merges act's entries into the
// agent's settings file, keeping everything else the file holds (its
// order, comments and formatting too), replacing act's earlier entries
// rather than adding to them, and — for Codex — writes the trusted_hash
// exactly as Codex computes it ([TrustedHash]). It refuses, writing
// nothing, a set-up it cannot make safe (hooks turned off, a project Codex
// does not load, another act hook elsewhere). [Check] reads a set-up and
// reports each thing that is wrong as a [Finding].
//
// This package reads and writes the settings files only; it never runs
// the agents.
package agentsetup

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Agent names an agent harness, as act hook's subcommand does.
type Agent string

// The agents act installs its hook into.
const (
	ClaudeCode Agent = "claude-code"
	Codex      Agent = "codex"
)

// Agents lists them.
var Agents = []Agent{ClaudeCode, Codex}

// Places are where the agents keep their settings, from the person's
// environment.
type Places struct {
	// ClaudeDir is Claude Code's user directory: $CLAUDE_CONFIG_DIR, else
	// ~/.claude.
	ClaudeDir string
	// ClaudeManaged is Claude Code's managed settings file (read only).
	ClaudeManaged string
	// CodexHome is Codex's home: $CODEX_HOME, else ~/.codex, resolved
	// through symbolic links as Codex resolves it (the trust keys name it).
	CodexHome string
	// CodexSystem is Codex's system config.toml (read only): its hooks are
	// managed, and need no trust.
	CodexSystem string
	// Path is $PATH, where the agent's shell finds a program named without
	// a directory.
	Path string
}

// The system files act reads, on Linux: Claude Code's managed settings
// and Codex's system config.toml. Only tests change them.
var (
	SystemClaudeManaged = "/etc/claude-code/managed-settings.json"
	SystemCodexConfig   = "/etc/codex/config.toml"
)

// MinMargin is how much longer than act's decision time (act hook
// --timeout) an agent's timeout for the hook must be: act still has to
// answer and exit after it decided, or gave up.
const MinMargin = 5 * time.Second

// margin is how much longer install makes it.
func margin(d time.Duration) time.Duration { return max(10*time.Second, d/5) }

// hookSeconds is the agent's timeout install writes for act's --timeout
// d: d and the margin, in whole seconds.
func hookSeconds(d time.Duration) int64 {
	return int64((d + margin(d) + time.Second - 1) / time.Second)
}

// defaultAgentTimeout is the timeout both agents give a command hook
// that names none.
const defaultAgentTimeout = 600

// Severity is how bad a [Finding] is.
type Severity string

// The severities: a set-up that lets a tool call run unreviewed; one
// that blocks every call, or loses what act needs to undo a change; one
// that works but depends on something it should not.
const (
	FailsOpen Severity = "fails_open"
	Broken    Severity = "broken"
	Warning   Severity = "warning"
)

// A Finding is one thing wrong with a set-up.
type Finding struct {
	Severity Severity `json:"severity"`
	// File is the settings file it is in, "" when it is what no file has.
	File    string `json:"file,omitempty"`
	Message string `json:"message"`
	// repair: rewriting act's own entries in File (any file, when File is
	// "") puts it right, which install does.
	repair bool
}

// A Hook is act's hook as a settings file has it.
type Hook struct {
	File    string `json:"file"`
	Event   string `json:"event"`
	Matcher string `json:"matcher"`
	Command string `json:"command"`
	// Timeout is the agent's timeout for it, in seconds.
	Timeout int64 `json:"timeout_seconds"`
	// Trust is Codex's: trusted, untrusted, modified, disabled or managed.
	Trust string `json:"trust,omitempty"`
	// Key is Codex's name of it in hooks.state.
	Key string `json:"key,omitempty"`
}

// A Report is what [Check] found of one agent's set-up.
type Report struct {
	Agent Agent `json:"agent"`
	// Files are the settings files read, existing or not.
	Files    []string  `json:"files"`
	Hooks    []Hook    `json:"hooks"`
	Findings []Finding `json:"findings"`
}

// Failing reports whether r has a finding worse than a warning.
func (r *Report) Failing() bool {
	return slices.ContainsFunc(r.Findings, func(f Finding) bool { return f.Severity != Warning })
}

// CheckOptions are what [Check] reads.
type CheckOptions struct {
	Places
	Agent Agent
	// Project is the project directory whose settings count too, absolute;
	// "" for the user's settings only.
	Project string
	// ActTimeout is act hook's --timeout when a command gives none.
	ActTimeout time.Duration
}

// Check reads the agent's settings and reports what is wrong with its
// hook set-up.
func Check(o CheckOptions) (*Report, error) {
	switch o.Agent {
	case ClaudeCode:
		s, err := readClaude(o.Places, o.Project)
		if err != nil {
			return nil, err
		}
		return s.check(o), nil
	case Codex:
		s, err := readCodex(o.Places, o.Project)
		if err != nil {
			return nil, err
		}
		return s.check(o), nil
	}
	return nil, fmt.Errorf("unknown agent %q: act hook takes claude-code or codex", o.Agent)
}

// A handler is one hook handler of a settings file.
type handler struct {
	file         string
	event        string
	group, index int
	matcher      *string
	fields       map[string]any
	act          *actCommand // nil: not act's hook
	managed      bool        // Codex: a managed hook, trusted as it is
	trust        string      // Codex: its trust status
	key          string      // Codex: its hooks.state key
}

func (h *handler) command() string { s, _ := h.fields["command"].(string); return s }
func (h *handler) kind() string    { s, _ := h.fields["type"].(string); return s }
func (h *handler) async() bool     { b, _ := h.fields["async"].(bool); return b }

// timeout is the agent's timeout for h in seconds.
func (h *handler) timeout() int64 {
	switch t := h.fields["timeout"].(type) {
	case int64:
		return max(t, 1)
	case float64:
		return max(int64(t), 1)
	}
	return defaultAgentTimeout
}

func (h *handler) matcherText() string {
	if h.matcher == nil {
		return ""
	}
	return *h.matcher
}

// handlersOf lists the handlers of a settings document's "hooks" value
// (Claude Code's settings, Codex's config.toml and hooks.json share this
// shape): event → [{matcher, hooks: [{type, command, timeout, …}]}].
// A part not of this shape is a problem of its own.
func handlersOf(file string, hooks any, events []string) (hs []handler, problems []string) {
	if hooks == nil {
		return nil, nil
	}
	byEvent, ok := hooks.(map[string]any)
	if !ok {
		return nil, []string{"hooks is not a table of events"}
	}
	for _, ev := range events {
		v, ok := byEvent[ev]
		if !ok {
			continue
		}
		groups, ok := v.([]any)
		if !ok {
			problems = append(problems, fmt.Sprintf("hooks.%s is not a list", ev))
			continue
		}
		for gi, g := range groups {
			gm, ok := g.(map[string]any)
			if !ok {
				problems = append(problems, fmt.Sprintf("hooks.%s[%d] is not an object", ev, gi))
				continue
			}
			var matcher *string
			if m, ok := gm["matcher"].(string); ok {
				matcher = &m
			}
			list, _ := gm["hooks"].([]any)
			for hi, x := range list {
				fields, ok := x.(map[string]any)
				if !ok {
					problems = append(problems, fmt.Sprintf("hooks.%s[%d].hooks[%d] is not an object", ev, gi, hi))
					continue
				}
				h := handler{file: file, event: ev, group: gi, index: hi, matcher: matcher, fields: fields}
				if h.kind() == "command" {
					h.act, _ = parseActCommand(h.command())
				}
				hs = append(hs, h)
			}
		}
	}
	return hs, problems
}

// covers reports whether matcher m selects tool. Claude Code reads a
// matcher of letters, digits, _ and | as a list of exact names and any
// other as a regular expression; Codex reads every matcher as a regular
// expression found anywhere in the name. Both take "" and "*" (and no
// matcher) as every tool.
func covers(agent Agent, m *string, tool string) bool {
	if m == nil || *m == "" || *m == "*" {
		return true
	}
	if agent == ClaudeCode {
		if regexp.MustCompile(`^[A-Za-z0-9_|]+$`).MatchString(*m) {
			return slices.Contains(strings.Split(*m, "|"), tool)
		}
		re, err := regexp.Compile(`^(?:` + *m + `)$`)
		return err == nil && re.MatchString(tool)
	}
	re, err := regexp.Compile(*m)
	return err == nil && re.MatchString(tool)
}

// A need is an event act's hook must be on, and the tools it must cover.
type need struct {
	event    string
	tools    []string
	severity Severity // of its absence
	why      string   // what its absence does
}

// checkHandlers finds what is wrong with act's handlers among hs, for
// agent, which needs needs. onFailure reports whether a handler blocks
// the tool call when it fails (Claude Code's onFailure: block).
func checkHandlers(agent Agent, hs []handler, needs []need, o CheckOptions, onFailure func(*handler) bool) []Finding {
	var fs []Finding
	add := func(s Severity, file string, repair bool, format string, args ...any) {
		fs = append(fs, Finding{Severity: s, File: file, Message: fmt.Sprintf(format, args...), repair: repair})
	}
	name := agentName(agent)
	for i := range hs {
		h := &hs[i]
		if h.act == nil || h.kind() != "command" {
			continue
		}
		at := fmt.Sprintf("%s hook %q", h.event, h.command())
		blocks := onFailure(h)
		failed := FailsOpen // what a hook that fails to decide is
		if blocks {
			failed = Broken
		}
		if h.act.Agent != string(agent) {
			add(Broken, h.file, true, "%s runs act hook %s: %s's hook is act hook %s", at, h.act.Agent, name, agent)
		}
		if h.async() {
			add(FailsOpen, h.file, true, "%s is async: %s runs the tool without waiting for act", at, name)
		}
		if h.act.Opaque {
			add(Warning, h.file, true, "%s uses the shell's expansions or operators: act cannot check what it runs (act hook install writes plain words)", at)
			continue
		}
		if msg, s := checkProgram(h.act.Program, o.Path, name, blocks); msg != "" {
			add(s, h.file, true, "%s: %s", at, msg)
		}
		switch ws := h.act.Workspace; {
		case ws == "":
			add(Broken, h.file, true, "%s has no --workspace: the project is not fixed as act's workspace (act hook install writes it)", at)
		case !filepath.IsAbs(ws):
			add(Broken, h.file, true, "%s: --workspace %s is not absolute", at, ws)
		default:
			if fi, err := os.Stat(ws); err != nil || !fi.IsDir() {
				add(Broken, h.file, true, "%s: the workspace %s is not a directory: act blocks every call", at, ws)
			}
		}
		actTimeout := o.ActTimeout
		if h.act.BadTimeout != "" {
			add(Broken, h.file, true, "%s: --timeout %q is not a positive duration: act blocks every call", at, h.act.BadTimeout)
		} else if h.act.Timeout > 0 {
			actTimeout = h.act.Timeout
		}
		if t := time.Duration(h.timeout()) * time.Second; t < actTimeout+MinMargin {
			what := "kills the hook and runs the tool unreviewed"
			if blocks {
				what = "kills the hook, and blocks the call, before act decides"
			}
			add(failed, h.file, true, "%s: the hook's timeout (%d s) is not above act's decision time (--timeout %s) by %s: a slow decision, %s %s",
				at, h.timeout(), actTimeout, MinMargin, name, what)
		}
	}
	for _, n := range needs {
		var missing, twice []string
		var by []string
		for _, tool := range n.tools {
			var files []string
			for i := range hs {
				h := &hs[i]
				if h.event == n.event && h.act != nil && h.act.Agent == string(agent) && h.kind() == "command" && !h.async() && covers(agent, h.matcher, tool) {
					files = append(files, h.file)
				}
			}
			switch {
			case len(files) == 0:
				missing = append(missing, tool)
			case len(files) > 1:
				twice = append(twice, tool)
				by = files
			}
		}
		if twice != nil {
			add(Broken, "", false, "act's %s hook is set %d times for %s (%s): each one decides the call", n.event, len(by), strings.Join(twice, ", "), strings.Join(by, ", "))
		}
		switch {
		case len(missing) == len(n.tools):
			add(n.severity, "", true, "no act hook %s runs answers %s: %s", name, n.event, n.why)
		case len(missing) > 0:
			add(n.severity, "", true, "act's %s hook does not match %s: %s", n.event, strings.Join(missing, ", "), n.why)
		}
	}
	return dedupe(fs)
}

// dedupe drops a finding that repeats an earlier one (a duplicate hook
// found for each tool).
func dedupe(fs []Finding) []Finding {
	var out []Finding
	for _, f := range fs {
		if !slices.ContainsFunc(out, func(g Finding) bool { return g.Message == f.Message && g.File == f.File }) {
			out = append(out, f)
		}
	}
	return out
}

// checkProgram says what is wrong with the program a hook runs, and how
// bad: not found, the agent's shell exits 127.
func checkProgram(prog, path, name string, blocks bool) (string, Severity) {
	notFound := FailsOpen
	outcome := "the shell exits 127 and " + name + " runs the tool unreviewed"
	if blocks {
		notFound, outcome = Broken, "the shell exits 127 and "+name+" blocks every call"
	}
	switch {
	case filepath.IsAbs(prog):
		fi, err := os.Stat(prog)
		switch {
		case err != nil:
			return fmt.Sprintf("act is not at %s: %s", prog, outcome), notFound
		case !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0:
			return fmt.Sprintf("%s is not an executable file: %s", prog, strings.Replace(outcome, "127", "126", 1)), notFound
		}
		return "", ""
	case strings.Contains(prog, "/"):
		return fmt.Sprintf("act's path %s is relative: it depends on the directory %s runs hooks in", prog, name), notFound
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue
		}
		if fi, err := os.Stat(filepath.Join(dir, prog)); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return fmt.Sprintf("%s is found on PATH, as %s: whatever PATH %s runs hooks with decides which program that is (act hook install writes the absolute path)",
				prog, filepath.Join(dir, prog), name), Warning
		}
	}
	return fmt.Sprintf("%s is not on PATH: %s", prog, outcome), notFound
}

func agentName(a Agent) string {
	if a == Codex {
		return "Codex"
	}
	return "Claude Code"
}

// hooksOf lists act's handlers of hs as [Hook]s.
func hooksOf(hs []handler) []Hook {
	out := []Hook{}
	for i := range hs {
		h := &hs[i]
		if h.act == nil {
			continue
		}
		out = append(out, Hook{File: h.file, Event: h.event, Matcher: h.matcherText(), Command: h.command(),
			Timeout: h.timeout(), Trust: h.trust, Key: h.key})
	}
	return out
}
