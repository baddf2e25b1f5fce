package mcpserver

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

// TestMCPDescriptorSchema: act_validate and act_plan publish the
// descriptor's JSON Schema as their input, the short form and YAML text
// included, so a model needs no other fetch.
func TestMCPDescriptorSchema(t *testing.T) {
	f := newMCPFixture(t)
	res, err := f.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, tool := range res.Tools {
		if tool.Name != "act_validate" && tool.Name != "act_plan" {
			continue
		}
		seen++
		b, _ := json.Marshal(tool.InputSchema)
		var s jsonschema.Schema
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatalf("%s: %v", tool.Name, err)
		}
		if s.Defs["Descriptor"] == nil || s.Defs["FileWrite"] == nil {
			t.Fatalf("%s: the input schema does not hold the descriptor's: %s", tool.Name, b)
		}
		r, err := s.Resolve(nil)
		if err != nil {
			t.Fatalf("%s: resolve: %v", tool.Name, err)
		}
		short := f.shortDescriptor("NOTES.md")
		for name, in := range map[string]any{
			"short object": map[string]any{"descriptor": short},
			"full object":  map[string]any{"descriptor": f.descriptor(descOpts{id: testUUID(1), name: "x", content: "x"})},
			"YAML text":    map[string]any{"descriptor": "action_type: FILE_READ\n"},
		} {
			if err := r.Validate(in); err != nil {
				t.Errorf("%s: %s does not match the published schema: %v", tool.Name, name, err)
			}
		}
		delete(short, "operation")
		if err := r.Validate(map[string]any{"descriptor": short}); err == nil {
			t.Errorf("%s: a descriptor without operation matches the published schema", tool.Name)
		}
	}
	if seen != 2 {
		t.Fatalf("saw %d descriptor tools, want 2", seen)
	}
}

// shortDescriptor is a short FILE_WRITE of name in the project: no
// descriptor_version, action_id, created_at, created_by, sandbox_type,
// rollback_type or effects.
func (f *mcpFixture) shortDescriptor(name string) map[string]any {
	return map[string]any{
		"intent_summary": "Write the notes.",
		"action_type":    "FILE_WRITE",
		"risk_level":     "LOW",
		"scope": map[string]any{
			"filesystem": map[string]any{"paths": []any{f.proj}, "recursive": true},
			"network":    map[string]any{"required": false},
			"ui":         map[string]any{"required": false},
		},
		"resources":     map[string]any{"max_cpu_ms": 2000, "max_memory_mb": 64, "max_disk_mb": 4, "max_duration_ms": 60000},
		"preconditions": map[string]any{"paths_exist": []any{}, "network_available": false, "user_idle": false},
		"sandbox":       map[string]any{"required": false, "allow_network": false, "max_runs": 1},
		"rollback":      map[string]any{"supported": true, "rollback_scope": "declared_effects_only"},
		"confirmation":  map[string]any{"required": false, "reason": "", "cooldown_on_repeat": false},
		"audit":         map[string]any{"log": true, "log_level": "SUMMARY", "retain_days": 30},
		"operation":     map[string]any{"path": filepath.Join(f.proj, name), "content": "hello\n"},
	}
}

// TestMCPShortForm: over MCP a short descriptor is stamped (a fresh
// action id each time) and plans and applies.
func TestMCPShortForm(t *testing.T) {
	f := newMCPFixture(t)
	ctx := context.Background()
	_, v1 := f.call(ctx, "act_validate", map[string]any{"descriptor": f.shortDescriptor("NOTES.md")})
	_, v2 := f.call(ctx, "act_validate", map[string]any{"descriptor": f.shortDescriptor("NOTES.md")})
	if v1.Status != "valid" || !actionIDRE().MatchString(v1.ActionID) || v1.ActionID == v2.ActionID {
		t.Fatalf("validate: %+v / %+v", v1, v2)
	}
	_, p := f.call(ctx, "act_plan", map[string]any{"descriptor": f.shortDescriptor("NOTES.md")})
	if p.Status != "planned" {
		t.Fatalf("plan: %+v", p)
	}
	_, a := f.call(ctx, "act_apply", map[string]any{"plan_id": p.PlanID})
	if a.Status != "succeeded" || !strings.Contains(a.Next, "act_rollback") || a.Content != "" {
		t.Fatalf("apply: %+v", a)
	}
}

