package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/act-project/act/audit"
	"github.com/act-project/act/doors"
	"github.com/act-project/act/gate"
	"github.com/act-project/act/internal/cgrouptest"
	"github.com/act-project/act/internal/document"
	"github.com/act-project/act/internal/state"
	"github.com/act-project/act/policy"
	"github.com/act-project/act/review"
	"github.com/act-project/act/sandbox/isolate"
)

// mcpFixture is an `act mcp` server in this process, connected to the SDK's
// own client over an in-memory transport, with its own HOME and state dir.
type mcpFixture struct {
	t          *testing.T
	host       *testHost
	cs         *mcp.ClientSession
	home, proj string // HOME and a project directory in it
}

// testHost is the act process of an mcpFixture, as cmd's act mcp is one
// (cmd's mcpHost): a gate under the policy read again on every call, and
// act's command lines naming the state dir. A door of its own is a
// person's at the command line (confirm, show).
type testHost struct {
	home       state.Dir
	envHome    string // $HOME
	policyFile atomic.Pointer[string]
}

func (h *testHost) Door(ctx context.Context) (*doors.Door, error) {
	var file string
	if f := h.policyFile.Load(); f != nil {
		file = *f
	}
	pol, _, err := policy.Load(policy.LoadOptions{Env: file, Home: h.home.Root})
	if err != nil {
		return nil, err
	}
	userHome, _ := policy.RealHome()
	actLine := func(args ...string) string {
		return review.ShellJoin(append([]string{"act", "--home", h.home.Root}, args...))
	}
	g := &gate.Gate{Home: h.home, Policy: pol, Now: time.Now, EnvHome: h.envHome, UserHome: userHome, ActLine: actLine}
	return &doors.Door{Gate: g, Review: review.Options{StateDir: h.home.Root, ActLine: actLine}, ActLine: actLine}, nil
}

func (h *testHost) Home() state.Dir { return h.home }

// setPolicy makes file the host policy, as $ACT_POLICY names one.
func (h *testHost) setPolicy(file string) { h.policyFile.Store(&file) }

func newMCPFixture(t *testing.T) *mcpFixture {
	t.Helper()
	return newMCPFixtureWith(t, nil)
}

// newMCPFixtureWith is newMCPFixture with the client's options.
func newMCPFixtureWith(t *testing.T, opts *mcp.ClientOptions) *mcpFixture {
	t.Helper()
	dir := t.TempDir()
	f := &mcpFixture{t: t, home: filepath.Join(dir, "home")}
	f.proj = filepath.Join(f.home, "proj")
	if err := os.MkdirAll(f.proj, 0o755); err != nil {
		t.Fatal(err)
	}
	f.host = &testHost{home: state.Dir{Root: filepath.Join(dir, ".act")}, envHome: f.home}
	ctx := context.Background()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := New(f.host, Options{Version: "test"}).Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	f.cs, err = mcp.NewClient(&mcp.Implementation{Name: "act-test", Version: "1"}, opts).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.cs.Close() })
	return f
}

func (f *mcpFixture) stateDir() string { return f.host.home.Root }

// confirm is a person's act apply PLAN_ID --confirm at the terminal: the
// gate's apply of the plan with --confirm's approval, as cmd's.
func (f *mcpFixture) confirm(ctx context.Context, planID string) error {
	door, err := f.host.Door(ctx)
	if err != nil {
		return err
	}
	e, err := door.Gate.Load(planID)
	if err != nil {
		return err
	}
	_, _, err = door.Gate.Apply(ctx, e, gate.NewApproval(gate.ViaFlag), nil, nil)
	return err
}

// show is act show PLAN_ID: the plan as a person reviews it (review.Plan).
func (f *mcpFixture) show(ctx context.Context, planID string) (string, error) {
	door, err := f.host.Door(ctx)
	if err != nil {
		return "", err
	}
	e, err := door.Gate.Load(planID)
	if err != nil {
		return "", err
	}
	return review.PlanText(e.Plan, e.State, door.Review), nil
}

// call calls tool with args and returns the result and its structured
// content decoded.
func (f *mcpFixture) call(ctx context.Context, tool string, args map[string]any) (*mcp.CallToolResult, toolOutput) {
	f.t.Helper()
	res, err := f.cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		f.t.Fatalf("%s: protocol error: %v", tool, err)
	}
	var out toolOutput
	if res.StructuredContent != nil {
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, &out); err != nil {
			f.t.Fatalf("%s: structured content: %v", tool, err)
		}
	}
	return res, out
}

// descriptor is a FILE_WRITE of name in the project (or, for
// COMMAND_EXECUTION, argv run there), created now.
type descOpts struct {
	id, name, content string
	confirm           bool
	command           []string // COMMAND_EXECUTION argv
	creates           []string // paths the command creates
	scope             string   // default: the project
	maxRuns           int
}

