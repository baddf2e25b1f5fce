package schema

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

var knownRules = []string{RuleUnknownField, RuleMissingField, RuleType, RuleEnum, RulePattern, RuleInvalid}

// jargon is CUE vocabulary that must never reach a user.
var jargon = []string{"disjunction", "incomplete", "_|_", "conflicting", "is not valid:", "matchN", "#"}

func compileJSONSchema(t testing.TB) *jsonschema.Schema {
	t.Helper()
	b, err := JSONSchema()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("descriptor.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("descriptor.schema.json")
	if err != nil {
		t.Fatalf("compile exported JSON Schema: %v", err)
	}
	return sch
}

// TestCorpus checks every corpus file with the CUE schema and with the
// exported JSON Schema (a real validator): both must give the verdict the
// file name announces.
func TestCorpus(t *testing.T) {
	sch := compileJSONSchema(t)
	files, err := filepath.Glob("testdata/corpus/*.json")
	if err != nil {
		t.Fatal(err)
	}
	var nValid, nInvalid int
	for _, f := range files {
		name := filepath.Base(f)
		want := strings.HasPrefix(name, "valid_")
		if want {
			nValid++
		} else if strings.HasPrefix(name, "invalid_") {
			nInvalid++
		} else {
			t.Errorf("%s: corpus files are named valid_* or invalid_*", name)
			continue
		}
		t.Run(strings.TrimSuffix(name, ".json"), func(t *testing.T) {
			doc := readCorpus(t, name)
			vs := ValidateDescriptor(doc)
			if got := len(vs) == 0; got != want {
				t.Errorf("ValidateDescriptor: valid = %v, want %v; violations:\n%s", got, want, formatViolations(vs))
			}
			for _, v := range vs {
				checkViolation(t, v)
			}

			b := mustRead(t, f)
			inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			jerr := sch.Validate(inst)
			if got := jerr == nil; got != want {
				t.Errorf("JSON Schema: valid = %v, want %v; error: %v", got, want, jerr)
			}
		})
	}
	if nValid < 25 || nInvalid < 40 {
		t.Errorf("corpus has %d valid and %d invalid files, want at least 25 and 40", nValid, nInvalid)
	}
}

func checkViolation(t *testing.T, v Violation) {
	t.Helper()
	if !slices.Contains(knownRules, v.Rule) {
		t.Errorf("%v: unknown rule %q", v.Path, v.Rule)
	}
	if v.Message == "" || strings.ToLower(v.Message[:1]) != v.Message[:1] || strings.HasSuffix(v.Message, ".") {
		t.Errorf("%v: message %q is not one lower-case sentence without a final period", v.Path, v.Message)
	}
	for _, j := range jargon {
		if strings.Contains(v.Message, j) {
			t.Errorf("%v: message %q contains CUE jargon %q", v.Path, v.Message, j)
		}
	}
}

func formatViolations(vs []Violation) string {
	var b strings.Builder
	for _, v := range vs {
		b.WriteString("  " + strings.Join(v.Path, ".") + " " + v.Rule + ": " + v.Message + "\n")
	}
	return b.String()
}

// TestViolations pins the exact violations of representative invalid
// descriptors.
func TestViolations(t *testing.T) {
	type rp struct {
		Rule string
		Path string
	}
	tests := []struct {
		file string
		want []rp
		// msgs, when set, pins the messages too (same order as want).
		msgs []string
	}{
		// effects are the agent's whole claim or none: never completed
		{file: "invalid_partial_effects.json", want: []rp{{RuleMissingField, "effects.filesystem.delete"}, {RuleMissingField, "effects.filesystem.modify"}},
			msgs: []string{"required field is missing", "required field is missing"}},
		{file: "invalid_missing_action_type.json", want: []rp{{RuleMissingField, "action_type"}}},
		{file: "invalid_missing_scope_recursive.json", want: []rp{{RuleMissingField, "scope.filesystem.recursive"}}},
		{file: "invalid_missing_operation.json", want: []rp{{RuleMissingField, "operation"}}},
		{file: "invalid_missing_operation_path.json", want: []rp{{RuleMissingField, "operation.path"}}},
		{file: "invalid_missing_steps.json", want: []rp{{RuleMissingField, "steps"}}},
		{file: "invalid_missing_step_operation.json", want: []rp{{RuleMissingField, "steps.0.operation"}}},
		{file: "invalid_missing_many.json", want: []rp{
			// all but the intent, the type and the operation may be
			// left out (the short form): act fills them in.
			{RuleMissingField, "intent_summary"}, {RuleMissingField, "operation"},
		}},
		{file: "invalid_unknown_top_field.json", want: []rp{{RuleUnknownField, "force"}}},
		{file: "invalid_unknown_scope_field.json", want: []rp{{RuleUnknownField, "scope.hosts"}},
			msgs: []string{"field not allowed; allowed fields are filesystem, network and ui"}},
		{file: "invalid_unknown_operation_field.json", want: []rp{{RuleUnknownField, "operation.cwd"}},
			msgs: []string{"field not allowed; allowed fields are argv, workdir, env, stdin and report_cwd"}},
		{file: "invalid_unknown_step_field.json", want: []rp{{RuleUnknownField, "steps.0.sandbox"}}},
		{file: "invalid_unknown_nested_step_operation_field.json", want: []rp{
			{RuleUnknownField, "steps.0.steps.0.steps.0.operation.follow_symlinks"}}},
		{file: "invalid_operation_in_composite.json", want: []rp{{RuleUnknownField, "operation"}},
			msgs: []string{"field not allowed: a MULTI_STEP_COMPOSITE has steps, not an operation"}},
		{file: "invalid_steps_in_file_read.json", want: []rp{{RuleUnknownField, "steps"}}},
		{file: "invalid_operation_shape_of_other_type.json", want: []rp{
			{RuleUnknownField, "operation.argv"}, {RuleMissingField, "operation.path"}, {RuleUnknownField, "operation.workdir"}}},
		{file: "invalid_file_write_both_contents.json", want: []rp{{RuleInvalid, "operation"}},
			msgs: []string{"must have exactly one of content, content_base64 or edits"}},
		{file: "invalid_file_write_no_content.json", want: []rp{{RuleInvalid, "operation"}}},
		{file: "invalid_file_write_content_not_string.json", want: []rp{{RuleType, "operation.content"}}},
		{file: "invalid_config_change_neither_set_nor_unset.json", want: []rp{{RuleInvalid, "operation"}},
			msgs: []string{"must have at least one of set or unset"}},
		{file: "invalid_resources_unlimited.json", want: []rp{{RuleType, "resources.max_cpu_ms"}},
			msgs: []string{"must be an integer, not a string"}},
		{file: "invalid_resources_fraction.json", want: []rp{{RuleType, "resources.max_memory_mb"}},
			msgs: []string{"must be an integer, not a number"}},
		{file: "invalid_scope_not_object.json", want: []rp{{RuleType, "scope"}},
			msgs: []string{"must be an object, not a string"}},
		{file: "invalid_audit_null.json", want: []rp{{RuleType, "audit"}}},
		{file: "invalid_path_item_not_string.json", want: []rp{{RuleType, "scope.filesystem.paths.1"}}},
		{file: "invalid_uuid_malformed.json", want: []rp{{RulePattern, "action_id"}},
			msgs: []string{`must be a UUID (8-4-4-4-12 hexadecimal digits), not "not-a-uuid"`}},
		{file: "invalid_uuid_number.json", want: []rp{{RuleType, "action_id"}}},
		{file: "invalid_timestamp_no_zone.json", want: []rp{{RulePattern, "created_at"}},
			msgs: []string{`must be an RFC 3339 timestamp such as 2025-01-02T15:04:05Z, not "2025-01-02T03:04:05"`}},
		{file: "invalid_descriptor_version_2.json", want: []rp{{RuleEnum, "descriptor_version"}},
			msgs: []string{`must be "1.0", not "2.0"`}},
		{file: "invalid_descriptor_version_number.json", want: []rp{{RuleType, "descriptor_version"}},
			msgs: []string{`must be "1.0", not an integer`}},
		{file: "invalid_risk_level_lowercase.json", want: []rp{{RuleEnum, "risk_level"}},
			msgs: []string{`must be one of "LOW", "MEDIUM", "HIGH" or "CRITICAL", not "low"`}},
		{file: "invalid_action_type_unknown.json", want: []rp{{RuleEnum, "action_type"}}},
		{file: "invalid_rollback_scope_partial.json", want: []rp{{RuleEnum, "rollback.rollback_scope"}}},
		{file: "invalid_network_method_post.json", want: []rp{{RuleEnum, "operation.method"}}},
		{file: "invalid_package_empty_list.json", want: []rp{{RuleInvalid, "operation.packages"}},
			msgs: []string{"must not be empty"}},
		{file: "invalid_intent_summary_empty.json", want: []rp{{RuleInvalid, "intent_summary"}},
			msgs: []string{"must not be empty"}},
		{file: "invalid_argv_string.json", want: []rp{{RuleType, "operation.argv"}},
			msgs: []string{"must be an array, not a string"}},
		{file: "invalid_steps_empty.json", want: []rp{{RuleInvalid, "steps"}}},
		{file: "invalid_step_not_object.json", want: []rp{{RuleType, "steps.0"}}},
		{file: "invalid_step_action_type_missing.json", want: []rp{{RuleMissingField, "steps.0.action_type"}}},
		{file: "invalid_step_risk_level_bad.json", want: []rp{{RuleEnum, "steps.0.risk_level"}}},
		{file: "invalid_step_wrong_operation_shape.json", want: []rp{
			{RuleMissingField, "steps.0.operation.from"}, {RuleUnknownField, "steps.0.operation.path"},
			{RuleMissingField, "steps.0.operation.to"}}},
		{file: "invalid_nested_step_empty_steps.json", want: []rp{{RuleInvalid, "steps.0.steps"}}},
		{file: "invalid_mode_three_digits.json", want: []rp{{RulePattern, "operation.mode"}}},
		{file: "invalid_sha256_uppercase.json", want: []rp{{RulePattern, "preconditions.sha256./home/user/project/go.sum"}}},
		{file: "invalid_verification_empty_command.json", want: []rp{{RuleInvalid, "verification.commands.0"}}},
		{file: "invalid_env_value_not_string.json", want: []rp{{RuleType, "operation.env.DEBUG"}}},
		{file: "invalid_ui_automation_not_object.json", want: []rp{{RuleType, "operation"}}},
		{file: "invalid_top_level_array.json", want: []rp{{RuleType, ""}},
			msgs: []string{"must be an object, not an array"}},
		{file: "invalid_several_errors.json", want: []rp{
			{RuleUnknownField, "extra"}, {RuleUnknownField, "operation.cwd"},
			{RuleType, "resources.max_cpu_ms"}, {RuleEnum, "risk_level"}}},
	}
	for _, tt := range tests {
		t.Run(strings.TrimSuffix(tt.file, ".json"), func(t *testing.T) {
			vs := ValidateDescriptor(readCorpus(t, tt.file))
			var got []rp
			var msgs []string
			for _, v := range vs {
				got = append(got, rp{v.Rule, strings.Join(v.Path, ".")})
				msgs = append(msgs, v.Message)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("ValidateDescriptor() mismatch (-want +got):\n%s\nall:\n%s", d, formatViolations(vs))
			}
			if tt.msgs != nil {
				if d := cmp.Diff(tt.msgs, msgs); d != "" {
					t.Errorf("messages mismatch (-want +got):\n%s", d)
				}
			}
		})
	}
}

// TestValidateDescriptorGoValues feeds values built in Go, not decoded from
// JSON: Go ints, nil and a document with every error kind at once.
func TestValidateDescriptorGoValues(t *testing.T) {
	doc := readCorpus(t, "valid_file_read.json").(map[string]any)
	doc["resources"].(map[string]any)["max_cpu_ms"] = 5 // a Go int
	if vs := ValidateDescriptor(doc); vs != nil {
		t.Errorf("int resource: got violations:\n%s", formatViolations(vs))
	}
	want := []Violation{{Rule: RuleType, Message: "must be an object, not null"}}
	if d := cmp.Diff(want, ValidateDescriptor(nil)); d != "" {
		t.Errorf("ValidateDescriptor(nil) mismatch (-want +got):\n%s", d)
	}
	odd := "/tmp/a \"b\"\\c\tü 0"
	doc["preconditions"].(map[string]any)["sha256"] = map[string]any{odd: "0", "0": strings.Repeat("a", 64)}
	want = []Violation{{
		Path:    []string{"preconditions", "sha256", odd},
		Rule:    RulePattern,
		Message: `must be a SHA-256 digest (64 lowercase hexadecimal digits), not "0"`,
	}}
	if d := cmp.Diff(want, ValidateDescriptor(doc)); d != "" {
		t.Errorf("sha256 mismatch (-want +got):\n%s", d)
	}
}

// TestDeepComposite checks that nesting beyond what the rules allow is
// still handled by the schema (depth is a Go rule).
func TestDeepComposite(t *testing.T) {
	step := map[string]any{
		"action_type": "FILE_READ",
		"effects":     readCorpus(t, "valid_file_read.json").(map[string]any)["effects"],
		"operation":   map[string]any{"path": "/home/user/project/x"},
	}
	for range 20 {
		step = map[string]any{
			"action_type": "MULTI_STEP_COMPOSITE",
			"effects":     step["effects"],
			"steps":       []any{step},
		}
	}
	doc := readCorpus(t, "valid_composite_two_steps.json").(map[string]any)
	doc["steps"] = []any{step}
	if vs := ValidateDescriptor(doc); vs != nil {
		t.Errorf("depth 22: got violations:\n%s", formatViolations(vs))
	}
}

func TestDescriptorSource(t *testing.T) {
	src := DescriptorSource()
	for _, want := range []string{"#Descriptor:", "#Operation:", "#Body:"} {
		if !strings.Contains(src, want) {
			t.Errorf("DescriptorSource() lacks %q", want)
		}
	}
}

// TestJSONSchemaClosed checks the export's header and that every object
// schema is closed except the open maps the CUE schema declares.
func TestJSONSchemaClosed(t *testing.T) {
	b, err := JSONSchema()
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if got := doc["$schema"]; got != "https://json-schema.org/draft/2020-12/schema" {
		t.Errorf("$schema = %v", got)
	}
	if !bytes.Contains(b, []byte("\n  \"")) {
		t.Errorf("JSONSchema() is not indented")
	}
	var open []string
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case map[string]any:
			if _, ok := v["properties"]; ok && v["additionalProperties"] != false {
				if path != "#/$defs/Body" && !strings.HasPrefix(path, "#/$defs/Body/") &&
					!strings.Contains(path, "OneContent") && !strings.Contains(path, "SetOrUnset") {
					open = append(open, path)
				}
			}
			for k, x := range v {
				walk(path+"/"+k, x)
			}
		case []any:
			for i, x := range v {
				walk(path+"/"+strings.Repeat("i", i), x)
			}
		}
	}
	walk("#", doc)
	if len(open) > 0 {
		slices.Sort(open)
		t.Errorf("object schemas with properties but not closed:\n%s", strings.Join(open, "\n"))
	}
	compileJSONSchema(t)
}

