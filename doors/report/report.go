// Package report is act's one answer document: what every command prints
// with --json (its schema: schema/output.cue, act schema --output) and
// what act mcp's tools return in the same fields, with the same statuses
// and exit codes. cmd
// and the doors fill it from the gate's typed answers; where an error
// becomes an outcome — an exit code and a status — is here, in one place
// ([OutcomeOf], from the table of internal/outcome, docs/exit-codes.md).
package report

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"time"

	"github.com/act-project/act/descriptors"
	"github.com/act-project/act/diff"
	"github.com/act-project/act/gate"
	"github.com/act-project/act/internal/outcome"
	"github.com/act-project/act/internal/problem"
	"github.com/act-project/act/internal/timings"
	"github.com/act-project/act/policy"
)

// Result is the one JSON document every command prints with --json.
type Result struct {
	Status     string        `json:"status"`
	ExitCode   int           `json:"exit_code"`
	File       string        `json:"file,omitempty"`
	ActionID   string        `json:"action_id,omitempty"`
	PlanID     string        `json:"plan_id,omitempty"`
	ActionType string        `json:"action_type,omitempty"`
	RiskLevel  string        `json:"risk_level,omitempty"`
	Mode       string        `json:"mode,omitempty"`
	ModeSource string        `json:"mode_source,omitempty"`
	Reason     string        `json:"reason,omitempty"`
	Risk       *gate.Risk    `json:"risk,omitempty"`
	Policy     *PolicyOrigin `json:"policy,omitempty"`
	Changes    []diff.Change `json:"changes,omitempty"`
	Summary    *Summary      `json:"summary,omitempty"`
	// Discarded counts the by-products the plan's commands wrote to paths
	// git ignores, and names the first of them: not promoted, not graded.
	Discarded *gate.Discarded `json:"discarded,omitempty"`
	// HomeDiscarded counts what the plan's commands made in the masked
	// home, and names the first of it: a throwaway layer's, gone with the
	// sandbox, never promoted.
	HomeDiscarded *gate.Discarded `json:"home_discarded,omitempty"`
	// Commands are the commands and verification the dry run ran, with
	// their exit codes, times and (capped, redacted) output.
	Commands []gate.CommandResult `json:"commands,omitempty"`
	Errors   []problem.Problem    `json:"errors"`
	Warnings []problem.Problem    `json:"warnings"`
	Data     any                  `json:"data,omitempty"`
	// Recovered lists crashed promotions this command recovered first.
	Recovered []gate.Recovery `json:"recovered,omitempty"`
	// Timings are the phases of the decision with their wall times, with
	// --timings (docs/timings.md).
	Timings []timings.Phase `json:"timings,omitempty"`
}

// Summary counts changes by kind.
type Summary struct {
	Create int `json:"create"`
	Modify int `json:"modify"`
	Delete int `json:"delete"`
}

// SummaryOf counts changes.
func SummaryOf(changes []diff.Change) *Summary {
	c, m, d := diff.Summary(changes)
	return &Summary{Create: c, Modify: m, Delete: d}
}

// PolicyOrigin is where the host policy came from.
type PolicyOrigin struct {
	Source string `json:"source"`
	File   string `json:"file,omitempty"`
}

// FillChecked fills res from the gate's checks of a descriptor (Check,
// CheckBuilt): the action, the policy's mode and why, the warnings. ck
// may be nil (a descriptor that did not parse).
func (res *Result) FillChecked(ck *gate.Checked) {
	if ck == nil {
		return
	}
	d := ck.Descriptor
	res.ActionID, res.ActionType, res.RiskLevel = d.ActionID, string(d.ActionType), string(d.RiskLevel)
	if ck.Decision.Mode != "" {
		res.Mode, res.ModeSource, res.Reason = string(ck.Decision.Mode), ck.Decision.Source, ck.Decision.Reason
	}
	res.Warnings = append(res.Warnings, ck.Warnings...)
}

// FillPlan fills res from saved plan p: its ids, the policy's mode when
// it was made, its changes, commands, risk and warnings.
func (res *Result) FillPlan(p *gate.Plan) {
	res.PlanID = p.ID
	res.ActionID, res.ActionType, res.RiskLevel = p.ActionID, p.ActionType, p.RiskLevel
	res.Mode, res.ModeSource, res.Reason = p.Mode, p.ModeSource, p.Reason
	res.Changes = p.Changes
	res.Commands = p.Commands
	if p.RiskAssessed != "" {
		res.Risk = &gate.Risk{Declared: descriptors.RiskLevel(p.RiskLevel), Assessed: descriptors.RiskLevel(p.RiskAssessed), Reasons: p.RiskReasons}
	}
	res.Warnings = append(res.Warnings, p.Warnings...)
	res.Summary = SummaryOf(p.Changes)
	res.Discarded = p.Discarded
	res.HomeDiscarded = p.HomeDiscarded
}

