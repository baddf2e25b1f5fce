package cmd

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
	"golang.org/x/sys/unix"

	"github.com/act-project/act/descriptors"
	"github.com/act-project/act/diff"
	"github.com/act-project/act/doors"
	"github.com/act-project/act/doors/report"
	"github.com/act-project/act/gate"
	"github.com/act-project/act/internal/lifecycle"
	"github.com/act-project/act/internal/outcome"
	"github.com/act-project/act/internal/problem"
	"github.com/act-project/act/internal/sshsig"
	"github.com/act-project/act/internal/state"
	"github.com/act-project/act/internal/timings"
	"github.com/act-project/act/review"
)

func newApplyCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:      "apply",
		Usage:     "promote a plan onto the real tree, all or nothing",
		UsageText: "act apply [--confirm] [--json | --as-command] DESCRIPTOR|-|PLAN_ID",
		Description: `With a descriptor (a file, or - for stdin) apply plans first, as plan does;
   with a plan id it promotes that saved plan. Every path must still match the
   plan's pre-image and the preconditions must still hold. The promotion is
   journaled: a failure part-way, or a crash, leaves the tree as before.

   Confirmation is needed when the policy mode is confirm, when the descriptor
   sets confirmation.required, or when the same action was rolled back before
   (cooldown_on_repeat). --confirm gives it; on a terminal act asks, and a
   no (any answer but y, Enter alone included) denies the plan, as act deny
   does (exit 7, status refused); otherwise the plan stays pending (exit 7)
   for "act apply PLAN_ID --confirm". A plan that changes nothing needs no
   one: it is applied (recorded as ran) whatever its mode.

   --as-command promotes the plan of a command (COMMAND_EXECUTION) as the
   command itself would end: instead of the plan, it prints the command's
   output as the dry run captured it, stdout on stdout and stderr on
   stderr, then one line on stderr naming the action and its act rollback,
   and exits with the command's exit code (0: a command that failed has no
   plan). Refused, it prints act's error and exits with act's code. The
   Claude Code hook replaces an allowed Bash command with it
   (docs/agents.md).

EXAMPLES:
   act apply d.yaml
   act apply 3f2a9c0e1b7d4a65 --confirm
   act apply --as-command 3f2a9c0e1b7d4a65
   act --json apply d.yaml

` + endsWith("applied (or already applied)", 1, 2, 3, 4, 5, 6, 7, 8, 9).
			note(7, "confirmation required (pending), or a no at the question (denied)").
			note(8, "conflict (stale plan, action id already used)").note(9, "no such plan").with(outcome.Interrupted).help(),
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "confirm", Usage: "confirm the promotion (a person's decision)"},
			&cli.StringFlag{Name: "signature", Usage: "a signed approval: the ssh-keygen -Y sign signature (namespace act-approval) of the plan's digest"},
			&cli.StringFlag{Name: "sign-with", Usage: "sign the approval now with this SSH key (a private key, or the .pub of one in ssh-agent or on a security key)"},
			&cli.BoolFlag{Name: "as-command", Usage: "promote a command's plan and end as the command: its captured output and its exit code"},
			&cli.StringFlag{Name: "yes-from", Usage: "with --confirm, where the yes came from as the agent's hook reports it, for the record: agent-prompt (a person at the agent's permission prompt) or prompt-program (a program answering it)"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usagef("apply takes exactly one descriptor or plan id, got %d arguments", c.NArg())
			}
			env.signature, env.signWith = c.String("signature"), c.String("sign-with")
			switch from := c.String("yes-from"); {
			case from == "":
			case !c.Bool("confirm"):
				return usagef("--yes-from says where a --confirm came from: give --confirm too")
			case from != gate.ReportedAgentPrompt && from != gate.ReportedPromptProgram:
				return usagef("--yes-from takes %s or %s, got %q", gate.ReportedAgentPrompt, gate.ReportedPromptProgram, from)
			default:
				env.yesFrom = from
			}
			if c.Bool("as-command") {
				if env.json {
					return usagef("--as-command prints the command's own output, not JSON: drop --json or --as-command")
				}
				if !gate.IsPlanID(c.Args().First()) {
					return usagef("--as-command takes a plan id (act run or the hook prints it), got %q", c.Args().First())
				}
			}
			return runApplyAs(c.Context, env, c.Args().First(), c.Bool("confirm"), c.Bool("as-command"))
		},
	}
}

