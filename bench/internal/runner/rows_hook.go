package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Rows h1 and h2: act hook claude-code (docs/agents.md) as Claude Code runs
// it, one process with a PreToolUse input on stdin, its decision read from
// stdout.
//
// h1: a Write of a file in the workspace, which the policy allows, so the
// hook plans and promotes it (and denies the tool, saying so). Each
// run writes other content to the same file (a line naming the run), so
// every run promotes a real one-line modification. B is act validate of
// the short FILE_WRITE descriptor the hook makes of such a Write.
//
// h2: a Bash `true`, which a command rule of the bench's policy allows;
// A is the hook (the dry run in the sandbox, and the record that it ran)
// plus the replacement command it answers with (for a run that changed
// nothing, the replay of its output: ":" for true's none), run by sh -c as
// Claude Code's Bash runs it, the sum of the two processes' wall clocks.
// B is row 3's bwrap, with row 3's target.
func init() {
	rows = append(rows,
		row{num: "h1", name: "hook-write", target: 2.0, setup: func(b *bench) (side, side) {
			return b.hookWrite()
		}},
		row{num: "h2", name: "hook-bash", target: 2.5, setup: func(b *bench) (side, side) {
			return b.hookBash()
		}},
	)
}

// hookSetup makes the hooks' workspace (a 100-file tree under the bench's
// HOME, where the default policy's allowed roots are) and a policy that
// makes it a workspace and lets sh -c true through, and returns them.
func (b *bench) hookSetup() (ws, policy string) {
	ws = filepath.Join(b.home, "hook-ws")
	if _, err := os.Stat(ws); err != nil {
		b.must(os.MkdirAll(b.home, 0o755))
		tree := b.tree("hook-ws-tree", 100)
		b.must(os.Rename(tree, ws))
	}
	policy = filepath.Join(b.work, "hook-policy.yaml")
	// The workspace is the policy's, as act hook install makes it: a
	// hook's --workspace counts only inside the policy's workspaces
	// (docs/policy.md, "Workspaces"), and BENCH_TMPDIR may be outside /tmp.
	b.must(os.WriteFile(policy, []byte(fmt.Sprintf("workspaces: [%q]\ncommand_rules:\n  - {argv: [sh, -c, \"true\"], mode: allow}\n", ws)), 0o644))
	return ws, policy
}

// hookInput is a PreToolUse input as Claude Code sends it.
func hookInput(ws, tool string, input map[string]string) []byte {
	in, _ := json.Marshal(map[string]any{
		"session_id": "b3nch000-hook", "transcript_path": filepath.Join(ws, ".claude", "t.jsonl"),
		"cwd": ws, "permission_mode": "default", "hook_event_name": "PreToolUse",
		"tool_name": tool, "tool_input": input, "tool_use_id": "toolu_bench",
	})
	return in
}

// hookDecision is the part of the hook's answer the rows check.
type hookDecision struct {
	Out struct {
		Decision string            `json:"permissionDecision"`
		Reason   string            `json:"permissionDecisionReason"`
		Updated  map[string]string `json:"updatedInput"`
	} `json:"hookSpecificOutput"`
}

// runHook runs argv with stdin, times it, and returns its decision, which
// must be want (a Bash's allow; a Write's deny saying act applied it):
// timing a refusal is worthless.
func (b *bench) runHook(argv []string, stdin []byte, want string) (sample, *hookDecision, error) {
	var out, errOut bytes.Buffer
	s, err := b.execIn(argv, stdin, &out, &errOut)
	if err != nil {
		return s, nil, fmt.Errorf("%v\n%s", err, tail(errOut.String()))
	}
	var d hookDecision
	if err := json.Unmarshal(out.Bytes(), &d); err != nil {
		return s, nil, fmt.Errorf("the hook's decision is not JSON: %v\n%s", err, tail(out.String()))
	}
	if d.Out.Decision != want || want == "deny" && !strings.HasPrefix(d.Out.Reason, "act applied this ") {
		return s, nil, fmt.Errorf("the hook decided %q, want %s: %s", d.Out.Decision, want, tail(d.Out.Reason))
	}
	return s, &d, nil
}

// execIn is execStatus (exit 0) with stdin and both outputs captured.
func (b *bench) execIn(argv []string, stdin []byte, out, errOut *bytes.Buffer) (sample, error) {
	cmd := &exec.Cmd{Path: argv[0], Args: argv, Env: b.env, Dir: b.work,
		Stdin: bytes.NewReader(stdin), Stdout: out, Stderr: errOut}
	start := time.Now()
	err := cmd.Start()
	if err == nil {
		err = cmd.Wait()
	}
	wall := time.Since(start)
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return sample{}, fmt.Errorf("%s", ee.ProcessState)
	case err != nil:
		return sample{}, err
	}
	s := sample{wall: wall, maxRSS: -1}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		s.maxRSS = ru.Maxrss * 1024
	}
	return s, nil
}

