package cmd

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/act-project/act/internal/agentsetup"
	"github.com/act-project/act/internal/outcome"
	"github.com/act-project/act/internal/state"
	"github.com/act-project/act/policy"
)

// act hook install and act hook check (docs/agents.md, "Setup"): the
// settings an agent needs for act's hook, written and checked by
// internal/agentsetup; this file takes the flags and the person's
// environment, and renders.

func newHookInstallCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:      "install",
		Usage:     "write act's hook into Claude Code's or Codex's settings, set up so it cannot be skipped",
		UsageText: "act hook install claude-code|codex [--project DIR] [--timeout DURATION]",
		Description: `Writes the settings an agent needs for act's hook, merged into its
   settings file (everything else the file holds is kept; act's earlier
   entries are replaced, never added to), atomically, and says what it
   wrote where:

   claude-code: PreToolUse (Write, Edit, MultiEdit, Bash) and PostToolUse
   (Write, Edit, MultiEdit) in DIR/.claude/settings.json with --project,
   else in ~/.claude/settings.json ($CLAUDE_CONFIG_DIR/settings.json),
   with onFailure: block, so that a hook that cannot start or is killed
   blocks the call instead of letting it run.

   codex: PreToolUse (Bash, apply_patch) in DIR/.codex/config.toml with
   --project (the project must be one Codex trusts), else in
   ~/.codex/config.toml ($CODEX_HOME), and its trusted_hash in the user's
   config.toml as Codex computes it, since Codex skips an untrusted hook
   silently. Cut act's earlier entries, the hooks after them move up and
   their trust moves with them.

   The hook runs this act by its absolute path, with act hook's --timeout
   (default 50s) written out, the agent's timeout for the hook longer by a
   margin, and the project (--project, else the current directory) fixed
   as its --workspace; --home and --policy, when given, are kept. It
   refuses, writing nothing, a set-up it cannot make safe: hooks turned off
   in the agent's settings, a Codex project not trusted, act's hook set in
   another settings file, a file it cannot parse. Then it checks the
   result as act hook check does.

EXAMPLES:
   act hook install claude-code --project ~/src/proj
   act hook install codex --project ~/src/proj
   act hook install codex

` + endsWith("installed", 1, 2, 5).note(5, "refused: a set-up it cannot make safe, nothing written").help(),
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "project", Usage: "the project: its settings file gets the hook (default: the user's settings, the current directory as the workspace)"},
			&cli.DurationFlag{Name: "timeout", Value: hookTimeout, Usage: "act hook's --timeout: how long act may take to decide"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usagef("act hook install takes one agent, claude-code or codex")
			}
			return runHookInstall(env, agentsetup.Agent(c.Args().First()), c.String("project"), c.Duration("timeout"))
		},
	}
}

func newHookCheckCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:      "check",
		Usage:     "say what is wrong with an agent's act hook set-up, such as what lets a tool call run unreviewed",
		UsageText: "act hook check [claude-code|codex] [--project DIR]",
		Description: `Reads the agent's settings (the user's, and the project's with --project;
   for Claude Code the managed settings too, for Codex the system's
   config.toml) and says what is wrong with act's hook there:

   fails open (a tool call runs unreviewed): no hook, or one not matching
   Write, Edit, MultiEdit and Bash (Claude Code) or Bash and apply_patch
   (Codex); act not at the hook's path, or a bare "act" not on PATH (the
   shell exits 127); a hook timeout not above act's --timeout by 5s; no
   onFailure: block (Claude Code); a Codex hook not trusted, or changed
   since it was (its trusted_hash no longer matches), or disabled; hooks
   turned off; a Codex project not trusted;
   broken: no PostToolUse (Claude Code), no --workspace, act's hook set
   twice;
   warning: a bare "act" found on PATH.

   Without an agent it checks both, and counts an agent with no act hook
   at all only when neither has one.

EXAMPLES:
   act hook check claude-code --project ~/src/proj
   act hook check --json

` + endsWith("nothing wrong, or warnings only", 1, 2, 5).note(5, "a set-up that fails open, or is broken").help(),
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "project", Usage: "the project whose settings count too"},
			&cli.DurationFlag{Name: "timeout", Value: hookTimeout, Usage: "act hook's --timeout where a hook gives none"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 1 {
				return usagef("act hook check takes at most one agent, claude-code or codex")
			}
			agents := agentsetup.Agents
			if c.NArg() == 1 {
				agents = []agentsetup.Agent{agentsetup.Agent(c.Args().First())}
			}
			return runHookCheck(env, agents, c.String("project"), c.Duration("timeout"))
		},
	}
}

