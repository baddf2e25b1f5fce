package gate

import (
	"context"
	"encoding/json"
	"time"

	"github.com/act-project/act/descriptors"
	"github.com/act-project/act/internal/state"
	"github.com/act-project/act/plan"
	"github.com/act-project/act/rollback"
)

// What a door reads of the gate's answers. A door (cmd, act run, act mcp,
// the hooks) sees plans, actions and outcomes only as the gate hands them
// out: it never loads one from the state dir or starts a sandbox itself,
// so it cannot decide around the gate (docs/agents.md, "Adding a door").
type (
	// Plan is a saved plan (docs/lifecycle.md).
	Plan = plan.Plan
	// CommandResult is what a plan's command did in the sandbox.
	CommandResult = plan.CommandResult
	// Discarded counts and names a plan's by-products.
	Discarded = plan.Discarded
	// FileDiff is a changed text file's diff, for a review.
	FileDiff = plan.FileDiff
	// Action is the record of a promoted plan.
	Action = rollback.Action
	// Outcome is what a promotion, adoption or rollback did.
	Outcome = rollback.Outcome
	// Recovery is a crashed promotion or rollback act finished.
	Recovery = rollback.Recovery
	// Progress is told how far a promotion or rollback is.
	Progress = rollback.Progress
	// ActionApproval is who confirmed an action, and how.
	ActionApproval = rollback.Approval
)

// Limits of what a plan keeps, for what a review says it cut.
const (
	MaxCommandOutput = plan.MaxCommandOutput
	MaxTextDiff      = plan.MaxTextDiff
	MaxReadContent   = plan.MaxReadContent
)

// RuleNetworkRefused: the egress proxy refused requests of a command
// (docs/sandbox.md, "Network").
const RuleNetworkRefused = plan.RuleNetworkRefused

// ErrNotFound: no such plan or action.
var ErrNotFound = plan.ErrNotFound

// IsPlanID reports whether s has the form of a plan id.
func IsPlanID(s string) bool { return plan.IsID(s) }

// Canonical is descriptor d as a plan records it: its canonical JSON
// (sorted keys) and that JSON's sha256, the plan's DescriptorDigest.
func Canonical(d *descriptors.Descriptor) (json.RawMessage, string, error) { return plan.Canonical(d) }

// PlanIDs lists the ids of the plans saved in the state dir.
func PlanIDs(home state.Dir) ([]string, error) { return plan.List(home.Root) }

// TextDiffs are the diffs of p's changed text files, read from its layer
// (none once the layer was promoted or dropped).
func TextDiffs(home state.Dir, p *Plan) []FileDiff { return plan.TextDiffs(home.Root, p) }

// Settle waits for the sandboxes this process ran to end, before it
// exits: their cgroups are removed then.
func Settle() { plan.Settle() }

// LoadAction is the record of action id.
func LoadAction(home state.Dir, id string) (*Action, error) { return rollback.LoadAction(home, id) }

// PromotedNow is the action of the descriptor with digest promoted under
// action id, or nil, once any promotion in progress has ended (it waits
// for the state-dir lock).
func PromotedNow(ctx context.Context, home state.Dir, id, digest string) (*Action, error) {
	unlock, err := home.Lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	return rollback.Promoted(home, id, digest)
}

// Recover finishes every promotion or rollback a crash left half done
// (act rollback --recover), under the state-dir lock.
func Recover(ctx context.Context, home state.Dir, now func() time.Time) ([]Recovery, error) {
	return rollback.Recover(ctx, home, now)
}

// RecoverIfIdle is Recover when no other act holds the lock; nothing
// otherwise.
func RecoverIfIdle(home state.Dir, now func() time.Time) ([]Recovery, error) {
	return rollback.RecoverIfIdle(home, now)
}

// NeedsRecovery reports whether a crash left a journal to finish.
func NeedsRecovery(home state.Dir) bool { return rollback.NeedsRecovery(home) }

// KeepCopy keeps a copy of the file at src at dst, as a promotion's
// backup is kept (mode bits, owner, times, durable): what an adoption
// restores on rollback.
func KeepCopy(src, dst string) error { return rollback.KeepCopy(src, dst) }
