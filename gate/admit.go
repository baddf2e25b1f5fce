package gate

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/act-project/act/audit"
	"github.com/act-project/act/descriptors"
	"github.com/act-project/act/internal/lifecycle"
	"github.com/act-project/act/internal/outcome"
	"github.com/act-project/act/internal/problem"
	"github.com/act-project/act/plan"
	"github.com/act-project/act/policy"
	"github.com/act-project/act/rollback"
)

// Admission: whether a saved plan may be promoted now, derived again from
// what it saved (docs/lifecycle.md, "What apply trusts").

// An Admission is the gate's verdict on promoting a saved plan now.
type Admission struct {
	Entry      *Entry
	Plan       *plan.Plan
	Descriptor *descriptors.Descriptor
	// Decision is the policy's, decided now.
	Decision policy.Decision
	Risk     Risk
	// Confirm lists why a person must confirm; empty if no one must.
	Confirm []string
	// Waived lists why a person would have had to confirm a plan that
	// changes and reads nothing: there is nothing for one to approve, so
	// it is not queued (Confirm is empty) and its record says so.
	Waived []string
	// Reads are what the plan's FILE_READ operations read, read again by
	// Apply once the plan is admitted and approved (ReadBack).
	Reads []ReadOut
}

// Admit decides whether p may be promoted now, and on what condition. Its
// errors: *ExpiredError, a policy block (problem.List, exit 4; positions
// are the caller's), a cooldown block, a change list its descriptor does
// not allow (exit 6), or an ordinary error.
//
// Nothing plan.json says that act can derive again is taken from it
// (docs/lifecycle.md, "What apply trusts"): the descriptor is decoded from
// its saved bytes (bound by their digest), the facts plan.json repeats of
// it are set again from it, the change list is checked against it again
// (scope, declared effects, special modes, max_changes) — rollback.Apply
// then checks each change against the layer and the real tree — and the
// risk, the mode and the cooldown keys are derived again from both.
func (g *Gate) Admit(e *Entry) (*Admission, error) {
	p := e.Plan
	switch e.State {
	case lifecycle.Denied:
		msg := fmt.Sprintf("plan %s was denied", p.ID)
		if p.DeniedAt != nil {
			msg += " at " + p.DeniedAt.UTC().Format(time.RFC3339)
		}
		if p.DenyReason != "" {
			msg += ": " + p.DenyReason
		}
		return nil, problem.List{{Rule: RuleDenied, Field: "plan_id", Layer: problem.Conflict, Message: msg + "; plan the action again (a person must confirm it)"}}
	case lifecycle.Expired:
		exp := &ExpiredError{PlanID: p.ID, Age: g.Now().Sub(p.CreatedAt), Expiry: g.Policy.PlanExpiry}
		ev := planEvent(audit.EventExpired, p)
		setOutcome(&ev, outcome.Expired)
		ev.Reason = exp.Error()
		if err := g.record(context.Background(), ev); err != nil {
			return nil, err
		}
		return nil, exp
	}
	d, err := p.Rebind()
	if err != nil {
		return nil, err
	}
	rejected, _ := plan.CheckChanges(d, p.Changes, g.Policy)
	if rejected = append(rejected, plan.CheckReads(d, p.Read)...); len(rejected) > 0 {
		return nil, rejected
	}
	adm := &Admission{Entry: e, Plan: p, Descriptor: d}
	rules := g.riskRules()
	rules.Upper = plan.UpperDir(g.Home.Root, p.ID)
	adm.Risk = Assess(d, ownersNow(p.Changes), rules)
	AssessReads(&adm.Risk, p.Read, rules)
	p.RiskAssessed, p.RiskReasons = string(adm.Risk.Assessed), adm.Risk.Reasons
	// The policy now, not as it was at plan time.
	adm.Decision = g.decide(d, adm.Risk, p.Changes)
	p.Mode, p.ModeSource, p.Reason = string(adm.Decision.Mode), adm.Decision.Source, adm.Decision.Reason
	if len(adm.Decision.Blocked) > 0 {
		return adm, adm.Decision.Blocked
	}
	if !e.State.Waiting() {
		return adm, nil // applied or rolled back: promote once answers; nothing to confirm
	}
	keys := plan.CooldownKeys(d, p.Changes)
	if err := g.cooldownBlock(keys); err != nil {
		return adm, err
	}
	if adm.Decision.Mode == policy.Confirm {
		adm.Confirm = append(adm.Confirm, adm.Decision.Reason)
	}
	if d.Confirmation.Required {
		r := "the descriptor requires confirmation"
		if d.Confirmation.Reason != "" {
			r += ": " + d.Confirmation.Reason
		}
		adm.Confirm = append(adm.Confirm, r)
	}
	for _, key := range keys {
		if at, id, ok := rollback.LastRollback(g.Home, key); ok {
			adm.Confirm = append(adm.Confirm, fmt.Sprintf("the same action (%s) was rolled back at %s", id, at.UTC().Format(time.RFC3339)))
			break
		}
	}
	at, err := loadAttempts(g.Home, p.ActionID)
	if err != nil {
		return adm, err
	}
	adm.Confirm = append(adm.Confirm, refusalReasons(at.Refusals, p.DescriptorDigest)...)
	adm.Confirm = slices.Compact(adm.Confirm)
	if NothingToApprove(p) {
		// A run that changes nothing is no plan to approve: its commands
		// ran in the dry run, and promoting it changes nothing. The
		// caller gets their output; the record says it ran.
		adm.Waived, adm.Confirm = adm.Confirm, nil
	}
	return adm, nil
}

// NothingToApprove reports whether p changes nothing and reads nothing:
// promoting it changes nothing, and no content is shown only once it is
// approved (a FILE_READ's is, at apply), so no person is needed for it
// whatever its mode (docs/lifecycle.md, "A run that changes nothing").
// Its change list is what Admit checked against the descriptor; apply
// checks it again against the layer (an empty layer).
func NothingToApprove(p *plan.Plan) bool { return len(p.Changes) == 0 && len(p.Read) == 0 }

// cooldownBlock refuses (exit 4) the same action as one rolled back less
// than the policy's cooldown ago: one of whose cooldown keys is keys'.
func (g *Gate) cooldownBlock(keys []string) error {
	for _, key := range keys {
		at, id, ok := rollback.LastRollback(g.Home, key)
		if !ok {
			continue
		}
		ends := at.Add(g.Policy.Cooldown)
		if !g.Now().Before(ends) {
			continue
		}
		return problem.List{{
			Rule: rollback.RuleCooldown, Field: "confirmation.cooldown_on_repeat", Layer: problem.Policy,
			Message: fmt.Sprintf("the same action (%s) was rolled back at %s; the policy's cooldown of %s ends at %s",
				id, at.UTC().Format(time.RFC3339), policy.FormatDuration(g.Policy.Cooldown), ends.UTC().Format(time.RFC3339)),
		}}
	}
	return nil
}

// ExpiredError is a saved plan older than the policy's plan expiry.
type ExpiredError struct {
	PlanID      string
	Age, Expiry time.Duration
}

// Outcome is expired (exit 8, apply.expired).
func (e *ExpiredError) Outcome() outcome.Outcome { return outcome.Expired }

func (e *ExpiredError) Error() string {
	return fmt.Sprintf("plan %s was made %s ago, longer than the policy's plan expiry of %s: plan again",
		e.PlanID, policy.FormatDuration(e.Age.Truncate(time.Second)), policy.FormatDuration(e.Expiry))
}
