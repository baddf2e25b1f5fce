package agents

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/act-project/act/internal/claudeedit"
)

// Claude Code's tools as they behave without act and behind act's hook,
// driven with the real Claude Code CLI against a local mock of the
// Messages API (agents_test.go): docs/agents.md, "Parity with Claude
// Code's tools".

// claudeEnv is the environment that points Claude Code at the mock srv
// and keeps it offline.
func claudeEnv(srv *httptest.Server) []string {
	return []string{"ANTHROPIC_BASE_URL=" + srv.URL, "ANTHROPIC_API_KEY=sk-ant-mock", "DISABLE_TELEMETRY=1",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "DISABLE_ERROR_REPORTING=1"}
}

// runClaude runs claude -p in m's project with the model's calls, and
// returns what the model got back of each.
func runClaude(t *testing.T, m *agentMachine, claude string, calls []toolCall, args ...string) []string {
	t.Helper()
	mock := &modelMock{calls: calls}
	srv := httptest.NewServer(http.HandlerFunc(mock.anthropic))
	defer srv.Close()
	args = append([]string{"-p", "go on", "--output-format", "stream-json", "--verbose"}, args...)
	stdout, stderr, err := m.run(t, claudeEnv(srv), claude, args...)
	if err != nil {
		t.Fatalf("claude -p: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
	}
	results := mock.outputs()
	if len(results) != len(calls) {
		t.Fatalf("the model got %d tool results, want %d: %q\nstdout:\n%s", len(results), len(calls), results, stdout)
	}
	return results
}

// undoID finds the action id in an "undo: … rollback ID" of act's.
var undoID = regexp.MustCompile(`rollback ([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})`)

// editCase is a case of internal/claudeedit/testdata/cases.json.
type editCase struct {
	Name   string `json:"name"`
	File   string `json:"file"`
	Absent bool   `json:"absent"`
	Edits  []struct {
		Old        string `json:"old"`
		New        string `json:"new"`
		ReplaceAll bool   `json:"replace_all"`
	} `json:"edits"`
	Want  string `json:"want"`
	Error string `json:"error"`
}

// TestClaudeCodeEditCases makes each edit of claudeedit's cases with the
// real Claude Code's Edit tool, without act: what it writes, or refuses,
// is what claudeedit.Apply (and so act's hook) makes of it. Then with
// act's hook installed, the same edits are applied by act, byte for byte
// as Claude Code wrote them, and rolled back.
func TestClaudeCodeEditCases(t *testing.T) {
	t.Parallel()
	claude := agentCLI(t, "claude", "@anthropic-ai/claude-code", claudeCodeVersion)
	data, err := os.ReadFile("../internal/claudeedit/testdata/cases.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []editCase
	if err := json.Unmarshal(data, &cases); err != nil {
		t.Fatal(err)
	}
	// Each case's file, and the calls that edit it: a Read first, as
	// Claude Code's Edit requires.
	// skip: Claude Code 2.1.332 has no MultiEdit; and behind act's hook,
	// an edit Claude Code refuses never reaches the hook (its Edit checks
	// the call first).
	skip := func(c editCase, act bool) bool { return len(c.Edits) != 1 || act && c.Error != "" }
	setUp := func(t *testing.T, m *agentMachine, act bool) []toolCall {
		var calls []toolCall
		for i, c := range cases {
			if skip(c, act) {
				continue
			}
			name := filepath.Join(m.proj, fmt.Sprintf("case%02d.txt", i))
			if !c.Absent {
				write(t, name, c.File)
				calls = append(calls, toolCall{name: "Read", input: map[string]any{"file_path": name}})
			}
			e := c.Edits[0]
			calls = append(calls, toolCall{name: "Edit", input: map[string]any{"file_path": name, "old_string": e.Old, "new_string": e.New, "replace_all": e.ReplaceAll}})
		}
		return calls
	}
	check := func(t *testing.T, m *agentMachine, results []string, act bool) {
		r := 0
		for i, c := range cases {
			if skip(c, act) {
				continue
			}
			if !c.Absent {
				r++ // the Read
			}
			res := results[r]
			r++
			name := filepath.Join(m.proj, fmt.Sprintf("case%02d.txt", i))
			got, err := os.ReadFile(name)
			e := c.Edits[0]
			apply, aerr := claudeedit.Apply([]byte(c.File), !c.Absent, []claudeedit.Edit{{Old: e.Old, New: e.New, ReplaceAll: e.ReplaceAll}})
			switch {
			case c.Error != "":
				if !strings.Contains(res, c.Error) {
					t.Errorf("%s: the model got %q, want the refusal %q", c.Name, res, c.Error)
				}
				if aerr == nil {
					t.Errorf("%s: claudeedit.Apply = %q, Claude Code refused it", c.Name, apply)
				}
				if !c.Absent && string(got) != c.File {
					t.Errorf("%s: the file changed to %q", c.Name, got)
				}
			case err != nil || string(got) != c.Want:
				t.Errorf("%s: Claude Code's Edit made %q (%v), want %q; the model got %q", c.Name, got, err, c.Want, res)
			case aerr != nil || string(apply) != c.Want:
				t.Errorf("%s: claudeedit.Apply = %q (%v), Claude Code's Edit made %q", c.Name, apply, aerr, got)
			case act && !strings.Contains(res, "act applied this Edit"):
				t.Errorf("%s: the model got %q, want act's applied", c.Name, res)
			}
		}
	}
	t.Run("claude", func(t *testing.T) {
		t.Parallel()
		m := newAgentMachine(t)
		calls := setUp(t, m, false)
		check(t, m, runClaude(t, m, claude, calls, "--permission-mode", "acceptEdits"), false)
	})
	t.Run("act", func(t *testing.T) {
		t.Parallel()
		m := newAgentMachine(t)
		calls := setUp(t, m, true)
		before := hashTree(t, m.proj)
		m.must(t, nil, "act", "hook", "install", "claude-code", "--project", m.proj)
		delete(before, ".claude")
		results := runClaude(t, m, claude, calls, "--permission-mode", "default")
		check(t, m, results, true)
		var ids []string
		for _, r := range results {
			for _, m := range undoID.FindAllStringSubmatch(r, -1) {
				ids = append(ids, m[1])
			}
		}
		if len(ids) == 0 {
			t.Fatal("act applied no edit")
		}
		for i := len(ids) - 1; i >= 0; i-- {
			m.must(t, nil, "act", "rollback", ids[i])
		}
		after := hashTree(t, m.proj)
		for k := range after {
			if k == ".claude" || strings.HasPrefix(k, ".claude/") {
				delete(after, k)
			}
		}
		if fmt.Sprint(after) != fmt.Sprint(before) {
			t.Errorf("the rollbacks did not restore the tree:\nbefore %v\nafter  %v", before, after)
		}
	})
}

// approverMCP is an MCP server (stdio, for node) with one tool, ok, that
// answers every permission prompt of Claude Code's --permission-prompt-tool
// with allow: a program, not a person.
const approverMCP = `const rl = require("readline").createInterface({input: process.stdin});
const send = (o) => process.stdout.write(JSON.stringify(o) + "\n");
rl.on("line", (line) => {
  let m; try { m = JSON.parse(line); } catch { return; }
  if (m.id === undefined) return;
  if (m.method === "initialize") {
    send({jsonrpc: "2.0", id: m.id, result: {protocolVersion: m.params.protocolVersion, capabilities: {tools: {}}, serverInfo: {name: "approver", version: "1"}}});
  } else if (m.method === "tools/list") {
    send({jsonrpc: "2.0", id: m.id, result: {tools: [{name: "ok", description: "approve", inputSchema: {type: "object", properties: {tool_name: {type: "string"}, input: {type: "object"}}}}]}});
  } else if (m.method === "tools/call") {
    const input = m.params.arguments.input || {};
    send({jsonrpc: "2.0", id: m.id, result: {content: [{type: "text", text: JSON.stringify({behavior: "allow", updatedInput: input})}]}});
  } else {
    send({jsonrpc: "2.0", id: m.id, result: {}});
  }
});
`

// TestClaudeCodeWhoAnswers: where no person can answer Claude Code's
// prompt (claude -p), what needs a person is denied and waits in act
// pending; with a permission-prompt program, act asks and the program's
// yes — to a Bash and to an Edit of a CRLF file, which Claude Code's own
// Edit then writes and act adopts — is recorded as a program's, and act
// rollback undoes both.
func TestClaudeCodeWhoAnswers(t *testing.T) {
	t.Parallel()
	claude := agentCLI(t, "claude", "@anthropic-ai/claude-code", claudeCodeVersion)
	t.Run("headless", func(t *testing.T) {
		t.Parallel()
		m := newAgentMachine(t)
		m.must(t, nil, "act", "hook", "install", "claude-code", "--project", m.proj)
		r := runClaude(t, m, claude, []toolCall{{name: "Bash", input: map[string]any{"command": "touch g && chmod 755 g", "description": "g"}}},
			"--permission-mode", "default")
		t.Logf("what the model got: %q", r[0])
		if !strings.Contains(r[0], "no person can answer Claude Code's questions in this session") || !strings.Contains(r[0], "is pending") {
			t.Errorf("the model got %q, want act's deny saying the plan is pending", r[0])
		}
		if out := m.must(t, nil, "act", "pending"); !strings.Contains(out, "touch g") {
			t.Errorf("act pending does not list the command:\n%s", out)
		}
		if _, err := os.Stat(filepath.Join(m.proj, "g")); err == nil {
			t.Error("g exists")
		}
	})
	t.Run("prompt-program", func(t *testing.T) {
		t.Parallel()
		m := newAgentMachine(t)
		// config/ is sensitive: an Edit there needs a person.
		write(t, filepath.Join(m.dir, "policy.yaml"), fmt.Sprintf("risk: {sensitive_paths: [%q]}\n", m.proj+"/config/**"))
		conf := filepath.Join(m.proj, "config", "app.ini")
		write(t, conf, "name = \u201cdev\u201d\r\nport = 80\r\n")
		before := hashTree(t, m.proj)
		m.must(t, nil, "act", "hook", "install", "claude-code", "--project", m.proj)
		server := filepath.Join(m.dir, "approver.js")
		write(t, server, approverMCP)
		mcp, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"approver": map[string]any{"command": "node", "args": []string{server}}}})
		r := runClaude(t, m, claude, []toolCall{
			{name: "Bash", input: map[string]any{"command": "touch g && chmod 755 g", "description": "g"}},
			{name: "Read", input: map[string]any{"file_path": conf}},
			{name: "Edit", input: map[string]any{"file_path": conf, "old_string": "name = \"dev\"\nport = 80", "new_string": "name = \"prod\"\nport = 8080"}},
		}, "--permission-mode", "default", "--mcp-config", string(mcp), "--permission-prompt-tool", "mcp__approver__ok")
		for i, res := range r {
			t.Logf("what the model got for call %d: %q", i, res)
		}
		m.has(t, "g", "")
		m.has(t, "config/app.ini", "name = \u201cprod\u201d\r\nport = 8080\r\n")
		hist := m.must(t, nil, "act", "history")
		t.Logf("act history:\n%s", hist)
		if n := strings.Count(hist, "reported from a program answering the agent's prompt"); n != 2 {
			t.Errorf("act history shows %d yeses reported from a program, want 2 (the Bash and the Edit):\n%s", n, hist)
		}
		var ids []string
		for _, m := range undoID.FindAllStringSubmatch(hist, -1) {
			ids = append(ids, m[1])
		}
		for _, line := range strings.Split(hist, "\n") {
			if f := strings.Fields(line); len(f) > 3 && f[1] == "applied" && f[2] == "action" {
				ids = append(ids, f[3])
			}
		}
		if len(ids) != 2 {
			t.Fatalf("%d applied actions in act history, want 2", len(ids))
		}
		for _, id := range ids { // newest first
			m.must(t, nil, "act", "rollback", id)
		}
		after := hashTree(t, m.proj)
		for k := range after {
			if k == ".claude" || strings.HasPrefix(k, ".claude/") {
				delete(after, k)
			}
		}
		if fmt.Sprint(after) != fmt.Sprint(before) {
			t.Errorf("the rollbacks did not restore the tree:\nbefore %v\nafter  %v", before, after)
		}
	})
}

