package gate

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/act-project/act/audit"
	"github.com/act-project/act/descriptors"
	"github.com/act-project/act/diff"
	"github.com/act-project/act/internal/digest"
	"github.com/act-project/act/internal/lifecycle"
	"github.com/act-project/act/internal/outcome"
	"github.com/act-project/act/internal/pathglob"
	"github.com/act-project/act/internal/problem"
	"github.com/act-project/act/internal/sshsig"
	"github.com/act-project/act/internal/state"
	"github.com/act-project/act/plan"
	"github.com/act-project/act/policy"
	"github.com/act-project/act/rollback"
)

// The rule ids of the gate's outcomes, from the one table
// (internal/outcome).
var (
	RuleConfirmationRequired = outcome.Queued.Rule
	RuleConfirmationVia      = outcome.NotAccepted.Rule
	RuleExpired              = outcome.Expired.Rule
	RuleReverted             = outcome.Reverted.Rule
)

// Rule ids the gate reports (docs/exit-codes.md).
const (
	// RuleDenied: a person denied the plan (exit 8).
	RuleDenied = "apply.denied"
	// RuleNotAllowed: the lifecycle does not allow the move, e.g. to
	// deny an applied plan (exit 8).
	RuleNotAllowed = "plan.not-allowed"
	// RuleMaxRuns: the sandbox already ran the action id's commands
	// sandbox.max_runs times (exit 4).
	RuleMaxRuns = "sandbox.max-runs"
)

// Rules lists the rule ids of the gate, with their exit codes.
func Rules() []plan.Rule {
	return []plan.Rule{
		{ID: RuleMaxRuns, Summary: "the sandbox already ran this action id's commands sandbox.max_runs times", Layer: problem.Policy},
		{ID: RuleExpired, Summary: "the plan is older than the policy's plan expiry: plan again", Layer: problem.Conflict},
		{ID: RuleDenied, Summary: "a person denied the plan", Layer: problem.Conflict},
		{ID: RuleNotAllowed, Summary: "a plan's state does not allow the move (deny an applied plan, say)", Layer: problem.Conflict},
		{ID: RuleMaxPending, Summary: "as many plans as the policy allows already wait for a person", Layer: problem.Policy},
		{ID: RuleMaxLayers, Summary: "the layers of the plans not yet applied would hold more than the policy's max_layers_mb", Layer: problem.Policy},
	}
}

// A Gate decides for one act process: the state dir, the effective host
// policy, the clock and the user's homes (for the files that run code
// later).
type Gate struct {
	Home   state.Dir
	Policy *policy.Policy
	Now    func() time.Time
	// EnvHome is $HOME and UserHome the password database's home of the
	// user act runs as: risk grading checks both and every other home the
	// static rules know (descriptors.HomeRoots), so that a $HOME pointed
	// elsewhere hides nothing.
	EnvHome, UserHome string
	// Workspaces are this session's workspaces beside the policy's (act
	// mcp --workspace), fixed by the person who started it.
	Workspaces []string
	// PathDirs are the directories of $PATH: a program there runs by
	// name, so changing one is HIGH.
	PathDirs []string
	// NewID returns a fresh plan id; nil means random.
	NewID func() string
	// Session is what a long-running act keeps across decisions; nil for
	// a one-shot act.
	Session *Session
	// Caller is the door a request came through, for the audit log: "cli"
	// (the default), "run", "mcp", "claude-code" or "codex".
	Caller string
}

// ConfirmationRequired is the outcome of a promotion or forced rollback
// that needs a person's confirmation it did not get: the plan is pending.
type ConfirmationRequired struct {
	PlanID string
	// Why lists every reason, not the first.
	Why []string
	// Via is what the host counts as a confirmation.
	Via string
	// Refused says why an offered confirmation did not count; empty when
	// none was offered.
	Refused string
}

func (e *ConfirmationRequired) Error() string {
	msg := "confirmation required: " + strings.Join(e.Why, "; ")
	if e.Refused != "" {
		msg += "; " + e.Refused
	}
	if e.PlanID != "" {
		msg += fmt.Sprintf("; the plan is pending: approve it with act apply %s --confirm", e.PlanID)
	}
	return msg
}

// Rule is the rule id of the outcome.
func (e *ConfirmationRequired) Rule() string { return e.Outcome().Rule }

