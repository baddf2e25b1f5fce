package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"
	"golang.org/x/sys/unix"

	"github.com/act-project/act/diff"
	"github.com/act-project/act/doors"
	"github.com/act-project/act/doors/run"
	"github.com/act-project/act/gate"
	"github.com/act-project/act/internal/lifecycle"
	"github.com/act-project/act/internal/outcome"
	"github.com/act-project/act/internal/problem"
	"github.com/act-project/act/review"
)

// act run (docs/run.md): one shell command as a COMMAND_EXECUTION whose
// scope and effects are a workspace, planned and promoted as act apply
// plans and promotes a descriptor file.

// takesArgv are the commands whose first argument starts a command line
// of its own: what follows it is the command's, flags included
// (normalizeArgs).
var takesArgv = map[string]bool{"run": true}

func newRunCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:      "run",
		Usage:     "run one command in the sandbox, show its output and diff, then promote or queue it",
		UsageText: "act run [--workspace DIR] [--network] [--confirm] [--json] [--] CMD [ARGS...]",
		Description: `Makes CMD ARGS... (no shell: name one, sh -c '...', for a pipeline) a
   COMMAND_EXECUTION descriptor whose scope is the workspace and whose
   effects are any create, modify or delete under it, and applies it as
   act apply applies a descriptor: validate, dry run in the sandbox, the
   command's output, the diff, then promote it where the policy allows,
   or keep it pending (exit 7) for "act apply PLAN_ID --confirm". The
   descriptor is saved with the plan (act --json show PLAN_ID) and audited.

   The workspace (--workspace; by default the project the current
   directory is in: the top of its git work tree, never a home directory
   or /, else the current directory itself) must lie under an allowed root
   of the policy. Risk is the policy's workspaces' alone: a plan that only
   changes plain files inside one of them is LOW, and outside them every
   change waits for a person (the agent may start act run itself, from
   any directory). The command runs in the current directory when that is inside
   the workspace, else in the workspace; its resources are the policy's
   caps, at most 600 s of CPU, 4096 MiB of memory, 1024 MiB of disk and
   600 s of wall clock. Everything after CMD is the command's, flags too.

   The command has no network unless --network asks for it; then it
   reaches the hosts of the policy's network.allowed_hosts through act's
   egress proxy, and only when the policy's network.sandbox_network is
   true (else act refuses the run, exit 4: policy.sandbox-network). A run
   with the network is never LOW: it waits for a person as the policy's
   MEDIUM mode says. A host the proxy refused is named (op.network-refused).

   A command that exits non-zero is shown (its output on stdout and stderr)
   and act exits with its code, whatever it is, promoting nothing: the dry
   run is rejected (op.command-failed). A command killed by a signal is
   128 + the signal's number. With --json the document is act apply's
   (status rejected, exit_code 6) with the command's own code in
   commands[0].exit_code.

EXAMPLES:
   act run go test ./...
   act run --workspace ~/src/proj -- make -j4
   act run --network -- npm install kleur
   act run -- sh -c 'go generate ./... && gofmt -l .'

` + endsWith("the command exited 0 and its changes, if any, are promoted", 1, 2, 3, 4, 5, 6, 7, 8, 9).
			note(2, "usage (bad flags, no command, a workspace act cannot use)").
			note(6, "dry run rejected (a cap hit, a change act cannot promote)").
			note(7, "confirmation required (pending), or a no at the question (denied)").with(outcome.Interrupted).help() + `,
   or the command's own code when it exited non-zero (nothing promoted)`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "workspace", Usage: "the directory the command may change (default the project the current directory is in: its git work tree's top, else the current directory)"},
			&cli.BoolFlag{Name: "network", Usage: "give the command the network: the policy's network.allowed_hosts through act's egress proxy, where network.sandbox_network allows it (never LOW)"},
			&cli.BoolFlag{Name: "confirm", Usage: "confirm the promotion (a person's decision)"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() == 0 {
				return usagef("run takes a command to run: act run [--workspace DIR] [--network] [--] CMD [ARGS...]")
			}
			return runRun(c.Context, env, c.String("workspace"), c.Args().Slice(), c.Bool("network"), c.Bool("confirm"))
		},
	}
}

// runWorkspace resolves act run's workspace (dir, or the current
// directory) and makes it one of this session (addWorkspace); it returns
// the workspace and the command's working directory (run.Workspace).
func runWorkspace(env *Env, dir string) (ws, workdir string, err error) {
	// The kernel's idea of the directory, not $PWD's: Go's os.Getwd
	// takes $PWD where it names the same directory, by any path.
	cwd, err := unix.Getwd()
	if err != nil {
		return "", "", err
	}
	var stops []string
	for _, h := range []string{env.Getenv("HOME"), env.UserHome()} {
		if h != "" && filepath.IsAbs(h) {
			stops = append(stops, filepath.Clean(h))
		}
	}
	ws, workdir, err = run.Workspace(cwd, dir, stops, func(abs string) (string, error) {
		if err := env.addWorkspace(abs); err != nil {
			return "", err
		}
		return env.workspaces[len(env.workspaces)-1], nil
	})
	var u *run.Usage
	if errors.As(err, &u) {
		return "", "", usagef("%v", u.Err)
	}
	return ws, workdir, err
}

