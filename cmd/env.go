package cmd

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/act-project/act/doors"
	"github.com/act-project/act/gate"
	"github.com/act-project/act/internal/document"
	"github.com/act-project/act/internal/pathglob"
	"github.com/act-project/act/internal/state"
	"github.com/act-project/act/policy"
)

// stateDir resolves the state directory: --home, $ACT_HOME,
// $XDG_STATE_HOME/act, ~/.local/state/act (docs/policy.md).
func (env *Env) stateDir() (string, error) {
	if env.pinned == nil {
		pinned, err := policy.SystemStateDir()
		if err != nil {
			return "", err
		}
		env.pinned = &pinned
	}
	if *env.pinned != "" {
		// The system policy pins it: --home and ACT_HOME may only name it.
		for _, asked := range []string{env.home, env.Getenv("ACT_HOME")} {
			if a, _ := filepath.Abs(asked); asked != "" && a != *env.pinned {
				return "", fmt.Errorf("the system policy %s pins the state directory to %s; --home and ACT_HOME cannot choose %s", policy.SystemFile, *env.pinned, asked)
			}
		}
		return *env.pinned, nil
	}
	dir := env.home
	if dir == "" {
		dir = env.Getenv("ACT_HOME")
	}
	if dir == "" {
		if x := env.Getenv("XDG_STATE_HOME"); x != "" && filepath.IsAbs(x) {
			dir = filepath.Join(x, "act")
		}
	}
	if dir == "" {
		h := env.Getenv("HOME")
		if h == "" {
			h = env.UserHome()
		}
		if h == "" {
			return "", fmt.Errorf("cannot find a state directory: set --home or ACT_HOME")
		}
		dir = filepath.Join(h, ".local", "state", "act")
	}
	return filepath.Abs(dir)
}

// actLine is the command line of act with args that act hands out for a
// person or an agent to run: a hint, an undo or "Roll back with:" line,
// act pending's and MCP's next steps, the gate's messages. See
// [Env.commandLine].
func (env *Env) actLine(args ...string) string { return env.commandLine("act", args...) }

// commandLine is every command line of act that act hands out, exe naming
// act ("act", or the hook's own path): it names the state dir (--home)
// whenever the state dir did not come from the real user's default — it
// came from --home, $ACT_HOME, $XDG_STATE_HOME or a $HOME that is not the
// passwd entry's — so that the environment of whoever runs it (an agent's)
// cannot send it to another state dir; and the --policy act was given.
func (env *Env) commandLine(exe string, args ...string) string {
	argv := []string{exe}
	if home, err := env.stateDir(); err == nil && !env.defaultStateDir(home) {
		argv = append(argv, "--home", home)
	}
	if env.policyFile != "" {
		f, _ := filepath.Abs(env.policyFile)
		argv = append(argv, "--policy", f)
	}
	return shellJoin(append(argv, args...))
}

// defaultStateDir reports whether dir is a state dir no environment
// chose: the one the system policy pins, or the real user's default,
// ~/.local/state/act of the passwd entry's home (never $HOME's, which
// whoever starts act sets).
func (env *Env) defaultStateDir(dir string) bool {
	if env.pinned != nil && *env.pinned != "" {
		return dir == *env.pinned // --home and ACT_HOME may only name it
	}
	h := env.UserHome()
	return h != "" && dir == filepath.Join(h, ".local", "state", "act")
}

// homeDir is the user's home: $HOME, else the passwd entry.
func (env *Env) homeDir() string {
	if h := env.Getenv("HOME"); h != "" {
		return filepath.Clean(h)
	}
	return env.UserHome()
}

func passwdHome() string {
	// policy.RealHome, not user.Current: that falls back to $HOME when
	// the lookup fails, and refuses nothing.
	h, err := policy.RealHome()
	if err != nil {
		return ""
	}
	return h
}

// readInput reads a descriptor from a file or, for "-", standard input,
// refusing more than document.MaxSize bytes without reading them all. It
// returns the name positions use.
func (env *Env) readInput(arg string) (string, []byte, error) {
	var r io.Reader
	name := arg
	if arg == "-" {
		r, name = env.Stdio.In, document.StdinName
	} else {
		f, err := os.Open(arg)
		if err != nil {
			return "", nil, fmt.Errorf("read descriptor: %w", err)
		}
		defer f.Close()
		if fi, err := f.Stat(); err == nil && fi.IsDir() {
			return "", nil, fmt.Errorf("read descriptor %s: is a directory", arg)
		}
		r = f
	}
	var buf bytes.Buffer
	if _, err := io.Copy(&buf, io.LimitReader(r, document.MaxSize+1)); err != nil {
		return "", nil, fmt.Errorf("read descriptor %s: %w", name, err)
	}
	return name, buf.Bytes(), nil
}