// TestClaudeCodeDenyRules: Claude Code's own permissions.deny rules for
// Bash, in the user's and the project's settings, still deny the model's
// commands behind act's hook (Claude Code itself checks them against
// act's replacement, which they never match), a compound command too;
// a command no rule denies runs as before.
func TestClaudeCodeDenyRules(t *testing.T) {
	t.Parallel()
	claude := agentCLI(t, "claude", "@anthropic-ai/claude-code", claudeCodeVersion)
	m := newAgentMachine(t)
	write(t, filepath.Join(m.dir, "policy.yaml"), "command_rules:\n  - {argv: [sh, -c, \"echo hi > f\"], mode: allow}\n  - {argv: [sh, -c, \"echo ok\"], mode: allow}\n")
	write(t, filepath.Join(m.home, ".claude", "settings.json"), `{"permissions": {"deny": ["Bash(echo hi:*)"]}}`)
	write(t, filepath.Join(m.proj, ".claude", "settings.local.json"), `{"permissions": {"deny": ["Bash(touch *)"]}}`)
	m.must(t, nil, "act", "hook", "install", "claude-code", "--project", m.proj)
	r := runClaude(t, m, claude, []toolCall{
		{name: "Bash", input: map[string]any{"command": "echo hi > f", "description": "f"}},
		{name: "Bash", input: map[string]any{"command": "cd . && touch g", "description": "g"}},
		{name: "Bash", input: map[string]any{"command": "echo ok", "description": "ok"}},
	}, "--permission-mode", "default")
	for i, res := range r {
		t.Logf("what the model got for call %d: %q", i, res)
	}
	for i, want := range []string{"Bash(echo hi:*)", "Bash(touch *)"} {
		if !strings.Contains(r[i], "Claude Code's permission rule "+want) {
			t.Errorf("call %d: the model got %q, want the deny of rule %s", i, r[i], want)
		}
	}
	if r[2] != "ok" { // its output alone: it changed nothing (Claude Code trims it)
		t.Errorf("echo ok: the model got %q, want its output alone", r[2])
	}
	for _, name := range []string{"f", "g"} {
		if _, err := os.Stat(filepath.Join(m.proj, name)); err == nil {
			t.Errorf("%s exists: a denied command ran", name)
		}
	}
}