// hookPlaces are where the agents keep their settings, from the
// environment the agents read them from.
func hookPlaces(env *Env) agentsetup.Places {
	home := env.homeDir()
	p := agentsetup.Places{
		ClaudeDir:     filepath.Join(home, ".claude"),
		ClaudeManaged: agentsetup.SystemClaudeManaged,
		CodexHome:     filepath.Join(home, ".codex"),
		CodexSystem:   agentsetup.SystemCodexConfig,
		Path:          env.Getenv("PATH"),
	}
	if d := env.Getenv("CLAUDE_CONFIG_DIR"); d != "" {
		p.ClaudeDir, _ = filepath.Abs(d)
	}
	if d := env.Getenv("CODEX_HOME"); d != "" {
		p.CodexHome, _ = filepath.Abs(d)
	}
	// Codex names its files by its home resolved (its trust keys do).
	if real, err := filepath.EvalSymlinks(p.CodexHome); err == nil {
		p.CodexHome = real
	}
	return p
}

// hookProject is --project made absolute and resolved, "" for none.
func hookProject(dir string) (string, error) {
	if dir == "" {
		return "", nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", usagef("--project: %v", err)
	}
	if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
		return "", usagef("--project: %s is not a directory", abs)
	}
	return real, nil
}

func runHookInstall(env *Env, agent agentsetup.Agent, projectFlag string, timeout time.Duration) error {
	res := &result{}
	if agent != agentsetup.ClaudeCode && agent != agentsetup.Codex {
		return usagef("unknown agent %q: act hook install takes claude-code or codex", agent)
	}
	if timeout <= 0 {
		return usagef("--timeout must be positive, got %s", timeout)
	}
	project, err := hookProject(projectFlag)
	if err != nil {
		return err
	}
	ws := project
	if ws == "" {
		if ws, err = os.Getwd(); err != nil {
			return env.finish(res, "ok", err, nil)
		}
		if real, err := filepath.EvalSymlinks(ws); err == nil {
			ws = real
		}
	}
	// The workspace as the hook will check it, so that a set-up whose
	// every call act would block is refused now.
	if err := env.addWorkspaceAs(ws, true); err != nil {
		return env.finish(res, "ok", outcome.New(outcome.HookUnsafe, fmt.Errorf("act hook would block every call: %w", err)), nil)
	}
	act, err := os.Executable()
	if err == nil {
		act, err = filepath.EvalSymlinks(act)
	}
	if err != nil {
		return env.finish(res, "ok", fmt.Errorf("finding act's own path: %w", err), nil)
	}
	if strings.Contains(act, "/go-build") {
		res.Warnings = append(res.Warnings, jsonProblem{Rule: "hook.warning",
			Message: "act runs from Go's build cache (go run): the hook names " + act + ", which will be gone; install act and run act hook install again"})
	}
	var globals []string
	if h := firstOf(env.home, env.Getenv("ACT_HOME")); h != "" {
		h, _ = filepath.Abs(h)
		globals = append(globals, "--home", h)
	}
	if f := firstOf(env.policyFile, env.Getenv("ACT_POLICY")); f != "" {
		f, _ = filepath.Abs(f)
		globals = append(globals, "--policy", f)
	}
	record, err := workspaceRecord(env, res, ws)
	if err != nil {
		return env.finish(res, "ok", err, nil)
	}
	ir, err := agentsetup.Install(agentsetup.InstallOptions{Places: hookPlaces(env), Agent: agent, Project: project,
		Workspace: ws, Act: act, Globals: globals, Timeout: timeout, Record: record})
	if ir != nil {
		res.Data = map[string]any{"install": ir}
		if ir.Check != nil {
			res.Warnings = append(res.Warnings, findingProblems(ir.Check.Findings, true)...)
		}
	}
	if err != nil && ir != nil && !env.json {
		renderInstall(env.Stdio.Out, ir)
	}
	return env.finish(res, "ok", err, func(w io.Writer, _ styles) { renderInstall(w, ir) })
}

