package gate

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"

	"github.com/act-project/act/descriptors"
	"github.com/act-project/act/internal/document"
	"github.com/act-project/act/internal/problem"
	"github.com/act-project/act/internal/timings"
	"github.com/act-project/act/plan"
	"github.com/act-project/act/policy"
)

// A Checked descriptor passed every check of docs/rules.md and the host
// policy: what Plan dry-runs. Check and CheckBuilt make one.
type Checked struct {
	Descriptor *descriptors.Descriptor
	// Doc is the document it was read from; nil for a descriptor a door
	// built itself (act run's, a hook's), whose problems then name only
	// their field.
	Doc *document.Document
	// Decision is the policy's on the descriptor before its dry run: its
	// blocks as declared, its mode as apply would decide it on the changes
	// the descriptor names (Gate.Expect); the plan is decided again on
	// what it changed.
	Decision policy.Decision
	// Warnings are what does not stop a look at the descriptor but would
	// stop a plan (a stale intent, for act validate).
	Warnings problem.List
	// warm is a sandbox started beside the checks, for a descriptor that
	// runs a command; Release ends it if the plan did not use it.
	warm   *plan.Warm
	canon  json.RawMessage
	digest string
}

// Canonical is the descriptor's canonical JSON and its digest, computed
// once.
func (ck *Checked) Canonical() (json.RawMessage, string, error) {
	if ck.digest == "" {
		canon, digest, err := plan.Canonical(ck.Descriptor)
		if err != nil {
			return nil, "", err
		}
		ck.canon, ck.digest = canon, digest
	}
	return ck.canon, ck.digest, nil
}

// Release ends what the checks started and the plan did not use.
func (ck *Checked) Release() {
	if ck != nil {
		ck.warm.Close()
	}
}

// Locate gives problems the position of their field in the descriptor's
// file; a descriptor a door built has none, and its problems stay as
// they are.
func (ck *Checked) Locate(probs problem.List) problem.List {
	if ck == nil || ck.Doc == nil {
		return probs
	}
	return descriptors.Locate(ck.Doc, probs)
}

// Check reads a descriptor's bytes (name is the name its positions use)
// and runs parse, schema, rules and policy; acting is false for a look
// at the descriptor (act validate), where a stale intent is a warning.
// Every refusal is recorded (validate_blocked). On a refusal by the rules
// or the policy the Checked is returned too, for what the caller reports
// of it.
func (g *Gate) Check(ctx context.Context, name string, data []byte, acting bool) (_ *Checked, err error) {
	var warm *plan.Warm
	if acting && bytes.Contains(data, []byte("COMMAND_EXECUTION")) {
		// Probably a command: start its sandbox now, beside the checks
		// below; it runs nothing until they and the gate have passed.
		warm = g.Session.take()
		defer func() {
			if err != nil {
				warm.Close()
			}
		}()
	}
	// A short descriptor is stamped with act's clock and completed from
	// the host policy (docs/descriptor.md, "Short form"): over MCP and
	// from a file alike. What it expands to is what every check below
	// and the plan see.
	d, doc, probs := descriptors.LoadStampedContext(ctx, name, data, descriptors.Stamp{Now: g.Now(), Policy: g.ShortDefaults()})
	if probs != nil {
		return nil, g.unreadable(ctx, doc, data, probs)
	}
	ck := &Checked{Descriptor: d, Doc: doc, warm: warm}
	return ck, g.checkRules(ctx, ck, acting)
}

// ShortDefaults are what a short descriptor's left-out fields take from
// the gate's policy and host.
func (g *Gate) ShortDefaults() descriptors.Defaults {
	c := g.Policy.ResourceCaps
	return descriptors.Defaults{
		Caps:       descriptors.Resources{MaxCPUMs: c.MaxCPUMs, MaxMemoryMB: c.MaxMemoryMB, MaxDiskMB: c.MaxDiskMB, MaxDurationMs: c.MaxDurationMs},
		RetainDays: g.Policy.Audit.RetainDays,
		Homes:      []string{g.EnvHome, g.UserHome},
	}
}

// CheckBuilt runs the rules and the policy on d, a descriptor a door
// built itself from its protocol (act run's command, a hook's Write): the
// same checks as Check's after the schema, which d's Go types stand for.
// act stamps its action_id and created_at where d has none.
func (g *Gate) CheckBuilt(ctx context.Context, d *descriptors.Descriptor) (_ *Checked, err error) {
	descriptors.StampBuilt(d, descriptors.Stamp{Now: g.Now()})
	var warm *plan.Warm
	if descriptors.RunsCommand(d) {
		warm = g.Session.take()
		defer func() {
			if err != nil {
				warm.Close()
			}
		}()
	}
	ck := &Checked{Descriptor: d, warm: warm}
	return ck, g.checkRules(ctx, ck, true)
}

