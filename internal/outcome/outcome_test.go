package outcome

import (
	"errors"
	"fmt"
	"io/fs"
	"testing"

	"github.com/act-project/act/internal/problem"
)

func TestCodes(t *testing.T) {
	cs := Codes()
	if len(cs) != 10 {
		t.Fatalf("Codes() has %d rows, want 10 (exit 0-9)", len(cs))
	}
	for i, o := range cs {
		if o.Code != i {
			t.Errorf("row %d has code %d: the table lists every code in order", i, o.Code)
		}
		if o.Status == "" || o.Label == "" || o.Meaning == "" {
			t.Errorf("code %d: status, label and meaning are all needed: %+v", i, o)
		}
		if ForCode(i) != o {
			t.Errorf("ForCode(%d) = %+v, want %+v", i, ForCode(i), o)
		}
	}
	// Codes returns a copy: the table cannot be changed through it.
	cs[1].Status = "changed"
	if Codes()[1].Status != "error" {
		t.Error("Codes() shares the table")
	}
	for _, c := range []int{-1, 10, 255} {
		if ForCode(c) != Fail {
			t.Errorf("ForCode(%d) = %+v, want Fail", c, ForCode(c))
		}
	}
}

// TestRules checks that an outcome which is not a problem of its own
// carries a rule id, and a problem's outcome leaves it to the problem.
func TestRules(t *testing.T) {
	for o, rule := range map[Outcome]string{
		Fail: "error", Usage: "usage", Queued: "confirm.required", NotFound: "not-found",
		Invalid: "", Blocked: "", Precondition: "", Rejected: "", Conflict: "",
		Reverted: "apply.reverted", NotAccepted: "confirm.not-accepted", Refused: "confirm.refused", Expired: "apply.expired",
		HookUnsafe: "hook.unsafe",
	} {
		if o.Rule != rule {
			t.Errorf("%s (%d): rule %q, want %q", o.Status, o.Code, o.Rule, rule)
		}
	}
}

// TestNamed checks that each named outcome differs from its code's row in
// status or rule (else it would be that row), and that it keeps the code
// its status means.
func TestNamed(t *testing.T) {
	want := map[string]int{
		"valid": 0, "planned": 0, "succeeded": 0, "already_applied": 0, "rolled_back": 0, "denied": 0,
		"reverted": 1, "queued": 7, "refused": 7, "expired": 8, "failed": 5,
	}
	for _, o := range Named() {
		row := ForCode(o.Code)
		if o.Status == row.Status && o.Rule == row.Rule {
			t.Errorf("%+v is the row of code %d", o, o.Code)
		}
		if c, ok := want[o.Status]; !ok || c != o.Code {
			t.Errorf("%s: code %d, want %d", o.Status, o.Code, c)
		}
		if o.Label == "" || o.Meaning == "" {
			t.Errorf("%s: no label or meaning", o.Status)
		}
	}
}

func TestForLayer(t *testing.T) {
	for l, want := range map[problem.Layer]int{
		problem.Parse: 3, problem.Schema: 3, problem.Rule: 3,
		problem.Policy: 4, problem.Precondition: 5, problem.Rejected: 6, problem.Conflict: 8,
		problem.Layer(99): 3,
	} {
		if got := ForLayer(l).Code; got != want {
			t.Errorf("ForLayer(%s) = %d, want %d", l, got, want)
		}
	}
}

func TestForRule(t *testing.T) {
	for rule, want := range map[string]Outcome{
		"confirm.required": Queued, "confirm.not-accepted": NotAccepted, "confirm.refused": Refused,
		"apply.expired": Expired, "apply.reverted": Reverted,
		"usage": Usage, "not-found": NotFound, "error": Fail,
	} {
		if got, ok := ForRule(rule); !ok || got != want {
			t.Errorf("ForRule(%q) = %+v, %v; want %+v", rule, got, ok, want)
		}
	}
	for _, rule := range []string{"", "schema.required", "policy.deny"} {
		if o, ok := ForRule(rule); ok {
			t.Errorf("ForRule(%q) = %+v, want none", rule, o)
		}
	}
}

func TestError(t *testing.T) {
	if New(Expired, nil) != nil {
		t.Error("New(o, nil) is not nil")
	}
	base := fmt.Errorf("reading the plan: %w", fs.ErrNotExist)
	err := fmt.Errorf("apply: %w", New(Expired, base))
	if err.Error() != "apply: reading the plan: file does not exist" {
		t.Errorf("message %q", err.Error())
	}
	if !errors.Is(err, fs.ErrNotExist) {
		t.Error("the wrapped error is lost")
	}
	if o, ok := Of(err); !ok || o != Expired {
		t.Errorf("Of = %+v, %v; want Expired", o, ok)
	}
	// The outermost outcome in the chain decides.
	if o, _ := Of(New(Reverted, New(Queued, base))); o != Reverted {
		t.Errorf("Of(nested) = %+v, want Reverted", o)
	}
	if _, ok := Of(base); ok {
		t.Error("Of found an outcome in an error that carries none")
	}
	if _, ok := Of(nil); ok {
		t.Error("Of(nil) found an outcome")
	}
	// Any error type may carry its outcome.
	if o, ok := Of(fmt.Errorf("x: %w", carrier{})); !ok || o != Conflict {
		t.Errorf("Of(carrier) = %+v, %v", o, ok)
	}
}

type carrier struct{}

func (carrier) Error() string    { return "a carrier" }
func (carrier) Outcome() Outcome { return Conflict }

// TestOwn checks the rows of codes beyond 0-9 and of the hook's 2: each
// has a label, a meaning and (but the command's own code) a rule, and the
// codes are those act exits with.
func TestOwn(t *testing.T) {
	want := map[string]int{"interrupted": 130, "hook.blocked": 2, "": CommandCode}
	got := Own()
	if len(got) != len(want) || got[len(got)-1] != Command {
		t.Fatalf("Own() = %+v, want %d rows, Command last", got, len(want))
	}
	for _, o := range got {
		if c, ok := want[o.Rule]; !ok || c != o.Code {
			t.Errorf("%+v: code %d, want %d", o, o.Code, c)
		}
		if o.Label == "" || o.Meaning == "" {
			t.Errorf("%+v: no label or meaning", o)
		}
	}
	if ForCode(Interrupted.Code) != Fail {
		t.Error("ForCode(130) is not Fail: Codes() is the table of 0-9 only")
	}
	o := CommandExit(SignalBase+9, Rejected.Status)
	if o.Code != 137 || o.Status != "rejected" || o.Label != Command.Label {
		t.Errorf("CommandExit(137, rejected) = %+v", o)
	}
}