// TestMCPFileReadContent: act_apply of a FILE_READ returns what it read,
// redacted, and no rollback hint (there is nothing to undo).
func TestMCPFileReadContent(t *testing.T) {
	f := newMCPFixture(t)
	ctx := context.Background()
	p := filepath.Join(f.proj, "notes.txt")
	if err := os.WriteFile(p, []byte("line one\ntoken ghp_0123456789abcdefghijABCDEFGHIJ012345\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	d := f.shortDescriptor("x")
	d["action_type"] = "FILE_READ"
	d["operation"] = map[string]any{"path": p}
	_, pl := f.call(ctx, "act_plan", map[string]any{"descriptor": d})
	if pl.Status != "planned" {
		t.Fatalf("plan: %+v", pl)
	}
	_, a := f.call(ctx, "act_apply", map[string]any{"plan_id": pl.PlanID})
	if a.Status != "succeeded" {
		t.Fatalf("apply: %+v", a)
	}
	if !strings.HasPrefix(a.Content, "line one\n") || strings.Contains(a.Content, "ghp_0123456789") || a.ContentCut {
		t.Errorf("content %q (cut %v): want the file, its token redacted", a.Content, a.ContentCut)
	}
	if strings.Contains(a.Next, "act_rollback") || strings.Contains(a.Next, "undoes") {
		t.Errorf("next %q offers to undo a read", a.Next)
	}

	// A file longer than 1 MiB comes back cut.
	big := strings.Repeat("abcdefghij\n", 110_000)
	if err := os.WriteFile(p, []byte(big), 0o644); err != nil {
		t.Fatal(err)
	}
	_, pl = f.call(ctx, "act_plan", map[string]any{"descriptor": d})
	_, a = f.call(ctx, "act_apply", map[string]any{"plan_id": pl.PlanID})
	if a.Status != "succeeded" || !a.ContentCut || len(a.Content) != 1<<20 {
		t.Errorf("big read: status %s, cut %v, %d bytes", a.Status, a.ContentCut, len(a.Content))
	}
}

// TestMCPGuideExample: the guide's example is a short descriptor act
// accepts, and the guide names the action types as the schema does.
func TestMCPGuideExample(t *testing.T) {
	f := newMCPFixture(t)
	rest, n := guide, 0
	for {
		i := strings.Index(rest, "in the short form\n{")
		if i < 0 {
			break
		}
		j := strings.Index(rest[i:], "\n}\n")
		if j < 0 {
			t.Fatal("a short-form example does not end")
		}
		var d map[string]any
		if err := json.Unmarshal([]byte(rest[i+len("in the short form\n"):i+j+2]), &d); err != nil {
			t.Fatalf("the guide's example is not JSON: %v", err)
		}
		rest = rest[i+j:]
		n++
		for _, k := range []string{"action_id", "created_at", "descriptor_version", "effects", "scope", "resources", "audit"} {
			if _, ok := d[k]; ok {
				t.Errorf("the guide's example %d is not short: it has %s", n, k)
			}
		}
		_, out := f.call(context.Background(), "act_validate", map[string]any{"descriptor": d})
		if out.Status != "valid" {
			t.Errorf("the guide's example %d: %+v", n, out)
		}
	}
	if n < 2 {
		t.Fatalf("the guide has %d short-form examples, want a file write and a command", n)
	}
	for _, w := range strings.Fields(strings.NewReplacer(",", " ", "(", " ", ")", " ", ".", " ").Replace(guide)) {
		if w == "COMPOSITE" {
			t.Error("the guide says COMPOSITE: the type is MULTI_STEP_COMPOSITE")
		}
	}
}