// runApply is parse → gate → ask → render: every decision is the gate's.
func runApply(ctx context.Context, env *Env, arg string, confirmed bool) error {
	return runApplyAs(ctx, env, arg, confirmed, false)
}

// runApplyAs is runApply; with asCommand (a plan id only) the plan must be
// a command's, and once promoted act ends as the command would
// (endAsCommand).
func runApplyAs(ctx context.Context, env *Env, arg string, confirmed, asCommand bool) error {
	res := &result{}
	home, err := env.stateDir()
	if err != nil {
		return env.finish(res, outcome.Succeeded.Status, err, nil)
	}
	var (
		p    *gate.Plan
		g    *gate.Gate
		doc  problemLocator
		shot bool // the plan was printed already
	)
	if _, serr := os.Stat(arg); arg == "-" || serr == nil {
		ck, err := env.check(ctx, res, arg)
		if err != nil {
			return env.finish(res, outcome.Succeeded.Status, err, nil)
		}
		defer ck.release()
		g = env.gate(ck.pol)
		doc = func(l problem.List) problem.List { return locate(ck.Doc, l) }
		_, digest, err := ck.Canonical()
		if err != nil {
			return env.finish(res, outcome.Succeeded.Status, err, nil)
		}
		var pre *gate.PrePlan
		pctx, stop := interruptible(ctx)
		p, pre, err = planWith(pctx, env, res, ck, true)
		if stop() {
			return env.finish(&result{File: res.File}, outcome.Succeeded.Status, errInterrupted, nil)
		}
		switch {
		case err != nil && pre != nil && pre.Applied == nil && pre.Reuse == nil:
			// Another act may have promoted this very action meanwhile,
			// so that the tree no longer plans: promote once answers.
			if a, perr := gate.PromotedNow(ctx, state.Dir{Root: home}, ck.Descriptor.ActionID, digest); perr != nil || a != nil {
				if perr == nil {
					return alreadyApplied(env, res, a)
				}
				var probs problem.List
				if errors.As(perr, &probs) {
					return env.finish(res, outcome.Succeeded.Status, withPositions(ck, perr), nil)
				}
			}
			return env.finish(res, outcome.Succeeded.Status, err, nil)
		case err != nil:
			return env.finish(res, outcome.Succeeded.Status, err, nil)
		case pre.Applied != nil:
			return alreadyApplied(env, res, pre.Applied)
		case pre.Reuse != nil:
			p = pre.Reuse.Plan
			fillPlan(res, p)
			res.Warnings = append(res.Warnings, jsonProblem{Rule: "apply.reused-plan", Message: fmt.Sprintf(
				"promoting plan %s, made of this same descriptor at %s, instead of planning it again", p.ID, p.CreatedAt.UTC().Format(time.RFC3339))})
		}
		// A read that changes nothing prints only what it read. In a
		// terminal the plan is shown once it is known whether a person
		// must confirm it (then paged, before the question).
		if !env.json && !env.interactive() && !(len(p.Changes) == 0 && len(p.Read) > 0) {
			renderPlan(env.Stdio.Out, newStyles(env, env.Stdio.Out), env, p, p.State)
			fmt.Fprintln(env.Stdio.Out)
			shot = true
		}
	} else {
		if !gate.IsPlanID(arg) {
			if a, aerr := gate.LoadAction(state.Dir{Root: home}, arg); aerr == nil {
				return env.finish(res, outcome.Succeeded.Status, fmt.Errorf("%s is an action id, not a plan id: it is %s (plan %s); %s says more: %w", arg, a.State, a.PlanID, env.actLine("show", arg), gate.ErrNotFound), nil)
			}
			return env.finish(res, outcome.Succeeded.Status, fmt.Errorf("%s is neither a descriptor file nor a plan id: %w", arg, gate.ErrNotFound), nil)
		}
		end := timings.Start(ctx, "policy: load")
		pol, err := env.loadPolicy(res)
		end()
		if err != nil {
			return env.finish(res, outcome.Succeeded.Status, err, nil)
		}
		g = env.gate(pol)
		end = timings.Start(ctx, "the plan: load")
		e, err := g.Load(arg)
		end()
		if err != nil {
			return env.finish(res, outcome.Succeeded.Status, err, nil)
		}
		p = e.Plan
		fillPlan(res, p)
		doc = planLocator(p)
		if asCommand && p.ActionType != string(descriptors.CommandExecution) {
			return env.finish(res, outcome.Succeeded.Status, usagef("--as-command promotes a command's plan (COMMAND_EXECUTION); plan %s is a %s: apply it without --as-command", arg, p.ActionType), nil)
		}
		if asCommand && (p.File == "" || p.File == hookName) {
			// act's own descriptor (act run's, the hook's): its broad
			// effects are act's, not news to the agent (runWarnings).
			res.Warnings = runWarnings(res.Warnings)
		}
	}
	ap := gate.Approval{}
	if confirmed {
		ap = gate.NewApproval(gate.ViaFlag)
		ap.Reported = env.yesFrom
	}
	if env.signature != "" || env.signWith != "" {
		if ap, err = env.signedApproval(ctx, gate.PlanDigest(p)); err != nil {
			return env.finish(res, outcome.Succeeded.Status, err, nil)
		}
	}
	out, reads, err := promoteSaved(ctx, res, g, p, doc, ap, env.askPerson(g, &shot), env.progress("applying"))
	if out != nil {
		env.recovered = append(env.recovered, out.Recovered...)
	}
	if err == nil && out != nil && !out.AlreadyApplied {
		defer env.witnessAfter(g.Policy) // once the outcome is printed (audit.witness_after)
	}
	if asCommand && err == nil {
		return endAsCommand(env, res, p, out)
	}
	if err == nil && out.AlreadyApplied {
		return alreadyApplied(env, res, out.Action)
	}
	if len(reads) > 0 {
		res.Data = map[string]any{"read": reads}
	}
	readOnly := len(p.Changes) == 0 && len(p.Read) > 0
	now := p.State
	if err == nil {
		now = lifecycle.Applied // the layer was promoted: nothing left to diff
	}
	return env.finish(res, outcome.Succeeded.Status, err, func(w io.Writer, st styles) {
		if !shot && !readOnly {
			renderPlan(w, st, env, p, now)
			fmt.Fprintln(w)
		}
		// A FILE_READ's result is the file itself, on stdout.
		for _, r := range reads {
			if !isTerminal(env.rawOut) {
				// A script reading a file gets its bytes as they are; a
				// terminal gets them escaped, like everything else.
				w.(interface{ Flush() error }).Flush()
				env.rawOut.Write(r.Content)
			} else {
				w.Write(r.Content)
			}
			if r.Truncated {
				fmt.Fprintf(env.Stdio.Err, "act: %s: only the first %d bytes are shown\n", escapeLine(r.Path), gate.MaxReadContent)
			}
		}
		if len(p.Changes) == 0 {
			if len(reads) == 0 {
				fmt.Fprintln(w, "Applied: nothing to change.")
			}
			return
		}
		c, m, dl := diff.Summary(p.Changes)
		fmt.Fprintf(w, "%s\n", st.Bold.Render(fmt.Sprintf("Applied: %d created, %d modified, %d deleted.", c, m, dl)))
		fmt.Fprintf(w, "Roll back with: %s\n", env.actLine("rollback", p.ActionID))
	})
}

