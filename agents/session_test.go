package agents

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// A new user's session, as docs/agents.md promises it: act hook install
// in a project under the home and no policy edit, then an agent's edits,
// go test, gofmt -w, git commit and a write of ~/.bashrc. Everything but
// the ~/.bashrc write runs with no one asked; that one waits in act
// pending for a person. The agent sees what it would have seen without
// act, and every action rolls back to the tree the session started from.
// The real agents drive it against local mocks of their model APIs.

// sessionFiles is the project a session starts from: a Go module whose
// test passes, in a git repository with one commit.
var sessionFiles = map[string]string{
	"go.mod":       "module example.com/calc\n\ngo 1.21\n",
	"calc.go":      "package calc\n\n// Add returns a plus b.\nfunc Add(a, b int) int { return a + b }\n",
	"calc_test.go": "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(2, 3) != 5 {\n\t\tt.Fatal(\"Add(2, 3) != 5\")\n\t}\n}\n",
}

// What the agent writes and runs in a session.
const (
	sessionNewFile = "sub.go"
	// badly formatted, for gofmt -l -w to rewrite and name.
	sessionNewContent = "package calc\n\n// Sub returns a minus b.\nfunc Sub(a, b int) int {   return a - b }\n"
	sessionOld        = "return a + b"
	sessionNew        = "return b + a"
	sessionGoTest     = "go test ./..."
	sessionGofmt      = "gofmt -l -w ."
	sessionCommit     = "git add -A && git commit -q -m session && git log --format=%s"
	sessionBashrc     = "alias ll='ls -l'\n"
)

// newSessionMachine is an agentMachine whose project holds sessionFiles,
// committed; git, go and gofmt are needed.
func newSessionMachine(t *testing.T) *agentMachine {
	t.Helper()
	for _, tool := range []string{"go", "gofmt", "git"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
	}
	m := newAgentMachine(t)
	m.env = append(m.env, "GOTOOLCHAIN=local", "GOFLAGS=", "GIT_CONFIG_NOSYSTEM=1")
	// The go command's own build cache, warm: a go test run without act
	// would otherwise build the standard library first. (In the sandbox
	// go uses the same cache, the user's, read-only under a throwaway
	// layer: docs/sandbox-filesystem.md, "Caches".)
	if c := testGoCache(); c != "" {
		m.env = append(m.env, "GOCACHE="+c)
	}
	for name, data := range sessionFiles {
		write(t, filepath.Join(m.proj, name), data)
	}
	m.must(t, nil, "git", "init", "-q")
	m.must(t, nil, "git", "config", "user.name", "A Person")
	m.must(t, nil, "git", "config", "user.email", "person@example.com")
	m.must(t, nil, "git", "add", "-A")
	m.must(t, nil, "git", "commit", "-q", "-m", "start")
	return m
}

// goTestOK is what go test ./... of the project prints, its time
// dropped: run or cached, it is the same to the agent.
var goTestTime = regexp.MustCompile(`\t(\(cached\)|[0-9.]+s)`)

func sameGoTest(s string) string { return goTestTime.ReplaceAllString(strings.TrimSpace(s), "") }

// actLine is act's last line after a command it promoted: the action and
// its rollback (docs/agents.md, "Bash is promoted by act").
var actLine = regexp.MustCompile(`(?m)^act: action \S+ \(plan [0-9a-f]{16}\) applied: .*; undo: .* rollback \S+\n?\z`)

// commandOutput is what an agent got of a command, act's last line cut.
func commandOutput(s string) string { return strings.TrimSpace(actLine.ReplaceAllString(s, "")) }