// workspaceRecord is where install records the workspace ws, a project a
// person installs the hook for, so that every act of the user counts it
// as a workspace (docs/policy.md, "Workspaces"): the user policy file act
// reads (--policy, ACT_POLICY, else <state dir>/policy.yaml, made if need
// be). nil where the policy makes ws a workspace already, or where the
// system policy forbids user policies (then only it names workspaces,
// and addWorkspace has checked ws lies in one: a warning says so).
func workspaceRecord(env *Env, res *result, ws string) (*agentsetup.WorkspaceRecord, error) {
	pol, err := env.loadPolicy(&result{})
	if err != nil {
		return nil, err
	}
	if pol.System != nil && !pol.System.UserPolicy {
		res.Warnings = append(res.Warnings, jsonProblem{Rule: "hook.warning", Message: fmt.Sprintf(
			"the system policy %s forbids user policies, so act records %s as a workspace nowhere: it is one in the hook's session only (act apply and act run decide with the system policy's workspaces)", policy.SystemFile, ws)})
		return nil, nil
	}
	file := firstOf(env.policyFile, env.Getenv("ACT_POLICY"))
	if file == "" {
		home, err := env.stateDir()
		if err != nil {
			return nil, err
		}
		file = state.Dir{Root: home}.PolicyFile()
	}
	if file, err = filepath.Abs(file); err != nil {
		return nil, err
	}
	data, err := os.ReadFile(file)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	listed, err := policy.WorkspacesAsWritten(file, data)
	if err != nil {
		return nil, err
	}
	userHome := env.UserHome()
	if !policy.ListsWorkspace(listed, ws, userHome) && pol.InWorkspace(ws, pol.Workspaces) {
		return nil, nil // inside a workspace already (/tmp, a parent): nothing to record
	}
	return &agentsetup.WorkspaceRecord{File: file, Listed: listed,
		Has: func(list []string, dir string) bool { return policy.ListsWorkspace(list, dir, userHome) },
		Check: func(data []byte) error {
			_, err := policy.Parse(file, data, userHome)
			return err
		},
	}, nil
}