// runRun is act run: the descriptor of argv (asking for the network with
// network), then apply's sequence (runApply's for a descriptor file):
// check, plan, show, promote or queue.
func runRun(ctx context.Context, env *Env, dir string, argv []string, network, confirmed bool) error {
	env.caller = "run" // the door, in every record this run writes
	res := &result{}
	if _, err := env.stateDir(); err != nil {
		return env.finish(res, outcome.Succeeded.Status, err, nil)
	}
	ws, workdir, err := runWorkspace(env, dir)
	if err != nil {
		return env.finish(res, outcome.Succeeded.Status, err, nil)
	}
	pol, err := env.loadPolicy(res)
	if err != nil {
		return env.finish(res, outcome.Succeeded.Status, err, nil)
	}
	door := env.door(pol)
	g := door.Gate
	doc := func(l problem.List) problem.List { return l }

	collected := &doors.Output{Next: env.streamer()}
	pctx, stop := interruptible(ctx)
	p, err := run.Plan(pctx, door, argv, ws, workdir, network, func(ck *gate.Checked) { res.FillChecked(ck) }, collected)
	if stop() {
		return env.finish(&result{File: res.File}, outcome.Succeeded.Status, errInterrupted, nil)
	}
	if p != nil {
		fillPlan(res, p)
	}
	res.Warnings = runWarnings(res.Warnings)
	if err != nil {
		return runRefused(env, res, argv, collected, err)
	}
	shot := false
	if !env.json && !env.interactive() {
		showRun(env, p, p.State)
		shot = true
	}
	ap := gate.Approval{}
	if confirmed {
		ap = gate.NewApproval(gate.ViaFlag)
	}
	out, _, err := promoteSaved(ctx, res, g, p, doc, ap, env.askPerson(g, &shot), env.progress("applying"))
	if out != nil {
		env.recovered = append(env.recovered, out.Recovered...)
	}
	if err == nil && out != nil && !out.AlreadyApplied {
		defer env.witnessAfter(g.Policy) // once the outcome is printed (audit.witness_after)
	}
	if err == nil && out.AlreadyApplied {
		return alreadyApplied(env, res, out.Action)
	}
	return env.finish(res, outcome.Succeeded.Status, err, func(w io.Writer, st styles) {
		if !shot {
			showRun(env, p, lifecycle.Applied)
		}
		if len(p.Changes) == 0 {
			fmt.Fprintln(w, "Applied: nothing to change.")
			return
		}
		c, m, dl := diff.Summary(p.Changes)
		fmt.Fprintf(w, "%s\n", st.Bold.Render(fmt.Sprintf("Applied: %d created, %d modified, %d deleted.", c, m, dl)))
		fmt.Fprintf(w, "Roll back with: %s\n", env.actLine("rollback", p.ActionID))
	})
}

// runWarnings are the warnings of act run's plan, with no position: the
// descriptor is act's, not a file of the person's. (The gate does not warn
// that the command left its workdir claim unused: plan.CheckEffects.)
func runWarnings(ws []jsonProblem) []jsonProblem {
	var out []jsonProblem
	for _, w := range ws {
		w.File, w.Line, w.Column = "", 0, 0
		out = append(out, w)
	}
	return out
}

// showRun prints what act run shows of plan p before it promotes or
// queues it: the command's output, stdout on stdout and stderr on stderr
// (escaped as all act prints), then the plan as act apply prints it, each
// command on one line with its exit code and time.
func showRun(env *Env, p *gate.Plan, state lifecycle.State) {
	shown := *p
	shown.Commands = make([]gate.CommandResult, len(p.Commands))
	for i, c := range p.Commands {
		writeOutput(env, review.Captured{Text: c.Stdout, Cut: c.StdoutCut}, review.Captured{Text: c.Stderr, Cut: c.StderrCut})
		c.Stdout, c.Stderr, c.StdoutCut, c.StderrCut = "", "", false, false
		shown.Commands[i] = c
	}
	renderPlan(env.Stdio.Out, newStyles(env, env.Stdio.Out), env, &shown, state)
	fmt.Fprintln(env.Stdio.Out)
}

// writeOutput writes a command's output as act run shows it: stdout on
// stdout and stderr on stderr, escaped (review.Text), then where act
// stopped keeping either, on stderr (review.CaptureCut).
func writeOutput(env *Env, stdout, stderr review.Captured) {
	for _, s := range []struct {
		w io.Writer
		c review.Captured
	}{{env.Stdio.Out, stdout}, {env.Stdio.Err, stderr}} {
		io.WriteString(s.w, review.Text(s.c.Text))
		if s.c.Text != "" && !strings.HasSuffix(s.c.Text, "\n") {
			fmt.Fprintln(s.w)
		}
	}
	for _, s := range []struct {
		name string
		c    review.Captured
	}{{"the command's output", stdout}, {"the command's error output", stderr}} {
		if cut := review.CaptureCut(s.name, s.c); cut != "" {
			fmt.Fprintf(env.Stdio.Err, "act: %s\n", cut)
		}
	}
}

// runRefused ends an act run whose dry run was refused (err): the
// command's output as it streamed, if it ran, then act's problems. A
// command that exited non-zero (op.command-failed) ends act with its own
// exit code, or 128 + the signal that killed it; anything else with act's.
func runRefused(env *Env, res *result, argv []string, collected *doors.Output, err error) error {
	code, failed := doors.CommandFailed(err)
	if collected.Any() || failed {
		stdout, stderr := collected.Captured(1), collected.Captured(2)
		if !env.json {
			writeOutput(env, stdout, stderr)
		}
		if failed {
			res.Commands = []gate.CommandResult{{Field: "operation", Argv: argv, ExitCode: code, Stdout: stdout.Text, Stderr: stderr.Text, StdoutCut: stdout.Cut, StderrCut: stderr.Cut}}
		}
	}
	if !failed {
		return env.finish(res, outcome.Succeeded.Status, err, nil)
	}
	// The document is act apply's (rejected, exit_code 6); the process
	// ends with the command's code.
	rerr := env.finish(res, outcome.Succeeded.Status, err, nil)
	if code == 0 {
		return rerr // not expected: a failed command exits non-zero
	}
	return &rendered{outcome.CommandExit(code, outcome.Rejected.Status)}
}