// sessionEnd checks what every door's session leaves: the edits, the
// formatting and the commit in the project, ~/.bashrc not written but
// waiting in act pending; then it rolls back the applied actions, newest
// first, and the tree is the one the session started from; then a person
// applies the ~/.bashrc write from the inbox, and rolls it back.
//
// actions are the ids of the actions that changed something, in the
// session's order, as act named them to the agent.
func sessionEnd(t *testing.T, m *agentMachine, before map[string]string, actions []string, wantApplied int) {
	t.Helper()
	m.has(t, sessionNewFile, strings.Replace(sessionNewContent, "{   ", "{ ", 1))
	m.has(t, "calc.go", strings.Replace(sessionFiles["calc.go"], sessionOld, sessionNew, 1))
	if out := m.must(t, nil, "git", "log", "--format=%s"); out != "session\nstart\n" {
		t.Errorf("git log after the session: %q, want the session's commit", out)
	}
	bashrc := filepath.Join(m.home, ".bashrc")
	if _, err := os.Lstat(bashrc); err == nil {
		t.Errorf("~/.bashrc was written with no one asked")
	}
	var pending struct {
		Data struct {
			Pending []struct {
				PlanID string `json:"plan_id"`
			} `json:"pending"`
		} `json:"data"`
	}
	out := m.must(t, nil, "act", "pending", "--json")
	if err := json.Unmarshal([]byte(out), &pending); err != nil {
		t.Fatalf("act pending --json: %v\n%s", err, out)
	}
	if len(pending.Data.Pending) != 1 || !strings.Contains(out, bashrc) {
		t.Fatalf("act pending: want the ~/.bashrc write alone:\n%s", out)
	}
	var hist struct {
		Data struct {
			History []struct {
				Kind, State string
				ActionID    string `json:"action_id"`
			} `json:"history"`
		} `json:"data"`
	}
	out = m.must(t, nil, "act", "history", "--json")
	if err := json.Unmarshal([]byte(out), &hist); err != nil {
		t.Fatalf("act history --json: %v\n%s", err, out)
	}
	var applied []string
	for _, h := range hist.Data.History {
		if h.Kind == "action" && h.State == "applied" {
			applied = append(applied, h.ActionID)
		}
	}
	if len(applied) != wantApplied {
		t.Fatalf("act history: %d applied actions, want %d (the edits, go test, gofmt and the commit):\n%s", len(applied), wantApplied, out)
	}
	// All but go test's, which changed nothing, name their action.
	if len(actions) != wantApplied-1 {
		t.Errorf("the agent was told of %d actions to undo, want %d: %q", len(actions), wantApplied-1, actions)
	}
	for _, id := range actions {
		if !slices.Contains(applied, id) {
			t.Errorf("action %s, named to the agent, is not applied in act history:\n%s", id, out)
		}
	}
	m.must(t, nil, "act", "audit", "verify")
	for i := len(actions) - 1; i >= 0; i-- {
		m.must(t, nil, "act", "rollback", actions[i])
	}
	if got := hashTree(t, m.proj); fmt.Sprint(got) != fmt.Sprint(before) {
		for k, v := range got {
			if before[k] != v {
				t.Errorf("after the rollbacks %s = %s, before the session %s", k, v, before[k])
			}
		}
		for k := range before {
			if _, ok := got[k]; !ok {
				t.Errorf("after the rollbacks %s is missing", k)
			}
		}
	}
	// The person answers the inbox.
	out = m.must(t, nil, "act", "apply", pending.Data.Pending[0].PlanID, "--confirm")
	if b, err := os.ReadFile(bashrc); err != nil || string(b) != sessionBashrc {
		t.Fatalf("~/.bashrc after the person's act apply: %q %v\n%s", b, err, out)
	}
	ids := undoID.FindStringSubmatch(out)
	if ids == nil {
		t.Fatalf("act apply names no rollback:\n%s", out)
	}
	m.must(t, nil, "act", "rollback", ids[1])
	if _, err := os.Lstat(bashrc); err == nil {
		t.Errorf("~/.bashrc is there after its rollback")
	}
	m.must(t, nil, "act", "audit", "verify")
}

// TestAgentSessionClaudeCode: the session through Claude Code itself
// (claude -p, headless: no person can answer), first without act, then
// with act hook install claude-code. The model gets the same output of
// each command either way.
func TestAgentSessionClaudeCode(t *testing.T) {
	t.Parallel()
	claude := agentCLI(t, "claude", "@anthropic-ai/claude-code", claudeCodeVersion)
	calls := func(m *agentMachine) []toolCall {
		return []toolCall{
			{name: "Write", input: map[string]any{"file_path": filepath.Join(m.proj, sessionNewFile), "content": sessionNewContent}},
			{name: "Edit", input: map[string]any{"file_path": filepath.Join(m.proj, "calc.go"), "old_string": sessionOld, "new_string": sessionNew}},
			{name: "Bash", input: map[string]any{"command": sessionGoTest, "description": "test"}},
			{name: "Bash", input: map[string]any{"command": sessionGofmt, "description": "format"}},
			{name: "Bash", input: map[string]any{"command": sessionCommit, "description": "commit"}},
			{name: "Write", input: map[string]any{"file_path": filepath.Join(m.home, ".bashrc"), "content": sessionBashrc}},
		}
	}
	// Without act: what the model sees of each command.
	plain := newSessionMachine(t)
	want := runClaude(t, plain, claude, calls(plain), "--permission-mode", "acceptEdits", "--allowedTools", "Bash")
	for i, r := range want {
		t.Logf("without act, the model got for call %d: %q", i, r)
	}

	m := newSessionMachine(t)
	m.must(t, nil, "act", "hook", "install", "claude-code", "--project", m.proj)
	before := hashTree(t, m.proj)
	got := runClaude(t, m, claude, calls(m), "--permission-mode", "default")
	for i, r := range got {
		t.Logf("with act, the model got for call %d: %q", i, r)
	}
	// go test changed nothing: its output alone, as without act.
	if sameGoTest(got[2]) != sameGoTest(want[2]) || !strings.Contains(got[2], "ok") {
		t.Errorf("go test: the model got %q with act, %q without", got[2], want[2])
	}
	// gofmt and git changed the tree: their output, then act's line.
	for _, i := range []int{3, 4} {
		if !actLine.MatchString(got[i]) || commandOutput(got[i]) != strings.TrimSpace(want[i]) {
			t.Errorf("%s: the model got %q with act, %q without", calls(m)[i].input.(map[string]any)["command"], got[i], want[i])
		}
	}
	if !strings.Contains(got[5], "is pending: a person runs") {
		t.Errorf("the ~/.bashrc write: the model got %q, want it to say the write waits in act pending", got[5])
	}
	var actions []string
	for _, r := range got {
		actions = appendActions(actions, r)
	}
	sessionEnd(t, m, before, actions, 5)
}