// gate returns the gate of this act process under the effective policy
// pol: every lifecycle decision is its.
func (env *Env) gate(pol *policy.Policy) *gate.Gate {
	home, _ := env.stateDir() // resolved already by every caller
	env.reviewWorkspaces = nil
	for _, w := range append(slices.Clip(pol.Workspaces), env.workspaces...) {
		// A scratch directory every program shares (/tmp, the default
		// workspace) is not a project: its paths stay absolute.
		if pol.InWorkspace(w, []string{w}) && w != "/tmp" && w != filepath.Clean(os.TempDir()) {
			env.reviewWorkspaces = append(env.reviewWorkspaces, w)
		}
	}
	return &gate.Gate{Home: state.Dir{Root: home}, Policy: pol, Now: env.Now, NewID: env.NewID, Session: env.session, EnvHome: env.homeDir(), UserHome: env.UserHome(), Caller: env.caller,
		PathDirs: filepath.SplitList(env.Getenv("PATH")), ActLine: env.actLine, RemoveLater: env.removeLater()}
}

// addWorkspace makes dir a workspace of this session (act mcp --workspace):
// absolute from the directory act was started in, one CheckWorkspace
// allows, under an allowed root of the policy now, and not holding the
// state directory (docs/policy.md, "Workspaces").
func (env *Env) addWorkspace(dir string) error { return env.addWorkspaceAs(dir, false) }

// addWorkspaceAs is addWorkspace; installing (act hook install) checks
// dir against the system policy's own workspaces rather than those both
// layers hold: install records it in the user layer (workspaceRecord).
func (env *Env) addWorkspaceAs(dir string, installing bool) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	// Both the name and the directory it leads to: a link to the state
	// dir, to / or to a home is refused by what it leads to, the allowed
	// roots (named paths, as scopes are checked) by its name, and the
	// directory is kept, since changes (real paths) and a resolved cwd
	// are compared with it.
	named := abs
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	for _, p := range []string{named, abs} {
		if err := policy.CheckWorkspace(p, env.UserHome()); err != nil {
			return usagef("--workspace: %v", err)
		}
	}
	home, err := env.stateDir()
	if err != nil {
		return err
	}
	if real, err := filepath.EvalSymlinks(home); err == nil {
		home = real
	}
	if pathglob.Within(home, abs) {
		return usagef("--workspace: %s holds act's state directory %s", abs, home)
	}
	pol, err := env.loadPolicy(&result{})
	if err != nil {
		return err
	}
	// Under an allowed root by its name, and where it leads under one
	// too (the root resolved as well: /home may be a link to /var/home).
	under := pol.UnderAllowedRoot(named) && slices.ContainsFunc(pol.AllowedRoots, func(r string) bool {
		rr, err := filepath.EvalSymlinks(r)
		return pathglob.Within(abs, r) || err == nil && pathglob.Within(abs, rr)
	})
	if !under {
		return usagef("--workspace: %s is outside every root the host policy allows (%s)", abs, strings.Join(pol.AllowedRoots, ", "))
	}
	// Under a system policy, its workspaces bind every --workspace: a
	// door's workspace lies inside one, by its name and by where it leads.
	// Else whoever runs a door (the agent) would choose where its changes
	// are graded as a workspace's (docs/policy.md, "Workspaces").
	if pol.System != nil {
		bound := pol.Workspaces
		if installing {
			bound = pol.SystemWorkspaces()
		}
		inside := func(p string) bool {
			return slices.ContainsFunc(bound, func(w string) bool {
				rw, err := filepath.EvalSymlinks(w)
				return pathglob.Within(p, w) || err == nil && pathglob.Within(p, rw)
			})
		}
		if !inside(named) || !inside(abs) {
			return usagef("--workspace: %s is outside every workspace the system policy %s allows (%s)", abs, policy.SystemFile, strings.Join(bound, ", "))
		}
	}
	env.workspaces = append(env.workspaces, abs)
	return nil
}

// door is what a door package gets of this act process: the gate under
// the effective policy pol (the door's name as its Caller), how plans
// are shown and act's command lines read, and what follows a promotion
// (recoveries audited, the policy's witnesses asked).
func (env *Env) door(pol *policy.Policy) *doors.Door {
	return &doors.Door{
		Gate:    env.gate(pol),
		Review:  reviewOptions(env),
		ActLine: env.actLine,
		Promoted: func(out *gate.Outcome) {
			env.recovered = append(env.recovered, out.Recovered...)
			if !out.AlreadyApplied {
				env.witnessAfter(pol) // audit.witness_after: bounded, never failing the door
			}
		},
	}
}
