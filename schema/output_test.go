package schema

import (
	"strings"
	"testing"
)

func TestOutputSchema(t *testing.T) {
	if got := OutputCommands(); len(got) < 10 {
		t.Fatalf("OutputCommands() = %v", got)
	}
	ok := `{"status": "planned", "exit_code": 0, "plan_id": "0123456789abcdef", "errors": [], "warnings": [],
		"changes": [{"path": "/p/a", "kind": "create", "type": "file", "mode_before": null, "mode_after": "0644",
		"size_before": null, "size_after": 3, "sha256_before": null, "sha256_after": null}]}`
	if err := ValidateOutput("plan", []byte(ok)); err != nil {
		t.Fatalf("a valid plan output: %v", err)
	}
	for name, bad := range map[string]string{
		"status":         `{"status": "fine", "exit_code": 0, "errors": [], "warnings": []}`,
		"missing errors": `{"status": "ok", "exit_code": 0, "warnings": []}`,
		"unknown field":  `{"status": "ok", "exit_code": 0, "errors": [], "warnings": [], "extra": 1}`,
		"mode":           `{"status": "ok", "exit_code": 0, "errors": [], "warnings": [], "changes": [{"path": "/a", "kind": "create", "type": "file", "mode_before": null, "mode_after": "644", "size_before": null, "size_after": null, "sha256_before": null, "sha256_after": null}]}`,
	} {
		if err := ValidateOutput("plan", []byte(bad)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	js, err := OutputJSONSchema("pending")
	if err != nil || !strings.Contains(string(js), `"left_seconds"`) {
		t.Fatalf("OutputJSONSchema(pending) = %.200s, %v", js, err)
	}
	if _, err := OutputJSONSchema("nope"); err == nil {
		t.Fatal("a schema for an unknown command")
	}
}
