package gate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"

	"github.com/act-project/act/audit"
	"github.com/act-project/act/descriptors"
	"github.com/act-project/act/internal/outcome"
	"github.com/act-project/act/internal/problem"
	"github.com/act-project/act/policy"
	"github.com/act-project/act/rollback"
)

// Refusals: each is a decision, recorded with its outcome (docs/audit.md);
// a dry run's refusal is also counted against its action id.

// Refused records that planning d (digest) ended in err, when err is a
// refusal a later attempt must answer for: a block (4), a failed
// precondition (5) or a rejection (6).
func (g *Gate) Refused(ctx context.Context, d *descriptors.Descriptor, digest string, err error) error {
	var probs problem.List
	if !errors.As(err, &probs) || len(probs) == 0 {
		return nil
	}
	o := outcome.ForLayer(probs.Layer())
	if o != outcome.Blocked && o != outcome.Precondition && o != outcome.Rejected || probs[0].Rule == RuleMaxRuns || probs[0].Rule == rollback.RuleCooldown {
		return nil
	}
	if err := g.record(ctx, refusalEvent(d, digest, probs)); err != nil {
		return err
	}
	return updateAttempts(ctx, g.Home, d.ActionID, func(at *attempts) error {
		at.Refusals = append(at.Refusals, Refusal{Digest: digest, Code: o.Code, Rule: probs[0].Rule, At: g.Now().UTC()})
		return nil
	})
}

// refusedPlan records a dry run's refusal err (Refused) and returns it.
func (g *Gate) refusedPlan(ctx context.Context, d *descriptors.Descriptor, digest string, err error) error {
	if rerr := g.Refused(ctx, d, digest, err); rerr != nil {
		return errors.Join(err, rerr)
	}
	return err
}

// Blocked records that d (digest its canonical digest) was refused at
// validation, before any plan: a static rule failed (exit 3) or the host
// policy blocked it (exit 4); dec is the policy's decision, nil when the
// rules stopped it first. It is a validate_blocked record, made the same
// way by act validate, act plan and act apply DESCRIPTOR (and their MCP
// tools). Unlike Refused, it is not counted against the action id: the
// descriptor was never dry-run.
func (g *Gate) Blocked(ctx context.Context, d *descriptors.Descriptor, digest string, probs problem.List, dec *policy.Decision) error {
	if l := probs.Layer(); l != problem.Rule && l != problem.Policy {
		return nil
	}
	ev := refusalEvent(d, digest, probs)
	ev.Name = audit.EventValidateBlocked
	if dec != nil {
		ev.Policy = &audit.Policy{Mode: string(dec.Mode), Source: dec.Source}
	}
	return g.record(ctx, ev)
}

// Unreadable records a descriptor refused because it does not parse or
// fails the schema (exit 3, status invalid) as validate_blocked: its
// subject is the sha256 of the bytes as given, and its action id the one
// the document names, where it names one that looks like an id.
func (g *Gate) Unreadable(ctx context.Context, actionID string, data []byte, probs problem.List) error {
	sum := sha256.Sum256(data)
	ev := audit.Event{Name: audit.EventValidateBlocked, DescriptorSHA256: hex.EncodeToString(sum[:]),
		ExitCode: outcome.Invalid.Code, Status: outcome.Invalid.Status, LogLevel: audit.LevelSummary}
	if len(actionID) <= 64 && idLike(actionID) {
		ev.ActionID = actionID
	}
	for _, p := range probs {
		ev.Rules = append(ev.Rules, p.Rule)
	}
	if len(probs) > 0 {
		ev.Reason = probs[0].Message
	}
	return g.record(ctx, ev)
}

// idLike is what an action id recorded from an unreadable descriptor may
// look like: letters, digits and dashes (a UUID, or close to one).
func idLike(id string) bool {
	for i := 0; i < len(id); i++ {
		if !alnum(id[i]) && id[i] != '-' {
			return false
		}
	}
	return id != ""
}

// refused records err, a refusal (a problem.List, or a confirmation a
// forced rollback lacks), as event name on ev, and returns err; any other
// error is returned as it is, unrecorded (an error is not a decision).
func (g *Gate) refused(ctx context.Context, name string, ev audit.Event, err error) error {
	ev.Name = name
	var probs problem.List
	var need *ConfirmationRequired
	switch {
	case errors.As(err, &probs) && len(probs) > 0:
		setOutcome(&ev, outcome.ForLayer(probs.Layer()))
		ev.Reason = probs[0].Message
		ev.Rules = nil
		for _, p := range probs {
			ev.Rules = append(ev.Rules, p.Rule)
		}
	case errors.As(err, &need):
		setOutcome(&ev, need.Outcome())
		ev.Reason = need.Error()
	default:
		return err
	}
	if rerr := g.record(ctx, ev); rerr != nil {
		return errors.Join(err, rerr)
	}
	return err
}

// asProblems is errors.As(err, probs).
func asProblems(err error, probs *problem.List) bool { return errors.As(err, probs) }

// isRefusal reports that err is a decision of act's (a problem list)
// rather than an error.
func isRefusal(err error) bool {
	var probs problem.List
	return errors.As(err, &probs)
}

// setOutcome gives a record its outcome: its exit code and status, and
// the outcome's rule id when it has one of its own.
func setOutcome(ev *audit.Event, o outcome.Outcome) {
	ev.ExitCode, ev.Status = o.Code, o.Status
	if o.Rule != "" {
		ev.Rules = []string{o.Rule}
	}
}