func (f *mcpFixture) descriptor(o descOpts) map[string]any {
	if o.scope == "" {
		o.scope = f.proj
	}
	if o.maxRuns == 0 {
		o.maxRuns = 1
	}
	d := map[string]any{
		"descriptor_version": "1.0",
		"action_id":          o.id,
		"created_at":         time.Now().UTC().Format(time.RFC3339),
		"created_by":         "ai",
		"intent_summary":     "A test action.",
		"action_type":        "FILE_WRITE",
		"risk_level":         "LOW",
		"scope": map[string]any{
			"filesystem": map[string]any{"paths": []any{o.scope}, "recursive": true},
			"network":    map[string]any{"required": false},
			"ui":         map[string]any{"required": false},
		},
		"resources":     map[string]any{"max_cpu_ms": 2000, "max_memory_mb": 64, "max_disk_mb": 4, "max_duration_ms": 60000},
		"preconditions": map[string]any{"paths_exist": []any{o.scope}, "network_available": false, "user_idle": false},
		"effects": map[string]any{
			"filesystem":          map[string]any{"create": []any{filepath.Join(o.scope, o.name)}, "modify": []any{}, "delete": []any{}},
			"network":             false,
			"system_state_change": false,
		},
		"sandbox":      map[string]any{"required": o.command != nil, "sandbox_type": "container", "allow_network": false, "max_runs": o.maxRuns},
		"rollback":     map[string]any{"supported": true, "rollback_type": "filesystem_snapshot", "rollback_scope": "declared_effects_only"},
		"confirmation": map[string]any{"required": o.confirm, "reason": "", "cooldown_on_repeat": false},
		"audit":        map[string]any{"log": true, "log_level": "SUMMARY", "retain_days": 30},
		"operation":    map[string]any{"path": filepath.Join(o.scope, o.name), "content": o.content, "mode": "0644"},
	}
	if o.confirm {
		d["confirmation"].(map[string]any)["reason"] = "a test wants a person"
	}
	if o.command != nil {
		d["action_type"] = "COMMAND_EXECUTION"
		argv := make([]any, len(o.command))
		for i, a := range o.command {
			argv[i] = a
		}
		d["operation"] = map[string]any{"argv": argv, "workdir": o.scope}
		creates := []any{}
		for _, c := range o.creates {
			creates = append(creates, c)
		}
		d["effects"].(map[string]any)["filesystem"] = map[string]any{"create": creates, "modify": []any{}, "delete": []any{}}
	}
	return d
}

func testUUID(n int) string { return fmt.Sprintf("5c4b3a29-1807-4f6e-9d5c-%012x", n) }

func TestMCPListTools(t *testing.T) {
	f := newMCPFixture(t)
	res, err := f.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	readOnly := map[string]bool{"act_schema": true, "act_validate": true, "act_status": true, "act_plan": false, "act_apply": false, "act_rollback": false}
	destructive := map[string]bool{"act_apply": true, "act_rollback": true, "act_plan": false}
	got := map[string]bool{}
	for _, tool := range res.Tools {
		got[tool.Name] = true
		if tool.Annotations == nil {
			t.Errorf("%s: no annotations", tool.Name)
			continue
		}
		if want, ok := readOnly[tool.Name]; !ok {
			t.Errorf("unexpected tool %s", tool.Name)
		} else if tool.Annotations.ReadOnlyHint != want {
			t.Errorf("%s: readOnlyHint %v, want %v", tool.Name, tool.Annotations.ReadOnlyHint, want)
		}
		if want, ok := destructive[tool.Name]; ok && (tool.Annotations.DestructiveHint == nil || *tool.Annotations.DestructiveHint != want) {
			t.Errorf("%s: destructiveHint %v, want %v", tool.Name, tool.Annotations.DestructiveHint, want)
		}
		if tool.OutputSchema == nil {
			t.Errorf("%s: no output schema", tool.Name)
		}
		// No tool takes anything a person decides: no argument of its
		// own (the descriptor's schema has confirmation, the agent's
		// request, in it).
		b, _ := json.Marshal(tool.InputSchema)
		var in struct {
			Properties           map[string]json.RawMessage `json:"properties"`
			AdditionalProperties *bool                      `json:"additionalProperties"`
		}
		if json.Unmarshal(b, &in) == nil && in.Properties["descriptor"] != nil {
			b = nil
			for k := range in.Properties {
				b = append(b, `"`+k...)
			}
			if in.AdditionalProperties != nil && !*in.AdditionalProperties {
				b = append(b, `"additionalProperties":false`...)
			}
		}
		for _, banned := range []string{"confirm", "force", "policy", "home", "approval", "deny"} {
			if strings.Contains(string(b), `"`+banned) {
				t.Errorf("%s: input schema mentions %q: %s", tool.Name, banned, b)
			}
		}
		if !strings.Contains(string(b), `"additionalProperties":false`) {
			t.Errorf("%s: input schema is not closed: %s", tool.Name, b)
		}
	}
	if len(got) != len(readOnly) {
		t.Errorf("tools %v, want %v", got, readOnly)
	}
	// No resource or prompt reaches the state dir (or anything else).
	if r, err := f.cs.ListResources(context.Background(), nil); err == nil && len(r.Resources) > 0 {
		t.Errorf("resources: %v", r.Resources)
	}
	if r, err := f.cs.ListResourceTemplates(context.Background(), nil); err == nil && len(r.ResourceTemplates) > 0 {
		t.Errorf("resource templates: %v", r.ResourceTemplates)
	}
	if _, err := f.cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "file://" + f.stateDir() + "/policy.yaml"}); err == nil {
		t.Error("read a file of the state dir as a resource")
	}
}

