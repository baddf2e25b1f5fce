package cmd

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/act-project/act/audit"
	"github.com/act-project/act/internal/state"
	"github.com/act-project/act/policy"
)

// autoWitnessTime bounds the witnessing after an apply or a rollback
// (audit.witness_after): all witnesses at once, then act ends regardless.
const autoWitnessTime = 2 * time.Second

// auditWitnesses are the policy's witnesses and quorums as audit takes
// them.
func auditWitnesses(pol *policy.Policy) ([]audit.Witness, []audit.Quorum) {
	var ws []audit.Witness
	for _, w := range pol.Audit.Witnesses {
		ws = append(ws, audit.Witness{Name: w.Name, Key: w.Key, URL: w.URL})
	}
	var qs []audit.Quorum
	for _, q := range pol.WitnessQuorums() {
		qs = append(qs, audit.Quorum{Witnesses: q.Witnesses, K: int(q.K)})
	}
	return ws, qs
}

// witnessOptions fills the witness part of VerifyOptions from the policy
// (docs/audit.md, "Verifying with witnesses").
func (env *Env) witnessOptions(opts *audit.VerifyOptions) error {
	pol, err := env.loadPolicy(&result{})
	if err != nil {
		return err
	}
	opts.Witnesses, opts.Quorums = auditWitnesses(pol)
	opts.Grace, opts.Now = pol.Audit.WitnessGrace, env.Now()
	return nil
}

func newAuditWitnessCommand(env *Env, dir func() (string, error)) *cli.Command {
	return &cli.Command{
		Name:      "witness",
		Usage:     "have the policy's witnesses cosign the newest checkpoint",
		UsageText: "act audit witness [--json]",
		Description: `Sends the log's newest checkpoint to every witness the policy lists
   (audit.witnesses), at once, per c2sp.org/tlog-witness: with a
   consistency proof from the size the witness last cosigned (from the
   tree cache; act audit verify checks the records). Each
   cosignature is verified with the policy's key for that witness and
   stored in <home>/audit/witness/<name>; act audit verify checks them. A
   witness that cosigned this checkpoint already is not asked again. A
   witness that cannot be reached in 10 seconds, refuses, or answers with a
   cosignature by another key is named, and the command exits 1; the next
   call asks it again. A witness that holds a checkpoint of this log which
   the log does not extend (a rewrite, a fork) is named as such
   (docs/audit.md, "Witnesses").

EXAMPLES:
   act audit witness
   act --json audit witness

` + endsWith("every witness cosigned", 1, 2).note(1, "error, a damaged log, or a witness that did not cosign").help(),
		Action: func(c *cli.Context) error {
			if c.NArg() != 0 {
				return usagef("audit witness takes no arguments")
			}
			res := &result{}
			pol, err := env.loadPolicy(res)
			if err != nil {
				return env.finish(res, "ok", err, nil)
			}
			ws, _ := auditWitnesses(pol)
			if len(ws) == 0 {
				return env.finish(res, "ok", fmt.Errorf("the policy lists no witnesses (audit.witnesses, docs/policy.md)"), nil)
			}
			d, err := dir()
			if err != nil {
				return env.finish(res, "ok", err, nil)
			}
			rep, err := audit.WitnessLog(c.Context, d, ws, audit.WitnessOptions{})
			res.Data = rep
			if !env.json && len(rep.Witnesses) > 0 {
				// Each witness's line, also when another failed (the
				// error then names that one).
				for _, w := range rep.Witnesses {
					if w.Status != audit.WitnessFailed {
						fmt.Fprintln(env.Stdio.Out, witnessLine(w))
					}
				}
			}
			return env.finish(res, "ok", err, nil)
		},
	}
}

// witnessLine says what a witness did, in one line.
func witnessLine(w audit.WitnessResult) string {
	switch w.Status {
	case audit.WitnessCosigned:
		if w.Previous > 0 {
			return fmt.Sprintf("witness %s: cosigned %d records (it had cosigned %d)", escapeLine(w.Name), w.Size, w.Previous)
		}
		return fmt.Sprintf("witness %s: cosigned %d records", escapeLine(w.Name), w.Size)
	case audit.WitnessCurrent:
		return fmt.Sprintf("witness %s: had cosigned these %d records already", escapeLine(w.Name), w.Size)
	}
	return fmt.Sprintf("witness %s: %s", escapeLine(w.Name), escapeLine(w.Error))
}

// renderWitnessed prints what verify found of the witnesses.
func renderWitnessed(w io.Writer, r audit.Report, grace time.Duration) {
	for _, s := range r.Witnessed {
		if s.Size == 0 {
			fmt.Fprintf(w, "witness %s: no cosigned checkpoint stored\n", escapeLine(s.Name))
			continue
		}
		fmt.Fprintf(w, "witness %s: cosigned %d records", escapeLine(s.Name), s.Size)
		if !s.Time.IsZero() {
			fmt.Fprintf(w, " at %s", s.Time.UTC().Format(time.RFC3339))
		}
		fmt.Fprintln(w)
	}
	for _, q := range r.Quorums {
		g := policy.FormatDuration(grace)
		why := fmt.Sprintf("appended more than %s ago", g)
		switch {
		case q.Stale && q.Time.IsZero():
			why = "no quorum has cosigned yet: every record"
		case q.Stale:
			why = fmt.Sprintf("the quorum last cosigned at %s, more than %s ago: every record", q.Time.UTC().Format(time.RFC3339), g)
		case !q.Time.IsZero():
			why += fmt.Sprintf("; the quorum last cosigned at %s", q.Time.UTC().Format(time.RFC3339))
		}
		fmt.Fprintf(w, "quorum %d of %s: %d records cosigned; %d due (%s)\n",
			q.K, escapeLine(strings.Join(q.Witnesses, ", ")), q.Size, q.Due, why)
	}
}

// witnessAfter asks the policy's witnesses to cosign after an apply or a
// rollback, when audit.witness_after says so: within autoWitnessTime in
// all, after the action's outcome is printed, never changing it. A
// witness that did not cosign is named in one warning line on stderr; the
// next apply, rollback or act audit witness asks it again.
func (env *Env) witnessAfter(pol *policy.Policy) {
	if pol == nil || !pol.Audit.WitnessAfter || len(pol.Audit.Witnesses) == 0 {
		return
	}
	home, err := env.stateDir()
	if err != nil {
		return
	}
	ws, _ := auditWitnesses(pol)
	ctx, cancel := context.WithTimeout(context.Background(), autoWitnessTime)
	defer cancel()
	_, err = audit.WitnessLog(ctx, state.Dir{Root: home}.Audit(), ws, audit.WitnessOptions{Timeout: autoWitnessTime})
	if err != nil {
		fmt.Fprintf(env.Stdio.Err, "act: warning: the audit log was not witnessed (asked again next time): %s\n", escapeLine(err.Error()))
	}
}