// Outcome is queued: confirm.required, or confirm.not-accepted when what
// was offered does not count.
func (e *ConfirmationRequired) Outcome() outcome.Outcome {
	if e.Refused != "" {
		return outcome.NotAccepted
	}
	return outcome.Queued
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

// An Approval is how a person confirmed: the record kept with the action
// (who, how; rollback.Approval) and what was offered to check it.
type Approval struct {
	rollback.Approval
	// Signature is the armored signature offered, checked by Approve
	// against its own PlanDigest of the plan it approves; Digest is what
	// the signer was given to sign, which the gate does not take.
	Signature []byte `json:"-"`
	Digest    string `json:"-"`
}

// The ways a person can confirm: the policy's, and none (no confirmation
// was needed).
const (
	ViaNone     = "none"
	ViaFlag     = policy.ViaFlag
	ViaTerminal = policy.ViaTerminal
	ViaSigned   = policy.ViaSigned
)

// NewApproval returns an approval of kind via by the user running act.
func NewApproval(via string) Approval {
	a := Approval{Approval: rollback.Approval{Via: via, UID: os.Getuid()}}
	if u, err := user.LookupId(strconv.Itoa(a.UID)); err == nil {
		a.User = u.Username
	}
	return a
}

// PrePlan is what the gate found before a dry run of a descriptor.
type PrePlan struct {
	// Applied is the action, when the same id and content was promoted
	// already: nothing to plan.
	Applied *rollback.Action
	// Reuse is a fresh saved plan of the same id and content that
	// `act apply DESCRIPTOR` promotes instead of running again.
	Reuse *Entry
	// Refusals are the id's earlier refusals that make a person's
	// confirmation necessary now.
	Refusals []string
	// Reserved: a run of the sandbox was counted ahead, given back by
	// Plan if no command runs.
	Reserved bool
}

// BeforePlan applies the rules that come before a dry run of d (digest
// its canonical digest): promote once (an id rolled back, or applied with
// other content, is a conflict; the same content is PrePlan.Applied), the
// cooldown block, and max_runs: a run of the sandbox is counted here, before
// it happens. With reuse (`act apply DESCRIPTOR`), a fresh saved plan of
// the same id and digest is returned instead, and nothing is counted: one
// that is planned or pending, within the plan expiry, and made after the
// last promotion or rollback in the state dir.
func (g *Gate) BeforePlan(ctx context.Context, d *descriptors.Descriptor, digest string, reuse bool) (*PrePlan, error) {
	g.prepareRecord()
	pre, err := g.beforePlan(ctx, d, digest, reuse)
	var probs problem.List
	if errors.As(err, &probs) && len(probs) > 0 {
		// A block (max_runs, cooldown) or a conflict (promote once) is a
		// decision: recorded, though not counted against the id.
		ev := refusalEvent(d, digest, probs)
		err = g.refused(ctx, ev.Name, ev, err)
	}
	return pre, err
}

func (g *Gate) beforePlan(ctx context.Context, d *descriptors.Descriptor, digest string, reuse bool) (*PrePlan, error) {
	pre := &PrePlan{}
	a, err := rollback.Promoted(g.Home, d.ActionID, digest)
	pre.Applied = a
	if err != nil || (a != nil && reuse) {
		return pre, err // apply answers "already applied"; plan goes on
	}
	if err := g.cooldownBlock(plan.CooldownKeys(d, nil)); err != nil {
		return nil, err
	}
	at, err := loadAttempts(g.Home, d.ActionID)
	if err != nil {
		return nil, err
	}
	pre.Refusals = refusalReasons(at.Refusals, digest)
	if reuse {
		if pre.Reuse = g.freshPlan(at, digest); pre.Reuse != nil {
			return pre, nil
		}
	}
	if !plan.NeedsSandbox(d) {
		return pre, nil
	}
	err = updateAttempts(ctx, g.Home, d.ActionID, func(at *attempts) error {
		if max := int(d.Sandbox.MaxRuns); at.Runs >= max {
			// Planning again what was planned already is a look at that
			// plan, not a run: a fresh one is shown instead of refusing.
			if pre.Reuse = g.freshPlan(at, digest); pre.Reuse != nil {
				return errReused
			}
			return problem.List{{
				Rule: RuleMaxRuns, Field: "sandbox.max_runs", Layer: problem.Policy,
				Message: fmt.Sprintf("the sandbox already ran the commands of action %s %s, its max_runs is %d: give a new action a new action_id", d.ActionID, plural(at.Runs, "time"), max),
			}}
		}
		at.Runs++
		return nil
	})
	pre.Reserved = err == nil
	return pre, err
}

// errReused stops a dry run whose action's fresh saved plan BeforePlan
// found instead (PrePlan.Reuse): nothing of it runs.
var errReused = errors.New("a fresh saved plan of this descriptor is reused")

// freshPlan is the newest saved plan of at's action id and digest that may
// still be applied and was made after the last promotion or rollback in
// the state dir (each writes an action record; a plan made before dry-ran
// another tree), or nil.
func (g *Gate) freshPlan(at *attempts, digest string) *Entry {
	var epoch time.Time
	if fi, err := os.Stat(g.Home.Actions()); err == nil {
		epoch = fi.ModTime()
	}
	for i := len(at.Plans) - 1; i >= 0; i-- {
		e, err := g.Load(at.Plans[i])
		if err != nil || e.Plan.DescriptorDigest != digest {
			continue
		}
		if e.State.Waiting() && e.Plan.CreatedAt.After(epoch) {
			return e
		}
	}
	return nil
}

// releaseRun gives back the run of the sandbox BeforePlan counted ahead
// for action id, when no command ran.
func (g *Gate) releaseRun(ctx context.Context, id string) error {
	return updateAttempts(ctx, g.Home, id, func(at *attempts) error {
		if at.Runs > 0 {
			at.Runs--
		}
		return nil
	})
}

// refusalReasons says why earlier refusals need a person now: after a
// rejection (6) or block (4), planning the id again with other content;
// after a failed precondition (5), planning it again at all.
func refusalReasons(refusals []Refusal, digest string) []string {
	var why []string
	for _, r := range refusals {
		if r.Code == outcome.Precondition.Code || r.Rule == RuleDenied || r.Digest != digest {
			what := map[int]string{
				outcome.Blocked.Code:      "blocked by the policy",
				outcome.Precondition.Code: "stopped by a failed precondition",
				outcome.Rejected.Code:     "rejected at its dry run",
				outcome.Conflict.Code:     "denied by a person",
			}[r.Code]
			why = append(why, fmt.Sprintf("this action id was %s at %s (%s); it is planned again", what, r.At.UTC().Format(time.RFC3339), r.Rule))
		}
	}
	return why
}

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
	if len(actionID) <= 64 && idLike.MatchString(actionID) {
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
var idLike = regexp.MustCompile(`^[A-Za-z0-9-]+$`)

// maxKeptPlans is how many of an action id's plans its record lists.
const maxKeptPlans = 16

// Planned records a saved plan of its action id, for reuse.
func (g *Gate) Planned(ctx context.Context, p *plan.Plan) error {
	if err := g.record(ctx, planEvent(audit.EventPlanned, p)); err != nil {
		return err
	}
	return updateAttempts(ctx, g.Home, p.ActionID, func(at *attempts) error {
		at.Plans = append(at.Plans, p.ID)
		if n := len(at.Plans); n > maxKeptPlans {
			at.Plans = at.Plans[n-maxKeptPlans:] // reuse wants the newest
		}
		return nil
	})
}

// assess grades a draft's changes: act's own risk assessment, and the
// policy's decision with the stricter of the declared and the assessed
// risk. A block (exit 4) is the error.
func (g *Gate) assess(d *descriptors.Descriptor, changes []diff.Change, reads []plan.ReadResult) (plan.Assessment, error) {
	rules := g.riskRules()
	r := Assess(d, changes, rules)
	AssessReads(&r, reads, rules)
	dec := g.decide(d, r, changes)
	a := plan.Assessment{RiskAssessed: string(r.Assessed), RiskReasons: r.Reasons, Decision: dec}
	if len(dec.Blocked) > 0 {
		return a, dec.Blocked
	}
	return a, nil
}

// Plan is the gate's whole sequence for a dry run of d, in order:
//
//  1. check: BeforePlan (promote once, cooldown, max_runs). With reuse
//     (act apply DESCRIPTOR) it runs first, and may answer without a dry
//     run (PrePlan.Applied, PrePlan.Reuse); without, it runs beside the
//     dry run (plan.Ahead.Check), and no command runs and no request is
//     sent before it has passed;
//  2. dry run: a draft (plan.DryRun);
//  3. assess: act's risk and the policy's decision, from the draft's
//     changes; a block discards the draft;
//  4. save and record: the plan is saved with its planned record, both
//     or neither.
//
// A refusal at any step is recorded (docs/lifecycle.md). opts.Digest must
// be set; opts.Ahead.Check is the gate's own.
func (g *Gate) Plan(ctx context.Context, d *descriptors.Descriptor, opts plan.Options, reuse bool) (*plan.Plan, *PrePlan, error) {
	var pre *PrePlan
	before := func() (err error) {
		pre, err = g.BeforePlan(ctx, d, opts.Digest, reuse)
		return err
	}
	if reuse {
		if err := before(); err != nil || pre.Applied != nil || pre.Reuse != nil {
			return nil, pre, err
		}
	} else {
		opts.Ahead.Check = plan.StartCheck(before)
	}
	// A run of the sandbox is reserved by the check (so that plans of one
	// id at once cannot pass max_runs together) and counts only once a
	// command has run: a plan refused or stopped before that gives it back.
	var started atomic.Bool
	opts.Ahead.Started = func() { started.Store(true) }
	dr, err := plan.DryRun(ctx, d, opts)
	cerr := opts.Ahead.Check.Wait() // done by now, or nil: with reuse it ran first
	switch {
	case errors.Is(cerr, errReused):
		if err == nil {
			dr.Discard()
		}
		return pre.Reuse.Plan, pre, nil
	case cerr != nil:
		// The gate's own refusal comes first, as if it had been checked
		// before the dry run began.
		if err == nil {
			dr.Discard()
		}
		return nil, pre, cerr
	}
	if err == nil && ctx.Err() != nil {
		dr.Discard() // stopped (Ctrl-C) as it ended: not a plan
		err = ctx.Err()
	}
	// Stopped by the caller (Ctrl-C): the run does not count, and it is no
	// refusal of the descriptor.
	stopped := ctx.Err() != nil
	if pre.Reserved && (!started.Load() || stopped) {
		if rerr := g.releaseRun(context.WithoutCancel(ctx), d.ActionID); rerr != nil {
			err = errors.Join(err, rerr)
		}
	}
	if err != nil && stopped {
		return nil, pre, err
	}
	if err != nil {
		return nil, pre, g.refusedPlan(ctx, d, opts.Digest, err)
	}
	a, err := g.assess(d, dr.Changes, dr.Reads())
	if err == nil {
		err = g.layersLimit(dr.LayerBytes())
	}
	if err != nil {
		dr.Discard()
		return nil, pre, g.refusedPlan(ctx, d, opts.Digest, err)
	}
	p, err := dr.Save(a, func(p *plan.Plan) error { return g.Planned(ctx, p) })
	return p, pre, err
}

// decide is the policy's decision on d now, its risk the stricter of the
// declared one and r's assessment, and its mode at least as strict as that
// of each action type its changes amount to (impliedTypes): a command that
// deletes is decided as a FILE_DELETE of those paths too.
func (g *Gate) decide(d *descriptors.Descriptor, r Risk, changes []diff.Change) policy.Decision {
	eff := *d
	eff.RiskLevel = r.Effective()
	dec := g.Policy.Decide(&eff, g.Now())
	g.commandRule(&dec, r, d.Confirmation.Required)
	declared := map[descriptors.ActionType]bool{}
	var walk func(t descriptors.ActionType, steps []descriptors.Step)
	walk = func(t descriptors.ActionType, steps []descriptors.Step) {
		declared[t] = true
		for _, s := range steps {
			walk(s.ActionType, s.Steps)
		}
	}
	walk(d.ActionType, d.Steps)
	for _, im := range impliedTypes(changes) {
		if declared[im.typ] {
			continue // decided as itself already
		}
		as := g.Policy.ModeOf(im.typ, eff.RiskLevel)
		what := fmt.Sprintf("the plan's changes amount to a %s (%s)", im.typ, shownPaths(im.paths))
		if as.Mode.Rank() > dec.Mode.Rank() {
			dec.Mode, dec.Source, dec.Reason = as.Mode, as.Source, what+": "+as.Reason
		}
		if as.Mode == policy.Deny {
			dec.Blocked = append(dec.Blocked, problem.Problem{Rule: policy.RuleDeny, Field: "action_type", Layer: problem.Policy,
				Message: what + ", and " + as.Reason})
		}
	}
	if r.Assessed.Rank() > r.Declared.Rank() {
		dec.Reason += fmt.Sprintf(" (act assessed the risk as %s, above the declared %s: %s)", r.Assessed, r.Declared, strings.Join(r.Reasons, "; "))
		for i := range dec.Blocked {
			if dec.Blocked[i].Field == "risk_level" {
				dec.Blocked[i].Message += fmt.Sprintf(" (as act assessed it: %s)", strings.Join(r.Reasons, "; "))
			}
		}
	}
	return dec
}

// workspaces are the policy's workspaces and this session's.
func (g *Gate) workspaces() []string {
	return append(slices.Clip(g.Policy.Workspaces), g.Workspaces...)
}

func (g *Gate) riskRules() RiskRules {
	r := RiskRules{Homes: descriptors.HomeRoots(g.EnvHome, g.UserHome), MaxDeletes: int(g.Policy.Risk.MaxDeletes), SensitivePaths: g.Policy.Risk.SensitivePaths,
		InWorkspace: func(path string) bool {
			// act's own state dir is never part of a workspace.
			return g.Policy.InWorkspace(path, g.workspaces()) && !pathglob.Within(path, g.Home.Root)
		},
		UID: uint32(os.Geteuid()), PathDirs: g.PathDirs, Commands: g.Policy.CommandModeIn(g.PathDirs)}
	if r.MaxDeletes <= 0 {
		r.MaxDeletes = DefaultMaxDeletes
	}
	return r
}

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
	return adm, nil
}

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

// shownPaths names the first few of paths, and counts the rest.
func shownPaths(paths []string) string {
	const shown = 3
	list := strings.Join(paths[:min(len(paths), shown)], ", ")
	if n := len(paths) - shown; n > 0 {
		list += fmt.Sprintf(" and %d more", n)
	}
	return list
}

// Via is what the host's policy counts as a person's confirmation
// (loading a policy gives it its default, flag; an empty one counts
// nothing).
func (g *Gate) Via() string { return g.Policy.Confirmation.Via }

// PlanDigest is what a signed approval of p signs (as sshsig.Message of
// it): the sha256 of the plan's id, its descriptor's digest and its
// changes, so a signature approves exactly the reviewed diff.
func PlanDigest(p *plan.Plan) string {
	b, _ := json.Marshal(struct {
		PlanID           string        `json:"plan_id"`
		DescriptorDigest string        `json:"descriptor_digest"`
		Changes          []diff.Change `json:"changes"`
	}{p.ID, p.DescriptorDigest, p.Changes})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// approvers returns the policy's allowed signers: only those that count
// (policy.Policy.AllowedSigners, docs/approvals.md).
func (g *Gate) approvers() ([]sshsig.AllowedSigner, error) {
	text, err := g.Policy.AllowedSigners()
	if err != nil {
		return nil, err
	}
	return sshsig.ParseAllowedSigners(strings.NewReader(text))
}

// verifySigned checks a signed approval of plan digest against the
// policy's approvers, and fills in who signed.
func (g *Gate) verifySigned(ap *Approval, digest string) error {
	signers, err := g.approvers()
	if err != nil {
		return err
	}
	if len(signers) == 0 {
		return errors.New("the host policy asks for signed confirmations but lists no approvers")
	}
	got, err := sshsig.Verify(ap.Signature, sshsig.Message(digest), sshsig.Namespace, signers)
	if err != nil {
		return err
	}
	ap.Principal, ap.KeyFingerprint = got.Principal, got.KeyFingerprint
	return nil
}

// Approve checks ap against what the host counts as a person's
// confirmation, when adm needs one; it returns the approval to record.
func (g *Gate) Approve(why []string, p *plan.Plan, ap Approval) (Approval, error) {
	if len(why) == 0 {
		if ap.Via == "" {
			ap = NewApproval(ViaNone)
		}
		return ap, nil
	}
	need := &ConfirmationRequired{Why: why, Via: g.Via()}
	if p != nil {
		need.PlanID = p.ID
	}
	switch {
	case ap.Via == "" || ap.Via == ViaNone:
		return ap, need
	case g.Via() == ViaFlag && (ap.Via == ViaFlag || ap.Via == ViaTerminal):
		return ap, nil
	case g.Via() == ViaTerminal && ap.Via == ViaTerminal:
		return ap, nil
	case g.Via() == ViaSigned && ap.Via == ViaSigned:
		if p == nil {
			need.Refused = "a signed approval approves a plan, and there is none here"
			return ap, need
		}
		// The digest is the gate's own of this plan, never the one
		// offered with the signature: a signature of another plan
		// approves nothing here.
		if err := g.verifySigned(&ap, PlanDigest(p)); err != nil {
			need.Refused = "the signature does not approve this plan: " + err.Error()
			return ap, need
		}
		return ap, nil
	}
	need.Refused = fmt.Sprintf("the host policy counts only %s as a person's confirmation, and this was %s", viaWords(g.Via()), viaWords(ap.Via))
	return ap, need
}

func viaWords(via string) string {
	switch via {
	case ViaFlag:
		return "--confirm or a yes at the terminal"
	case ViaTerminal:
		return "a yes typed at the controlling terminal"
	case ViaSigned:
		return "an SSH signature by a listed approver"
	}
	return via
}

// Queue leaves e pending a person's confirmation, for the reasons why —
// unless as many plans as the policy allows wait already (exit 4).
func (g *Gate) Queue(ctx context.Context, e *Entry, why []string) error {
	p := e.Plan
	if err := g.queueLimit(e); err != nil {
		return err
	}
	old := p.ConfirmReasons
	p.ConfirmReasons = why
	ev := planEvent(audit.EventQueued, p)
	setOutcome(&ev, outcome.Queued)
	ev.Reason, ev.Rules = strings.Join(why, "; "), nil
	if err := g.transition(ctx, e, lifecycle.Queue, RuleNotAllowed, g.save(p), &ev); err != nil {
		p.ConfirmReasons = old
		return err
	}
	return nil
}

// An Asker asks a person to confirm plan p for the reasons why, and
// returns the approval given, or false.
type Asker func(p *plan.Plan, why []string) (Approval, bool)

// Apply is the gate's whole sequence for promoting the saved plan p, in
// order: Admit decides now (expired, denied, blocked, the change list, what
// needs a person); Approve checks ap, or what ask obtains when ap is not
// enough (nil never asks); a missing confirmation leaves the plan pending
// (Queue: *ConfirmationRequired); Promote promotes. Every refusal on the
// way is recorded (apply_refused; expired and queued have records of their
// own). The Admission is returned whenever Admit got that far. The CLI and
// the MCP server both apply through it.
func (g *Gate) Apply(ctx context.Context, e *Entry, ap Approval, ask Asker, progress rollback.Progress) (*Admission, *rollback.Outcome, error) {
	p := e.Plan
	adm, err := g.Decide(ctx, e)
	if err != nil {
		return adm, nil, err // recorded by Decide
	}
	if len(adm.Confirm) > 0 {
		if ap, err = g.Approve(adm.Confirm, p, ap); err != nil && ask != nil {
			if given, ok := ask(p, adm.Confirm); ok {
				ap, err = g.Approve(adm.Confirm, p, given)
			}
		}
		var need *ConfirmationRequired
		if errors.As(err, &need) {
			if qerr := g.queue(ctx, e, need.Why); qerr != nil {
				return adm, nil, qerr // too many plans wait already (max_pending): recorded
			}
			return adm, nil, err
		}
		if err != nil {
			return adm, nil, err
		}
	} else if ap.Via == "" {
		ap = NewApproval(ViaNone)
	}
	out, err := g.promoteAdmitted(ctx, adm, ap, progress)
	return adm, out, err
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

// Promote promotes an admitted plan, approved by ap (already checked by
// Approve), under the state-dir lock; the approval is kept with the action
// record.
func (g *Gate) Promote(ctx context.Context, adm *Admission, ap Approval, progress rollback.Progress) (*rollback.Outcome, error) {
	host := plan.DefaultHost()
	var out *rollback.Outcome
	if adm.Entry.State == lifecycle.RolledBack {
		// Promote once: the engine's answer names when it was rolled back.
		_, err := rollback.Promoted(g.Home, adm.Plan.ActionID, adm.Plan.DescriptorDigest)
		return nil, err
	}
	err := g.transition(ctx, adm.Entry, lifecycle.Apply, RuleNotAllowed, func(lifecycle.State) (err error) {
		out, err = g.promote(ctx, adm, ap, host, progress)
		return err
	}, nil)
	return out, err
}

// promote is the engine's promotion of an admitted plan, recorded inside
// its commit (applied) or after its undoing (reverted).
func (g *Gate) promote(ctx context.Context, adm *Admission, ap Approval, host plan.Host, progress rollback.Progress) (*rollback.Outcome, error) {
	out, err := rollback.Apply(ctx, g.Home, adm.Plan, rollback.Options{
		Now:      g.Now,
		Progress: progress,
		Approval: &ap.Approval,
		Preconditions: func() problem.List {
			return plan.CheckPreconditions(adm.Descriptor, host, g.Now(), g.Policy.IdlePeriod)
		},
		Record: g.recordApplied(ctx, adm, ap, ""),
	})
	var rev *rollback.RevertedError
	if errors.As(err, &rev) {
		ev := planEvent(audit.EventReverted, adm.Plan)
		setOutcome(&ev, outcome.Reverted)
		ev.Reason, ev.Approval = err.Error(), approvalOf(&ap.Approval)
		if rerr := g.record(ctx, ev); rerr != nil {
			return out, errors.Join(err, rerr)
		}
	}
	return out, err
}

// Adopt records the planned plan of e as applied where an agent's own
// tool made its changes after a person allowed the call at the agent's
// prompt (docs/agents.md): ap is that yes, which must count under the
// policy as any other (only a flag counts: the prompt is not a terminal
// and signs nothing). The real tree must hold exactly the plan's changes
// and copies the kept copies of what they replaced (rollback.Adopt), so
// that act rollback undoes them; nothing on the tree is changed. It is
// decided as an apply (admitted, approved, recorded), and refused (exit
// 8) where the tree is not what the plan makes of it.
func (g *Gate) Adopt(ctx context.Context, e *Entry, ap Approval, copies map[int]string) (*rollback.Outcome, error) {
	p := e.Plan
	adm, err := g.Decide(ctx, e)
	if err != nil {
		return nil, err // recorded by Decide
	}
	if ap, err = g.Approve(adm.Confirm, p, ap); err != nil {
		return nil, g.refused(ctx, audit.EventApplyRefused, planEvent(audit.EventApplyRefused, p), err)
	}
	var out *rollback.Outcome
	err = g.transition(ctx, e, lifecycle.Apply, RuleNotAllowed, func(lifecycle.State) (err error) {
		out, err = rollback.Adopt(ctx, g.Home, p, copies, rollback.Options{
			Now:      g.Now,
			Approval: &ap.Approval,
			Record:   g.recordApplied(ctx, adm, ap, "adopted: the agent's tool made exactly the reviewed change after a person allowed it at the agent's prompt"),
		})
		return err
	}, nil)
	var probs problem.List
	if errors.As(err, &probs) {
		ev := planEvent(audit.EventApplyRefused, p)
		ev.Approval = approvalOf(&ap.Approval)
		err = g.refused(ctx, audit.EventApplyRefused, ev, err)
	}
	return out, err
}

// recordApplied records the promotion (or, with a reason, the adoption)
// of the admitted plan, approved by ap.
func (g *Gate) recordApplied(ctx context.Context, adm *Admission, ap Approval, reason string) func(*rollback.Action, bool) error {
	return g.recordOutcome(ctx, func(*rollback.Action) audit.Event {
		ev := planEvent(audit.EventApplied, adm.Plan)
		ev.Status, ev.Approval = outcome.Succeeded.Status, approvalOf(&ap.Approval)
		ev.Policy = &audit.Policy{Mode: string(adm.Decision.Mode), Source: adm.Decision.Source}
		ev.Risk.Assessed = string(adm.Risk.Assessed)
		ev.Reason = reason
		return ev
	})
}

// Rollback rolls back action id; a forced one needs a person's
// confirmation (ap, or what ask obtains when ap is not enough; nil never
// asks), as the host counts it. Every refusal is recorded
// (rollback_refused).
func (g *Gate) Rollback(ctx context.Context, id string, force bool, ap Approval, ask func() (Approval, bool), progress rollback.Progress) (*rollback.Outcome, error) {
	refused := audit.Event{ActionID: id}
	if force {
		why := []string{"rollback --force restores even paths changed since the apply (their current versions are saved)"}
		_, err := g.Approve(why, nil, ap)
		if err != nil && ask != nil {
			if given, ok := ask(); ok {
				ap = given
				_, err = g.Approve(why, nil, ap)
			}
		}
		if err != nil {
			return nil, g.refused(ctx, audit.EventRollbackRefused, refused, err)
		}
		refused.Approval = approvalOf(&ap.Approval)
	}
	e, err := g.actionEntry(id)
	if err != nil {
		return nil, err
	}
	if e.State == lifecycle.RolledBack {
		a, err := rollback.LoadAction(g.Home, id)
		if err != nil {
			return nil, err
		}
		return &rollback.Outcome{Action: a}, g.refused(ctx, audit.EventRollbackRefused, refused, problem.List{{
			Rule: rollback.RuleAlreadyRolled, Field: "action_id", Layer: problem.Conflict,
			Message: fmt.Sprintf("action %s was already rolled back at %s", id, a.RolledBackAt.UTC().Format(time.RFC3339)),
		}})
	}
	var out *rollback.Outcome
	err = g.transition(ctx, e, lifecycle.Rollback, rollback.RuleAlreadyRolled, func(lifecycle.State) (err error) {
		out, err = g.rollback(ctx, id, force, ap, progress)
		return err
	}, nil)
	if out != nil && out.Action != nil {
		refused.PlanID, refused.DescriptorSHA256 = out.Action.PlanID, out.Action.DescriptorDigest
	}
	return out, g.refused(ctx, audit.EventRollbackRefused, refused, err)
}

// actionEntry is the entry of the plan action id promoted; when gc has
// removed that plan, an entry of its id alone, in the action's state (the
// engine then says why it cannot be rolled back).
func (g *Gate) actionEntry(id string) (*Entry, error) {
	h, err := rollback.LoadActionHead(g.Home, id)
	if err != nil {
		return nil, err
	}
	e, err := g.Load(h.PlanID)
	if errors.Is(err, plan.ErrNotFound) {
		return &Entry{Plan: &plan.Plan{ID: h.PlanID, ActionID: id}, State: h.State}, nil
	}
	return e, err
}

// rollback is the engine's rollback of action id, recorded inside its
// commit.
func (g *Gate) rollback(ctx context.Context, id string, force bool, ap Approval, progress rollback.Progress) (*rollback.Outcome, error) {
	return rollback.Rollback(ctx, g.Home, id, rollback.Options{Now: g.Now, Force: force, Progress: progress,
		Record: g.recordOutcome(ctx, func(a *rollback.Action) audit.Event {
			ev := audit.Event{Name: audit.EventRolledBack, ActionID: a.ActionID, PlanID: a.PlanID,
				DescriptorSHA256: a.DescriptorDigest, Status: outcome.RolledBack.Status, Changes: changeSummary(a.Changes)}
			if force {
				ev.Reason = "forced"
				ev.Approval = approvalOf(&ap.Approval)
			}
			return ev
		}),
	})
}

// A ReadOut is what a FILE_READ gives at apply: the file's content as it
// is now, which is what the plan recorded.
type ReadOut struct {
	Path      string `json:"path"`
	Content   []byte `json:"content"`
	Truncated bool   `json:"truncated"`
}

// ReadBack reads again the files p's FILE_READ operations read at plan
// time: the plan keeps only their digests, never their content. A file
// changed since is a conflict (exit 8, apply.stale).
func (g *Gate) ReadBack(p *plan.Plan) ([]ReadOut, error) {
	var out []ReadOut
	for _, r := range p.Read {
		// The file read is where the named path leads now, never what
		// plan.json says it led to.
		if now, err := filepath.EvalSymlinks(r.Path); err == nil && now != r.Resolved {
			return nil, problem.List{{Rule: rollback.RuleStale, Field: r.Path, Layer: problem.Conflict,
				Message: fmt.Sprintf("%s leads to %s now, not to %s as when the plan read it; plan again", r.Path, now, r.Resolved)}}
		}
		data, sum, err := readBack(r.Resolved)
		if err != nil {
			return nil, problem.List{{Rule: rollback.RuleStale, Field: r.Path, Layer: problem.Conflict,
				Message: fmt.Sprintf("%s cannot be read now: %v; plan again", r.Path, err)}}
		}
		if sum != r.SHA256 {
			return nil, problem.List{{Rule: rollback.RuleStale, Field: r.Path, Layer: problem.Conflict,
				Message: fmt.Sprintf("%s changed since the plan read it (sha256 %.12s, not %.12s); plan again", r.Path, sum, r.SHA256)}}
		}
		o := ReadOut{Path: r.Path, Content: data}
		if len(data) > plan.MaxReadContent {
			o.Content, o.Truncated = data[:plan.MaxReadContent], true
		}
		out = append(out, o)
	}
	return out, nil
}

// readBack reads the file at name again: a regular file only (opened
// without blocking, so that a FIFO put there since cannot hang apply), its
// sha256 over all of it and its first MaxReadContent+1 bytes kept.
func readBack(name string) ([]byte, string, error) {
	f, err := os.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, "", err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil {
		return nil, "", err
	} else if !fi.Mode().IsRegular() {
		return nil, "", fmt.Errorf("it is no longer a regular file (%s)", fi.Mode().Type())
	}
	var head bytes.Buffer
	sum, _, err := digest.Reader(io.TeeReader(f, &capped{&head, plan.MaxReadContent + 1}))
	return head.Bytes(), sum, err
}

// capped is a writer that keeps at most n bytes and drops the rest.
type capped struct {
	b *bytes.Buffer
	n int
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.n - c.b.Len(); room > 0 {
		c.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// commandRule applies the policy's command rules to dec (docs/policy.md,
// "Command rules"): a deny rule blocks; otherwise, while the plan is LOW
// by act's allow-list and as declared, the rules' mode replaces the mode
// its type and risk give (a person pre-approved those commands), unless
// the policy denies the plan outright or the descriptor asks for a
// person (asked). Beyond LOW a rule only tightens.
func (g *Gate) commandRule(dec *policy.Decision, r Risk, asked bool) {
	if r.CommandMode == "" {
		return
	}
	rules := strings.Join(r.CommandRules, ", ")
	why := fmt.Sprintf("the policy's command rules (%s) set its commands to %s", rules, r.CommandMode)
	switch {
	case r.CommandMode == policy.Deny:
		dec.Mode, dec.Source, dec.Reason = policy.Deny, "command rule", why
		dec.Blocked = append(dec.Blocked, problem.Problem{Rule: policy.RuleDeny, Field: "operation.argv", Layer: problem.Policy,
			Message: why})
	case len(dec.Blocked) > 0:
	case (r.Effective() == descriptors.RiskLow && !asked) || r.CommandMode.Rank() > dec.Mode.Rank():
		dec.Mode, dec.Source, dec.Reason = r.CommandMode, "command rule", why
	}
}
