package doors

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/act-project/act/descriptors"
	"github.com/act-project/act/diff"
	"github.com/act-project/act/gate"
	"github.com/act-project/act/internal/outcome"
	"github.com/act-project/act/internal/problem"
	"github.com/act-project/act/policy"
	"github.com/act-project/act/review"
)

// A Door is what the act process gives a door: the gate it asks, and how
// it shows what the gate answers. cmd makes one per request.
type Door struct {
	// Gate decides: under the host policy now, with this session's
	// workspaces, recording the door's name (Gate.Caller).
	Gate *gate.Gate
	// Review says how a plan is shown (state dir, workspaces, act's
	// command lines).
	Review review.Options
	// ActLine is act's command line with args, for someone to run: it
	// names the state dir where the environment chose it.
	ActLine func(args ...string) string
	// Promoted, if not nil, is told of each promotion the door asked for
	// (cmd audits the recoveries it made and asks the policy's witnesses).
	Promoted func(*gate.Outcome)
}

// Plan checks d, a descriptor the door built, and dry-runs it (Check,
// then DryRun).
func (door *Door) Plan(ctx context.Context, d *descriptors.Descriptor, progress func(stream int, line string)) (*gate.Plan, error) {
	ck, err := door.Check(ctx, d)
	if err != nil {
		return nil, err
	}
	defer ck.Release()
	return door.DryRun(ctx, ck, progress)
}

// Check runs the gate's checks on d, a descriptor the door built
// (gate.CheckBuilt). The caller releases what it returns.
func (door *Door) Check(ctx context.Context, d *descriptors.Descriptor) (*gate.Checked, error) {
	return door.Gate.CheckBuilt(ctx, d)
}

// DryRun is the gate's plan of a checked descriptor (gate.PlanChecked),
// reusing a saved plan of the same descriptor where the sandbox already
// ran it sandbox.max_runs times. progress, if not nil, gets the
// commands' output as it comes.
func (door *Door) DryRun(ctx context.Context, ck *gate.Checked, progress func(stream int, line string)) (*gate.Plan, error) {
	p, pre, err := door.Gate.PlanChecked(ctx, ck, gate.PlanOptions{Reuse: true, Progress: progress})
	switch {
	case err != nil:
		return nil, err
	case pre.Applied != nil: // a fresh action id: not expected
		return nil, fmt.Errorf("action %s was applied already", pre.Applied.ActionID)
	case pre.Reuse != nil:
		return pre.Reuse.Plan, nil
	}
	return p, nil
}

// Action is the id of the action the gate promoted for dec (on plan p)
// and the act rollback command that undoes it; Promoted is told.
func (door *Door) Action(dec *gate.Decision, p *gate.Plan) (id, undo string) {
	id = p.ActionID
	if out := dec.Outcome; out != nil {
		if out.Action != nil {
			id = out.Action.ActionID
		}
		if door.Promoted != nil {
			door.Promoted(out)
		}
	}
	return id, door.ActLine("rollback", id)
}

// Resources a command a door runs asks for, at most: a test suite fits
// in them.
var commandResources = descriptors.Resources{MaxCPUMs: 600000, MaxMemoryMB: 4096, MaxDiskMB: 1024, MaxDurationMs: 600000}

// CommandDescriptor is the descriptor of a command a door runs (act run's
// argv, a hook's Bash): a COMMAND_EXECUTION in workspace ws, run in
// workdir, within the policy's caps, that may create, modify and delete
// anything in the workspace — act's review of its diff is what decides.
func CommandDescriptor(argv []string, ws, workdir string, caps policy.ResourceCaps) *descriptors.Descriptor {
	glob := filepath.Join(ws, "**")
	d := descriptors.Built(review.Intent("Run: "+review.ShellJoin(argv)), descriptors.CommandExecutionOp{Argv: argv, Workdir: workdir},
		nil, descriptors.FilesystemScope{Paths: []string{ws}, Recursive: true}, caps.Within(commandResources), true)
	d.Effects.Filesystem = descriptors.FilesystemEffects{Create: []string{glob}, Modify: []string{glob}, Delete: []string{glob}}
	return d
}

// WithNetwork makes d ask for the network (act run --network,
// docs/run.md): scope.network.required, effects.network and
// sandbox.allow_network, which must agree. The policy decides whether
// it gets it (network.sandbox_network) and which hosts its commands
// reach through act's egress proxy (network.allowed_hosts); a command
// with the network is never LOW (docs/risk.md, "Commands").
func WithNetwork(d *descriptors.Descriptor) *descriptors.Descriptor {
	d.Scope.Network.Required = true
	d.Effects.Network = true
	d.Sandbox.AllowNetwork = true
	return d
}

// Output collects what a command's lines stream (the plan's Progress) as
// the plan records it (redacted, capped: review.Collector), passing each
// line on to Next: what a door shows of a command whose failure leaves no
// plan.
type Output struct {
	review.Collector
	Next func(stream int, line string)
}