func firstOf(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// findingProblems are fs as problems: the warnings only, or the rest.
func findingProblems(fs []agentsetup.Finding, warnings bool) []jsonProblem {
	var out []jsonProblem
	for _, f := range fs {
		if (f.Severity == agentsetup.Warning) == warnings {
			out = append(out, jsonProblem{Rule: "hook." + string(f.Severity), File: f.File, Message: f.Message})
		}
	}
	return out
}

func renderInstall(w io.Writer, ir *agentsetup.InstallResult) {
	for _, wr := range ir.Written {
		how := "changed"
		switch {
		case wr.Created:
			how = "created"
		case wr.Unchanged && wr.Policy:
			fmt.Fprintf(w, "hook install: unchanged %s: its workspaces name the project already\n", escapeLine(wr.File))
			continue
		case wr.Unchanged:
			fmt.Fprintf(w, "hook install: unchanged %s: act's hook is there as install writes it\n", escapeLine(wr.File))
			continue
		}
		fmt.Fprintf(w, "hook install: %s %s\n", how, escapeLine(wr.File))
		for _, c := range wr.Changes {
			fmt.Fprintf(w, "  %s\n", escapeLine(c))
		}
	}
	if ir.Check != nil && !ir.Check.Failing() {
		fmt.Fprintf(w, "hook install: act hook check %s finds the set-up safe\n", ir.Agent)
	}
}

func runHookCheck(env *Env, agents []agentsetup.Agent, projectFlag string, timeout time.Duration) error {
	res := &result{}
	for _, a := range agents {
		if a != agentsetup.ClaudeCode && a != agentsetup.Codex {
			return usagef("unknown agent %q: act hook check takes claude-code or codex", a)
		}
	}
	project, err := hookProject(projectFlag)
	if err != nil {
		return err
	}
	var reports []*agentsetup.Report
	for _, a := range agents {
		r, err := agentsetup.Check(agentsetup.CheckOptions{Places: hookPlaces(env), Agent: a, Project: project, ActTimeout: timeout})
		if err != nil {
			return env.finish(res, "ok", err, nil)
		}
		reports = append(reports, r)
	}
	// Of both agents, one with no act hook at all counts only when
	// neither has one.
	counted := reports
	if len(reports) > 1 {
		counted = nil
		for _, r := range reports {
			if len(r.Hooks) > 0 {
				counted = append(counted, r)
			}
		}
		if counted == nil {
			counted = reports
		}
	}
	var failing []string
	for _, r := range counted {
		res.Warnings = append(res.Warnings, findingProblems(r.Findings, true)...)
		if r.Failing() {
			failing = append(failing, string(r.Agent))
		}
	}
	// Not a fail-open set-up, but not the hands-free one install makes:
	// outside the policy's workspaces every change waits for a person.
	if project != "" {
		if pol, err := env.loadPolicy(res); err == nil && !pol.InWorkspace(project, pol.Workspaces) {
			res.Warnings = append(res.Warnings, jsonProblem{Rule: "hook.not-a-workspace",
				Message: fmt.Sprintf("%s is not in the policy's workspaces: each change the agent makes there waits for a person; act hook install adds it (docs/policy.md, \"Workspaces\")", project)})
		}
	}
	res.Data = map[string]any{"check": reports}
	if !env.json {
		renderCheck(env.Stdio.Out, reports, counted)
	}
	if failing != nil {
		for _, r := range counted {
			res.Errors = append(res.Errors, findingProblems(r.Findings, false)...)
		}
		err = outcome.New(outcome.HookUnsafe, fmt.Errorf("the act hook set-up of %s is not safe (see above; act hook install repairs what is act's)", strings.Join(failing, " and ")))
		if env.json {
			err = outcome.New(outcome.HookUnsafe, errors.New("the act hook set-up is not safe"))
		}
	}
	return env.finish(res, "ok", err, nil)
}

func renderCheck(w io.Writer, reports, counted []*agentsetup.Report) {
	for _, r := range reports {
		name := map[agentsetup.Agent]string{agentsetup.ClaudeCode: "Claude Code", agentsetup.Codex: "Codex"}[r.Agent]
		if !containsReport(counted, r) {
			fmt.Fprintf(w, "hook check: %s: no act hook (not counted: the other agent has one)\n", name)
			continue
		}
		n := 0
		for _, f := range r.Findings {
			if f.Severity != agentsetup.Warning {
				n++
			}
		}
		switch {
		case n == 0:
			fmt.Fprintf(w, "hook check: %s: act's hook is set up safely\n", name)
		default:
			fmt.Fprintf(w, "hook check: %s: %s\n", name, plural(n, "problem"))
		}
		for _, h := range r.Hooks {
			trust := ""
			if h.Trust != "" {
				trust = ", " + h.Trust
			}
			fmt.Fprintf(w, "  %s %s: %s (timeout %d s%s)\n", escapeLine(h.File), h.Event, escapeLine(h.Command), h.Timeout, trust)
		}
		for _, f := range r.Findings {
			if f.Severity == agentsetup.Warning {
				continue // on stderr, as act's warnings are
			}
			at := ""
			if f.File != "" {
				at = f.File + ": "
			}
			fmt.Fprintf(w, "  %s: %s%s\n", strings.ReplaceAll(string(f.Severity), "_", " "), escapeLine(at), escapeLine(f.Message))
		}
	}
}

func containsReport(rs []*agentsetup.Report, r *agentsetup.Report) bool {
	for _, x := range rs {
		if x == r {
			return true
		}
	}
	return false
}