// endAsCommand ends act apply --as-command of command plan p, promoted
// (out): the command's output as the dry run captured it (bounded and
// redacted, escaped as all act prints: docs/sandbox-output.md), stdout on
// stdout and stderr on stderr, with nothing added to it; then act's
// warnings, if any, and last its one line on stderr, the action and its
// rollback, unless the run changed nothing; then the command's exit
// code, which is 0 (a command that exits non-zero rejects its dry run).
// docs/agents.md, "Bash is promoted by act".
func endAsCommand(env *Env, res *result, p *gate.Plan, out *gate.Outcome) error {
	stdout, stderr, code, ok := doors.AsCommand(p)
	if !ok {
		// Not expected: the plan of a COMMAND_EXECUTION records its run.
		return env.finish(res, outcome.Succeeded.Status, fmt.Errorf("plan %s was applied, but it records no output of its command", p.ID), nil)
	}
	io.WriteString(env.Stdio.Out, stdout)
	io.WriteString(env.Stdio.Err, stderr)
	id, status := p.ActionID, outcome.Succeeded.Status
	if out != nil && out.Action != nil {
		id = out.Action.ActionID
	}
	what := "applied"
	switch {
	case out != nil && out.AlreadyApplied:
		what, status = "was applied already: nothing changed now", outcome.AlreadyApplied.Status
	case len(p.Changes) == 0:
		// A run that changed nothing: nothing to undo, nothing to say;
		// the agent sees the command's output alone, as without act.
		what = ""
	default:
		c, m, dl := diff.Summary(p.Changes)
		what = fmt.Sprintf("applied: %d created, %d modified, %d deleted", c, m, dl)
	}
	if err := env.finish(res, status, nil, nil); err != nil {
		return err
	}
	if what != "" {
		fmt.Fprintf(env.Stdio.Err, "act: action %s (plan %s) %s; undo: %s\n", escapeLine(id), escapeLine(p.ID), what, env.actLine("rollback", id))
	}
	if code != 0 {
		return &rendered{outcome.CommandExit(code, status)}
	}
	return nil
}