// TestDidYouMean: an unknown field close to an allowed one (a typo) is
// answered with that name, in the descriptor and in the policy; one close
// to none, or as close to two, with the list alone.
func TestDidYouMean(t *testing.T) {
	for _, tc := range []struct{ name, want string }{
		{"intent_sumary", "intent_summary"}, {"contnet", "content"}, {"Path", "path"},
		{"workdri", "workdir"}, {"force", ""}, {"x", ""},
	} {
		if got := didYouMean(tc.name, []string{"intent_summary", "content", "path", "workdir", "mode", "edits"}); got != tc.want {
			t.Errorf("didYouMean(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
	if got := didYouMean("mod", []string{"mode", "mods"}); got != "" {
		t.Errorf("two as close: %q", got)
	}
	vs := ValidateDescriptor(map[string]any{"action_type": "FILE_WRITE", "intent_summary": "x",
		"operation": map[string]any{"path": "/a", "contnet": "x"}})
	if len(vs) == 0 || !strings.Contains(vs[0].Message, "did you mean content? (allowed fields are path, content,") {
		t.Errorf("descriptor: %v", vs)
	}
	pv := ValidatePolicy(map[string]any{"modes": map[string]any{"rsk": map[string]any{"LOW": "allow"}}})
	if len(pv) == 0 || !strings.Contains(pv[0].Message, "did you mean risk?") {
		t.Errorf("policy: %v", pv)
	}
}
