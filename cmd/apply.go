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
	"github.com/act-project/act/internal/document"
	"github.com/act-project/act/internal/problem"
	"github.com/act-project/act/internal/state"
	"github.com/act-project/act/plan"
	"github.com/act-project/act/policy"
	"github.com/act-project/act/rollback"
)

func newApplyCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:      "apply",
		Usage:     "promote a plan onto the real tree, all or nothing",
		UsageText: "act apply [--confirm] [--json] DESCRIPTOR|-|PLAN_ID",
		Description: `With a descriptor (a file, or - for stdin) apply plans first, as plan does;
   with a plan id it promotes that saved plan. Every path must still match the
   plan's pre-image and the preconditions must still hold. The promotion is
   journaled: a failure part-way, or a crash, leaves the tree as before.

   Confirmation is needed when the policy mode is confirm, when the descriptor
   sets confirmation.required, or when the same action was rolled back before
   (cooldown_on_repeat). --confirm gives it; on a terminal act asks; otherwise
   the plan stays pending (exit 7) for "act apply PLAN_ID --confirm".

EXIT STATUS:
   0 applied (or already applied), 1 error, 2 usage, 3 invalid descriptor,
   4 blocked by policy, 5 precondition failed, 6 dry run rejected,
   7 confirmation required, 8 conflict (stale plan, action id already used),
   9 no such plan`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "confirm", Usage: "confirm the promotion (a person's decision)"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usagef("apply takes exactly one descriptor or plan id, got %d arguments", c.NArg())
			}
			return runApply(c.Context, env, c.Args().First(), c.Bool("confirm"))
		},
	}
}

// statusError gives an outcome a status other than the one its exit code
// names (reverted, queued, expired).
type statusError struct {
	status string
	code   int
	err    error
}

func (e *statusError) Error() string { return e.err.Error() }
func (e *statusError) Unwrap() error { return e.err }

