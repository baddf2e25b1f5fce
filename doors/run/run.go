// Package run is act run's door (docs/run.md): one command line, given
// as argv, becomes a COMMAND_EXECUTION whose scope and effects are a
// workspace (doors.CommandDescriptor), checked and dry-run by the gate.
// What follows — the review, the promotion or the queue, a person asked
// at a terminal — is act apply's, which cmd runs through gate.Apply.
package run

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/act-project/act/doors"
	"github.com/act-project/act/gate"
	"github.com/act-project/act/internal/pathglob"
)

// A Usage error is a bad --workspace: the caller's, not act's.
type Usage struct{ Err error }

func (u *Usage) Error() string { return u.Err.Error() }
func (u *Usage) Unwrap() error { return u.Err }

// Workspace resolves act run's workspace: dir, or cwd (the directory act
// run was started in) when dir is empty, made a workspace of this
// session by add (which checks it against the policy and returns it
// resolved through links). It returns the workspace and the command's
// working directory: cwd when inside the workspace, else the workspace.
func Workspace(cwd, dir string, add func(string) (string, error)) (ws, workdir string, err error) {
	if dir == "" {
		dir = cwd
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
		if dir == cwd {
			err = fmt.Errorf("%w (the workspace defaults to the current directory)", err)
		}
		return "", "", err
	}
	workdir = ws
	if pathglob.Within(cwd, ws) {
		workdir = cwd
	}
	return ws, workdir, nil
}

// Plan checks and dry-runs argv in workspace ws, run in workdir, through
// door's gate: checked tells the caller what the checks made of the
// descriptor (refused or not), and out gets each line the command prints
// and keeps what a refusal that leaves no plan shows.
func Plan(ctx context.Context, door *doors.Door, argv []string, ws, workdir string, checked func(*gate.Checked), out *doors.Output) (*gate.Plan, error) {
	ck, err := door.Check(ctx, doors.CommandDescriptor(argv, ws, workdir, door.Gate.Policy.ResourceCaps))
	if checked != nil && ck != nil {
		checked(ck)
	}
	if err != nil {
		return nil, err
	}
	defer ck.Release()
	return door.DryRun(ctx, ck, out.Line)
}
