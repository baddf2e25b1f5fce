package agentsetup

import (
	"testing"
)

// TestTrustedHash checks the hash against what Codex 0.171.0 itself
// reports (codex app-server, hooks/list: currentHash) for the same
// config.toml handlers.
func TestTrustedHash(t *testing.T) {
	str := func(s string) *string { return &s }
	for _, c := range []struct {
		name    string
		matcher *string
		fields  map[string]any
		want    string
	}{
		{"act's hook", str("Bash|apply_patch"),
			map[string]any{"type": "command", "command": "/usr/local/bin/act hook codex --workspace /tmp/cx/proj --timeout 50s", "timeout": int64(60)},
			"sha256:f41847d3e59b1ec5f5a4cb43fc2920a938b012a55411e97e8f91087b9b0b9bcf"},
		// No matcher, a command serde_json escapes, async, a
		// statusMessage, timeout 0 (Codex makes it 1).
		{"escapes", nil,
			map[string]any{"type": "command", "command": "echo '<a & b>' \"q\" \\ tab\there é ☃ \x01 \x7f",
				"statusMessage": "checking…", "async": true, "timeout": int64(0)},
			"sha256:80f2a7fbbadd7417604d78fdda17754471088948f3df4f034d16805411f9f6bc"},
		// An empty matcher is a matcher; no timeout is 600.
		{"defaults", str(""), map[string]any{"type": "command", "command": "x"},
			"sha256:b22089b130d882c1c73d1ff80b8d260c544274033f130ad1e1c72d6c40cacc38"},
		// A JSON number (hooks.json) hashes as the integer.
		{"json number", str("Bash|apply_patch"),
			map[string]any{"type": "command", "command": "/usr/local/bin/act hook codex --workspace /tmp/cx/proj --timeout 50s", "timeout": float64(60), "unknown": "ignored"},
			"sha256:f41847d3e59b1ec5f5a4cb43fc2920a938b012a55411e97e8f91087b9b0b9bcf"},
	} {
		if got := TrustedHash("PreToolUse", c.matcher, c.fields); got != c.want {
			t.Errorf("%s: TrustedHash = %s, want %s (Codex's)", c.name, got, c.want)
		}
	}
}

func TestHookKey(t *testing.T) {
	if got, want := hookKey("/h/.codex/config.toml", "PreToolUse", 2, 1), "/h/.codex/config.toml:pre_tool_use:2:1"; got != want {
		t.Errorf("hookKey = %q, want %q", got, want)
	}
}