// promoteSaved is apply of the saved plan p through the gate's one
// sequence (gate.Apply), its typed outcomes given their status: expired,
// queued, reverted. res gets the policy's decision and, when queued, the
// reasons. The CLI and the MCP server both apply through it.
func promoteSaved(ctx context.Context, res *result, g *gate.Gate, p *gate.Plan, doc problemLocator, ap gate.Approval, ask gate.Asker, progress gate.Progress) (*gate.Outcome, []gate.ReadOut, error) {
	e, err := g.EntryOf(p)
	if err != nil {
		return nil, nil, err
	}
	adm, out, err := g.Apply(ctx, e, ap, ask, progress)
	var reads []gate.ReadOut
	if adm != nil {
		reads = adm.Reads
	}
	if adm != nil {
		res.Mode, res.ModeSource, res.Reason = string(adm.Decision.Mode), adm.Decision.Source, adm.Decision.Reason
		res.Risk = &adm.Risk
	}
	// The gate's typed outcomes (expired, queued, reverted) carry their
	// own exit code and status (outcome.Of).
	var need *gate.ConfirmationRequired
	var probs problem.List
	switch {
	case errors.As(err, &need):
		res.Reason = strings.Join(need.Why, "; ")
	case errors.As(err, &probs) && probs.Layer() != problem.Conflict:
		// A block or a change list the descriptor does not allow: placed
		// in the descriptor. A conflict is of the tree, not of it.
		return out, reads, doc(probs)
	}
	return out, reads, err
}

// alreadyApplied reports a repeat of applied action a: exit 0, nothing
// changed.
func alreadyApplied(env *Env, res *result, a *gate.Action) error {
	res.PlanID, res.Changes = a.PlanID, a.Changes
	return env.finish(res, outcome.AlreadyApplied.Status, nil, func(w io.Writer, st styles) {
		fmt.Fprintf(w, "Action %s was already applied (plan %s): nothing changed.\n", escapeLine(a.ActionID), escapeLine(a.PlanID))
	})
}

// problemLocator gives problems their place in a descriptor.
type problemLocator func(problem.List) problem.List

// planLocator places problems in the descriptor file a plan was made
// from, when that file still holds the same descriptor; otherwise they name
// only the field (a position in the plan's canonical JSON would point at
// the wrong line of a file).
func planLocator(p *gate.Plan) problemLocator { return problemLocator(report.PlanLocator(p)) }