// Line takes one line of stream (1 stdout, 2 stderr).
func (o *Output) Line(stream int, line string) {
	if o.Next != nil {
		o.Next(stream, line)
	}
	o.Collector.Line(stream, line)
}

// ProblemsText is the text of err's problems, when it is act's decision
// (a problem list) rather than an error.
func ProblemsText(err error) (string, bool) {
	var probs problem.List
	if !errors.As(err, &probs) {
		return "", false
	}
	var lines []string
	for _, p := range probs {
		s := p.Rule
		if p.Field != "" {
			s += ": " + p.Field
		}
		lines = append(lines, s+": "+p.Message)
	}
	return strings.Join(lines, "; "), true
}

// ChangeSummary counts a plan's changes for a reason.
func ChangeSummary(p *gate.Plan) string {
	if len(p.Changes) == 0 {
		return "it changed no file"
	}
	c, m, d := diff.Summary(p.Changes)
	return fmt.Sprintf("%d created, %d modified, %d deleted", c, m, d)
}

// NetworkNotes are what act said of the network beside a command's
// failure in err (op.network-refused): for a door that shows the command's
// own output and status, so that the tool's misleading message (npm's E403)
// is not all there is.
func NetworkNotes(err error) []string {
	var probs problem.List
	if !errors.As(err, &probs) {
		return nil
	}
	var out []string
	for _, p := range probs {
		if p.Rule == gate.RuleNetworkRefused {
			out = append(out, p.Message)
		}
	}
	return out
}

// CommandFailed reports whether err is the dry run's refusal of a command
// that exited non-zero or was killed by a signal (op.command-failed of the
// operation, with at most what act adds of the network beside it:
// op.network-refused), and the exit code a shell would report for it.
func CommandFailed(err error) (int, bool) {
	var probs problem.List
	if !errors.As(err, &probs) {
		return 0, false
	}
	probs = slices.DeleteFunc(slices.Clone(probs), func(p problem.Problem) bool { return p.Rule == gate.RuleNetworkRefused })
	if len(probs) != 1 {
		return 0, false
	}
	pr := probs[0]
	if pr.Rule != "op.command-failed" || pr.Field != "operation" {
		return 0, false
	}
	// plan's message: the command "ARGV" exited with status N[: tail],
	// or the command "ARGV" was killed by SIGNAL[: tail].
	rest, ok := strings.CutPrefix(pr.Message, "the command ")
	if !ok {
		return 0, false
	}
	q, err := strconv.QuotedPrefix(rest)
	if err != nil {
		return 0, false
	}
	rest = rest[len(q):]
	word := func(s string) string {
		if i := strings.IndexAny(s, ": "); i >= 0 {
			return s[:i]
		}
		return s
	}
	if s, ok := strings.CutPrefix(rest, " exited with status "); ok {
		n, err := strconv.Atoi(word(s))
		if err != nil || n <= 0 || n > 255 {
			return 0, false
		}
		return n, true
	}
	if s, ok := strings.CutPrefix(rest, " was killed by "); ok {
		if sig := unix.SignalNum(word(s)); sig != 0 {
			return outcome.SignalBase + int(sig), true
		}
		return outcome.SignalBase + int(unix.SIGKILL), true
	}
	return 0, false
}

// AsCommand is what act prints of the command of plan p when it ends as
// the command (act apply --as-command, and the hook's replay of a run
// that changed nothing): its standard output as the dry run captured it;
// its standard error, ended by a newline, then a line of act's for each
// stream that was cut; both escaped (review.Text: nothing in them can
// drive a terminal or hide text from a person or a model, whichever way
// they are printed: the replay's cat writes them as they are); and its
// exit code. ok is false when p records no
// run of its operation (not expected of a COMMAND_EXECUTION's plan).
// docs/agents.md, "Bash is promoted by act".
func AsCommand(p *gate.Plan) (stdout, stderr string, code int, ok bool) {
	var cmd *gate.CommandResult
	for i := range p.Commands {
		if p.Commands[i].Field == "operation" {
			cmd = &p.Commands[i]
		}
	}
	if cmd == nil {
		return "", "", 0, false
	}
	var errOut strings.Builder
	errOut.WriteString(cmd.Stderr)
	if cmd.Stderr != "" && !strings.HasSuffix(cmd.Stderr, "\n") {
		errOut.WriteString("\n")
	}
	for _, s := range []struct {
		name string
		c    review.Captured
	}{{"the command's output", review.Captured{Cut: cmd.StdoutCut}}, {"the command's error output", review.Captured{Cut: cmd.StderrCut}}} {
		if cut := review.CaptureCut(s.name, s.c); cut != "" {
			fmt.Fprintf(&errOut, "act: %s\n", cut)
		}
	}
	return review.Text(cmd.Stdout), review.Text(errOut.String()), cmd.ExitCode, true
}
