package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/act-project/act/sandbox/isolate"
)

// mcpSession is a person's machine with act installed: a HOME with a
// project, a state dir, and the tests' act (TestMain).
type mcpSession struct {
	act, home, proj, state string
	now                    time.Time
}

func newMCPSession(t *testing.T) *mcpSession {
	t.Helper()
	act, err := exec.LookPath("act") // the tests' act, as TestMain installs it
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	s := &mcpSession{act: act, home: filepath.Join(dir, "home"), state: filepath.Join(dir, ".act"), now: time.Now().UTC().Truncate(time.Second)}
	s.proj = filepath.Join(s.home, "proj")
	if err := os.MkdirAll(s.proj, 0o755); err != nil {
		t.Fatal(err)
	}
	return s
}

// env is the environment act runs in: its own HOME, the test clock now.
func (s *mcpSession) env() []string {
	var env []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k == "HOME" || strings.HasPrefix(k, "ACT_") || strings.HasPrefix(k, "XDG_") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "HOME="+s.home, "ACT_TEST_NOW="+s.now.Format(time.RFC3339))
}

// descriptor is the JSON text of a FILE_WRITE of name with content, or,
// with argv, a COMMAND_EXECUTION creating name in the project.
func (s *mcpSession) descriptor(id, name, content string, argv ...string) string {
	op := map[string]any{"path": filepath.Join(s.proj, name), "content": content, "mode": "0644"}
	typ, sandbox := "FILE_WRITE", false
	if argv != nil {
		typ, sandbox = "COMMAND_EXECUTION", true
		op = map[string]any{"argv": argv, "workdir": s.proj}
	}
	d := map[string]any{
		"descriptor_version": "1.0", "action_id": id, "created_at": s.now.Format(time.RFC3339), "created_by": "ai",
		"intent_summary": "Write a file.", "action_type": typ, "risk_level": "LOW",
		"scope": map[string]any{"filesystem": map[string]any{"paths": []string{s.proj}, "recursive": true},
			"network": map[string]any{"required": false}, "ui": map[string]any{"required": false}},
		"resources":     map[string]any{"max_cpu_ms": 2000, "max_memory_mb": 64, "max_disk_mb": 4, "max_duration_ms": 20000},
		"preconditions": map[string]any{"paths_exist": []string{s.proj}, "network_available": false, "user_idle": false},
		"effects": map[string]any{"filesystem": map[string]any{"create": []string{filepath.Join(s.proj, name)}, "modify": []string{}, "delete": []string{}},
			"network": false, "system_state_change": false},
		"sandbox":      map[string]any{"required": sandbox, "sandbox_type": "container", "allow_network": false, "max_runs": 1},
		"rollback":     map[string]any{"supported": true, "rollback_type": "filesystem_snapshot", "rollback_scope": "declared_effects_only"},
		"confirmation": map[string]any{"required": false, "reason": "", "cooldown_on_repeat": false},
		"audit":        map[string]any{"log": true, "log_level": "SUMMARY", "retain_days": 30},
		"operation":    op,
	}
	b, _ := json.Marshal(d)
	return string(b)
}

// confirmModeDescriptor is an action the default policy sends to a person:
// a COMMAND_EXECUTION where commands can be isolated, else a FILE_WRITE,
// whose descriptor requires confirmation.
func (s *mcpSession) confirmModeDescriptor(id, name string) string {
	var d string
	if isolate.Available() == nil {
		d = s.descriptor(id, name, "", "sh", "-c", "echo made by a command > "+name)
	} else {
		d = s.descriptor(id, name, "made by a command\n")
	}
	// A command is graded by its diff (docs/risk.md, "Commands"): this
	// one's is LOW, so the descriptor asks for a person itself.
	return strings.Replace(d, `"confirmation":{"cooldown_on_repeat":false,"reason":"","required":false}`,
		`"confirmation":{"cooldown_on_repeat":false,"reason":"a test","required":true}`, 1)
}

// confirm is the person at the terminal: act apply PLAN_ID --confirm.
func (s *mcpSession) confirm(t *testing.T, planID string) {
	t.Helper()
	c := exec.Command(s.act, "--home", s.state, "apply", planID, "--confirm")
	c.Env = s.env()
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("act apply %s --confirm: %v\n%s", planID, err, out)
	}
}

