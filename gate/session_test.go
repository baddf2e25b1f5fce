package gate

import "testing"

// TestSessionSpare: a plan takes the spare sandbox, and refill (called
// once its commands have run) starts the next; without a spare, take
// starts one for the caller alone. Close ends the spare.
func TestSessionSpare(t *testing.T) {
	var none *Session
	w := none.take()
	if w == nil {
		t.Fatal("take without a spare returned no sandbox")
	}
	w.Close()
	none.refill(nil)
	none.Close()

	s := &Session{}
	s.refill(nil)
	spare := s.next
	if spare == nil {
		t.Fatal("refill started no spare")
	}
	first := s.take()
	if first != spare || s.next != nil {
		t.Fatalf("take returned %p and left %p; want the spare %p and none left", first, s.next, spare)
	}
	second := s.take()
	if second == nil || second == first {
		t.Fatalf("take without a spare returned %p; want a sandbox of its own", second)
	}
	second.Close()
	first.Close()
	s.refill(nil)
	if s.next == nil {
		t.Fatal("refill after a take started no spare")
	}
	next := s.next
	s.refill(nil)
	if s.next != next {
		t.Error("refill replaced a spare that was there")
	}
	s.Close()
	if s.next != nil {
		t.Error("close left a spare")
	}
}
