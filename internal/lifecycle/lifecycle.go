// Package lifecycle names where a plan stands and what moves it
// (docs/lifecycle.md): the one state type of act, and the table of its
// transitions. It decides nothing and stores nothing: the gate's store
// derives a plan's state, and every move goes through the gate's
// transition function, which checks it here and records it.
package lifecycle

import "fmt"

// State is where a plan stands.
type State string

// The states of a plan.
const (
	// Planned: the dry run was saved and awaits apply.
	Planned State = "planned"
	// Pending: apply needed a person's confirmation it did not get.
	Pending State = "pending"
	// Applied: promoted.
	Applied State = "applied"
	// RolledBack: promoted, then rolled back.
	RolledBack State = "rolled_back"
	// Rejected: the dry run was refused; nothing was saved.
	Rejected State = "rejected"
	// Denied: a person refused the plan; its layer is gone.
	Denied State = "denied"
	// Expired: planned or pending, and older than the policy's plan
	// expiry. Never saved: derived from the clock.
	Expired State = "expired"
)

// Waiting reports whether s may still be applied: planned or pending.
func (s State) Waiting() bool { return s == Planned || s == Pending }

// Event is what moves a plan from one state to another.
type Event string

// The events.
const (
	Queue    Event = "queue"    // confirmation needed and not given
	Apply    Event = "apply"    // promoted
	Rollback Event = "rollback" // rolled back
	Deny     Event = "deny"     // a person refused it
	Expire   Event = "expire"   // it outlived the plan expiry
)

// transitions is the lifecycle: every (state, event) pair not listed is
// refused.
var transitions = map[State]map[Event]State{
	Planned: {Queue: Pending, Apply: Applied, Deny: Denied, Expire: Expired},
	Pending: {Queue: Pending, Apply: Applied, Deny: Denied, Expire: Expired},
	Expired: {Deny: Denied},
	Applied: {Apply: Applied, Rollback: RolledBack},
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
var Events = []Event{Queue, Apply, Rollback, Deny, Expire}
