package cmd

import (
	"os"
	"testing"

	"github.com/act-project/act/plan"
)

// TestMain waits, before the test binary exits, for the sandboxes the
// tests ran to end (Settle): their cgroups are removed then.
func TestMain(m *testing.M) {
	code := m.Run()
	plan.Settle()
	os.Exit(code)
}

// TestSpareSandbox: a plan takes the spare sandbox and the next one is
// started at once; close ends the spare. Without a spare (a one-shot act)
// take starts one for the caller alone.
func TestSpareSandbox(t *testing.T) {
	var none *spareSandbox
	w := none.take()
	if w == nil {
		t.Fatal("take without a spare returned no sandbox")
	}
	w.Close()
	none.close()

	s := &spareSandbox{}
	first := s.take()
	next := s.next
	if first == nil || next == nil || first == next {
		t.Fatalf("take returned %p and left %p as the spare; want two sandboxes", first, next)
	}
	if second := s.take(); second != next {
		t.Errorf("the second take returned %p, want the spare %p", second, next)
	} else {
		second.Close()
	}
	first.Close()
	s.close()
	if s.next != nil {
		t.Error("close left a spare")
	}
}
