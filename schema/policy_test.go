package schema

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestPolicySourceCompiles(t *testing.T) {
	if _, err := policySchema(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(PolicySource(), "#Policy:") {
		t.Error("PolicySource() does not hold #Policy")
	}
}

func TestValidatePolicy(t *testing.T) {
	tests := []struct {
		name string
		in   any
		want []Violation
	}{
		{name: "empty", in: map[string]any{}},
		{
			name: "full",
			in: map[string]any{
				"allowed_roots": []any{"~", "~/work", "/tmp"},
				"resource_caps": map[string]any{"max_cpu_ms": int64(1), "max_memory_mb": int64(2), "max_disk_mb": int64(3), "max_duration_ms": int64(4)},
				"modes": map[string]any{
					"risk":  map[string]any{"LOW": "allow", "MEDIUM": "confirm", "HIGH": "confirm", "CRITICAL": "deny"},
					"types": map[string]any{"FILE_READ": "allow", "MULTI_STEP_COMPOSITE": "deny"},
				},
				"network":     map[string]any{"allowed_hosts": []any{"example.org", "*.example.org", "10.0.0.1", "::1"}, "sandbox_network": true},
				"cooldown":    "0s",
				"plan_expiry": "1h30m",
				"idle_period": "1.5m",
				"audit":       map[string]any{"retain_days": int64(1)},
			},
		},
		{
			name: "not an object",
			in:   "policy",
			want: []Violation{{Path: nil, Rule: "schema.type", Message: "must be an object, not a string"}},
		},
		{
			name: "null",
			in:   nil,
			want: []Violation{{Path: nil, Rule: "schema.type", Message: "must be an object, not null"}},
		},
		{
			name: "every violation at once",
			in: map[string]any{
				"allowed_roots": []any{"", int64(3), "rel"},
				"resource_caps": map[string]any{"max_cpu_ms": "x", "max_memory_mb": int64(0), "bogus": true},
				"modes": map[string]any{
					"risk":  map[string]any{"LOW": "maybe", "MEDIUM": int64(1)},
					"types": map[string]any{"NOPE": "allow"},
				},
				"network":     map[string]any{"allowed_hosts": []any{"bad host"}, "sandbox_network": "yes"},
				"cooldown":    "1x",
				"plan_expiry": int64(5),
				"audit":       map[string]any{"retain_days": 1.5},
				"extra":       true,
			},
			want: []Violation{
				{Path: []string{"allowed_roots", "0"}, Rule: "schema.pattern", Message: `"" is not an absolute path, "~" or a path starting with "~/"`},
				{Path: []string{"allowed_roots", "1"}, Rule: "schema.type", Message: "must be a string, not an integer"},
				{Path: []string{"allowed_roots", "2"}, Rule: "schema.pattern", Message: `"rel" is not an absolute path, "~" or a path starting with "~/"`},
				{Path: []string{"audit", "retain_days"}, Rule: "schema.type", Message: "must be an integer, not a number"},
				{Path: []string{"cooldown"}, Rule: "schema.pattern", Message: `"1x" is not a Go duration such as 90s, 5m or 1h30m`},
				{Path: []string{"extra"}, Rule: "schema.unknown-field", Message: `unknown field "extra": the policy takes allowed_roots, workspaces, resource_caps, resources, modes, network, cooldown, plan_expiry, idle_period, audit, confirmation, hooks, max_changes, max_pending, max_layers_mb, command_rules, risk, redact, state_dir, user_policy and sandbox`},
				{Path: []string{"modes", "risk", "LOW"}, Rule: "schema.enum", Message: `must be one of allow, confirm or deny, not "maybe"`},
				{Path: []string{"modes", "risk", "MEDIUM"}, Rule: "schema.enum", Message: "must be one of allow, confirm or deny, not 1"},
				{Path: []string{"modes", "types", "NOPE"}, Rule: "schema.unknown-field", Message: `unknown field "NOPE": types takes FILE_READ, FILE_WRITE, FILE_DELETE, FILE_MOVE, DIRECTORY_CREATE, DIRECTORY_DELETE, COMMAND_EXECUTION, PACKAGE_INSTALL, PACKAGE_REMOVE, NETWORK_REQUEST, UI_AUTOMATION, CONFIG_CHANGE and MULTI_STEP_COMPOSITE`},
				{Path: []string{"network", "allowed_hosts", "0"}, Rule: "schema.pattern", Message: `"bad host" is not a host name such as example.org or *.example.org, an IP address, or a CIDR range such as 10.0.0.0/8`},
				{Path: []string{"network", "sandbox_network"}, Rule: "schema.type", Message: "must be a boolean, not a string"},
				{Path: []string{"plan_expiry"}, Rule: "schema.type", Message: "must be a string, not an integer"},
				{Path: []string{"resource_caps", "bogus"}, Rule: "schema.unknown-field", Message: `unknown field "bogus": resource_caps takes max_cpu_ms, max_memory_mb, max_disk_mb and max_duration_ms`},
				{Path: []string{"resource_caps", "max_cpu_ms"}, Rule: "schema.type", Message: "must be an integer, not a string"},
				{Path: []string{"resource_caps", "max_memory_mb"}, Rule: "schema.invalid", Message: "must be at least 1, not 0"},
			},
		},
		{
			name: "section of the wrong type",
			in:   map[string]any{"modes": []any{"allow"}, "network": "none"},
			want: []Violation{
				{Path: []string{"modes"}, Rule: "schema.type", Message: "must be an object, not a list"},
				{Path: []string{"network"}, Rule: "schema.type", Message: "must be an object, not a string"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ValidatePolicy(tt.in)
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("ValidatePolicy() mismatch (-want +got):\n%s", d)
			}
		})
	}
}
