package doors

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/act-project/act/descriptors"
	"github.com/act-project/act/internal/problem"
	"github.com/act-project/act/policy"
	"github.com/act-project/act/review"
)

// intent is the intent of the command descriptor of argv.
func intent(argv []string) string {
	return CommandDescriptor(argv, "/w", "/w", policy.ResourceCaps{}).IntentSummary
}

func TestCommandIntent(t *testing.T) {
	if got, want := intent([]string{"go", "test", "./..."}), "Run: go test ./..."; got != want {
		t.Errorf("runIntent = %q, want %q", got, want)
	}
	// A control character, an invisible one, or invalid UTF-8: in
	// ANSI-C quotes, each an escape, a backslash \\ and a quote \'.
	if got, want := intent([]string{"sh", "-c", "echo 'a'\nb\x1b[2J\u202e\\"}), `Run: sh -c $'echo \'a\'\nb\x1b[2J\u202e\\'`; got != want {
		t.Errorf("runIntent = %q, want %q", got, want)
	}
	long := intent([]string{"echo", strings.Repeat("é", 500)})
	if n := utf8.RuneCountInString(long); n != review.MaxIntent || !strings.HasSuffix(long, "…") {
		t.Errorf("runIntent of a long line: %d characters, %q", n, long[len(long)-10:])
	}
	if got := intent([]string{"printf", "\xff"}); got != `Run: printf $'\xff'` {
		t.Errorf("runIntent of invalid UTF-8 = %q", got)
	}
	// A real newline and a backslash and an n are never shown alike.
	lf, bs := intent([]string{"sh", "-c", "echo safe\nrm -f v"}), intent([]string{"sh", "-c", `echo safe\nrm -f v`})
	if lf != `Run: sh -c $'echo safe\nrm -f v'` || bs != `Run: sh -c 'echo safe\nrm -f v'` {
		t.Errorf("runIntent of a newline = %q, of a backslash and an n = %q", lf, bs)
	}
}

func TestCommandDescriptor(t *testing.T) {
	built := CommandDescriptor([]string{"make"}, "/w", "/w/sub", policy.ResourceCaps{MaxCPUMs: 1000, MaxMemoryMB: 8192, MaxDiskMB: 100, MaxDurationMs: 0})
	descriptors.StampBuilt(built, descriptors.Stamp{})
	data, err := json.Marshal(built)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Resources map[string]int64
		Effects   struct{ Filesystem map[string][]string }
		Scope     struct{ Filesystem struct{ Paths []string } }
		Operation struct {
			Argv    []string
			Workdir string
		}
	}
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"max_cpu_ms": 1000, "max_memory_mb": 4096, "max_disk_mb": 100, "max_duration_ms": 600000}
	if diff := cmp.Diff(want, d.Resources); diff != "" {
		t.Errorf("resources (-want +got):\n%s", diff)
	}
	for _, k := range []string{"create", "modify", "delete"} {
		if got := d.Effects.Filesystem[k]; len(got) != 1 || got[0] != "/w/**" {
			t.Errorf("effects %s = %q", k, got)
		}
	}
	if d.Scope.Filesystem.Paths[0] != "/w" || d.Operation.Workdir != "/w/sub" || d.Operation.Argv[0] != "make" {
		t.Errorf("descriptor %s", data)
	}
}

func TestCommandFailed(t *testing.T) {
	fail := func(msg string) error {
		return problem.List{{Rule: "op.command-failed", Field: "operation", Message: msg, Layer: problem.Rejected}}
	}
	for _, tt := range []struct {
		err  error
		code int
		ok   bool
	}{
		{fail(`the command "sh -c exit 3" exited with status 3`), 3, true},
		{fail(`the command "sh -c echo \" exited with status 9: x" exited with status 42: oops: more`), 42, true},
		{fail(`the command "sleep 9" was killed by SIGTERM: x`), 143, true},
		{fail(`the command "sleep 9" was killed by SIGKILL`), 137, true},
		{fail(`something else`), 0, false},
		{append(fail(`the command "curl x" exited with status 22`).(problem.List), problem.Problem{Rule: "op.network-refused", Field: "operation", Message: "act's egress proxy refused"}), 22, true},
		{append(fail(`the command "curl x" exited with status 22`).(problem.List), problem.Problem{Rule: "op.verification-failed", Field: "verification.commands.0"}), 0, false},
		{problem.List{{Rule: "op.cap-exceeded", Field: "operation", Message: "the command was stopped by a cap: wall clock"}}, 0, false},
		{problem.List{{Rule: "op.command-failed", Field: "steps.0.operation", Message: `the command "x" exited with status 3`}}, 0, false},
		{errors.New("the command \"x\" exited with status 3"), 0, false},
	} {
		code, ok := CommandFailed(tt.err)
		if code != tt.code || ok != tt.ok {
			t.Errorf("CommandFailed(%v) = %d, %v; want %d, %v", tt.err, code, ok, tt.code, tt.ok)
		}
	}
}

// TestNetworkNotes: what act said of the network beside a command's
// failure is kept for the doors that show the command's own status.
func TestNetworkNotes(t *testing.T) {
	err := problem.List{{Rule: "op.command-failed", Field: "operation", Message: `the command "npm i" exited with status 1: E403`},
		{Rule: "op.network-refused", Field: "operation", Message: "act's egress proxy refused registry.npmjs.org:443"}}
	if got := NetworkNotes(err); len(got) != 1 || got[0] != "act's egress proxy refused registry.npmjs.org:443" {
		t.Errorf("NetworkNotes = %q", got)
	}
	if got := NetworkNotes(errors.New("x")); got != nil {
		t.Errorf("NetworkNotes of no problems = %q", got)
	}
}
