package cmd

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/act-project/act/audit"
	"github.com/act-project/act/doors/report"
	"github.com/act-project/act/gate"
	"github.com/act-project/act/internal/outcome"
	"github.com/act-project/act/internal/problem"
	"github.com/act-project/act/internal/state"
	"github.com/act-project/act/internal/timings"
	"github.com/act-project/act/policy"
	"github.com/act-project/act/review"
	"golang.org/x/sys/unix"
)

// recoveryOutcome says in words where a recovery left the tree.
func recoveryOutcome(r gate.Recovery) string {
	if r.Outcome == "after" {
		return "it had completed, and its records are now complete too"
	}
	return "what it had done was undone: the tree is as before it"
}

// result is the one JSON document every command prints with --json, and
// act mcp's tools answer with (report.Result).
type (
	result       = report.Result
	policyOrigin = report.PolicyOrigin
)

// summary counts changes by kind (report.Summary), as act pending and act
// history list them.
type summary struct {
	Create int `json:"create"`
	Modify int `json:"modify"`
	Delete int `json:"delete"`
}

// jsonProblem is problem.Problem as --json prints it.
type jsonProblem = problem.Problem

// rendered is returned by a command that has already printed its result;
// it carries only the outcome.
type rendered struct{ o outcome.Outcome }

func (r *rendered) Error() string            { return fmt.Sprintf("exit status %d", r.o.Code) }
func (r *rendered) Outcome() outcome.Outcome { return r.o }

// finish renders res and err: with --json one document on stdout; otherwise
// human calls human (if not nil) for stdout and problems go to stderr. It
// returns the error MainEnv turns into the exit code.
func (env *Env) finish(res *result, success string, err error, human func(w io.Writer, st styles)) error {
	o := outcomeOf(err)
	code := o.Code
	res.Status = statusOf(o, success)
	res.ExitCode = code
	res.Recovered = env.recovered
	env.auditRecoveries()
	if !env.json {
		for _, r := range env.recovered {
			fmt.Fprintf(env.Stdio.Err, "act: recovered: the %s of action %s had stopped part-way; %s\n", escapeLine(r.Event), escapeLine(r.ActionID), recoveryOutcome(r))
		}
	}
	if res.Errors == nil {
		res.Errors = []jsonProblem{}
	}
	if res.Warnings == nil {
		res.Warnings = []jsonProblem{}
	}
	var probs problem.List
	if errors.As(err, &probs) {
		res.Errors = append(res.Errors, probs...)
	} else if err != nil {
		res.Errors = append(res.Errors, jsonProblem{Rule: ruleOf(o), Message: err.Error()})
		var le *policy.LoadError
		if errors.As(err, &le) {
			res.Errors = append(res.Errors[:len(res.Errors)-1], le.Problems...)
		}
	}
	if env.json {
		if env.timings != nil && res.Timings == nil {
			res.Timings, env.timingsInJSON = env.timings.Phases(), true
		}
		writeJSON(env.Stdio.Out, res)
	} else {
		defer timings.Start(env.ctx(), "render")()
		if human != nil && code == outcome.OK.Code && env.page {
			// Where a person reads: through the pager when longer
			// than the terminal.
			env.pageOut(func(w io.Writer) { human(w, newStyles(env, env.Stdio.Out)) })
		} else if human != nil && code == outcome.OK.Code {
			// One write for the whole report, not one per line: a plan
			// of many changes prints thousands of lines.
			bw := bufio.NewWriter(env.Stdio.Out)
			human(bw, newStyles(env, env.Stdio.Out))
			bw.Flush()
		}
		st := newStyles(env, env.Stdio.Err)
		for _, w := range res.Warnings {
			if env.toldBefore(w.Rule) {
				continue
			}
			fmt.Fprintf(env.Stdio.Err, "act: %s %s\n", st.Warn.Render("warning:"), escapeLine(w.Error()))
		}
		defer func() {
			for _, h := range env.hintsFor(err) {
				fmt.Fprintf(env.Stdio.Err, "act: hint: %s\n", escapeLine(h))
			}
		}()
		if len(probs) > 0 {
			for _, p := range probs {
				fmt.Fprintf(env.Stdio.Err, "act: %s %s\n", st.Err.Render("error:"), escapeLine(p.Error()))
			}
		} else if isInterrupted(err) {
			fmt.Fprintf(env.Stdio.Err, "act: %s %s\n", st.Err.Render("interrupted:"), err.Error())
		} else if err != nil {
			fmt.Fprintf(env.Stdio.Err, "act: %s %s\n", st.Err.Render("error:"), escapeLine(err.Error()))
			var le *policy.LoadError
			if errors.As(err, &le) {
				for _, p := range le.Problems {
					fmt.Fprintf(env.Stdio.Err, "act: %s %s\n", st.Err.Render("error:"), escapeLine(p.Error()))
				}
			}
		}
	}
	if code == outcome.OK.Code {
		return nil
	}
	return &rendered{o}
}

func writeJSON(w io.Writer, v any) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		b = []byte(`{"status":"error","exit_code":1,"errors":[{"rule":"error","message":"cannot encode the result"}],"warnings":[]}`)
	}
	w.Write(append(review.JSONVisible(b), '\n'))
}

// styles are act's colours: each wraps text in markers the termWriter of
// env's output turns into the colour, or drops (piped, NO_COLOR).
type styles = review.Styles

func newStyles(env *Env, _ io.Writer) styles { return review.NewStyles(env.nonce) }

// auditRecoveries records, once each, the crashed promotions this process
// recovered: whether they ended before or after is a decision too.
func (env *Env) auditRecoveries() {
	home, err := env.stateDir()
	if err != nil {
		return
	}
	for _, r := range env.recovered[env.auditedRecoveries:] {
		ev := audit.Event{Name: audit.EventRecovered, ActionID: r.ActionID, PlanID: r.PlanID, Status: r.Outcome, Reason: "the " + r.Event + " had stopped part-way; it was recovered to " + r.Outcome}
		if err := gate.Record(context.Background(), state.Dir{Root: home}, orCLI(env.caller), ev); err != nil {
			fmt.Fprintf(env.Stdio.Err, "act: warning: the audit log: %s\n", escapeLine(err.Error()))
		}
	}
	env.auditedRecoveries = len(env.recovered)
}

func orCLI(caller string) string {
	if caller == "" {
		return "cli"
	}
	return caller
}

// onceRules are the warnings about the host, not the action, that a
// person reads once: every plan of every command would repeat them. --json
// output always carries them.
var onceRules = []string{"op.memory-per-process"}

// toldBefore reports whether a warning of rule is one shown once that a
// person was shown already, and otherwise records that it is shown now.
func (env *Env) toldBefore(rule string) bool {
	if !slices.Contains(onceRules, rule) {
		return false
	}
	dir, err := env.stateDir()
	if err != nil {
		return false
	}
	f := state.Dir{Root: dir}.Told(rule)
	if _, err := os.Lstat(f); err == nil {
		return true
	}
	// Only in a directory of act's own, never through a link: the note
	// is an empty file, but not one to plant elsewhere.
	told := filepath.Dir(f)
	os.Mkdir(told, 0o700)
	if fi, err := os.Lstat(told); err == nil && fi.IsDir() {
		if fd, err := os.OpenFile(f, os.O_CREATE|os.O_WRONLY|unix.O_NOFOLLOW, 0o600); err == nil {
			fd.Close()
		}
	}
	return false
}
