package cmd

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/act-project/act/audit"
	"github.com/act-project/act/doors/mcpserver"
	"github.com/act-project/act/internal/state"
)

// mcpFixture is act mcp's server (doors/mcpserver) over this process's
// host (mcpHost), in this process, connected to the SDK's own client over
// an in-memory transport, with its own HOME and state dir (ACT_HOME).
// The server's own tests are doors/mcpserver's; these are of what cmd
// gives it.
type mcpFixture struct {
	t          *testing.T
	env        *Env
	cs         *mcp.ClientSession
	home, proj string // HOME and a project directory in it
}

func newMCPFixture(t *testing.T) *mcpFixture { return newMCPFixtureWith(t, false) }

// newMCPFixtureWith is newMCPFixture, with timed calls (act --timings mcp).
func newMCPFixtureWith(t *testing.T, timed bool) *mcpFixture {
	t.Helper()
	dir := t.TempDir()
	f := &mcpFixture{t: t, home: filepath.Join(dir, "home")}
	f.proj = filepath.Join(f.home, "proj")
	if err := os.MkdirAll(f.proj, 0o755); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"HOME": f.home, "ACT_HOME": filepath.Join(dir, ".act")}
	f.env = DefaultEnv(Stdio{In: strings.NewReader(""), Out: io.Discard, Err: io.Discard})
	f.env.Getenv = func(k string) string { return vars[k] }
	ctx := context.Background()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := mcpserver.New(newMCPHost(f.env), mcpserver.Options{Version: Version, Timings: timed}).Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	f.cs, err = mcp.NewClient(&mcp.Implementation{Name: "act-test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.cs.Close() })
	return f
}

func (f *mcpFixture) stateDir() string { return f.env.Getenv("ACT_HOME") }

// mcpOutput is what these tests read of a tool's structured answer.
type mcpOutput struct {
	Status   string        `json:"status"`
	ExitCode int           `json:"exit_code"`
	PlanID   string        `json:"plan_id"`
	Mode     string        `json:"mode"`
	State    string        `json:"state"`
	Next     string        `json:"next"`
	Errors   []jsonProblem `json:"errors"`
}

// call calls tool with args and returns the result and its structured
// content decoded.
func (f *mcpFixture) call(ctx context.Context, tool string, args map[string]any) (*mcp.CallToolResult, mcpOutput) {
	f.t.Helper()
	res, err := f.cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		f.t.Fatalf("%s: protocol error: %v", tool, err)
	}
	var out mcpOutput
	if res.StructuredContent != nil {
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, &out); err != nil {
			f.t.Fatalf("%s: structured content: %v", tool, err)
		}
	}
	return res, out
}

// TestMCPHost: what act mcp's server gets of the process — the host policy
// read again on every call (a person's edit holds at the next), records
// naming the door, act's command lines naming the state dir that ACT_HOME
// chose — and a queued plan a person then confirms with act apply
// --confirm, as the CLI does.
func TestMCPHost(t *testing.T) {
	f := newMCPFixture(t)
	ctx := context.Background()
	d := map[string]any{
		"intent_summary": "Write the notes.",
		"action_type":    "FILE_WRITE",
		"risk_level":     "LOW",
		"scope": map[string]any{"filesystem": map[string]any{"paths": []any{f.proj}, "recursive": true},
			"network": map[string]any{"required": false}, "ui": map[string]any{"required": false}},
		"resources":     map[string]any{"max_cpu_ms": 2000, "max_memory_mb": 64, "max_disk_mb": 4, "max_duration_ms": 60000},
		"preconditions": map[string]any{"paths_exist": []any{}, "network_available": false, "user_idle": false},
		"sandbox":       map[string]any{"required": false, "allow_network": false, "max_runs": 1},
		"rollback":      map[string]any{"supported": true, "rollback_scope": "declared_effects_only"},
		"confirmation":  map[string]any{"required": false, "reason": "", "cooldown_on_repeat": false},
		"audit":         map[string]any{"log": true, "log_level": "SUMMARY", "retain_days": 30},
		"operation":     map[string]any{"path": filepath.Join(f.proj, "NOTES.md"), "content": "hello\n"},
	}
	if _, out := f.call(ctx, "act_validate", map[string]any{"descriptor": d}); out.Mode != "allow" {
		t.Fatalf("act_validate: mode %q, want allow", out.Mode)
	}
	_, p := f.call(ctx, "act_plan", map[string]any{"descriptor": d})
	if p.Status != "planned" {
		t.Fatalf("act_plan: %+v", p)
	}
	if err := os.MkdirAll(f.stateDir(), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.stateDir(), "policy.yaml"), []byte("modes: {types: {FILE_WRITE: confirm}}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, out := f.call(ctx, "act_validate", map[string]any{"descriptor": d}); out.Mode != "confirm" {
		t.Fatalf("act_validate after the policy edit: mode %q, want confirm", out.Mode)
	}
	_, out := f.call(ctx, "act_apply", map[string]any{"plan_id": p.PlanID})
	if out.Status != "queued" || !strings.Contains(out.Next, "act --home "+f.stateDir()+" apply "+p.PlanID+" --confirm") {
		t.Fatalf("act_apply after the policy edit: %+v", out)
	}
	found, err := audit.Find(state.Dir{Root: f.stateDir()}.Audit(), "", p.PlanID)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range found {
		shown, err := audit.Show(state.Dir{Root: f.stateDir()}.Audit(), int64(r.Seq), audit.VerifyOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if via := shown.Statement.Predicate.Via; via != mcpserver.Caller {
			t.Errorf("record %s of the plan via %q, want %q", r.Event, via, mcpserver.Caller)
		}
	}
	if len(found) < 2 {
		t.Errorf("records of the plan: %v; want planned and queued", found)
	}
	// The person confirms at the terminal.
	if err := runApply(ctx, f.env, p.PlanID, true); err != nil {
		t.Fatalf("act apply %s --confirm: %v", p.PlanID, err)
	}
	if _, out := f.call(ctx, "act_status", map[string]any{"id": p.PlanID}); out.State != "applied" {
		t.Errorf("act_status after the person's confirmation: %+v", out)
	}
}