// TestMCPStdio drives the real binary, `act mcp` over stdio, with the SDK's
// CommandTransport: validate → fix → plan → apply, and queued for an action
// a person must confirm, who then does.
func TestMCPStdio(t *testing.T) {
	s := newMCPSession(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := exec.Command(s.act, "--home", s.state, "mcp")
	c.Env = s.env()
	var stderr bytes.Buffer
	c.Stderr = &stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "act-stdio-test", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: c}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	call := func(tool string, args map[string]any) (bool, map[string]any) {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v\nstderr:\n%s", tool, err, stderr.String())
		}
		m, _ := res.StructuredContent.(map[string]any)
		return res.IsError, m
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) != 6 {
		t.Fatalf("tools/list: %v %v", err, tools)
	}
	good := s.descriptor("1c4b3a29-1807-4f6e-9d5c-4b3a29180701", "a.txt", "hello\n")
	bad := strings.Replace(good, `"risk_level":"LOW"`, `"risk_level":"SMALL"`, 1)
	isErr, out := call("act_validate", map[string]any{"descriptor": bad})
	if !isErr || out["status"] != "invalid" || !strings.Contains(fmt.Sprint(out["errors"]), "risk_level") {
		t.Fatalf("act_validate of an invalid descriptor: %v", out)
	}
	if isErr, out = call("act_validate", map[string]any{"descriptor": good}); isErr || out["status"] != "valid" {
		t.Fatalf("act_validate: %v", out)
	}
	_, out = call("act_plan", map[string]any{"descriptor": good})
	planID, _ := out["plan_id"].(string)
	if out["status"] != "planned" || planID == "" {
		t.Fatalf("act_plan: %v", out)
	}
	if isErr, out = call("act_apply", map[string]any{"plan_id": planID}); isErr || out["status"] != "succeeded" {
		t.Fatalf("act_apply: %v", out)
	}
	if b, err := os.ReadFile(filepath.Join(s.proj, "a.txt")); err != nil || string(b) != "hello\n" {
		t.Fatalf("a.txt: %q %v", b, err)
	}

	_, out = call("act_plan", map[string]any{"descriptor": s.confirmModeDescriptor("1c4b3a29-1807-4f6e-9d5c-4b3a29180702", "b.txt")})
	planID, _ = out["plan_id"].(string)
	if out["status"] != "planned" {
		t.Fatalf("act_plan: %v", out)
	}
	if isErr, out = call("act_apply", map[string]any{"plan_id": planID}); isErr || out["status"] != "queued" || out["plan_id"] != planID {
		t.Fatalf("act_apply of a confirm-mode plan: %v", out)
	}
	if _, err := os.Stat(filepath.Join(s.proj, "b.txt")); err == nil {
		t.Fatal("a confirm-mode plan was promoted by the agent")
	}
	s.confirm(t, planID)
	if _, err := os.Stat(filepath.Join(s.proj, "b.txt")); err != nil {
		t.Fatalf("after the person's confirmation: %v", err)
	}
	if _, out = call("act_status", map[string]any{"id": planID}); out["state"] != "applied" {
		t.Errorf("act_status: %v", out)
	}
	if err := cs.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	if err := c.Wait(); err != nil && !strings.Contains(err.Error(), "Wait was already called") {
		t.Errorf("act mcp exited: %v\n%s", err, stderr.String())
	}
}

// inspector returns the MCP Inspector's command, installed by .ci/run.
func inspector(t *testing.T) string {
	p, err := filepath.Abs(".ci/node/node_modules/.bin/mcp-inspector")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Skip("the MCP Inspector is not installed: run .ci/run, or npm install --prefix .ci/node @modelcontextprotocol/inspector@2.12.0")
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed: the MCP Inspector needs it")
	}
	return p
}