// PlanWarnings adds what a later apply of plan p will answer for, as the
// gate's plan sequence found it (pre): a plan reused rather than run
// again, the action id's earlier refusals that need a person now.
func (res *Result) PlanWarnings(p *gate.Plan, pre *gate.PrePlan) {
	if pre.Reuse != nil {
		res.Warnings = append(res.Warnings, problem.Problem{Rule: "plan.reused", Message: fmt.Sprintf(
			"the sandbox already ran this action's commands sandbox.max_runs times; this is plan %s, made of this same descriptor at %s",
			p.ID, p.CreatedAt.UTC().Format(time.RFC3339))})
	}
	for _, why := range pre.Refusals {
		res.Warnings = append(res.Warnings, problem.Problem{Rule: gate.RuleConfirmationRequired, Field: "action_id", Message: "apply will need a person's confirmation: " + why})
	}
}

// FillAdmission fills res from the gate's decision now on a saved plan
// (Admit, Apply): the policy's mode and why, act's risk.
func (res *Result) FillAdmission(adm *gate.Admission) {
	if adm == nil {
		return
	}
	res.Mode, res.ModeSource, res.Reason = string(adm.Decision.Mode), adm.Decision.Source, adm.Decision.Reason
	res.Risk = &adm.Risk
}

// A Locator gives problems their place in a descriptor.
type Locator func(problem.List) problem.List

// PlanLocator places problems in the descriptor file plan p was made
// from, when that file still holds the same descriptor; otherwise they
// name only the field (a position in the plan's canonical JSON would
// point at the wrong line of a file).
func PlanLocator(p *gate.Plan) Locator {
	return func(l problem.List) problem.List {
		if p.File != "" && p.File != "-" {
			if data, err := os.ReadFile(p.File); err == nil {
				// A short descriptor is expanded with the stamp and the
				// defaults the plan was made with, to be the same
				// descriptor again.
				var st descriptors.Stamp
				if saved, err := p.Decode(); err == nil {
					home, _ := os.UserHomeDir()
					st = descriptors.Stamp{ActionID: saved.ActionID, CreatedAt: saved.CreatedAt, Policy: descriptors.DefaultsOf(saved, home, userHome())}
				}
				if d, doc, probs := descriptors.LoadStamped(p.File, data, st); probs == nil {
					if _, digest, err := gate.Canonical(d); err == nil && digest == p.DescriptorDigest {
						return descriptors.Locate(doc, l)
					}
				}
			}
		}
		return l
	}
}

// OutcomeOf is the one place an error becomes an outcome, and so an exit
// code and a status (docs/exit-codes.md, from internal/outcome): an error
// that carries its outcome (outcome.Error, a usage error, an error already
// rendered), else a policy file that does not load (1), an unknown plan or
// action id (9), problems (their layer's), anything else 1.
func OutcomeOf(err error) outcome.Outcome {
	var (
		le *policy.LoadError
		pl problem.List
	)
	if err == nil {
		return outcome.OK
	}
	if o, ok := outcome.Of(err); ok {
		return o
	}
	switch {
	case errors.As(err, &le):
		return outcome.Fail
	case errors.Is(err, gate.ErrNotFound):
		return outcome.NotFound
	case errors.As(err, &pl):
		return outcome.ForLayer(pl.Layer())
	}
	return outcome.Fail
}

// StatusOf is the status of outcome o: on plain success, the command's
// own (success, if not "").
func StatusOf(o outcome.Outcome, success string) string {
	if o == outcome.OK && success != "" {
		return success
	}
	return o.Status
}

// RuleOf is the rule id of an error of outcome o that is not a problem.
func RuleOf(o outcome.Outcome) string {
	if o.Rule != "" {
		return o.Rule
	}
	return outcome.Fail.Rule
}

// userHome is the password database's home of the user act runs as, or "".
func userHome() string {
	if u, err := user.Current(); err == nil {
		return u.HomeDir
	}
	return ""
}
