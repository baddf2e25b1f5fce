// Command testcli is the act the root package's tests run: act with a
// fixed clock and a few test hooks, as a program of its own. TestMain
// builds it once (go build ./testdata/testcli) and installs it in PATH as
// act, act-crash and act-audit-fill, which it tells apart by the name it
// is run as. It is not the test binary: an act process then starts no
// test code and none of the test's dependencies, which made each of the
// thousands of act runs of the suite nearly twice as costly.
//
// The variables it reads (ACT_TEST_*, ACT_CRASH_*) are read by this
// program only, never by the shipped act. It lives in testdata so that
// ./... neither builds nor lists it: only the tests build it.
package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/act-project/act/audit"
	"github.com/act-project/act/cmd"
	"github.com/act-project/act/internal/agentsetup"
	_ "github.com/act-project/act/internal/prefault" // as act's main does
	"github.com/act-project/act/internal/startheap"
	"github.com/act-project/act/policy"
	"github.com/act-project/act/rollback"
	"github.com/act-project/act/schema"
)

// testNow is the fixed clock of the test CLI: ten minutes after the
// examples' created_at. A script may move it with ACT_TEST_NOW (RFC 3339).
var testNow = time.Date(2026, 11, 22, 0, 10, 0, 0, time.UTC)

func main() {
	startheap.Adjust(32 << 20) // as act's main does
	// The name it was run as, as the test binary's commands had it.
	name := filepath.Base(os.Args[0])
	os.Args[0] = name
	switch name {
	case "act":
		testAct()
	case "act-crash":
		testActCrash()
	case "act-audit-fill":
		testActAuditFill()
	default:
		fmt.Fprintf(os.Stderr, "testcli: run as act, act-crash or act-audit-fill, not %s\n", name)
		os.Exit(2)
	}
}

// testAct is the test CLI: act with the fixed clock.
func testAct() {
	env := cmd.DefaultEnv(cmd.OSStdio())
	env.Self = "/proc/self/exe" // as act's main does
	now := testNow
	if s := os.Getenv("ACT_TEST_NOW"); s != "" {
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			fmt.Fprintln(os.Stderr, "ACT_TEST_NOW:", err)
			os.Exit(1)
		}
		now = t
	}
	env.Now = func() time.Time { return now }
	// A system policy of the test's own, never /etc: only this program
	// reads these variables.
	if f := os.Getenv("ACT_TEST_SYSTEM_POLICY"); f != "" {
		policy.SystemFile = f
		policy.SystemOwner = uint32(os.Geteuid())
	} else {
		policy.SystemFile = "/nonexistent/act-test/policy.yaml"
	}
	// Nor the agents' system settings: only a test's own.
	agentsetup.SystemClaudeManaged = os.Getenv("ACT_TEST_CLAUDE_MANAGED")
	agentsetup.SystemCodexConfig = os.Getenv("ACT_TEST_CODEX_SYSTEM")
	if h := os.Getenv("ACT_TEST_PASSWD_HOME"); h != "" {
		policy.LookupHome = func() (string, error) { return h, nil }
	}
	if !slices.Contains(os.Args, "--json") {
		os.Exit(cmd.MainEnv(os.Args, env))
	}
	// Every --json document any test makes is checked against the schema
	// of its command's output: a document that does not match fails the
	// command with exit 99 and says why.
	var out bytes.Buffer
	env.Stdio.Out = &out
	code := cmd.MainEnv(os.Args, env)
	os.Stdout.Write(out.Bytes())
	if command := jsonCommand(os.Args[1:]); command != "" {
		if err := schema.ValidateOutput(command, out.Bytes()); err != nil {
			fmt.Fprintf(os.Stderr, "act (test): the --json output of %s does not match its schema: %v\n", command, err)
			os.Exit(99)
		}
	}
	os.Exit(code)
}

// jsonCommand is the command word of act's arguments, if it has an output
// schema.
func jsonCommand(args []string) string {
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--home" || a == "--policy":
			i++
		case strings.HasPrefix(a, "-"):
		default:
			if slices.Contains(schema.OutputCommands(), a) {
				return a
			}
			return ""
		}
	}
	return ""
}

// testActCrash is the test CLI that kills itself with SIGKILL at the Nth
// crash point of a promotion, rollback or recovery (rollback.CrashPoint),
// N from $ACT_CRASH_AT. A run that reaches fewer points ends normally.
// With $ACT_CRASH_TALLY, each point it passes adds a byte to that file:
// how a crash matrix learns how many points a whole run has.
func testActCrash() {
	n, err := strconv.Atoi(os.Getenv("ACT_CRASH_AT"))
	if err != nil || n < 1 {
		fmt.Fprintln(os.Stderr, "act-crash: ACT_CRASH_AT must be a positive integer")
		os.Exit(1)
	}
	var tally *os.File
	if name := os.Getenv("ACT_CRASH_TALLY"); name != "" {
		if tally, err = os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "act-crash:", err)
			os.Exit(1)
		}
	}
	seen := 0
	rollback.CrashPoint = func() {
		if tally != nil {
			tally.Write([]byte{'.'})
		}
		if seen++; seen == n {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // the signal is on its way; nothing more may happen
		}
	}
	testAct()
}

// testActAuditFill appends N records to $ACT_HOME/audit through the audit
// library, with a fixed clock: the test-only producer of logs for the
// audit_*.txtar scripts (usage: act-audit-fill N).
func testActAuditFill() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: act-audit-fill N")
		os.Exit(2)
	}
	n, err := strconv.Atoi(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "act-audit-fill:", err)
		os.Exit(2)
	}
	l, err := audit.Open(filepath.Join(os.Getenv("ACT_HOME"), "audit"), "act.test/host/audit")
	if err != nil {
		fmt.Fprintln(os.Stderr, "act-audit-fill:", err)
		os.Exit(1)
	}
	defer l.Close()
	now := testNow
	l.Now = func() time.Time { now = now.Add(time.Minute); return now }
	for i := 0; i < n; i++ {
		ev := audit.Event{Name: audit.EventApplied, ActionID: fmt.Sprintf("act-%d", i), Status: "succeeded",
			DescriptorSHA256: fmt.Sprintf("%064x", i), LogLevel: audit.LevelSummary, Via: "cli",
			Changes: &audit.Changes{Created: 1}}
		if _, err := l.Append(context.Background(), ev); err != nil {
			fmt.Fprintln(os.Stderr, "act-audit-fill:", err)
			os.Exit(1)
		}
	}
}
