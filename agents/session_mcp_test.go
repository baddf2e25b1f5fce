package agents

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpAgent is an MCP client agent connected to `act mcp`, which the person
// started with the machine's environment (its state dir and policy) in
// the project, as an agent's MCP configuration starts it.
type mcpAgent struct {
	cs     *mcp.ClientSession
	cmd    *exec.Cmd
	stderr *lockedBuffer
	ctx    context.Context
}

// lockedBuffer is a bytes buffer the server's stderr copier writes while
// the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startMCP starts `act mcp` in the project with the machine's environment
// and more flags (before mcp), and connects an MCP client to it.
func (m *agentMachine) startMCP(t *testing.T, flags ...string) *mcpAgent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), agentHang)
	t.Cleanup(cancel)
	act, err := exec.LookPath("act")
	if err != nil {
		t.Fatal(err)
	}
	c := exec.Command(act, append(flags, "mcp")...)
	c.Dir, c.Env = m.proj, append([]string{}, m.env...)
	a := &mcpAgent{cmd: c, stderr: &lockedBuffer{}, ctx: ctx}
	c.Stderr = a.stderr
	a.cs, err = mcp.NewClient(&mcp.Implementation{Name: "act-session-test", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: c}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		a.cs.Close()
		if t.Failed() {
			t.Logf("act mcp's stderr:\n%s", a.stderr.String())
		}
	})
	return a
}

// mcpAnswer is the structured answer of one of act's tools (docs/mcp.md,
// "The answer"), the fields this test reads.
type mcpAnswer struct {
	Status   string `json:"status"`
	ExitCode int    `json:"exit_code"`
	ActionID string `json:"action_id"`
	PlanID   string `json:"plan_id"`
	State    string `json:"state"`
	Reason   string `json:"reason"`
	Next     string `json:"next"`
	Changes  []struct {
		Path string `json:"path"`
		Kind string `json:"kind"`
	} `json:"changes"`
	Commands []struct {
		Argv     []string `json:"argv"`
		ExitCode int      `json:"exit_code"`
		Stdout   string   `json:"stdout"`
		Stderr   string   `json:"stderr"`
	} `json:"commands"`
	Errors   []mcpProblem `json:"errors"`
	Warnings []mcpProblem `json:"warnings"`
}

type mcpProblem struct {
	Rule, Field, Message string
}

