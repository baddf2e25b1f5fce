// Package gate owns a plan's life (docs/lifecycle.md): its states, the
// record of each action id's attempts, and every decision between a dry
// run and a promotion or rollback — promote once, cooldowns, retries after
// a refusal, max_runs, expiry, the policy mode now with act's own risk
// assessment, whether a person must confirm and why, and what counts as
// that confirmation. It never prints: the CLI and the MCP server render its
// typed outcomes, and neither decides anything itself.
package gate

import (
	"fmt"

	"github.com/act-project/act/plan"
)

// State is where a plan stands.
type State string

// The states of a plan.
const (
	Planned    State = State(plan.Planned)    // dry run saved, not yet applied
	Pending    State = State(plan.Pending)    // waits for a person's confirmation
	Applied    State = State(plan.Applied)    // promoted
	RolledBack State = State(plan.RolledBack) // promoted, then rolled back
	Rejected   State = "rejected"             // the dry run was refused (never saved)
	Denied     State = "denied"               // a person said no
	Expired    State = "expired"              // older than the policy's plan expiry
)

// Event is what moves a plan from one state to another.
type Event string

// The events.
const (
	EventQueue    Event = "queue"    // confirmation needed and not given
	EventApply    Event = "apply"    // promoted
	EventRollback Event = "rollback" // rolled back
	EventDeny     Event = "deny"     // a person refused it
	EventExpire   Event = "expire"   // it outlived the plan expiry
)

// transitions is the lifecycle: every (state, event) pair not listed is
// refused.
var transitions = map[State]map[Event]State{
	Planned: {EventQueue: Pending, EventApply: Applied, EventDeny: Denied, EventExpire: Expired},
	Pending: {EventQueue: Pending, EventApply: Applied, EventDeny: Denied, EventExpire: Expired},
	Applied: {EventApply: Applied, EventRollback: RolledBack},
}

// Next returns the state e moves s to, or an error if e cannot happen in s.
func Next(s State, e Event) (State, error) {
	if to, ok := transitions[s][e]; ok {
		return to, nil
	}
	return s, fmt.Errorf("a plan that is %s cannot %s", s, e)
}

// States lists every state, for documentation and tests.
var States = []State{Planned, Pending, Applied, RolledBack, Rejected, Denied, Expired}

// Events lists every event.
var Events = []Event{EventQueue, EventApply, EventRollback, EventDeny, EventExpire}