func (b *bench) hookWrite() (side, side) {
	ws, policy := b.hookSetup()
	act := b.act()
	file := filepath.Join(ws, "notes.md")
	hook := []string{act, "--policy", policy, "hook", "claude-code", "--workspace", ws}
	a := side{label: "act hook claude-code: a Write of " + strings.ReplaceAll(file, b.work, "$W") + " (a new line each run), allowed: promoted by act, the tool denied",
		run: func(n int) (sample, error) {
			content := fmt.Sprintf("# Notes\n\nrun %d at %d\n", n, time.Now().UnixNano())
			s, _, err := b.runHook(hook, hookInput(ws, "Write", map[string]string{"file_path": file, "content": content}), "deny")
			if err != nil {
				return s, err
			}
			if got, err := os.ReadFile(file); err != nil || string(got) != content {
				return s, fmt.Errorf("the hook applied the Write, but %s holds %q (%v)", file, got, err)
			}
			return s, nil
		}}
	if _, err := a.run(-100); err != nil {
		b.fail("act hook claude-code: %v", err)
	}
	// The short FILE_WRITE the hook makes of such a Write (cmd/hook.go's
	// hookFileDescriptor): act stamps action_id and created_at and derives
	// the effects.
	d := fmt.Sprintf(`intent_summary: "Write %[1]s"
action_type: FILE_WRITE
risk_level: LOW
scope:
  filesystem: {paths: [%[2]s], recursive: false}
  network: {required: false}
  ui: {required: false}
resources: {max_cpu_ms: 10000, max_memory_mb: 256, max_disk_mb: 64, max_duration_ms: 30000}
preconditions: {paths_exist: [], network_available: false, user_idle: false}
sandbox: {required: false, allow_network: false, max_runs: 1}
rollback: {supported: true, rollback_scope: declared_effects_only}
confirmation: {required: false, reason: "", cooldown_on_repeat: false}
audit: {log: true, log_level: SUMMARY, retain_days: 30}
operation: {path: %[1]s, content: "# Notes\n\nrun 0 at 1790000000000000000\n"}
`, file, ws)
	dp := filepath.Join(b.work, "hook-write.yaml")
	b.must(os.WriteFile(dp, []byte(d), 0o644))
	return a, b.command(act, "--policy", policy, "validate", dp)
}

func (b *bench) hookBash() (side, side) {
	ws, policy := b.hookSetup()
	act := b.act()
	sh, err := exec.LookPath("sh")
	b.must(err)
	hook := []string{act, "--policy", policy, "hook", "claude-code", "--workspace", ws}
	in := hookInput(ws, "Bash", map[string]string{"command": "true", "description": "Do nothing"})
	a := side{label: "act hook claude-code: a Bash true, allowed by a command rule, + its replacement (sh -c ':', the replay of a run that changed nothing)",
		run: func(int) (sample, error) {
			s, d, err := b.runHook(hook, in, "allow")
			if err != nil {
				return s, err
			}
			// true changes nothing: the hook records it as run and the
			// replacement only prints its (empty) output, ":"
			// (docs/agents.md, "Bash is promoted by act").
			cmd := d.Out.Updated["command"]
			if cmd != ":" {
				return s, fmt.Errorf("the hook replaced the command by %q, not the replay of a run that changed nothing (:)", cmd)
			}
			var out, errOut bytes.Buffer
			s2, err := b.execIn([]string{sh, "-c", cmd}, nil, &out, &errOut)
			if err != nil {
				return s2, fmt.Errorf("%s: %v\n%s", cmd, err, tail(errOut.String()))
			}
			// true changes nothing: act adds no line (docs/agents.md).
			if out.Len() != 0 || errOut.Len() != 0 {
				return s2, fmt.Errorf("%s printed %q and %q, want nothing (true's output, and no line of act's for a run that changed nothing)", cmd, out.String(), errOut.String())
			}
			return sample{wall: s.wall + s2.wall, maxRSS: -1}, nil
		}}
	if _, err := a.run(-100); err != nil {
		b.fail("act hook claude-code: %v", err)
	}
	bwrap, err := exec.LookPath("bwrap")
	b.must(err)
	return a, b.command(bwrap, "--unshare-all", "--die-with-parent", "--ro-bind", "/", "/", "true")
}
