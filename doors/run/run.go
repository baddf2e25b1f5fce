// Package run is act run's door (docs/run.md): one command line, given
// as argv, becomes a COMMAND_EXECUTION whose scope and effects are a
// workspace (doors.CommandDescriptor), checked and dry-run by the gate.
// What follows — the review, the promotion or the queue, a person asked
// at a terminal — is act apply's, which cmd runs through gate.Apply.
package run

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/act-project/act/doors"
	"github.com/act-project/act/gate"
	"github.com/act-project/act/internal/pathglob"
)

// A Usage error is a bad --workspace: the caller's, not act's.
type Usage struct{ Err error }

func (u *Usage) Error() string { return u.Err.Error() }
func (u *Usage) Unwrap() error { return u.Err }

// Workspace resolves act run's workspace: dir, or, when dir is empty,
// the project cwd (the directory act run was started in) is in
// (ProjectRoot: its git work tree's top, below stops), made a workspace
// of this session by add (which checks it against the policy and returns
// it resolved through links). It returns the workspace and the command's
// working directory: cwd when inside the workspace, else the workspace.
func Workspace(cwd, dir string, stops []string, add func(string) (string, error)) (ws, workdir string, err error) {
	defaulted := dir == ""
	if defaulted {
		dir = ProjectRoot(cwd, stops)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", "", err
	}
	if pathglob.HasMeta(abs) {
		return "", "", &Usage{fmt.Errorf("--workspace: %s holds a glob character (* or ?), which effects would read as a pattern", abs)}
	}
	if fi, err := os.Stat(abs); err != nil {
		return "", "", &Usage{fmt.Errorf("--workspace: %v", err)}
	} else if !fi.IsDir() {
		return "", "", &Usage{fmt.Errorf("--workspace: %s is not a directory", abs)}
	}
	if ws, err = add(abs); err != nil {
		switch {
		case defaulted && dir == cwd:
			err = fmt.Errorf("%w (the workspace defaults to the current directory)", err)
		case defaulted:
			err = fmt.Errorf("%w (the workspace defaults to the project the current directory is in, the top of its git work tree)", err)
		}
		return "", "", err
	}
	workdir = ws
	if pathglob.Within(cwd, ws) {
		workdir = cwd
	}
	return ws, workdir, nil
}

// ProjectRoot is the project dir is in: the nearest directory at or above
// dir that is the top of a git work tree (its ".git" a git directory, or a
// "gitdir:" file), found by what is on disk; dir itself where there is
// none. The walk stops below each of stops (the home directories) and
// below /: a home or / is never a project, however a ".git" got there.
func ProjectRoot(dir string, stops []string) string {
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if d == "/" || slices.Contains(stops, d) {
			return dir
		}
		if isWorkTree(d) {
			return d
		}
		if d == filepath.Dir(d) {
			return dir
		}
	}
}

// isWorkTree reports whether d holds a ".git" that is a git directory
// (its HEAD a regular file) or a "gitdir: " file, as a linked worktree's.
func isWorkTree(d string) bool {
	g := filepath.Join(d, ".git")
	fi, err := os.Lstat(g)
	switch {
	case err != nil:
		return false
	case fi.IsDir():
		h, err := os.Lstat(filepath.Join(g, "HEAD"))
		return err == nil && h.Mode().IsRegular()
	case fi.Mode().IsRegular():
		f, err := os.Open(g)
		if err != nil {
			return false
		}
		defer f.Close()
		b := make([]byte, 8)
		n, _ := io.ReadFull(f, b)
		return string(b[:n]) == "gitdir: "
	}
	return false
}

// Plan checks and dry-runs argv in workspace ws, run in workdir, through
// door's gate: checked tells the caller what the checks made of the
// descriptor (refused or not), and out gets each line the command prints
// and keeps what a refusal that leaves no plan shows. With network the
// descriptor asks for the network (doors.WithNetwork, act run --network),
// which the policy may refuse (policy.sandbox-network).
func Plan(ctx context.Context, door *doors.Door, argv []string, ws, workdir string, network bool, checked func(*gate.Checked), out *doors.Output) (*gate.Plan, error) {
	d := doors.CommandDescriptor(argv, ws, workdir, door.Gate.Policy.ResourceCaps)
	if network {
		doors.WithNetwork(d)
	}
	ck, err := door.Check(ctx, d)
	if checked != nil && ck != nil {
		checked(ck)
	}
	if err != nil {
		return nil, err
	}
	defer ck.Release()
	return door.DryRun(ctx, ck, out.Line)
}