func runApply(ctx context.Context, env *Env, arg string, confirmed bool) error {
	res := &result{}
	home, err := env.stateDir()
	if err != nil {
		return env.finish(res, "succeeded", err, nil)
	}
	var (
		p    *plan.Plan
		d    *descriptors.Descriptor
		pol  *policy.Policy
		shot bool // the plan was printed already
	)
	if _, serr := os.Stat(arg); arg == "-" || serr == nil {
		ck, err := env.check(res, arg)
		if err != nil {
			return env.finish(res, "succeeded", err, nil)
		}
		d, pol = ck.d, ck.pol
		// Promote once: a repeat of an applied action is answered before
		// planning it again (its preconditions may no longer hold).
		_, digest, err := plan.Canonical(d)
		if err != nil {
			return env.finish(res, "succeeded", err, nil)
		}
		if a, err := rollback.Promoted(state.Dir{Root: home}, d.ActionID, digest); err != nil || a != nil {
			if err == nil {
				return alreadyApplied(env, res, a)
			}
			return env.finish(res, "succeeded", withPositions(ck, err), nil)
		}
		if p, err = buildPlan(ctx, env, res, ck); err != nil {
			// Another act may have promoted this very action meanwhile,
			// so that the tree no longer plans: promote once answers.
			if a, perr := promotedNow(ctx, state.Dir{Root: home}, d.ActionID, digest); perr != nil || a != nil {
				if perr == nil {
					return alreadyApplied(env, res, a)
				}
				var probs problem.List
				if errors.As(perr, &probs) {
					return env.finish(res, "succeeded", withPositions(ck, perr), nil)
				}
			}
			return env.finish(res, "succeeded", err, nil)
		}
		if !env.json {
			renderPlan(env.Stdio.Out, newStyles(env, env.Stdio.Out), env, p)
			fmt.Fprintln(env.Stdio.Out)
			shot = true
		}
	} else {
		if !plan.IsID(arg) {
			return env.finish(res, "succeeded", fmt.Errorf("%s is neither a descriptor file nor a plan id: %w", arg, plan.ErrNotFound), nil)
		}
		if p, err = rollback.LoadPlan(state.Dir{Root: home}, arg); err != nil {
			return env.finish(res, "succeeded", err, nil)
		}
		fillPlan(res, p)
		if pol, err = env.loadPolicy(res); err != nil {
			return env.finish(res, "succeeded", err, nil)
		}
		var doc problemLocator
		if d, doc, err = descriptorOf(p); err != nil {
			return env.finish(res, "succeeded", err, nil)
		}
		// An expired plan is reported as such before the policy decision:
		// its descriptor, older still, would be a stale intent (exit 4).
		if p.State == plan.Planned || p.State == plan.Pending {
			if age := env.Now().Sub(p.CreatedAt); age > pol.PlanExpiry {
				return env.finish(res, "succeeded", &statusError{status: "expired", code: 8, err: fmt.Errorf(
					"plan %s was made %s ago, longer than the policy's plan expiry of %s: plan again",
					p.ID, policy.FormatDuration(age.Truncate(time.Second)), policy.FormatDuration(pol.PlanExpiry))}, nil)
			}
		}
		// The policy now, not as it was at plan time.
		dec := pol.Decide(d, env.Now())
		res.Mode, res.ModeSource, res.Reason = string(dec.Mode), dec.Source, dec.Reason
		if len(dec.Blocked) > 0 {
			return env.finish(res, "succeeded", doc(dec.Blocked), nil)
		}
		// Confirmation follows the mode decided now (p is not saved
		// with it unless it goes pending).
		p.Mode, p.ModeSource, p.Reason = string(dec.Mode), dec.Source, dec.Reason
	}
	why, err := confirmationNeeded(env, state.Dir{Root: home}, p, d, pol)
	if err != nil {
		return env.finish(res, "succeeded", err, nil)
	}
	if why != "" && !confirmed && p.State != plan.Applied {
		if !env.json && isTerminal(env.Stdio.In) && isTerminal(env.Stdio.Err) {
			if !shot {
				renderPlan(env.Stdio.Out, newStyles(env, env.Stdio.Out), env, p)
				fmt.Fprintln(env.Stdio.Out)
			}
			confirmed = ask(env, fmt.Sprintf("Confirmation needed: %s.\nApply plan %s? [y/N] ", why, p.ID))
		}
		if !confirmed {
			p.State = plan.Pending
			if err := plan.Update(home, p); err != nil {
				return env.finish(res, "succeeded", err, nil)
			}
			res.Reason = why
			return env.finish(res, "succeeded", &statusError{status: "queued", code: 7, err: fmt.Errorf(
				"confirmation required: %s; the plan is pending: approve it with act apply %s --confirm", why, p.ID)}, nil)
		}
	}
	host := plan.DefaultHost()
	out, err := rollback.Apply(ctx, state.Dir{Root: home}, p, rollback.Options{
		Now:      env.Now,
		Progress: env.progress("applying"),
		Preconditions: func() problem.List {
			return plan.CheckPreconditions(d, host, env.Now(), pol.IdlePeriod)
		},
	})
	if out != nil {
		env.recovered = append(env.recovered, out.Recovered...)
	}
	var rev *rollback.RevertedError
	switch {
	case errors.As(err, &rev):
		err = &statusError{status: "reverted", code: 1, err: err}
	case err == nil && out.AlreadyApplied:
		return alreadyApplied(env, res, out.Action)
	}
	return env.finish(res, "succeeded", err, func(w io.Writer, st styles) {
		c, m, dl := diff.Summary(p.Changes)
		fmt.Fprintf(w, "%s\n", st.bold.Render(fmt.Sprintf("Applied: %d created, %d modified, %d deleted.", c, m, dl)))
		fmt.Fprintf(w, "Roll back with: act rollback %s\n", p.ActionID)
	})
}

