package lifecycle

import "testing"

// TestLifecycle is the lifecycle as a table of (state, event) → state:
// every pair not listed must be refused.
func TestLifecycle(t *testing.T) {
	want := map[State]map[Event]State{
		Planned: {Queue: Pending, Apply: Applied, Deny: Denied, Expire: Expired},
		Pending: {Queue: Pending, Apply: Applied, Deny: Denied, Expire: Expired},
		Expired: {Deny: Denied},
		Applied: {Apply: Applied, Rollback: RolledBack},
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
	for _, s := range States {
		if s.Waiting() != (s == Planned || s == Pending) {
			t.Errorf("%s.Waiting() = %v", s, s.Waiting())
		}
	}
}
