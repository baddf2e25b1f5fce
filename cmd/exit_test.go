package cmd

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/act-project/act/gate"
	"github.com/act-project/act/internal/outcome"
	"github.com/act-project/act/internal/problem"
	"github.com/act-project/act/policy"
)

// TestOutcomeOf checks the one mapping of errors to outcomes.
func TestOutcomeOf(t *testing.T) {
	probs := func(l problem.Layer) error {
		return problem.List{{Rule: "r", Message: "m", Layer: l}}
	}
	for _, tt := range []struct {
		err  error
		want outcome.Outcome
	}{
		{nil, outcome.OK},
		{errors.New("disk full"), outcome.Fail},
		{usagef("bad"), outcome.Usage},
		{fmt.Errorf("x: %w", usagef("bad")), outcome.Usage},
		{&policy.LoadError{}, outcome.Fail},
		{fmt.Errorf("plan 1: %w", gate.ErrNotFound), outcome.NotFound},
		{probs(problem.Schema), outcome.Invalid},
		{probs(problem.Policy), outcome.Blocked},
		{probs(problem.Precondition), outcome.Precondition},
		{probs(problem.Rejected), outcome.Rejected},
		{probs(problem.Conflict), outcome.Conflict},
		{outcome.New(outcome.Expired, probs(problem.Conflict)), outcome.Expired},
		{outcome.New(outcome.Queued, errors.New("needs a person")), outcome.Queued},
		{&rendered{outcome.Reverted}, outcome.Reverted},
	} {
		if got := outcomeOf(tt.err); got != tt.want {
			t.Errorf("outcomeOf(%v) = %+v, want %+v", tt.err, got, tt.want)
		}
	}
}

// TestFinishOutcome checks what --json reports of a typed outcome: its
// status, exit code and rule.
func TestFinishOutcome(t *testing.T) {
	var out strings.Builder
	env := DefaultEnv(Stdio{In: strings.NewReader(""), Out: &out, Err: &strings.Builder{}})
	env.json = true
	err := env.finish(&result{}, outcome.Succeeded.Status, outcome.New(outcome.NotAccepted, errors.New("not the kind the policy counts")), nil)
	if exitCode(err) != 7 {
		t.Errorf("exit code %d, want 7", exitCode(err))
	}
	for _, want := range []string{`"status": "queued"`, `"exit_code": 7`, `"rule": "confirm.not-accepted"`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("--json output lacks %s:\n%s", want, out.String())
		}
	}
}

var exitItem = regexp.MustCompile(`^(\d) `)

// exitStatusCodes are the codes the EXIT STATUS section of help lists.
func exitStatusCodes(help string) []int {
	_, sec, ok := strings.Cut(help, "EXIT STATUS:\n")
	if !ok {
		return nil
	}
	var codes []int
	for _, it := range strings.Split(sec, ",") {
		if m := exitItem.FindStringSubmatch(strings.TrimSpace(it)); m != nil {
			c, _ := strconv.Atoi(m[1])
			codes = append(codes, c)
		}
	}
	return codes
}

// TestExitStatusHelp checks every command's EXIT STATUS: made from the
// table, its codes in order, 0 first, its lines no wider than the rest of
// the help.
func TestExitStatusHelp(t *testing.T) {
	app := NewApp()
	for _, c := range app.VisibleCommands() {
		_, sec, ok := strings.Cut(c.Description, "EXIT STATUS:\n")
		if !ok {
			t.Errorf("%s: no EXIT STATUS", c.Name)
			continue
		}
		codes := exitStatusCodes(c.Description)
		if len(codes) == 0 || codes[0] != 0 {
			t.Errorf("%s: EXIT STATUS does not start with 0: %q", c.Name, sec)
		}
		for i := 1; i < len(codes); i++ {
			if codes[i] <= codes[i-1] || codes[i] > 9 {
				t.Errorf("%s: EXIT STATUS codes %v are not the table's, in order", c.Name, codes)
			}
		}
		for _, l := range strings.Split(sec, "\n") {
			if len(l) > 78 || !strings.HasPrefix(l, "   ") {
				t.Errorf("%s: EXIT STATUS line %q", c.Name, l)
			}
		}
	}
	// plan ends in a conflict when the action id was applied with other
	// content or rolled back (testdata/script/plan_promote_once.txtar).
	if codes := exitStatusCodes(findCommand(app.Commands, "plan").Description); !containsInt(codes, 8) {
		t.Errorf("plan's help lists %v, not 8", codes)
	}
}

func containsInt(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func TestEndsHelp(t *testing.T) {
	got := endsWith("rolled back", 1, 2, 7, 8, 9).note(7, "--force not confirmed").
		note(8, "a path changed since the apply, or already rolled back").note(9, "no such action").help()
	want := `EXIT STATUS:
   0 rolled back, 1 error, 2 usage, 7 --force not confirmed,
   8 a path changed since the apply, or already rolled back, 9 no such action`
	if got != want {
		t.Errorf("help:\n%s\nwant:\n%s", got, want)
	}
	// A label comes from the table; a note replaces only its own code's.
	got = endsWith("planned", 3, 8).note(8, "first").note(8, "conflict").help()
	if want := "EXIT STATUS:\n   0 planned, 3 invalid descriptor, 8 conflict"; got != want {
		t.Errorf("help = %q, want %q", got, want)
	}
}
