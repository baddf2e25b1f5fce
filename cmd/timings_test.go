package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/act-project/act/internal/timings"
)

// timingsFixture is act run in this process with its own HOME and state
// dir, and a short COMMAND_EXECUTION descriptor of `true` in a project.
type timingsFixture struct {
	env      func(out, errw *bytes.Buffer) *Env
	desc     string
	stateDir string
}

func newTimingsFixture(t *testing.T) *timingsFixture {
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	proj := filepath.Join(home, "proj")
	if err := os.MkdirAll(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	f := &timingsFixture{stateDir: filepath.Join(dir, ".act"), desc: filepath.Join(dir, "d.json")}
	vars := map[string]string{"HOME": home, "ACT_HOME": f.stateDir, "PATH": "/usr/bin:/bin"}
	f.env = func(out, errw *bytes.Buffer) *Env {
		env := DefaultEnv(Stdio{In: strings.NewReader(""), Out: out, Err: errw})
		env.Getenv = func(k string) string { return vars[k] }
		return env
	}
	d := map[string]any{
		"intent_summary": "Run true.",
		"action_type":    "COMMAND_EXECUTION",
		"risk_level":     "LOW",
		"scope": map[string]any{"filesystem": map[string]any{"paths": []any{proj}, "recursive": true},
			"network": map[string]any{"required": false}, "ui": map[string]any{"required": false}},
		"resources":     map[string]any{"max_cpu_ms": 2000, "max_memory_mb": 64, "max_disk_mb": 4, "max_duration_ms": 60000},
		"preconditions": map[string]any{"paths_exist": []any{}, "network_available": false, "user_idle": false},
		"effects":       map[string]any{"filesystem": map[string]any{"create": []any{}, "modify": []any{}, "delete": []any{}}, "network": false, "system_state_change": false},
		"sandbox":       map[string]any{"required": true, "allow_network": false, "max_runs": 100},
		"rollback":      map[string]any{"supported": true, "rollback_scope": "declared_effects_only"},
		"confirmation":  map[string]any{"required": false, "reason": "", "cooldown_on_repeat": false},
		"audit":         map[string]any{"log": true, "log_level": "SUMMARY", "retain_days": 30},
		"operation":     map[string]any{"argv": []any{"true"}, "workdir": proj},
	}
	b, _ := json.Marshal(d)
	if err := os.WriteFile(f.desc, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *timingsFixture) run(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errw bytes.Buffer
	code := MainEnv(append([]string{"act"}, args...), f.env(&out, &errw))
	return out.String(), errw.String(), code
}

// TestTimings: act plan --timings prints the phases of the decision on
// stderr, from the start-up to the rendering, the sandbox's own and the
// record's fsync among them (the log's first record is made durable on its
// own); with --json they are its timings array
// instead, nested phases under theirs; without the flag, neither.
func TestTimings(t *testing.T) {
	f := newTimingsFixture(t)
	out, errOut, code := f.run(t, "plan", f.desc, "--timings")
	if code != 0 {
		t.Fatalf("act plan --timings: exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"act: timings", "start-up", "schema (CUE)", "sandbox: mounts", "landlock", "record: planned", "fdatasync", "render", "total"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("act plan --timings: no %q on stderr:\n%s", want, errOut)
		}
	}
	if strings.Contains(out, "timings") {
		t.Errorf("act plan --timings: the table on stdout:\n%s", out)
	}

	out, errOut, code = f.run(t, "--json", "plan", "--timings", f.desc)
	if code != 0 {
		t.Fatalf("act --json plan --timings: exit %d\n%s%s", code, out, errOut)
	}
	var res struct {
		Timings []timings.Phase `json:"timings"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(errOut, "act: timings") {
		t.Errorf("--json --timings printed the table too:\n%s", errOut)
	}
	depth := map[string]int{}
	parent := map[string]string{}
	var stack []string
	for _, p := range res.Timings {
		stack = append(stack[:p.Depth], p.Name)
		depth[p.Name] = p.Depth
		if p.Depth > 0 {
			parent[p.Name] = stack[p.Depth-1]
		}
		if p.Ms < 0 || p.StartMs < 0 {
			t.Errorf("phase %+v", p)
		}
	}
	// The log's first record (the table's plan) was made durable on its
	// own; this plan's record is deferred (docs/audit.md, "Durability").
	if _, ok := parent["fdatasync"]; ok {
		t.Errorf("--json timings: the second planned record was synced on its own")
	}
	for name, want := range map[string]string{"schema (CUE)": "check", "short form expanded": "check", "operations": "dry run", "write": "record: planned", "record: planned": "save the plan, beside its record", "landlock": "sandbox: run"} {
		if parent[name] != want {
			t.Errorf("--json timings: %q is under %q, want under %q (%+v)", name, parent[name], want, res.Timings)
		}
	}
	if _, ok := depth["start-up (exec, runtime, package init)"]; !ok {
		t.Errorf("--json timings: no start-up: %+v", res.Timings)
	}

	out, errOut, code = f.run(t, "--json", "plan", f.desc)
	if code != 0 || strings.Contains(out, `"timings"`) || strings.Contains(errOut, "timings") {
		t.Errorf("act --json plan without --timings: exit %d, timings reported:\n%s%s", code, out, errOut)
	}
}

// TestWantsTimings: --timings is act's flag before or after the command
// word, but not in the command line act run runs, nor after "--".
func TestWantsTimings(t *testing.T) {
	for args, want := range map[string]bool{
		"act --timings plan d":           true,
		"act plan d --timings":           true,
		"act run --timings sh -c true":   true,
		"act run sh -c true --timings":   false,
		"act run -- sh --timings":        false,
		"act plan -- --timings":          false,
		"act hook claude-code --timings": true,
		"act plan d":                     false,
	} {
		if got := wantsTimings(strings.Fields(args)); got != want {
			t.Errorf("wantsTimings(%s) = %v, want %v", args, got, want)
		}
	}
}

// TestMCPTimings: act --timings mcp answers every tool with the phases of
// its call; without the flag, with none.
func TestMCPTimings(t *testing.T) {
	f := newMCPFixture(t)
	ctx := context.Background()
	d := map[string]any{"descriptor": "not: [a descriptor"}
	res, err := f.cs.CallTool(ctx, &mcp.CallToolParams{Name: "act_validate", Arguments: d})
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(res.StructuredContent); bytes.Contains(b, []byte(`"timings"`)) {
		t.Errorf("act mcp without --timings: %s", b)
	}
	ft := newMCPFixtureWith(t, true)
	res, err = ft.cs.CallTool(ctx, &mcp.CallToolParams{Name: "act_validate", Arguments: d})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(res.StructuredContent)
	var out struct {
		Timings []timings.Phase `json:"timings"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range out.Timings {
		names = append(names, p.Name)
	}
	if !slices.Contains(names, "parse") || !slices.Contains(names, "record: validate_blocked") {
		t.Errorf("act --timings mcp: act_validate's timings %q, want parse and its record", names)
	}
}
