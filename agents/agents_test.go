package agents

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/act-project/act/sandbox/isolate"
)

// The real agents, driven against local mocks of their model APIs: act
// hook install sets each up, then the agent's own CLI runs headless with
// a model that asks for one tool call after another, and each must reach
// act's hook with no further step (no trust to give, no prompt). .ci/run
// installs the CLIs from npm into .ci/node; a test skips, saying so, only
// when they (or node) are not there.

// Versions of the agents these tests drive (.ci/run installs them).
const (
	claudeCodeVersion = "2.1.332"
	codexVersion      = "0.171.0"
)

// agentHang bounds one run of an agent: a hang guard only, never a
// measure.
const agentHang = 5 * time.Minute

// agentCLI is the installed CLI of an npm package, or a skip.
func agentCLI(t *testing.T, bin, pkg, version string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", ".ci/node/node_modules/.bin", bin))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Skipf("%s is not installed: run .ci/run, or npm install --prefix .ci/node %s@%s", bin, pkg, version)
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skipf("node is not installed: %s's npm package needs it", bin)
	}
	return p
}

// An agentMachine is a person's machine for one agent: a home, act's
// state dir and policy, and a project.
type agentMachine struct {
	dir, home, state, proj string
	env                    []string
}

func newAgentMachine(t *testing.T) *agentMachine {
	t.Helper()
	if err := isolate.Available(); err != nil {
		t.Skipf("commands cannot be isolated here: %v", err)
	}
	dir := t.TempDir()
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	m := &agentMachine{dir: dir, home: filepath.Join(dir, "home"), state: filepath.Join(dir, "state"), proj: filepath.Join(dir, "home", "proj")}
	if err := os.MkdirAll(m.proj, 0o755); err != nil {
		t.Fatal(err)
	}
	pol := filepath.Join(dir, "policy.yaml")
	// No workspace and no command rule: the project is a workspace
	// because act hook install makes it one (docs/policy.md,
	// "Workspaces"), and its Bash call is graded by its diff, LOW
	// (docs/risk.md, "Commands"): a person who installs the hook needs
	// no policy edit.
	write(t, pol, "# a person's policy\nworkspaces: []\n")
	m.env = []string{"HOME=" + m.home, "ACT_POLICY=" + pol, "ACT_HOME=" + m.state,
		"ACT_TEST_NOW=" + time.Now().UTC().Truncate(time.Second).Format(time.RFC3339), "NO_COLOR=1", "TERM=dumb"}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k == "PATH" || k == "TMPDIR" || k == "LANG" {
			m.env = append(m.env, kv)
		}
	}
	return m
}

// run runs name in the project with the machine's environment and more.
func (m *agentMachine) run(t *testing.T, more []string, name string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	return m.runIn(t, m.proj, more, name, args...)
}

// runIn is run in the directory dir.
func (m *agentMachine) runIn(t *testing.T, dir string, more []string, name string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), agentHang)
	defer cancel()
	c := exec.CommandContext(ctx, name, args...)
	c.Dir, c.Env = dir, append(append([]string{}, m.env...), more...)
	c.Stdin = strings.NewReader("")
	c.WaitDelay = 10 * time.Second
	var o, e bytes.Buffer
	c.Stdout, c.Stderr = &o, &e
	err = c.Run()
	if ctx.Err() != nil {
		t.Fatalf("%s did not end within %s (a hang guard):\nstdout:\n%s\nstderr:\n%s", name, agentHang, o.String(), e.String())
	}
	return o.String(), e.String(), err
}

// must runs act (or another program) and fails the test if it fails.
func (m *agentMachine) must(t *testing.T, more []string, name string, args ...string) string {
	t.Helper()
	out, errOut, err := m.run(t, more, name, args...)
	if err != nil {
		t.Fatalf("%s %s: %v\n%s%s", name, strings.Join(args, " "), err, out, errOut)
	}
	return out
}