func TestMCPSchema(t *testing.T) {
	f := newMCPFixture(t)
	res, err := f.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "act_schema"})
	if err != nil || res.IsError {
		t.Fatalf("act_schema: %v %+v", err, res)
	}
	m := res.StructuredContent.(map[string]any)
	js, _ := m["json_schema"].(map[string]any)
	if js["properties"] == nil || !strings.Contains(m["guide"].(string), "COMMAND_EXECUTION") {
		t.Errorf("act_schema: no schema properties or guide: %v", m)
	}
}

// TestMCPTools drives every tool and its errors through the SDK's client.
func TestMCPTools(t *testing.T) {
	f := newMCPFixture(t)
	ctx := context.Background()
	valid := f.descriptor(descOpts{id: testUUID(1), name: "a.txt", content: "hello\n"})
	invalidText := "descriptor_version: \"1.0\"\naction_id: not-a-uuid\n"
	big := strings.Repeat("#", document.MaxSize+10)
	stateScoped := f.descriptor(descOpts{id: testUUID(2), name: "x", content: "x", scope: f.stateDir()})
	text, _ := json.Marshal(valid)

	for _, tc := range []struct {
		name      string
		tool      string
		args      map[string]any
		isError   bool
		status    string // "" when the schema refuses (no structured content)
		rule      string // a rule among the errors
		positions bool   // the errors carry line and column
	}{
		{"validate object", "act_validate", map[string]any{"descriptor": valid}, false, "valid", "", false},
		{"validate JSON text", "act_validate", map[string]any{"descriptor": string(text)}, false, "valid", "", false},
		{"validate invalid YAML", "act_validate", map[string]any{"descriptor": invalidText}, true, "invalid", "schema.", true},
		{"validate not YAML", "act_validate", map[string]any{"descriptor": "{: ["}, true, "invalid", "parse.", true},
		{"validate number", "act_validate", map[string]any{"descriptor": 42}, true, "", "", false},
		{"validate no descriptor", "act_validate", map[string]any{}, true, "", "", false},
		{"validate extra argument", "act_validate", map[string]any{"descriptor": valid, "policy": "/tmp/p.yaml"}, true, "", "", false},
		{"validate too large", "act_validate", map[string]any{"descriptor": big}, true, "invalid", "parse.too-large", true},
		{"validate state dir scope", "act_validate", map[string]any{"descriptor": stateScoped}, true, "invalid", "forbidden.state-dir", true},
		{"plan state dir scope", "act_plan", map[string]any{"descriptor": stateScoped}, true, "invalid", "forbidden.state-dir", true},
		{"apply confirm:true", "act_apply", map[string]any{"plan_id": "0123456789abcdef", "confirm": true}, true, "", "", false},
		{"apply malformed id", "act_apply", map[string]any{"plan_id": "xyz"}, true, "", "", false},
		{"apply path id", "act_apply", map[string]any{"plan_id": "../../../etc/passwd"}, true, "", "", false},
		{"apply unknown id", "act_apply", map[string]any{"plan_id": "0123456789abcdef"}, true, "not_found", "not-found", false},
		{"status path id", "act_status", map[string]any{"id": "../plans/0123456789abcdef"}, true, "", "", false},
		{"status unknown plan", "act_status", map[string]any{"id": "0123456789abcdef"}, true, "not_found", "not-found", false},
		{"status unknown action", "act_status", map[string]any{"id": testUUID(99)}, true, "not_found", "not-found", false},
		{"rollback force:true", "act_rollback", map[string]any{"action_id": testUUID(1), "force": true}, true, "", "", false},
		{"rollback path id", "act_rollback", map[string]any{"action_id": "../../x"}, true, "", "", false},
		{"rollback unknown", "act_rollback", map[string]any{"action_id": testUUID(98)}, true, "not_found", "not-found", false},
		{"unknown tool argument type", "act_status", map[string]any{"id": 7}, true, "", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, out := f.call(ctx, tc.tool, tc.args)
			if res.IsError != tc.isError {
				t.Fatalf("isError %v, want %v: %+v %+v", res.IsError, tc.isError, out, res.Content)
			}
			if out.Status != tc.status {
				t.Fatalf("status %q, want %q: %+v", out.Status, tc.status, out)
			}
			if tc.rule == "" {
				return
			}
			found := false
			for _, p := range out.Errors {
				if strings.HasPrefix(p.Rule, tc.rule) {
					found = true
					if tc.positions && (p.Line == 0 || p.Column == 0 || p.File != descriptorName) {
						t.Errorf("problem without a position: %+v", p)
					}
				}
			}
			if !found {
				t.Errorf("no %s problem in %+v", tc.rule, out.Errors)
			}
		})
	}
	// Nothing above planned or promoted anything.
	if _, err := os.Stat(filepath.Join(f.proj, "a.txt")); err == nil {
		t.Fatal("a.txt was created")
	}
	if entries, _ := os.ReadDir(filepath.Join(f.stateDir(), "plans")); len(entries) > 0 {
		t.Errorf("plans were saved: %v", entries)
	}
}

