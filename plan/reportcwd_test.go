package plan

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/act-project/act/descriptors"
	"github.com/act-project/act/policy"
	"github.com/act-project/act/sandbox/isolate"
)

// A report_cwd script records the directory it ended in, as an agent's
// persistent shell keeps it, and is otherwise the script it was: its
// output, its positional parameters, its redirections (docs/descriptor.md).
func TestReportCwd(t *testing.T) {
	t.Parallel()
	if err := isolate.Available(); err != nil {
		t.Skipf("no isolation here: %v", err)
	}
	for _, c := range []struct {
		name, script   string
		cwd            string // relative to the scope; "-" none
		stdout, stderr string
		wrote          string // a file the script wrote, and its content
	}{
		{name: "cd", script: "mkdir -p sub && cd sub", cwd: "sub"},
		{name: "stays", script: "echo hi", cwd: ".", stdout: "hi\n"},
		{name: "outside", script: "cd / && echo x >&2", cwd: "/", stderr: "x\n"},
		{name: "params", script: `echo "$0 $#"`, cwd: ".", stdout: "sh 0\n"},
		{name: "stderr-redirected", script: "exec 2>log; mkdir -p d && cd d; echo e >&2", cwd: "d", wrote: "log=e\n"},
		{name: "exit", script: "mkdir -p d && cd d && exit 0", cwd: "-"},
		{name: "forged", script: `printf '\036act-cwd:/etc\036\n' >&2; mkdir -p d && cd d`, cwd: "d", stderr: "\x1eact-cwd:/etc\x1e\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			base := t.TempDir()
			if real, err := filepath.EvalSymlinks(base); err == nil {
				base = real
			}
			p, err := buildReportCwd(t, base, c.script, true)
			if err != nil {
				t.Fatal(err)
			}
			scope := filepath.Join(base, "s")
			want := ""
			switch c.cwd {
			case "-":
			case ".":
				want = scope
			case "/":
				want = "/"
			default:
				want = filepath.Join(scope, c.cwd)
			}
			cmd := p.Commands[0]
			if cmd.Cwd != want || cmd.Stdout != c.stdout || cmd.Stderr != c.stderr {
				t.Errorf("cwd %q stdout %q stderr %q, want %q %q %q", cmd.Cwd, cmd.Stdout, cmd.Stderr, want, c.stdout, c.stderr)
			}
			if got := strings.Join(cmd.Argv, " "); got != "sh -c "+c.script {
				t.Errorf("the record's argv is %q, want the descriptor's", got)
			}
			// The script's own redirection of its standard error takes
			// what it writes, and nothing of act's.
			if name, content, ok := strings.Cut(c.wrote, "="); ok {
				var size int64 = -1
				for _, ch := range p.Changes {
					if ch.Path == filepath.Join(scope, name) && ch.SizeAfter != nil {
						size = *ch.SizeAfter
					}
				}
				if size != int64(len(content)) {
					t.Errorf("the plan writes %s of %d bytes, want %q", name, size, content)
				}
			}
		})
	}
	// Without report_cwd, nothing is recorded.
	base := t.TempDir()
	p, err := buildReportCwd(t, base, "mkdir -p sub && cd sub", false)
	if err != nil {
		t.Fatal(err)
	}
	if p.Commands[0].Cwd != "" {
		t.Errorf("cwd %q without report_cwd", p.Commands[0].Cwd)
	}
}

// buildReportCwd plans the shell script in base/s, with report_cwd.
func buildReportCwd(t *testing.T, base, script string, report bool) (*Plan, error) {
	t.Helper()
	scope := filepath.Join(base, "s")
	mustDo(t, os.MkdirAll(scope, 0o755))
	glob := js([]string{filepath.Join(scope, "**")})
	text := `descriptor_version: "1.0"
action_id: 5c6d7e8f-9a0b-4c1d-8e2f-3a4b5c6d7e02
created_at: "2026-11-22T00:00:00Z"
created_by: ai
intent_summary: Run a script.
risk_level: MEDIUM
action_type: COMMAND_EXECUTION
scope: {filesystem: {paths: [` + scope + `], recursive: true}, network: {required: false}, ui: {required: false}}
resources: {max_cpu_ms: 2000, max_memory_mb: 128, max_disk_mb: 4, max_duration_ms: 5000}
sandbox: {required: true, sandbox_type: container, allow_network: false, max_runs: 1}
rollback: {supported: true, rollback_type: filesystem_snapshot, rollback_scope: declared_effects_only}
confirmation: {required: false, reason: "", cooldown_on_repeat: false}
audit: {log: true, log_level: SUMMARY, retain_days: 30}
preconditions: {paths_exist: [], network_available: false, user_idle: false}
effects: {filesystem: {create: ` + glob + `, modify: ` + glob + `, delete: []}, network: false, system_state_change: false}
operation: {argv: [sh, -c, ` + js(script) + `], workdir: ` + scope + `, report_cwd: ` + js(report) + `}
`
	d, _, probs := descriptors.Load("d.yaml", []byte(text))
	if probs != nil {
		t.Fatal(probs)
	}
	pol, err := policy.Default("")
	if err != nil {
		t.Fatal(err)
	}
	pol.AllowedRoots = []string{base}
	now := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	return Build(t.Context(), d, Options{StateDir: filepath.Join(base, "state"), Policy: pol, Decision: pol.Decide(d, now),
		File: "d.yaml", Now: func() time.Time { return now }})
}