// checkRules is the static rules of docs/rules.md and the policy's
// decision on ck, each refusal recorded.
func (g *Gate) checkRules(ctx context.Context, ck *Checked, acting bool) error {
	d := ck.Descriptor
	end := timings.Start(ctx, "rules")
	probs := descriptors.Check(d, ck.Doc, descriptors.CheckOptions{
		Now:      g.Now(),
		Home:     g.EnvHome,
		UserHome: g.UserHome,
		StateDir: g.Home.Root,
	})
	end()
	if len(probs) > 0 {
		return g.blocked(ctx, ck, probs, nil)
	}
	end = timings.Start(ctx, "policy")
	dec := g.Policy.Decide(d, g.Now())
	end()
	if !acting {
		// A stale intent stops a plan or an apply, not a look at the
		// descriptor: validate warns (so an old example still validates).
		var rest problem.List
		for _, b := range dec.Blocked {
			if b.Rule == policy.RuleStaleIntent {
				b.Message += "; act plan and act apply refuse it (exit 4)"
				ck.Warnings = append(ck.Warnings, ck.Locate(problem.List{b})...)
				continue
			}
			rest = append(rest, b)
		}
		dec.Blocked = rest
	}
	ck.Decision = dec
	if len(dec.Blocked) > 0 {
		return g.blocked(ctx, ck, ck.Locate(dec.Blocked), &dec)
	}
	// The mode shown before the dry run is the one apply will decide by
	// (Expect); the blocks above are the declared descriptor's.
	exp := g.Expect(d)
	ck.Decision.Mode, ck.Decision.Source, ck.Decision.Reason = exp.Mode, exp.Source, exp.Reason
	return nil
}

// blocked records that ck was refused at validation (docs/audit.md:
// validate_blocked) and returns probs, or the error of a record that
// could not be written: act does not refuse unrecorded either.
func (g *Gate) blocked(ctx context.Context, ck *Checked, probs problem.List, dec *policy.Decision) error {
	_, digest, err := ck.Canonical()
	if err != nil {
		return err
	}
	if err := g.Blocked(ctx, ck.Descriptor, digest, probs, dec); err != nil {
		return err
	}
	return probs
}

// unreadable records that a descriptor was refused because it does not
// parse or fails the schema (validate_blocked) and returns probs, or the
// error of a record that could not be written.
func (g *Gate) unreadable(ctx context.Context, doc *document.Document, data []byte, probs problem.List) error {
	var id string
	if doc != nil {
		if m, ok := doc.Value().(map[string]any); ok {
			id, _ = m["action_id"].(string)
		}
	}
	if err := g.Unreadable(ctx, id, data, probs); err != nil {
		return err
	}
	return probs
}

// PlanOptions are what a door adds to a plan of a checked descriptor.
type PlanOptions struct {
	// File is the descriptor's name, recorded in the plan ("" for one a
	// door built).
	File string
	// Reuse: act apply DESCRIPTOR, which may answer from a saved plan of
	// the same descriptor (PrePlan.Applied, PrePlan.Reuse).
	Reuse bool
	// Progress, if not nil, gets the commands' output as it comes.
	Progress func(stream int, line string)
}

// PlanChecked dry-runs a checked descriptor through the gate's plan
// sequence (Plan), with what this session made ahead (a sandbox, a plan
// directory) as its overlap. Its problems are placed in the descriptor's
// file.
func (g *Gate) PlanChecked(ctx context.Context, ck *Checked, o PlanOptions) (*plan.Plan, *PrePlan, error) {
	end := timings.Start(ctx, "canonical form")
	canon, digest, err := ck.Canonical()
	end()
	if err != nil {
		return nil, nil, err
	}
	p, pre, err := g.Plan(ctx, ck.Descriptor, plan.Options{
		StateDir:  g.Home.Root,
		Policy:    g.Policy,
		File:      o.File,
		Now:       g.Now,
		NewID:     g.NewID,
		Host:      plan.DefaultHost(),
		Homes:     []string{g.EnvHome, g.UserHome},
		UserHome:  g.UserHome,
		Canonical: canon,
		Digest:    digest,
		Ahead:     plan.Ahead{Warm: ck.warm, Dirs: g.Session.spareDirs(), Refill: func() { g.Session.refill(ck.Descriptor) }},
		Progress:  o.Progress,
	}, o.Reuse)
	var probs problem.List
	if err != nil && asProblems(err, &probs) {
		return nil, pre, ck.Locate(probs)
	}
	return p, pre, err
}

// A Session is what a long-running act (act mcp) keeps across its
// decisions: a sandbox started ahead (plan.PrestartSandbox) and a plan
// directory made ahead. A plan that runs a command takes the spare
// sandbox, already started, and the next one is started once that
// plan's commands have run, while it diffs, saves and records (mostly
// waiting on the disk) rather than beside its checks and its command,
// which it would slow on a small machine. Nothing runs in a spare until a
// plan's checks have passed. A nil Session is a one-shot act's: each plan
// starts its own.
type Session struct {
	mu   sync.Mutex
	next *plan.Warm
	dirs *plan.SpareDirs
}

// NewSession starts a session for a long-running act whose state dir is
// g's: sandbox cgroups pooled, a spare sandbox and a plan directory made
// ahead. Close ends it.
func NewSession(home string) *Session {
	plan.PoolSandboxCgroups(true)
	s := &Session{dirs: plan.NewSpareDirs(home)}
	s.refill(nil)
	return s
}

// take returns the spare sandbox, or starts one for the caller alone
// where there is none.
func (s *Session) take() *plan.Warm {
	if s == nil {
		return plan.PrestartSandbox()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.next
	s.next = nil
	if w == nil {
		w = plan.PrestartSandbox()
	}
	return w
}

// refill starts the next spare sandbox, if there is none: for a plan like
// d (its limits set ahead), or nil.
func (s *Session) refill(d *descriptors.Descriptor) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.next == nil {
		if d != nil {
			s.next = plan.PrestartSandboxLike(d)
		} else {
			s.next = plan.PrestartSandbox()
		}
	}
}

func (s *Session) spareDirs() plan.Spares {
	if s == nil || s.dirs == nil {
		return nil
	}
	return s.dirs
}

// Close ends the spare sandbox and the plan directory made ahead.
func (s *Session) Close() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.next.Close()
	s.next = nil
	s.dirs.Close()
}
