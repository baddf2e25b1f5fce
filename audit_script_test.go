package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/act-project/act/audit"
)

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