// TestClaudeCodeCd: Claude Code's shell keeps the directory a Bash call
// ends in, and resets it to the project when the call leaves it; behind
// act's hook, whose replacement runs instead of the command (act apply
// --as-command, or the replay of a run that changed nothing), the next
// call starts where it would without act.
func TestClaudeCodeCd(t *testing.T) {
	t.Parallel()
	claude := agentCLI(t, "claude", "@anthropic-ai/claude-code", claudeCodeVersion)
	calls := []toolCall{
		{name: "Bash", input: map[string]any{"command": "mkdir -p sub && cd sub", "description": "a"}},
		{name: "Bash", input: map[string]any{"command": "pwd", "description": "b"}},
		{name: "Bash", input: map[string]any{"command": "cd /tmp", "description": "c"}},
		{name: "Bash", input: map[string]any{"command": "pwd", "description": "d"}},
	}
	for _, act := range []bool{false, true} {
		name := map[bool]string{false: "claude", true: "act"}[act]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			m := newAgentMachine(t)
			args := []string{"--permission-mode", "acceptEdits", "--allowedTools", "Bash"}
			if act {
				write(t, filepath.Join(m.dir, "policy.yaml"), `command_rules:
  - {argv: [sh, -c, "mkdir -p sub && cd sub"], mode: allow}
  - {argv: [sh, -c, "pwd"], mode: allow}
  - {argv: [sh, -c, "cd /tmp"], mode: allow}
`)
				m.must(t, nil, "act", "hook", "install", "claude-code", "--project", m.proj)
				args = []string{"--permission-mode", "default"}
			}
			r := runClaude(t, m, claude, calls, args...)
			for i, res := range r {
				t.Logf("what the model got for %q: %q", calls[i].input.(map[string]any)["command"], res)
			}
			var got []string
			for _, i := range []int{1, 3} {
				line, _, _ := strings.Cut(r[i], "\n")
				got = append(got, strings.TrimPrefix(line, m.proj))
			}
			if want := []string{"/sub", ""}; fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("pwd after cd sub, then after cd /tmp: %q, want %q (relative to the project)", got, want)
			}
		})
	}
}