// signedApproval reads the signature --signature names, or has ssh-keygen
// make one with the key --sign-with names (a security key then asks for
// its touch on the terminal), over digest.
func (env *Env) signedApproval(ctx context.Context, digest string) (gate.Approval, error) {
	ap := gate.NewApproval(gate.ViaSigned)
	ap.Digest = digest
	var err error
	if env.signature != "" {
		ap.Signature, err = os.ReadFile(env.signature)
	} else {
		ap.Signature, err = sshsig.SignWithKeygen(ctx, env.signWith, sshsig.Message(digest), sshsig.Namespace, env.Stdio.Err)
	}
	return ap, err
}

// showPaged is pageOut (pager.go).
func (env *Env) showPaged(render func(w io.Writer)) { env.pageOut(render) }

// interactive reports whether a person may be asked: act runs in a
// terminal (standard input and error are terminals) and prints no JSON.
func (env *Env) interactive() bool {
	return !env.json && isTerminal(env.Stdio.In) && isTerminal(env.rawErr)
}

// confirmQuestion is the question ask puts to a person: why the plan needs
// them, on one line (a newline in a reason is shown as \n, so a reason
// cannot print a question of its own), then the question itself.
func confirmQuestion(why []string, planID string) string {
	reasons := make([]string, len(why))
	for i, r := range why {
		reasons[i] = escapeLine(r)
	}
	return fmt.Sprintf("Confirmation needed: %s.\nApply plan %s? [y/N] ", strings.Join(reasons, "; "), escapeLine(planID))
}

// ask prints question and reads a y/yes from the controlling terminal
// (/dev/tty), not standard input: that is the answer a "terminal"
// confirmation counts. Without a controlling terminal the answer is no.
func ask(env *Env, question string) bool { return answer(env, question) == gate.Yes }

// answer prints question and reads the answer from the controlling
// terminal: y or yes is Yes; any other line, Enter alone included (the
// question's default, [y/N]), is No; no terminal, or input that ends
// before a line (Ctrl-D), is NotAsked.
func answer(env *Env, question string) gate.Answer {
	tty := env.TTY
	if tty == nil {
		tty = openTTY
	}
	rw, err := tty()
	if err != nil {
		return gate.NotAsked
	}
	defer rw.Close()
	tw := review.NewTermWriter(rw, env.nonce, nil)
	fmt.Fprint(tw, question)
	tw.Flush()
	line, err := bufio.NewReader(rw).ReadString('\n')
	if err != nil && line == "" {
		return gate.NotAsked
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return gate.Yes
	}
	return gate.No
}

func openTTY() (io.ReadWriteCloser, error) { return os.OpenFile("/dev/tty", os.O_RDWR, 0) }

// isTerminal reports whether f is a terminal.
func isTerminal(f any) bool {
	file, ok := f.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(file.Fd()), unix.TCGETS)
	return err == nil
}

// progress returns a progress printer for stderr.
func (env *Env) progress(verb string) gate.Progress {
	return func(done, total int) {
		fmt.Fprintf(env.Stdio.Err, "act: %s: %d of %d done\n", verb, done, total)
	}
}

// askPerson is how apply and run ask a person at the terminal: never
// without one, nor where only a signature approves; the whole diff first,
// paged when longer than the terminal (a person approves what they have
// seen, and *shown says it was printed), then the intent and the question.
// A no denies the plan (gate.Apply).
func (env *Env) askPerson(g *gate.Gate, shown *bool) gate.Asker {
	return func(p *gate.Plan, why []string) (gate.Approval, gate.Answer) {
		if !env.interactive() || g.Via() == gate.ViaSigned {
			return gate.Approval{}, gate.NotAsked
		}
		env.full = true
		env.showPaged(func(w io.Writer) {
			renderPlan(w, newStyles(env, env.Stdio.Out), env, p, p.State)
			fmt.Fprintln(w)
		})
		*shown = true
		ans := answer(env, review.IntentLine(p)+confirmQuestion(why, p.ID))
		if ans == gate.Yes {
			return gate.NewApproval(gate.ViaTerminal), gate.Yes
		}
		return gate.Approval{}, ans
	}
}