// TestMCPInspector is an agent-like session driven by a client nobody here
// wrote: the MCP Inspector's CLI mode (npm @modelcontextprotocol/inspector).
func TestMCPInspector(t *testing.T) {
	insp := inspector(t)
	s := newMCPSession(t)
	run := func(args ...string) map[string]any {
		t.Helper()
		argv := append([]string{"--cli", s.act, "--home", s.state, "mcp", "-e", "ACT_TEST_NOW=" + s.now.Format(time.RFC3339)}, args...)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		c := exec.CommandContext(ctx, insp, argv...)
		c.Env = s.env()
		c.Dir = t.TempDir()
		var stdout, stderr bytes.Buffer
		c.Stdout, c.Stderr = &stdout, &stderr
		// The inspector exits non-zero for a result with isError; the
		// result is on stdout all the same.
		runErr := c.Run()
		var m map[string]any
		if err := json.Unmarshal(stdout.Bytes(), &m); err != nil {
			t.Fatalf("mcp-inspector %s: %v (%v)\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, runErr, stdout.String(), stderr.String())
		}
		return m
	}
	// structured is a tools/call answer's structured content.
	structured := func(m map[string]any) (bool, map[string]any) {
		t.Helper()
		sc, ok := m["structuredContent"].(map[string]any)
		if !ok {
			t.Fatalf("no structuredContent in %v", m)
		}
		isErr, _ := m["isError"].(bool)
		return isErr, sc
	}
	callTool := func(tool string, args ...string) (bool, map[string]any) {
		argv := []string{"--method", "tools/call", "--tool-name", tool}
		for _, a := range args {
			argv = append(argv, "--tool-arg", a)
		}
		return structured(run(argv...))
	}

	list := run("--method", "tools/list")
	var names []string
	for _, tool := range list["tools"].([]any) {
		names = append(names, tool.(map[string]any)["name"].(string))
	}
	if got := strings.Join(names, " "); got != "act_apply act_plan act_rollback act_schema act_status act_validate" {
		t.Errorf("tools: %s", got)
	}

	// The agent's first try has a mistake; it reads the rule ids and fixes it.
	good := s.descriptor("2c4b3a29-1807-4f6e-9d5c-4b3a29180701", "a.txt", "hello\n")
	bad := strings.Replace(good, `"path":"`+s.proj+`/a.txt"}`, `"path":"proj/a.txt"}`, 1)
	isErr, out := callTool("act_validate", "descriptor="+bad)
	var rules []string
	for _, e := range out["errors"].([]any) {
		rules = append(rules, e.(map[string]any)["rule"].(string))
	}
	if !isErr || out["status"] != "invalid" || !regexp.MustCompile(`path\.not-absolute`).MatchString(strings.Join(rules, " ")) {
		t.Fatalf("act_validate of a relative path: %v (rules %v)", out, rules)
	}
	if isErr, out = callTool("act_validate", "descriptor="+good); isErr || out["status"] != "valid" {
		t.Fatalf("act_validate of the fixed descriptor: %v", out)
	}
	_, out = callTool("act_plan", "descriptor="+good)
	planID, _ := out["plan_id"].(string)
	if out["status"] != "planned" || !strings.Contains(fmt.Sprint(out["diff"]), "+hello") {
		t.Fatalf("act_plan: %v", out)
	}
	if isErr, out = callTool("act_apply", idArg("plan_id", planID)); isErr || out["status"] != "succeeded" {
		t.Fatalf("act_apply: %v", out)
	}
	if b, err := os.ReadFile(filepath.Join(s.proj, "a.txt")); err != nil || string(b) != "hello\n" {
		t.Fatalf("a.txt after act_apply: %q %v", b, err)
	}

	// A confirm-mode action: queued, promoted only by the person.
	_, out = callTool("act_plan", "descriptor="+s.confirmModeDescriptor("2c4b3a29-1807-4f6e-9d5c-4b3a29180702", "b.txt"))
	planID, _ = out["plan_id"].(string)
	if out["status"] != "planned" {
		t.Fatalf("act_plan of the confirm-mode action: %v", out)
	}
	// An agent that tries to confirm is refused by the schema.
	if m := run("--method", "tools/call", "--tool-name", "act_apply", "--tool-arg", idArg("plan_id", planID), "--tool-arg", "confirm=true"); m["isError"] != true {
		t.Fatalf("act_apply with confirm=true: %v", m)
	}
	isErr, out = callTool("act_apply", idArg("plan_id", planID))
	if isErr || out["status"] != "queued" || !strings.Contains(fmt.Sprint(out["next"]), "act apply "+planID+" --confirm") {
		t.Fatalf("act_apply of the confirm-mode plan: %v", out)
	}
	if _, err := os.Stat(filepath.Join(s.proj, "b.txt")); err == nil {
		t.Fatal("the confirm-mode plan was promoted by the agent")
	}
	if _, out = callTool("act_status", "id="+planID); out["state"] != "pending" {
		t.Errorf("act_status of the queued plan: %v", out)
	}
	s.confirm(t, planID)
	if b, err := os.ReadFile(filepath.Join(s.proj, "b.txt")); err != nil || !strings.Contains(string(b), "made by a command") {
		t.Fatalf("b.txt after the person's confirmation: %q %v", b, err)
	}
}

// TestMCPStdioNobody is TestMCPStdio as an ordinary user.
func TestMCPStdioNobody(t *testing.T) { asNobody(t, "TestMCPStdio") }

// TestMCPStdioHugeMessage: a 100 MiB message is not read whole: act mcp
// answers it with an error once it has seen its end, having kept at most
// 8 MiB of it and planned nothing, and the session goes on.
func TestMCPStdioHugeMessage(t *testing.T) {
	s := newMCPSession(t)
	r := startRawMCP(t, s)
	r.send(t, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if m := r.next(t, "initialize"); m["id"] != float64(1) || m["result"] == nil {
		t.Fatalf("initialize: %v", m)
	}
	r.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	// Written beside, so that an act mcp that stops reading fails the
	// test rather than blocking it.
	go func() {
		io.WriteString(r.in, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"act_validate","arguments":{"descriptor":"`)
		chunk := bytes.Repeat([]byte("a"), 1<<20)
		for i := 0; i < 100; i++ {
			if _, err := r.in.Write(chunk); err != nil {
				return
			}
		}
		io.WriteString(r.in, "\"}}}\n")
	}()
	wantError(t, r.next(t, "a 100 MiB message"), "a 100 MiB message", -32600, nil)
	r.send(t, `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`)
	if m := r.next(t, "tools/list"); m["id"] != float64(3) || m["result"] == nil {
		t.Fatalf("tools/list after a 100 MiB message: %v", m)
	}
	r.in.Close()
	if err := r.c.Wait(); err != nil {
		t.Fatalf("act mcp: %v\n%s", err, r.stderr.String())
	}
	if !strings.Contains(r.stderr.String(), "longer than 8 MiB") {
		t.Errorf("act mcp logged nothing of the refused message:\n%s", r.stderr.String())
	}
	if ru, ok := r.c.ProcessState.SysUsage().(*syscall.Rusage); ok && ru.Maxrss > 96<<10 {
		t.Errorf("act mcp peaked at %d MiB for a message it refused", ru.Maxrss>>10)
	}
	// Nothing is left in plans/: no plan, and the plan directory the
	// server made ahead is removed as it ends.
	if ents, _ := os.ReadDir(filepath.Join(s.state, "plans")); len(ents) > 0 {
		t.Errorf("plans/ holds %v after the session", ents)
	}
}

// idArg passes an id to the Inspector as a JSON string: it reads a bare
// value as a number when it can, and a hex id such as 854751e358967319
// looks like one.
func idArg(key, id string) string { return key + "=" + strconv.Quote(id) }

// rawMCP is a session with `act mcp` spoken line by line, as a client
// with a bug in it would.
type rawMCP struct {
	c      *exec.Cmd
	in     io.WriteCloser
	lines  chan []byte
	stderr bytes.Buffer
}

func startRawMCP(t *testing.T, s *mcpSession) *rawMCP {
	t.Helper()
	r := &rawMCP{c: exec.Command(s.act, "--home", s.state, "mcp"), lines: make(chan []byte, 16)}
	r.c.Env = s.env()
	r.c.Stderr = &r.stderr
	var err error
	if r.in, err = r.c.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := r.c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := r.c.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(r.lines)
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			r.lines <- append([]byte(nil), sc.Bytes()...)
		}
	}()
	t.Cleanup(func() {
		r.in.Close()
		r.c.Process.Kill()
		r.c.Wait()
	})
	return r
}

func (r *rawMCP) send(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(r.in, line+"\n"); err != nil {
		t.Fatalf("write %.80q: %v\nstderr:\n%s", line, err, r.stderr.String())
	}
}

// next is the next message act mcp writes; the session must still be
// there to write it.
func (r *rawMCP) next(t *testing.T, after string) map[string]any {
	t.Helper()
	select {
	case b, ok := <-r.lines:
		if !ok {
			r.c.Wait()
			t.Fatalf("act mcp ended the session after %.80q: %v\nstderr:\n%s", after, r.c.ProcessState, r.stderr.String())
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("act mcp wrote %q after %.80q: %v", b, after, err)
		}
		return m
	case <-time.After(2 * time.Minute):
		t.Fatalf("hung: no answer to %.80q in 2 minutes\nstderr:\n%s", after, r.stderr.String())
	}
	return nil
}

// wantError checks that m is a JSON-RPC error answer of code to id.
func wantError(t *testing.T, m map[string]any, after string, code int, id any) {
	t.Helper()
	e, _ := m["error"].(map[string]any)
	if m["jsonrpc"] != "2.0" || e == nil || e["code"] != float64(code) || m["id"] != id || e["message"] == "" {
		t.Errorf("answer to %.80q: %v; want error %d with id %v", after, m, code, id)
	}
}

// TestMCPStdioBadFrames: a line that is not JSON, or JSON that is not a
// JSON-RPC message, or one too big, is answered with a JSON-RPC error and
// the session goes on: the next request is answered.
func TestMCPStdioBadFrames(t *testing.T) {
	s := newMCPSession(t)
	r := startRawMCP(t, s)
	r.send(t, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if m := r.next(t, "initialize"); m["id"] != float64(1) || m["result"] == nil {
		t.Fatalf("initialize: %v", m)
	}
	r.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	for _, c := range []struct {
		line string
		code int
		id   any
	}{
		{"this is not json", -32700, nil},
		{`{"jsonrpc":"2.0","id":2,"method":"tools/li`, -32700, nil},
		{`[]`, -32600, nil},
		{`[{"jsonrpc":"2.0","id":3,"method":"tools/list"}]`, -32600, nil},
		{`42`, -32600, nil},
		{`"tools/list"`, -32600, nil},
		{`null`, -32600, nil},
		{`{}`, -32600, nil},
		{`{"jsonrpc":"1.0","id":4,"method":"tools/list"}`, -32600, float64(4)},
		{`{"jsonrpc":"2.0","id":"five"}`, -32600, "five"},
		{`{"jsonrpc":"2.0","id":{"x":1},"method":"tools/list"}`, -32600, nil},
		{`{"jsonrpc":"2.0","id":6,"method":"tools/list"} {"jsonrpc":"2.0","id":7,"method":"tools/list"}`, -32700, nil},
		{"{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"tools/list\"\r", -32700, nil},
	} {
		r.send(t, c.line)
		wantError(t, r.next(t, c.line), c.line, c.code, c.id)
	}
	// A line longer than 8 MiB is skipped to its end, not read whole.
	huge := `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"act_validate","arguments":{"descriptor":"` + strings.Repeat("a", 9<<20) + `"}}}`
	r.send(t, huge)
	wantError(t, r.next(t, "a 9 MiB line"), "a 9 MiB line", -32600, nil)
	// Blank lines are nothing, and a CRLF line is a line.
	r.send(t, "")
	r.send(t, "{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":\"tools/list\"}\r")
	m := r.next(t, "tools/list")
	res, _ := m["result"].(map[string]any)
	tools, _ := res["tools"].([]any)
	if m["id"] != float64(10) || len(tools) != 6 {
		t.Fatalf("tools/list after the bad frames: %v", m)
	}
	r.in.Close()
	if err := r.c.Wait(); err != nil {
		t.Errorf("act mcp after the client closed: %v\n%s", err, r.stderr.String())
	}
}