// TestMCPLifecycle: plan → apply → status → rollback of an allowed action,
// and queued for one that needs a person, who then confirms it as the
// command line does.
func TestMCPLifecycle(t *testing.T) {
	f := newMCPFixture(t)
	ctx := context.Background()
	target := filepath.Join(f.proj, "a.txt")

	res, out := f.call(ctx, "act_plan", map[string]any{"descriptor": f.descriptor(descOpts{id: testUUID(1), name: "a.txt", content: "hello\n"})})
	if res.IsError || out.Status != "planned" || len(out.PlanID) != 16 || out.Mode != "allow" {
		t.Fatalf("act_plan: %+v", out)
	}
	if !strings.Contains(out.Diff, "+hello") || out.Summary == nil || out.Summary.Create != 1 {
		t.Errorf("act_plan: diff %q, summary %+v", out.Diff, out.Summary)
	}
	if _, err := os.Stat(target); err == nil {
		t.Fatal("plan touched the tree")
	}
	planID := out.PlanID
	// An extra confirm:true is refused before anything happens.
	if res, _ := f.call(ctx, "act_apply", map[string]any{"plan_id": planID, "confirm": true}); !res.IsError {
		t.Fatal("act_apply took confirm:true")
	}
	if _, err := os.Stat(target); err == nil {
		t.Fatal("act_apply with confirm:true promoted")
	}
	res, out = f.call(ctx, "act_apply", map[string]any{"plan_id": planID})
	if res.IsError || out.Status != "succeeded" || out.State != "applied" {
		t.Fatalf("act_apply: %+v", out)
	}
	if b, err := os.ReadFile(target); err != nil || string(b) != "hello\n" {
		t.Fatalf("after apply: %q %v", b, err)
	}
	_, out = f.call(ctx, "act_apply", map[string]any{"plan_id": planID})
	if out.Status != "already_applied" && out.ExitCode != 0 {
		t.Errorf("second act_apply: %+v", out)
	}
	for _, id := range []string{planID, testUUID(1)} {
		res, out = f.call(ctx, "act_status", map[string]any{"id": id})
		if res.IsError || out.State != "applied" || len(out.Changes) != 1 || out.Summary == nil || out.Summary.Create != 1 {
			t.Errorf("act_status %s: %+v", id, out)
		}
	}
	res, out = f.call(ctx, "act_rollback", map[string]any{"action_id": testUUID(1)})
	if res.IsError || out.Status != "rolled_back" {
		t.Fatalf("act_rollback: %+v", out)
	}
	if _, err := os.Stat(target); err == nil {
		t.Fatal("rollback left a.txt")
	}
	_, out = f.call(ctx, "act_status", map[string]any{"id": testUUID(1)})
	if out.State != "rolled_back" {
		t.Errorf("act_status after rollback: %+v", out)
	}

	// confirmation.required: queued, the plan pending, the tree untouched;
	// the person's command names the server's state dir (the host's act
	// line), which the person's own environment does not.
	target = filepath.Join(f.proj, "b.txt")
	_, out = f.call(ctx, "act_plan", map[string]any{"descriptor": f.descriptor(descOpts{id: testUUID(2), name: "b.txt", content: "b\n", confirm: true})})
	if out.Status != "planned" {
		t.Fatalf("act_plan: %+v", out)
	}
	planID = out.PlanID
	for i := 0; i < 3; i++ { // asking again changes nothing
		res, out = f.call(ctx, "act_apply", map[string]any{"plan_id": planID})
		if res.IsError || out.Status != "queued" || out.ExitCode != 7 || out.PlanID != planID || out.State != "pending" ||
			!strings.Contains(out.Reason, "a test wants a person") || !strings.Contains(out.Next, "act --home "+f.stateDir()+" apply "+planID+" --confirm") {
			t.Fatalf("act_apply of a plan needing a person: %+v", out)
		}
		if len(out.Errors) != 1 || out.Errors[0].Rule != "confirm.required" {
			t.Errorf("queued errors: %+v", out.Errors)
		}
	}
	if _, err := os.Stat(target); err == nil {
		t.Fatal("a plan needing a person was promoted")
	}
	_, out = f.call(ctx, "act_status", map[string]any{"id": planID})
	if out.State != "pending" || len(out.NeedsConfirmation) == 0 || !strings.Contains(out.Next, "act --home "+f.stateDir()+" apply "+planID+" --confirm") {
		t.Errorf("act_status of the queued plan: %+v", out)
	}
	// The person confirms at the terminal.
	if err := f.confirm(ctx, planID); err != nil {
		t.Fatalf("act apply %s --confirm: %v", planID, err)
	}
	if b, err := os.ReadFile(target); err != nil || string(b) != "b\n" {
		t.Fatalf("after the person's confirmation: %q %v", b, err)
	}
	_, out = f.call(ctx, "act_status", map[string]any{"id": planID})
	if out.State != "applied" {
		t.Errorf("act_status after confirmation: %+v", out)
	}
}

