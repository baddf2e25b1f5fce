package gate

import "testing"

// TestLifecycle is the lifecycle as a table of (state, event) → state:
// every pair not listed must be refused.
func TestLifecycle(t *testing.T) {
	want := map[State]map[Event]State{
		Planned: {EventQueue: Pending, EventApply: Applied, EventDeny: Denied, EventExpire: Expired},
		Pending: {EventQueue: Pending, EventApply: Applied, EventDeny: Denied, EventExpire: Expired},
		Applied: {EventApply: Applied, EventRollback: RolledBack},
	}
	for _, s := range States {
		for _, e := range Events {
			got, err := Next(s, e)
			to, ok := want[s][e]
			switch {
			case ok && (err != nil || got != to):
				t.Errorf("Next(%s, %s) = %s, %v; want %s", s, e, got, err, to)
			case !ok && err == nil:
				t.Errorf("Next(%s, %s) = %s; want it refused", s, e, got)
			case !ok && got != s:
				t.Errorf("Next(%s, %s) refused but moved to %s", s, e, got)
			}
		}
	}
}
