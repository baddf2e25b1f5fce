package agentsetup

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// ClaudeDenyRules reads permissions.deny of every settings file Claude
// Code reads for a project, and fails on one that does not parse.
func TestClaudeDenyRules(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := Places{ClaudeDir: filepath.Join(dir, "user"), ClaudeManaged: filepath.Join(dir, "etc", "managed-settings.json")}
	proj := filepath.Join(dir, "proj")
	files := map[string]string{
		p.ClaudeManaged: `{"permissions": {"deny": ["Bash(sudo:*)"]}}`,
		filepath.Join(dir, "etc", "managed-settings.d", "10.json"): `{"permissions": {"deny": ["Bash(su:*)"]}}`,
		filepath.Join(p.ClaudeDir, "settings.json"):                `{"permissions": {"allow": ["Bash(ls)"], "deny": ["Bash(rm:*)"]}}`,
		filepath.Join(proj, ".claude", "settings.json"):            `{"hooks": {}}`,
		filepath.Join(proj, ".claude", "settings.local.json"):      `{"permissions": {"deny": ["Read(./.env)", "Bash(curl *)"]}}`,
	}
	for name, data := range files {
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rules, err := ClaudeDenyRules(p, proj)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rules {
		got = append(got, r.Rule)
	}
	if want := "[Bash(sudo:*) Bash(su:*) Bash(rm:*) Read(./.env) Bash(curl *)]"; fmt.Sprint(got) != want {
		t.Errorf("rules %v, want %s", got, want)
	}
	for _, bad := range []string{`{"permissions": {"deny": "Bash"}}`, `{not json`, `{"permissions": {"deny": [1]}}`} {
		if err := os.WriteFile(filepath.Join(proj, ".claude", "settings.json"), []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := ClaudeDenyRules(p, proj); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}