// TestMCPPolicyReread: a person's edit of the policy takes effect at the
// next call of the running server.
func TestMCPPolicyReread(t *testing.T) {
	f := newMCPFixture(t)
	ctx := context.Background()
	d := f.descriptor(descOpts{id: testUUID(1), name: "a.txt", content: "a\n"})
	if _, out := f.call(ctx, "act_validate", map[string]any{"descriptor": d}); out.Mode != "allow" {
		t.Fatalf("mode %q, want allow", out.Mode)
	}
	_, out := f.call(ctx, "act_plan", map[string]any{"descriptor": d})
	planID := out.PlanID
	if err := os.MkdirAll(f.stateDir(), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.stateDir(), "policy.yaml"), []byte("modes: {types: {FILE_WRITE: confirm}}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, out := f.call(ctx, "act_validate", map[string]any{"descriptor": d}); out.Mode != "confirm" {
		t.Fatalf("after the policy edit: mode %q, want confirm", out.Mode)
	}
	// The plan was made under allow; apply decides now: queued.
	if _, out := f.call(ctx, "act_apply", map[string]any{"plan_id": planID}); out.Status != "queued" {
		t.Fatalf("act_apply after the policy edit: %+v", out)
	}
	if _, err := os.Stat(filepath.Join(f.proj, "a.txt")); err == nil {
		t.Fatal("promoted against the policy now")
	}
}

// TestMCPManyCalls: 1,000 calls in a loop are each answered, and leave no
// goroutines or plans behind.
func TestMCPManyCalls(t *testing.T) {
	f := newMCPFixture(t)
	ctx := context.Background()
	d := f.descriptor(descOpts{id: testUUID(1), name: "a.txt", content: "a\n"})
	before := runtime.NumGoroutine()
	for i := 0; i < 1000; i++ {
		tool, args := "act_validate", map[string]any{"descriptor": d}
		if i%2 == 1 {
			tool, args = "act_apply", map[string]any{"plan_id": fmt.Sprintf("%016x", i)}
		}
		res, out := f.call(ctx, tool, args)
		if (tool == "act_validate") == res.IsError || out.Status == "" {
			t.Fatalf("call %d (%s): %+v", i, tool, out)
		}
	}
	// The calls' goroutines end after their answers, each when it is
	// scheduled: a leak is one that never does (a liveness bound, not a
	// speed one).
	after := runtime.NumGoroutine()
	for deadline := time.Now().Add(time.Minute); after > before+10 && time.Now().Before(deadline); after = runtime.NumGoroutine() {
		time.Sleep(10 * time.Millisecond)
	}
	if after > before+10 {
		t.Errorf("goroutines grew from %d to %d", before, after)
	}
}