// promotedNow is rollback.Promoted once any promotion in progress has
// ended: it waits for the state-dir lock.
func promotedNow(ctx context.Context, home state.Dir, id, digest string) (*rollback.Action, error) {
	unlock, err := home.Lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	return rollback.Promoted(home, id, digest)
}

// alreadyApplied reports a repeat of applied action a: exit 0, nothing
// changed.
func alreadyApplied(env *Env, res *result, a *rollback.Action) error {
	res.PlanID, res.Changes = a.PlanID, a.Changes
	return env.finish(res, "already_applied", nil, func(w io.Writer, st styles) {
		fmt.Fprintf(w, "Action %s was already applied (plan %s): nothing changed.\n", a.ActionID, a.PlanID)
	})
}

// problemLocator gives problems their place in a descriptor.
type problemLocator func(problem.List) problem.List

// descriptorOf decodes the descriptor a plan keeps (canonical JSON, checked
// against the plan's digest of it; act validated it when it planned).
func descriptorOf(p *plan.Plan) (*descriptors.Descriptor, problemLocator, error) {
	d, err := descriptors.LoadSaved(p.Descriptor, p.DescriptorDigest)
	if err != nil {
		return nil, nil, fmt.Errorf("plan %s: its descriptor no longer loads: %w", p.ID, err)
	}
	return d, func(l problem.List) problem.List {
		doc, probs := document.Parse(p.File, p.Descriptor) // positions only when there are problems
		if probs != nil {
			return l
		}
		return locate(doc, l)
	}, nil
}

// confirmationNeeded says why promoting p needs a person's confirmation, or
// "" if it does not (SPEC §4, §5): the policy mode, the descriptor's own
// confirmation.required, or a repeat of an action rolled back before.
// During the cooldown itself the repeat is blocked (exit 4).
func confirmationNeeded(env *Env, home state.Dir, p *plan.Plan, d *descriptors.Descriptor, pol *policy.Policy) (string, error) {
	if err := cooldownBlock(env, home, p.Descriptor, pol); err != nil {
		return "", err
	}
	var why []string
	if policy.Mode(p.Mode) == policy.Confirm {
		why = append(why, p.Reason)
	}
	if d.Confirmation.Required {
		r := "the descriptor requires confirmation"
		if d.Confirmation.Reason != "" {
			r += ": " + d.Confirmation.Reason
		}
		why = append(why, r)
	}
	key, _ := rollback.CooldownKey(p.Descriptor)
	if at, id, ok := rollback.LastRollback(home, key); ok {
		why = append(why, fmt.Sprintf("the same action (%s) was rolled back at %s", id, at.UTC().Format(time.RFC3339)))
	}
	return strings.Join(why, "; "), nil
}

// cooldownBlock refuses (exit 4) the same action as one rolled back less
// than the policy's cooldown ago.
func cooldownBlock(env *Env, home state.Dir, canon []byte, pol *policy.Policy) error {
	key, _ := rollback.CooldownKey(canon)
	at, id, ok := rollback.LastRollback(home, key)
	if !ok {
		return nil
	}
	if ends := at.Add(pol.Cooldown); env.Now().Before(ends) {
		return problem.List{{
			Rule: rollback.RuleCooldown, Field: "confirmation.cooldown_on_repeat", Layer: problem.Policy,
			Message: fmt.Sprintf("the same action (%s) was rolled back at %s; the policy's cooldown of %s ends at %s",
				id, at.UTC().Format(time.RFC3339), policy.FormatDuration(pol.Cooldown), ends.UTC().Format(time.RFC3339)),
		}}
	}
	return nil
}

// ask prints question on stderr and reads a y/yes from stdin.
func ask(env *Env, question string) bool {
	fmt.Fprint(env.Stdio.Err, question)
	line, _ := bufio.NewReader(env.Stdio.In).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true
	}
	return false
}

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
func (env *Env) progress(verb string) rollback.Progress {
	return func(done, total int) {
		fmt.Fprintf(env.Stdio.Err, "act: %s: %d of %d done\n", verb, done, total)
	}
}
