package agentsetup

import (
	"path/filepath"
	"strings"
	"time"
)

// An actCommand is a hook's command line that runs act hook AGENT, read
// back into its parts.
type actCommand struct {
	// Program is the executable as written: an absolute path, or a name
	// the shell looks up on PATH.
	Program string
	// Env are the VAR=value words before it.
	Env []string
	// Globals are act's global flags before "hook" (--home DIR, …).
	Globals []string
	// Agent is the word after "hook": claude-code, codex, or another.
	Agent string
	// Workspace is --workspace's value, "" without one.
	Workspace string
	// Timeout is --timeout's value, 0 without one; BadTimeout holds a
	// value that is not a positive duration.
	Timeout    time.Duration
	BadTimeout string
	// Rest are the arguments after the agent act does not read here.
	Rest []string
	// Opaque: the line uses what the shell expands or interprets ($, ~,
	// ;, …), so act cannot tell exactly what it runs; it is read as act's
	// hook by its words alone, and only the agent word is known.
	Opaque bool
}

// actGlobals are act's global flags that take a value.
var actGlobals = map[string]bool{"--home": true, "--policy": true, "-home": true, "-policy": true}

// parseActCommand reads line as act's hook: plain words (see split), any
// VAR=value words, a program whose name begins with "act", act's global
// flags, then "hook" and a word. ok is false for any other line.
func parseActCommand(line string) (c *actCommand, ok bool) {
	argv, ok := split(line)
	if !ok {
		// By its words alone: an act hook written with $HOME or ~ is still
		// act's, to check and to replace.
		c, ok := parseActWords(strings.Fields(line))
		if ok {
			c = &actCommand{Program: c.Program, Agent: c.Agent, Opaque: true}
		}
		return c, ok
	}
	return parseActWords(argv)
}

func parseActWords(argv []string) (c *actCommand, ok bool) {
	c = &actCommand{}
	for len(argv) > 0 && isAssignment(argv[0]) {
		c.Env = append(c.Env, argv[0])
		argv = argv[1:]
	}
	if len(argv) < 3 || !strings.HasPrefix(filepath.Base(argv[0]), "act") {
		return nil, false
	}
	c.Program, argv = argv[0], argv[1:]
	for len(argv) > 0 && strings.HasPrefix(argv[0], "-") {
		name, _, hasValue := strings.Cut(argv[0], "=")
		c.Globals = append(c.Globals, argv[0])
		if actGlobals[name] && !hasValue && len(argv) > 1 {
			c.Globals = append(c.Globals, argv[1])
			argv = argv[1:]
		}
		argv = argv[1:]
	}
	if len(argv) < 2 || argv[0] != "hook" {
		return nil, false
	}
	c.Agent, argv = argv[1], argv[2:]
	for len(argv) > 0 {
		a := argv[0]
		name, value, hasValue := strings.Cut(strings.Replace(a, "--", "-", 1), "=")
		if (name == "-workspace" || name == "-timeout") && !hasValue && len(argv) > 1 {
			value, hasValue = argv[1], true
			argv = argv[1:]
		}
		argv = argv[1:]
		switch {
		case name == "-workspace" && hasValue:
			c.Workspace = value
		case name == "-timeout" && hasValue:
			d, err := time.ParseDuration(value)
			if err != nil || d <= 0 {
				c.BadTimeout, c.Timeout = value, 0
				continue
			}
			c.Timeout, c.BadTimeout = d, ""
		default:
			c.Rest = append(c.Rest, a)
		}
	}
	return c, true
}

func isAssignment(w string) bool {
	name, _, ok := strings.Cut(w, "=")
	if !ok || name == "" {
		return false
	}
	for i, r := range name {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// commandLine is the hook command install writes: act's absolute path,
// the global flags, hook AGENT, --workspace and --timeout.
func commandLine(act string, globals []string, agent Agent, workspace string, timeout time.Duration) string {
	argv := append([]string{act}, globals...)
	argv = append(argv, "hook", string(agent), "--workspace", workspace, "--timeout", timeout.String())
	return join(argv)
}