// applied counts the applied actions in act's history.
func (m *agentMachine) applied(t *testing.T) int {
	t.Helper()
	var res struct {
		Data struct {
			History []struct {
				Kind, State string
			} `json:"history"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(m.must(t, nil, "act", "history", "--json")), &res); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, h := range res.Data.History {
		if h.Kind == "action" && h.State == "applied" {
			n++
		}
	}
	return n
}

func (m *agentMachine) has(t *testing.T, name, want string) {
	t.Helper()
	got, err := os.ReadFile(filepath.Join(m.proj, name))
	if err != nil || string(got) != want {
		t.Errorf("%s = %q (%v), want %q", name, got, err, want)
	}
}

// A modelMock answers an agent's model requests: the tool calls of calls
// in turn, then a last message; it keeps what the agent sends back of
// each call.
type modelMock struct {
	mu      sync.Mutex
	calls   []toolCall
	results []string
	bodies  int
}

type toolCall struct {
	name  string
	input any // Claude Code: the tool's input; Codex: arguments (function) or input (custom tool)
	kind  string
}

func (m *modelMock) outputs() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.results...)
}

func writeSSE(w http.ResponseWriter, events [][2]any) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	var b bytes.Buffer
	for _, ev := range events {
		data, _ := json.Marshal(ev[1])
		fmt.Fprintf(&b, "event: %s\ndata: %s\n\n", ev[0], data)
	}
	w.Write(b.Bytes())
}

// anthropic is a mock of the Anthropic Messages API as Claude Code uses
// it: streamed (SSE) POST /v1/messages. A request offering the Write tool
// is the agent's turn: it gets the next tool call, or a last message once
// every call has a tool_result; any other request (a title, a summary)
// gets "ok".
func (m *modelMock) anthropic(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || !strings.HasPrefix(r.URL.Path, "/v1/messages") {
		w.WriteHeader(http.StatusOK)
		return
	}
	var req struct {
		Model    string                  `json:"model"`
		Stream   bool                    `json:"stream"`
		Tools    []struct{ Name string } `json:"tools"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 64<<20)).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	agent := false
	for _, t := range req.Tools {
		agent = agent || t.Name == "Write"
	}
	var results []string
	for _, msg := range req.Messages {
		var blocks []struct {
			Type    string          `json:"type"`
			Content json.RawMessage `json:"content"`
		}
		if json.Unmarshal(msg.Content, &blocks) != nil {
			continue
		}
		for _, b := range blocks {
			if b.Type == "tool_result" {
				results = append(results, blockText(b.Content))
			}
		}
	}
	m.mu.Lock()
	next := -1
	if agent {
		m.results = results
		if len(results) < len(m.calls) {
			next = len(results)
		}
	}
	m.mu.Unlock()
	start := map[string]any{"type": "message_start", "message": map[string]any{"id": "msg_mock", "type": "message", "role": "assistant",
		"model": req.Model, "content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": map[string]int{"input_tokens": 1, "output_tokens": 1}}}
	var block, delta map[string]any
	stop := "end_turn"
	if next >= 0 {
		c := m.calls[next]
		input, _ := json.Marshal(c.input)
		block = map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_%02d", next), "name": c.name, "input": map[string]any{}}
		delta = map[string]any{"type": "input_json_delta", "partial_json": string(input)}
		stop = "tool_use"
	} else {
		block = map[string]any{"type": "text", "text": ""}
		delta = map[string]any{"type": "text_delta", "text": "ok"}
	}
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"id": "msg_mock", "type": "message", "role": "assistant", "model": req.Model,
			"content": []any{map[string]any{"type": "text", "text": "ok"}}, "stop_reason": "end_turn", "stop_sequence": nil,
			"usage": map[string]int{"input_tokens": 1, "output_tokens": 1}})
		return
	}
	writeSSE(w, [][2]any{
		{"message_start", start},
		{"content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": block}},
		{"content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": delta}},
		{"content_block_stop", map[string]any{"type": "content_block_stop", "index": 0}},
		{"message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]int{"output_tokens": 1}}},
		{"message_stop", map[string]any{"type": "message_stop"}},
	})
}

// blockText is a tool_result's content: a string, or text blocks.
func blockText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct{ Text string }
	json.Unmarshal(raw, &parts)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