// TestAgentSessionActRun: the session as a script or a harness without
// hooks drives it, in the project the person installed act's hook for
// (which makes it a workspace): the edits as short-form descriptors
// through act apply, the commands through act run, from a subdirectory of
// the project (act run scopes to the project's root).
func TestAgentSessionActRun(t *testing.T) {
	t.Parallel()
	m := newSessionMachine(t)
	m.must(t, nil, "act", "hook", "install", "claude-code", "--project", m.proj)
	before := hashTree(t, m.proj)
	short := func(name, body string) string {
		t.Helper()
		p := filepath.Join(m.dir, name+".yaml")
		write(t, p, "action_type: FILE_WRITE\nintent_summary: "+name+"\noperation:\n"+body)
		return p
	}
	quote := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	var actions []string
	apply := func(file string) {
		t.Helper()
		actions = appendActions(actions, m.must(t, nil, "act", "apply", file))
	}
	apply(short("new", "  path: "+filepath.Join(m.proj, sessionNewFile)+"\n  content: "+quote(sessionNewContent)+"\n"))
	apply(short("edit", "  path: "+filepath.Join(m.proj, "calc.go")+"\n  edits: [{old: "+quote(sessionOld)+", new: "+quote(sessionNew)+"}]\n"))
	sub := filepath.Join(m.proj, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(sub)
	// Each command as the person's shell would run it after the same
	// edits, and through act run from the project's subdirectory: the
	// command's output first, then act's review of what it changed.
	plain := newSessionMachine(t)
	write(t, filepath.Join(plain.proj, sessionNewFile), sessionNewContent)
	write(t, filepath.Join(plain.proj, "calc.go"), strings.Replace(sessionFiles["calc.go"], sessionOld, sessionNew, 1))
	for _, c := range []struct {
		command string
		changes bool
	}{
		{sessionGoTest, false},
		{sessionGofmt, true},
		{sessionCommit, true},
	} {
		want, _, err := plain.run(t, nil, "sh", "-c", c.command)
		if err != nil {
			t.Fatalf("%s without act: %v", c.command, err)
		}
		stdout, stderr, err := m.runIn(t, sub, nil, "act", "run", "--", "sh", "-c", "cd .. && "+c.command)
		if err != nil {
			t.Fatalf("act run -- %s: %v\n%s%s", c.command, err, stdout, stderr)
		}
		t.Logf("act run -- %s:\n%s", c.command, stdout)
		out, review, _ := strings.Cut(stdout, "Intent: ")
		if c.command == sessionGoTest {
			out, want = sameGoTest(out), sameGoTest(want)
		}
		if strings.TrimSpace(out) != strings.TrimSpace(want) {
			t.Errorf("act run -- %s printed %q, without act %q", c.command, out, want)
		}
		actions = appendActions(actions, review)
		if applied := strings.Contains(review, "Roll back with: "); applied != c.changes {
			t.Errorf("act run -- %s: applied a change: %v, want %v", c.command, applied, c.changes)
		}
	}
	// ~/.bashrc: a person's, so it waits.
	_, stderr, err := m.run(t, nil, "act", "apply", short("bashrc", "  path: "+filepath.Join(m.home, ".bashrc")+"\n  content: "+quote(sessionBashrc)+"\n"))
	if code := exitCode(err); code != 7 {
		t.Fatalf("act apply of the ~/.bashrc write: exit %d, want 7 (queued for a person):\n%s", code, stderr)
	}
	if err := os.Remove(sub); err != nil {
		t.Fatal(err)
	}
	sessionEnd(t, m, before, actions, 5)
}

// TestAgentSessionCodex: the session through Codex itself (codex exec,
// its model a local mock of the Responses API), act hook install codex
// in the project. Codex enforces only a deny, so act answers every call
// with one: what it applied, with a command's output, or why it waits.
func TestAgentSessionCodex(t *testing.T) {
	t.Parallel()
	codex := agentCLI(t, "codex", "@openai/codex", codexVersion)
	m := newSessionMachine(t)
	calls := []toolCall{
		{name: "apply_patch", kind: "custom", input: "*** Begin Patch\n*** Add File: " + sessionNewFile + "\n+" +
			strings.ReplaceAll(strings.TrimSuffix(sessionNewContent, "\n"), "\n", "\n+") + "\n*** End Patch\n"},
		{name: "apply_patch", kind: "custom", input: "*** Begin Patch\n*** Update File: calc.go\n@@\n-func Add(a, b int) int { " + sessionOld + " }\n+func Add(a, b int) int { " + sessionNew + " }\n*** End Patch\n"},
		{name: "exec_command", input: map[string]any{"cmd": sessionGoTest}},
		{name: "exec_command", input: map[string]any{"cmd": sessionGofmt}},
		{name: "exec_command", input: map[string]any{"cmd": sessionCommit}},
		{name: "apply_patch", kind: "custom", input: "*** Begin Patch\n*** Add File: " + filepath.Join(m.home, ".bashrc") + "\n+" + strings.TrimSuffix(sessionBashrc, "\n") + "\n*** End Patch\n"},
	}
	mock := &modelMock{calls: calls}
	srv := httptest.NewServer(http.HandlerFunc(mock.responses))
	defer srv.Close()
	codexHome := filepath.Join(m.home, ".codex")
	write(t, filepath.Join(codexHome, "config.toml"), fmt.Sprintf(`model = "gpt-5.5"
model_provider = "mock"
approval_policy = "never"
sandbox_mode = "danger-full-access"

[model_providers.mock]
name = "mock"
base_url = "%s/v1"
wire_api = "responses"
env_key = "MOCK_API_KEY"

[projects.%q]
trust_level = "trusted"
`, srv.URL, m.proj))
	m.must(t, nil, "act", "hook", "install", "codex", "--project", m.proj)
	before := hashTree(t, m.proj)
	agentEnv := []string{"CODEX_HOME=" + codexHome, "MOCK_API_KEY=mock"}
	if stdout, stderr, err := m.run(t, agentEnv, codex, "exec", "make the session's changes"); err != nil {
		t.Fatalf("codex exec: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
	}
	got := mock.outputs()
	for i, r := range got {
		t.Logf("the model got for call %d: %q", i, r)
	}
	if len(got) != len(calls) {
		t.Fatalf("the model got %d tool outputs, want %d", len(got), len(calls))
	}
	// What each command prints without act, after the same edits: the
	// model reads it in act's answer.
	plain := newSessionMachine(t)
	write(t, filepath.Join(plain.proj, sessionNewFile), sessionNewContent)
	write(t, filepath.Join(plain.proj, "calc.go"), strings.Replace(sessionFiles["calc.go"], sessionOld, sessionNew, 1))
	for i := 2; i <= 4; i++ {
		cmd := calls[i].input.(map[string]any)["cmd"].(string)
		want, _, err := plain.run(t, nil, "sh", "-c", cmd)
		if err != nil {
			t.Fatalf("%s without act: %v", cmd, err)
		}
		out := got[i]
		if i == 2 {
			out, want = sameGoTest(out), sameGoTest(want)
		}
		if !strings.HasPrefix(got[i], "Command blocked by PreToolUse hook: act ran this command in its sandbox") ||
			!strings.Contains(out, "Its output:\n"+strings.TrimSpace(want)) {
			t.Errorf("%s: the model got %q, want act's answer with the command's output %q", cmd, got[i], want)
		}
	}
	if !strings.Contains(got[5], "a person must confirm this patch") || !strings.Contains(got[5], "pending") {
		t.Errorf("the ~/.bashrc patch: the model got %q, want it to say it waits for a person", got[5])
	}
	var actions []string
	for _, r := range got {
		actions = appendActions(actions, r)
	}
	sessionEnd(t, m, before, actions, 5)
}