// call calls tool with args and returns whether it is an error and its
// structured answer.
func (a *mcpAgent) call(t *testing.T, tool string, args map[string]any) (bool, mcpAnswer) {
	t.Helper()
	res, err := a.cs.CallTool(a.ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v\nact mcp's stderr:\n%s", tool, err, a.stderr.String())
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var ans mcpAnswer
	if err := json.Unmarshal(b, &ans); err != nil {
		t.Fatalf("%s: %v\n%s", tool, err, b)
	}
	t.Logf("%s: %s", tool, b)
	return res.IsError, ans
}

// planApply is the agent's loop (docs/mcp.md): act_plan the descriptor,
// then act_apply its plan. It returns both answers.
func (a *mcpAgent) planApply(t *testing.T, descriptor string) (plan, apply mcpAnswer) {
	t.Helper()
	isErr, plan := a.call(t, "act_plan", map[string]any{"descriptor": descriptor})
	if isErr || plan.Status != "planned" || plan.PlanID == "" {
		t.Fatalf("act_plan of\n%s\nanswered %+v", descriptor, plan)
	}
	isErr, apply = a.call(t, "act_apply", map[string]any{"plan_id": plan.PlanID})
	if isErr {
		t.Fatalf("act_apply %s: %+v", plan.PlanID, apply)
	}
	return plan, apply
}

// TestAgentSessionMCP: the session as an MCP client agent drives it over
// `act mcp`, in the project the person installed act's hook for (which
// makes it a workspace for every door, act mcp's included): the edits as
// short-form FILE_WRITEs, the commands as short-form COMMAND_EXECUTIONs
// (sh -c, in the project), each planned with act_plan and applied with
// act_apply. Everything but the ~/.bashrc write is applied with no one
// asked; each command's plan answers with what the command prints
// without act; the ~/.bashrc write is queued for a person.
func TestAgentSessionMCP(t *testing.T) {
	t.Parallel()
	m := newSessionMachine(t)
	m.must(t, nil, "act", "hook", "install", "claude-code", "--project", m.proj)
	before := hashTree(t, m.proj)
	a := m.startMCP(t)

	quote := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	var actions []string
	applied := func(what string, apply mcpAnswer) {
		t.Helper()
		if apply.Status != "succeeded" || apply.ActionID == "" {
			t.Fatalf("%s: act_apply answered %q (%s), want succeeded with no one asked: %+v", what, apply.Status, apply.Reason, apply)
		}
	}
	// The edits, as YAML text.
	_, apply := a.planApply(t, "action_type: FILE_WRITE\nintent_summary: Add Sub.\noperation:\n  path: "+filepath.Join(m.proj, sessionNewFile)+"\n  content: "+quote(sessionNewContent)+"\n")
	applied("the write of "+sessionNewFile, apply)
	actions = append(actions, apply.ActionID)
	_, apply = a.planApply(t, "action_type: FILE_WRITE\nintent_summary: Swap Add's operands.\noperation:\n  path: "+filepath.Join(m.proj, "calc.go")+"\n  edits: [{old: "+quote(sessionOld)+", new: "+quote(sessionNew)+"}]\n")
	applied("the edit of calc.go", apply)
	actions = append(actions, apply.ActionID)

	// Each command as the person's shell would run it after the same
	// edits, and over MCP as JSON text: the plan's commands[] hold what
	// it printed.
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
		wantOut, wantErr, err := plain.run(t, nil, "sh", "-c", c.command)
		if err != nil {
			t.Fatalf("%s without act: %v", c.command, err)
		}
		d, _ := json.Marshal(map[string]any{
			"action_type":    "COMMAND_EXECUTION",
			"intent_summary": "Run " + c.command,
			"operation":      map[string]any{"argv": []string{"sh", "-c", c.command}, "workdir": m.proj},
		})
		plan, apply := a.planApply(t, string(d))
		applied(c.command, apply)
		if len(plan.Commands) != 1 || plan.Commands[0].ExitCode != 0 {
			t.Fatalf("%s: act_plan's commands: %+v, want the one command, exit 0", c.command, plan.Commands)
		}
		gotOut, gotErr := plan.Commands[0].Stdout, plan.Commands[0].Stderr
		if c.command == sessionGoTest {
			gotOut, wantOut = sameGoTest(gotOut), sameGoTest(wantOut)
		}
		if strings.TrimSpace(gotOut) != strings.TrimSpace(wantOut) || strings.TrimSpace(gotErr) != strings.TrimSpace(wantErr) {
			t.Errorf("%s: act_plan answered stdout %q, stderr %q; without act %q, %q", c.command, gotOut, gotErr, wantOut, wantErr)
		}
		if (len(plan.Changes) > 0) != c.changes {
			t.Errorf("%s: act_plan's changes %+v, want changes: %v", c.command, plan.Changes, c.changes)
		}
		// The effects act derived for the command (the project/**) are
		// no promise: a command that changes nothing there, or deletes
		// nothing, is no warning to the agent.
		for _, ans := range []mcpAnswer{plan, apply} {
			if len(ans.Warnings) > 0 {
				t.Errorf("%s: warnings %+v, want none", c.command, ans.Warnings)
			}
		}
		if c.changes {
			actions = append(actions, apply.ActionID)
		}
	}

	// ~/.bashrc: a person's, so it waits.
	_, plan := a.call(t, "act_plan", map[string]any{"descriptor": "action_type: FILE_WRITE\nintent_summary: Add an alias.\noperation:\n  path: " + filepath.Join(m.home, ".bashrc") + "\n  content: " + quote(sessionBashrc) + "\n"})
	if plan.Status != "planned" {
		t.Fatalf("act_plan of the ~/.bashrc write: %+v", plan)
	}
	isErr, apply := a.call(t, "act_apply", map[string]any{"plan_id": plan.PlanID})
	if isErr || apply.Status != "queued" || apply.ExitCode != 7 || !strings.Contains(apply.Next, "apply "+plan.PlanID+" --confirm") {
		t.Fatalf("act_apply of the ~/.bashrc write: %+v, want queued for a person", apply)
	}
	if _, st := a.call(t, "act_status", map[string]any{"id": plan.PlanID}); st.State != "pending" {
		t.Errorf("act_status of the ~/.bashrc write: %+v, want pending", st)
	}
	// Asking again changes nothing.
	if _, again := a.call(t, "act_apply", map[string]any{"plan_id": plan.PlanID}); again.Status != "queued" {
		t.Errorf("act_apply of the ~/.bashrc write again: %+v, want queued", again)
	}
	if err := a.cs.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	if err := a.cmd.Wait(); err != nil && !strings.Contains(err.Error(), "Wait was already called") {
		t.Errorf("act mcp exited: %v\n%s", err, a.stderr.String())
	}
	sessionEnd(t, m, before, actions, 5)
}