// TestMCPConcurrentAndCancel: while a sandboxed command runs, other calls
// are answered; cancelling the call kills the command.
func TestMCPConcurrentAndCancel(t *testing.T) {
	if err := isolate.Available(); err != nil {
		t.Skipf("commands cannot be isolated here: %v", err)
	}
	f := newMCPFixture(t)
	// A sleep only this test runs, to find it in /proc, and longer than
	// the test waits for anything (hang, below), under a wall clock cap
	// longer still: only the cancel ends it in time.
	const marker = "314.159"
	const hang = 2 * time.Minute // a liveness bound, not a speed one
	d := f.descriptor(descOpts{id: testUUID(1), command: []string{"sleep", marker}})
	d["resources"].(map[string]any)["max_duration_ms"] = 600000
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	var planErr error
	go func() {
		defer wg.Done()
		_, planErr = f.cs.CallTool(ctx, &mcp.CallToolParams{Name: "act_plan", Arguments: map[string]any{"descriptor": d}})
	}()
	// Wait for the command to run, then ask something else meanwhile.
	deadline := time.Now().Add(hang)
	for !sleeping(marker) {
		if time.Now().After(deadline) {
			cancel()
			wg.Wait()
			t.Fatalf("hung: the sandboxed sleep never ran (plan: %v)", planErr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	res, out := f.call(context.Background(), "act_status", map[string]any{"id": "0123456789abcdef"})
	if !res.IsError || out.Status != "not_found" {
		t.Errorf("act_status during a plan: %+v", out)
	}
	cancel()
	wg.Wait()
	if planErr == nil {
		t.Errorf("the cancelled call answered")
	}
	for deadline := time.Now().Add(hang); !time.Now().After(deadline) && sleeping(marker); {
		time.Sleep(20 * time.Millisecond)
	}
	if sleeping(marker) {
		t.Fatalf("the sandboxed command outlived its cancelled call by %v", hang)
	}
}

// sleeping reports whether a process runs "sleep marker".
func sleeping(marker string) bool {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err == nil && strings.HasPrefix(string(b), "sleep\x00"+marker) {
			return true
		}
	}
	return false
}

// TestMCPConcurrentPlans: calls of one session run at once; each action is
// planned and applied once, whole, whatever the order.
func TestMCPConcurrentPlans(t *testing.T) {
	f := newMCPFixture(t)
	ctx := context.Background()
	const n = 8
	var wg sync.WaitGroup
	errs := make(chan string, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("f%d.txt", i)
			d := f.descriptor(descOpts{id: testUUID(100 + i), name: name, content: name})
			res, err := f.cs.CallTool(ctx, &mcp.CallToolParams{Name: "act_plan", Arguments: map[string]any{"descriptor": d}})
			if err != nil || res.IsError {
				errs <- fmt.Sprintf("act_plan %d: %v %+v", i, err, res)
				return
			}
			id := res.StructuredContent.(map[string]any)["plan_id"]
			res, err = f.cs.CallTool(ctx, &mcp.CallToolParams{Name: "act_apply", Arguments: map[string]any{"plan_id": id}})
			if err != nil || res.IsError || res.StructuredContent.(map[string]any)["status"] != "succeeded" {
				errs <- fmt.Sprintf("act_apply %d: %v %+v", i, err, res.StructuredContent)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("f%d.txt", i)
		if b, err := os.ReadFile(filepath.Join(f.proj, name)); err != nil || string(b) != name {
			t.Errorf("%s: %q %v", name, b, err)
		}
	}
}

// TestMCPNobody runs the MCP tests above as an ordinary user (uid 65534),
// in a copy of this test binary: act mcp needs no privilege.
func TestMCPNobody(t *testing.T) {
	if os.Getenv("ACT_TEST_AS_NOBODY") != "" || testing.Short() {
		t.Skip("already an ordinary user, or -short")
	}
	if os.Geteuid() != 0 {
		t.Skip("not root: the tests above already ran as an ordinary user")
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("setpriv (util-linux) is not installed: cannot switch to an ordinary user")
	}
	dir, err := os.MkdirTemp("", "act-mcp-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "mcpserver.test")
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	// In a memory cgroup of its own, without which act refuses commands
	// with a memory cap (docs/sandbox-process.md).
	prefix, remove, err := cgrouptest.Delegate(65534, 65534)
	if err != nil {
		t.Skipf("cannot give uid 65534 a memory cgroup, without which its commands are refused: %v", err)
	}
	defer remove()
	args := append([]string{"--reuid=65534", "--regid=65534", "--clear-groups", "--"}, prefix...)
	c := exec.Command(setpriv, append(args, bin,
		"-test.run=^TestMCP(Tools|Lifecycle|PolicyReread|ConcurrentAndCancel|ConcurrentPlans)$", "-test.count=1", "-test.v")...)
	c.Dir = dir
	c.Env = append(os.Environ(), "TMPDIR="+dir, "HOME="+dir, "ACT_TEST_AS_NOBODY=1")
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("as nobody: %v\n%s", err, out)
	}
	if n := strings.Count(string(out), "\n--- PASS: TestMCP"); n != 5 {
		t.Fatalf("as nobody, %d of 5 tests passed:\n%s", n, out)
	}
	// The everyday loop with no set-up at all: no memory cgroup of its
	// own (the memory cap falls back to one per process).
	c = exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "--", bin,
		"-test.run=^TestMCPEverydayLoop$", "-test.count=1", "-test.v")
	c.Dir = dir
	c.Env = append(os.Environ(), "TMPDIR="+dir, "HOME="+dir, "ACT_TEST_AS_NOBODY=1")
	out, err = c.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestMCPEverydayLoop") {
		t.Fatalf("as nobody without a cgroup: %v\n%s", err, out)
	}
}

// frameRecorder is standard output that records each Write and notices
// two at once.
type frameRecorder struct {
	mu      sync.Mutex
	frames  []string
	busy    atomic.Int32
	overlap atomic.Bool
	wrote   chan struct{}
}

func (r *frameRecorder) Write(p []byte) (int, error) {
	if r.busy.Add(1) > 1 {
		r.overlap.Store(true)
	}
	for range 3 {
		runtime.Gosched() // let another writer in, if anything would
	}
	r.mu.Lock()
	r.frames = append(r.frames, string(p))
	r.mu.Unlock()
	r.busy.Add(-1)
	r.wrote <- struct{}{}
	return len(p), nil
}

// TestMCPFramesWhole: the errors the framing writes for bad lines and the
// SDK's answers share standard output, one whole frame per Write, never two
// at once.
func TestMCPFramesWhole(t *testing.T) {
	f := newMCPFixture(t)
	inR, inW := io.Pipe()
	out := &frameRecorder{wrote: make(chan struct{}, 1024)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- New(f.host, Options{}).Run(ctx, NewTransport(inR, out, io.Discard)) }()
	const n = 100
	var b strings.Builder
	b.WriteString(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}` + "\n")
	b.WriteString(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/list\"}\nnot json %d\n", i, i)
	}
	go io.WriteString(inW, b.String())
	for range 1 + 2*n {
		<-out.wrote
	}
	inW.Close()
	if err := <-done; err != nil && !isEOF(err) {
		t.Errorf("Run: %v", err)
	}
	if out.overlap.Load() {
		t.Error("two frames were written at once")
	}
	results, parseErrors := 0, 0
	for _, fr := range out.frames {
		var m map[string]any
		if !strings.HasSuffix(fr, "\n") || strings.Count(fr, "\n") != 1 || json.Unmarshal([]byte(fr), &m) != nil {
			t.Fatalf("not one whole frame: %.200q", fr)
		}
		switch {
		case m["result"] != nil:
			results++
		case m["error"].(map[string]any)["code"] == float64(-32700):
			parseErrors++
		}
	}
	if results != 1+n || parseErrors != n {
		t.Errorf("%d results and %d parse errors, want %d and %d", results, parseErrors, 1+n, n)
	}
}

// TestMCPReadOnlyNoRecord: act_schema, act_validate of a valid
// descriptor and act_status decide nothing and leave no audit record
// (docs/audit.md, "What is not a record"); a plan and a queued plan are
// records.
func TestMCPReadOnlyNoRecord(t *testing.T) {
	f := newMCPFixture(t)
	ctx := context.Background()
	records := func() int64 {
		t.Helper()
		r, err := audit.Verify(filepath.Join(f.stateDir(), "audit"), audit.VerifyOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return r.Records
	}
	good := f.descriptor(descOpts{id: testUUID(70), name: "a.txt", content: "a\n"})
	_, out := f.call(ctx, "act_plan", map[string]any{"descriptor": good})
	planned := out.PlanID
	_, out = f.call(ctx, "act_plan", map[string]any{"descriptor": f.descriptor(descOpts{id: testUUID(71), name: "b.txt", content: "b\n", confirm: true})})
	queued := out.PlanID
	if _, out = f.call(ctx, "act_apply", map[string]any{"plan_id": queued}); out.Status != "queued" {
		t.Fatalf("act_apply of a plan that needs a person: %+v", out)
	}
	before := records()
	if before != 3 {
		t.Fatalf("%d records after two plans and a queued apply, want 3", before)
	}
	f.call(ctx, "act_schema", nil)
	if _, out = f.call(ctx, "act_validate", map[string]any{"descriptor": good}); out.Status != "valid" {
		t.Fatalf("act_validate: %+v", out)
	}
	for _, id := range []string{planned, queued, testUUID(70), "0000000000000000", testUUID(99)} {
		f.call(ctx, "act_status", map[string]any{"id": id})
	}
	if after := records(); after != before {
		t.Errorf("the read-only tools left %d records", after-before)
	}
}

// TestMCPProgress: a client that gives act_plan a progress token gets the
// command's output as progress notifications while it runs, escaped.
func TestMCPProgress(t *testing.T) {
	if err := isolate.Available(); err != nil {
		t.Skipf("commands cannot be isolated here: %v", err)
	}
	var mu sync.Mutex
	var got []string
	f := newMCPFixtureWith(t, &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
		mu.Lock()
		got = append(got, req.Params.Message)
		mu.Unlock()
	}})
	d := f.descriptor(descOpts{id: testUUID(7), command: []string{"sh", "-c", `echo first; printf 'tab\there\n'; echo third >&2`}})
	params := &mcp.CallToolParams{Name: "act_plan", Arguments: map[string]any{"descriptor": d}}
	params.SetProgressToken("plan-1")
	res, err := f.cs.CallTool(context.Background(), params)
	if err != nil || res.IsError {
		t.Fatalf("act_plan: %v %+v", err, res)
	}
	mu.Lock()
	defer mu.Unlock()
	// stdout and stderr are two pipes: their lines interleave as they come.
	want := []string{"first", `tab\there`, "third"}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("progress messages %q, want %q", got, want)
	}
}

// TestMCPEverydayLoop is an agent's everyday loop over MCP, with no root
// set-up when TestMCPNobody runs it as uid 65534: an exact-match edit in
// the short form (LOW in the workspace: promoted at once), the tests run
// in the sandbox, a formatter graded by its diff (LOW: promoted at once),
// a clean-up that deletes and so waits for a person, and the person's
// review (the intent and the workspace-relative path in view) and apply
// at the terminal.
func TestMCPEverydayLoop(t *testing.T) {
	if err := isolate.Available(); err != nil {
		t.Skipf("commands cannot be isolated here: %v", err)
	}
	gofmt, err := exec.LookPath("gofmt")
	if err != nil {
		t.Skip("gofmt is not installed")
	}
	f := newMCPFixture(t)
	write := func(name, data string) {
		if err := os.WriteFile(filepath.Join(f.proj, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("greet.txt", "hello, wrld\n")
	write("greet.go", "package greet\n\nfunc Greet() string {   return \"hello\" }\n")
	short := func(intent, typ string, op map[string]any, effects map[string]any) map[string]any {
		d := map[string]any{
			"intent_summary": intent,
			"action_type":    typ,
			"risk_level":     "LOW",
			"scope": map[string]any{"filesystem": map[string]any{"paths": []any{f.proj}, "recursive": true},
				"network": map[string]any{"required": false}, "ui": map[string]any{"required": false}},
			"resources":     map[string]any{"max_cpu_ms": 20000, "max_memory_mb": 2048, "max_disk_mb": 64, "max_duration_ms": 60000},
			"preconditions": map[string]any{"paths_exist": []any{}, "network_available": false, "user_idle": false},
			"sandbox":       map[string]any{"required": typ == "COMMAND_EXECUTION", "allow_network": false, "max_runs": 1},
			"rollback":      map[string]any{"supported": true, "rollback_scope": "declared_effects_only"},
			"confirmation":  map[string]any{"required": false, "reason": "", "cooldown_on_repeat": false},
			"audit":         map[string]any{"log": true, "log_level": "SUMMARY", "retain_days": 30},
			"operation":     op,
		}
		if effects != nil {
			d["effects"] = effects
		}
		return d
	}
	ctx := context.Background()
	planApply := func(d map[string]any) (toolOutput, toolOutput) {
		t.Helper()
		_, p := f.call(ctx, "act_plan", map[string]any{"descriptor": d})
		if p.ExitCode != 0 {
			t.Fatalf("act_plan: %+v", p)
		}
		_, a := f.call(ctx, "act_apply", map[string]any{"plan_id": p.PlanID})
		return p, a
	}

	// The edit: exact match, short form, LOW in the workspace.
	_, a := planApply(short("Fix the typo in the greeting.", "FILE_WRITE",
		map[string]any{"path": filepath.Join(f.proj, "greet.txt"), "edits": []any{map[string]any{"old": "wrld", "new": "world"}}}, nil))
	if a.Status != "succeeded" {
		t.Fatalf("the edit: %+v", a)
	}
	if got, _ := os.ReadFile(filepath.Join(f.proj, "greet.txt")); string(got) != "hello, world\n" {
		t.Fatalf("greet.txt = %q", got)
	}
	none := map[string]any{"filesystem": map[string]any{"create": []any{}, "modify": []any{}, "delete": []any{}}, "network": false, "system_state_change": false}
	// The tests, in the sandbox: they pass, and change nothing.
	p, _ := planApply(short("Run the tests.", "COMMAND_EXECUTION",
		map[string]any{"argv": []any{"sh", "-c", `test "$(cat greet.txt)" = "hello, world"`}, "workdir": f.proj}, none))
	if len(p.Commands) != 1 || p.Commands[0].ExitCode != 0 {
		t.Fatalf("the tests: %+v", p)
	}
	// The formatter: graded by its diff (docs/risk.md, "Commands"), a
	// plain edit in the workspace is LOW: applied with no one asked.
	fmtd := map[string]any{"filesystem": map[string]any{"create": []any{}, "modify": []any{filepath.Join(f.proj, "greet.go")}, "delete": []any{}}, "network": false, "system_state_change": false}
	_, a = planApply(short("Format the Go code.", "COMMAND_EXECUTION",
		map[string]any{"argv": []any{gofmt, "-w", "greet.go"}, "workdir": f.proj}, fmtd))
	if a.Status != "succeeded" {
		t.Fatalf("the formatter's plan: %+v", a)
	}
	if got, _ := os.ReadFile(filepath.Join(f.proj, "greet.go")); !strings.Contains(string(got), "func Greet() string { return \"hello\" }") {
		t.Errorf("greet.go after the formatter = %q", got)
	}
	// A clean-up that deletes waits for a person.
	gone := map[string]any{"filesystem": map[string]any{"create": []any{}, "modify": []any{}, "delete": []any{filepath.Join(f.proj, "greet.txt")}}, "network": false, "system_state_change": false}
	p, a = planApply(short("Remove the greeting.", "COMMAND_EXECUTION",
		map[string]any{"argv": []any{"rm", "greet.txt"}, "workdir": f.proj}, gone))
	if a.Status != "queued" {
		t.Fatalf("the clean-up's plan: %+v", a)
	}
	// The person reviews it and applies it at the terminal.
	shown, err := f.show(ctx, p.PlanID)
	if err != nil {
		t.Fatalf("act show: %v", err)
	}
	for _, want := range []string{"Intent: Remove the greeting.", "greet.txt"} {
		if !strings.Contains(shown, want) {
			t.Errorf("act show lacks %q:\n%s", want, shown)
		}
	}
	if err := f.confirm(ctx, p.PlanID); err != nil {
		t.Fatalf("act apply --confirm: %v", err)
	}
	if _, err := os.Stat(filepath.Join(f.proj, "greet.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("greet.txt after the clean-up: %v", err)
	}
}

// TestMCPRefusalRecorded: a refusal through act mcp is the same signed
// record as through the CLI and the hooks (gate_doors.txtar):
// apply_refused, with the rule that refused it, naming its door.
func TestMCPRefusalRecorded(t *testing.T) {
	f := newMCPFixture(t)
	pol := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(pol, []byte("max_pending: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f.host.setPolicy(pol)
	ctx := context.Background()
	var plans []string
	for i := range 2 {
		_, p := f.call(ctx, "act_plan", map[string]any{"descriptor": f.descriptor(descOpts{id: testUUID(400 + i), name: fmt.Sprintf("f%d.txt", i), content: "x\n", confirm: true})})
		if p.Status != "planned" {
			t.Fatalf("act_plan %d: %s %+v", i, p.Status, p.Errors)
		}
		plans = append(plans, p.PlanID)
	}
	if _, out := f.call(ctx, "act_apply", map[string]any{"plan_id": plans[0]}); out.Status != "queued" {
		t.Fatalf("act_apply of the first: %s, want queued", out.Status)
	}
	if res, _ := f.call(ctx, "act_apply", map[string]any{"plan_id": plans[1]}); !res.IsError {
		t.Fatal("act_apply of a second plan past max_pending was not refused")
	}
	dir := state.Dir{Root: f.stateDir()}.Audit()
	found, err := audit.Find(dir, "", plans[1])
	if err != nil {
		t.Fatal(err)
	}
	var refused []*audit.Statement
	for _, r := range found {
		if r.Event != audit.EventApplyRefused {
			continue
		}
		shown, err := audit.Show(dir, int64(r.Seq), audit.VerifyOptions{})
		if err != nil {
			t.Fatal(err)
		}
		refused = append(refused, shown.Statement)
	}
	if len(refused) != 1 {
		t.Fatalf("records of the refused plan %v: want one apply_refused", found)
	}
	if p := refused[0].Predicate; p.Via != "mcp" || !slices.Contains(p.Rules, "policy.max-pending") {
		t.Errorf("apply_refused via %q rules %v; want via mcp, rule policy.max-pending", p.Via, p.Rules)
	}
}