// responses is a mock of OpenAI's Responses API as Codex uses it:
// streamed (SSE) POST /v1/responses. Each request gets the next tool call
// once the previous one has its output in the input, then a last message.
func (m *modelMock) responses(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/responses") {
		http.NotFound(w, r)
		return
	}
	var req struct {
		Input []struct {
			Type   string          `json:"type"`
			Output json.RawMessage `json:"output"`
		} `json:"input"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 64<<20)).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var results []string
	for _, it := range req.Input {
		if it.Type == "function_call_output" || it.Type == "custom_tool_call_output" {
			results = append(results, blockText(it.Output))
		}
	}
	m.mu.Lock()
	m.results = results
	next := -1
	if len(results) < len(m.calls) {
		next = len(results)
	}
	m.mu.Unlock()
	var item map[string]any
	switch {
	case next < 0:
		item = map[string]any{"type": "message", "role": "assistant", "id": "msg_mock", "content": []any{map[string]any{"type": "output_text", "text": "done"}}}
	case m.calls[next].kind == "custom":
		item = map[string]any{"type": "custom_tool_call", "call_id": fmt.Sprintf("call_%02d", next), "name": m.calls[next].name, "input": m.calls[next].input}
	default:
		args, _ := json.Marshal(m.calls[next].input)
		item = map[string]any{"type": "function_call", "call_id": fmt.Sprintf("call_%02d", next), "name": m.calls[next].name, "arguments": string(args)}
	}
	writeSSE(w, [][2]any{
		{"response.created", map[string]any{"type": "response.created", "response": map[string]any{"id": "resp_mock"}}},
		{"response.output_item.done", map[string]any{"type": "response.output_item.done", "item": item}},
		{"response.completed", map[string]any{"type": "response.completed", "response": map[string]any{"id": "resp_mock",
			"usage": map[string]any{"input_tokens": 0, "input_tokens_details": nil, "output_tokens": 0, "output_tokens_details": nil, "total_tokens": 0}}}},
	})
}

// TestClaudeCodeCLI: act hook install claude-code, then Claude Code
// itself (claude -p) asks for a Write and a Bash call, and act's hook
// decides both: it applies the Write itself and denies the tool, and
// replaces the Bash command with act apply --as-command.
func TestClaudeCodeCLI(t *testing.T) {
	t.Parallel()
	claude := agentCLI(t, "claude", "@anthropic-ai/claude-code", claudeCodeVersion)
	m := newAgentMachine(t)
	if v, _, _ := m.run(t, nil, claude, "--version"); !strings.HasPrefix(v, claudeCodeVersion+" ") {
		t.Logf("claude --version: %q, these tests were written against %s", v, claudeCodeVersion)
	}
	out := m.must(t, nil, "act", "hook", "install", "claude-code", "--project", m.proj)
	t.Logf("act hook install claude-code:\n%s", out)
	if !strings.Contains(out, filepath.Join(m.proj, ".claude", "settings.json")) {
		t.Fatalf("install does not say it wrote the project's settings:\n%s", out)
	}

	mock := &modelMock{calls: []toolCall{
		{name: "Write", input: map[string]any{"file_path": filepath.Join(m.proj, "hello.txt"), "content": "hi\n"}},
		{name: "Bash", input: map[string]any{"command": "echo hi > f", "description": "write f"}},
	}}
	srv := httptest.NewServer(http.HandlerFunc(mock.anthropic))
	defer srv.Close()
	agentEnv := []string{"ANTHROPIC_BASE_URL=" + srv.URL, "ANTHROPIC_API_KEY=sk-ant-mock", "DISABLE_TELEMETRY=1",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "DISABLE_ERROR_REPORTING=1"}
	stdout, stderr, err := m.run(t, agentEnv, claude, "-p", "write hello.txt, then f", "--output-format", "stream-json", "--verbose",
		"--permission-mode", "default")
	if err != nil {
		t.Fatalf("claude -p: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
	}
	results := mock.outputs()
	for i, r := range results {
		t.Logf("what the model got for %s: %q", mock.calls[i].name, r)
	}
	if len(results) != 2 {
		t.Fatalf("the model got %d tool results, want 2: %q\nstdout:\n%s", len(results), results, stdout)
	}
	// Write: act applied it, and denied the tool; the model reads why.
	if !strings.Contains(results[0], "act applied") || !strings.Contains(results[0], " rollback ") {
		t.Errorf("the Write's result does not say act applied it: %q", results[0])
	}
	// Bash: the command became act apply --as-command, which applied the
	// reviewed diff and says so on stderr.
	if !strings.Contains(results[1], "applied") {
		t.Errorf("the Bash call's result does not say act applied it: %q", results[1])
	}
	m.has(t, "hello.txt", "hi\n")
	m.has(t, "f", "hi\n")
	if n := m.applied(t); n != 2 {
		t.Errorf("act's history has %d applied actions, want 2 (the Write and the Bash command)", n)
	}
	m.must(t, nil, "act", "hook", "check", "claude-code", "--project", m.proj)
}

// TestCodexCLI: act hook install codex, then Codex itself (codex exec,
// its model a local mock of the Responses API) asks for a shell command
// and an apply_patch, and act's hook — trusted by install, as Codex
// requires — decides both: act applies each and Codex blocks its own
// tool. Then the hook is edited by hand: act hook check says Codex now
// skips it, and Codex does.
func TestCodexCLI(t *testing.T) {
	t.Parallel()
	codex := agentCLI(t, "codex", "@openai/codex", codexVersion)
	for _, project := range []bool{false, true} {
		name := map[bool]string{false: "user", true: "project"}[project]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			m := newAgentMachine(t)
			if _, _, err := m.run(t, nil, "git", "init", "-q"); err != nil {
				t.Skipf("git: %v", err)
			}
			mock := &modelMock{calls: []toolCall{
				{name: "exec_command", input: map[string]any{"cmd": "echo hi > f"}},
				{name: "apply_patch", kind: "custom", input: "*** Begin Patch\n*** Add File: hello.txt\n+hi\n*** End Patch\n"},
			}}
			srv := httptest.NewServer(http.HandlerFunc(mock.responses))
			defer srv.Close()
			codexHome := filepath.Join(m.home, ".codex")
			// The person's Codex: a model provider (the mock), and for the
			// project set-up the project trusted, as Codex's own prompt
			// records it.
			config := fmt.Sprintf(`# my Codex
model = "gpt-5.5"
model_provider = "mock"
approval_policy = "never"
sandbox_mode = "danger-full-access"

[model_providers.mock]
name = "mock"
base_url = "%s/v1"
wire_api = "responses"
env_key = "MOCK_API_KEY"
`, srv.URL)
			args := []string{"hook", "install", "codex"}
			if project {
				config += fmt.Sprintf("\n[projects.%q]\ntrust_level = \"trusted\"\n", m.proj)
				args = append(args, "--project", m.proj)
			}
			write(t, filepath.Join(codexHome, "config.toml"), config)
			out := m.must(t, nil, "act", args...)
			t.Logf("act %s:\n%s", strings.Join(args, " "), out)

			agentEnv := []string{"CODEX_HOME=" + codexHome, "MOCK_API_KEY=mock"}
			stdout, stderr, err := m.run(t, agentEnv, codex, "exec", "make f and hello.txt")
			if err != nil {
				t.Fatalf("codex exec: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
			}
			results := mock.outputs()
			for i, r := range results {
				t.Logf("what the model got for %s: %q", mock.calls[i].name, r)
			}
			if len(results) != 2 {
				t.Fatalf("the model got %d tool outputs, want 2: %q\nstderr:\n%s", len(results), results, stderr)
			}
			for i, r := range results {
				if !strings.HasPrefix(r, "Command blocked by PreToolUse hook: act ") || !strings.Contains(r, " rollback ") {
					t.Errorf("%s: Codex did not block it with act's reason: %q", mock.calls[i].name, r)
				}
			}
			m.has(t, "f", "hi\n")
			m.has(t, "hello.txt", "hi\n")
			if n := m.applied(t); n != 2 {
				t.Errorf("act's history has %d applied actions, want 2 (the command and the patch)", n)
			}
			m.must(t, agentEnv, "act", append([]string{"hook", "check", "codex"}, args[3:]...)...)

			if project {
				return
			}
			// Edited by hand — the command now says --timeout 40s — the hook
			// is no longer the one the person trusted: check says so, and
			// Codex runs the command itself, unreviewed.
			cfg := filepath.Join(codexHome, "config.toml")
			data, err := os.ReadFile(cfg)
			if err != nil {
				t.Fatal(err)
			}
			write(t, cfg, strings.Replace(string(data), "--timeout 50s", "--timeout 40s", 1))
			out, _, err = m.run(t, agentEnv, "act", "hook", "check", "codex")
			if code := exitCode(err); code != 5 || !strings.Contains(out, "changed since it was trusted") {
				t.Errorf("act hook check codex: exit %d, want 5 saying the hook changed:\n%s", code, out)
			}
			os.Remove(filepath.Join(m.proj, "f"))
			mock.calls = mock.calls[:1]
			if _, stderr, err := m.run(t, agentEnv, codex, "exec", "make f"); err != nil {
				t.Fatalf("codex exec: %v\n%s", err, stderr)
			}
			r := mock.outputs()
			t.Logf("the edited hook: what the model got for exec_command: %q", r)
			if len(r) != 1 || strings.Contains(r[0], "blocked") {
				t.Errorf("an edited hook: the model got %q, want the command's own output (Codex skipped act's hook)", r)
			}
			m.has(t, "f", "hi\n")
			if n := m.applied(t); n != 2 {
				t.Errorf("act's history has %d applied actions, want still 2", n)
			}
			// And install makes it right.
			m.must(t, nil, "act", "hook", "install", "codex")
			m.must(t, agentEnv, "act", "hook", "check", "codex")
		})
	}
}

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	return -1
}
