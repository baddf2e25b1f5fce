package agentsetup

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/pelletier/go-toml/v2"
)

// setup is a person's machine in a temporary directory: a home with
// ~/.claude and ~/.codex, a project, and an act executable.
type setup struct {
	t                  *testing.T
	dir, project, act  string
	places             Places
	claudeUser, codexU string
}

func newSetup(t *testing.T) *setup {
	t.Helper()
	dir := t.TempDir()
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	s := &setup{t: t, dir: dir, project: filepath.Join(dir, "proj"), act: filepath.Join(dir, "bin", "act")}
	s.places = Places{ClaudeDir: filepath.Join(dir, "home", ".claude"), CodexHome: filepath.Join(dir, "home", ".codex"),
		ClaudeManaged: filepath.Join(dir, "etc", "claude-code", "managed-settings.json"),
		CodexSystem:   filepath.Join(dir, "etc", "codex", "config.toml"), Path: filepath.Join(dir, "bin")}
	s.claudeUser = filepath.Join(s.places.ClaudeDir, "settings.json")
	s.codexU = filepath.Join(s.places.CodexHome, "config.toml")
	s.write(s.act, "#!/bin/sh\n", 0o755)
	if err := os.MkdirAll(filepath.Join(s.project, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	return s
}

func (s *setup) write(path, data string, mode os.FileMode) {
	s.t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		s.t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), mode); err != nil {
		s.t.Fatal(err)
	}
}

func (s *setup) read(path string) string {
	s.t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		s.t.Fatal(err)
	}
	return string(b)
}

func (s *setup) opts(agent Agent, project string) InstallOptions {
	return InstallOptions{Places: s.places, Agent: agent, Project: project, Workspace: s.project, Act: s.act, Timeout: 50 * time.Second}
}

func (s *setup) install(agent Agent, project string) (*InstallResult, error) {
	return Install(s.opts(agent, project))
}

func (s *setup) check(agent Agent, project string) *Report {
	s.t.Helper()
	r, err := Check(CheckOptions{Places: s.places, Agent: agent, Project: project, ActTimeout: 50 * time.Second})
	if err != nil {
		s.t.Fatal(err)
	}
	return r
}

// findings are r's findings as "severity: message" (files left out).
func findings(r *Report) []string {
	var out []string
	for _, f := range r.Findings {
		out = append(out, string(f.Severity)+": "+f.Message)
	}
	return out
}

// has reports whether one of r's findings of severity holds all of parts.
func has(r *Report, severity Severity, parts ...string) bool {
	for _, f := range r.Findings {
		ok := f.Severity == severity
		for _, p := range parts {
			ok = ok && strings.Contains(f.Message, p)
		}
		if ok {
			return true
		}
	}
	return false
}

func TestInstallClaudeCode(t *testing.T) {
	s := newSetup(t)
	file := filepath.Join(s.project, ".claude", "settings.json")
	// The person's settings: their own keys and hooks, and an earlier act
	// hook, alone in one group and beside theirs in another.
	orig := `{
    "permissions": {"allow": ["Bash(ls)"]},
    "hooks": {
        "PreToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": "act hook claude-code", "timeout": 30}]},
            {"hooks": [{"type": "command", "command": "my-linter"}, {"type": "command", "command": "/old/act hook claude-code --workspace /x"}], "matcher": "Edit"}
        ],
        "Stop": [{"hooks": [{"type": "command", "command": "notify"}]}]
    },
    "model": "opus"
}
`
	s.write(file, orig, 0o640)
	s.places.Path = filepath.Join(s.dir, "nowhere")
	before := s.check(ClaudeCode, s.project)
	for _, want := range []struct {
		severity Severity
		parts    []string
	}{
		{FailsOpen, []string{"act is not on PATH", "exits 127"}},
		{FailsOpen, []string{"act is not at /old/act"}},
		{FailsOpen, []string{"timeout (30 s)", "runs the tool unreviewed"}},
		{FailsOpen, []string{"no onFailure: block"}},
		{Broken, []string{"no --workspace"}},
		{Broken, []string{"PostToolUse"}},
		{FailsOpen, []string{"does not match Write, MultiEdit"}},
	} {
		if !has(before, want.severity, want.parts...) {
			t.Errorf("check before install: no %s finding with %q in\n%s", want.severity, want.parts, strings.Join(findings(before), "\n"))
		}
	}

	res, err := s.install(ClaudeCode, s.project)
	if err != nil {
		t.Fatal(err)
	}
	if res.Check.Failing() || len(res.Written) != 1 || res.Written[0].File != file {
		t.Fatalf("install: %+v; findings %q", res.Written, findings(res.Check))
	}
	got := s.read(file)
	var doc map[string]any
	if err := json.Unmarshal([]byte(got), &doc); err != nil {
		t.Fatal(err)
	}
	cmdline := s.act + " hook claude-code --workspace " + s.project + " --timeout 50s"
	want := map[string]any{
		"permissions": map[string]any{"allow": []any{"Bash(ls)"}},
		"model":       "opus",
		"hooks": map[string]any{
			"PreToolUse": []any{
				map[string]any{"matcher": "Write|Edit|MultiEdit|Bash", "hooks": []any{map[string]any{"type": "command", "command": cmdline, "timeout": 60.0, "onFailure": "block"}}},
				map[string]any{"matcher": "Edit", "hooks": []any{map[string]any{"type": "command", "command": "my-linter"}}},
			},
			"PostToolUse": []any{
				map[string]any{"matcher": "Write|Edit|MultiEdit", "hooks": []any{map[string]any{"type": "command", "command": cmdline, "timeout": 60.0}}},
			},
			"Stop": []any{map[string]any{"hooks": []any{map[string]any{"type": "command", "command": "notify"}}}},
		},
	}
	if d := cmp.Diff(want, doc); d != "" {
		t.Errorf("settings after install (-want +got):\n%s\n%s", d, got)
	}
	// The person's group keeps the order of its members, the file its
	// indentation and its mode.
	if i, j := strings.Index(got, `"my-linter"`), strings.Index(got, `"matcher": "Edit"`); i < 0 || j < i {
		t.Errorf("the person's group does not keep the order of its members:\n%s", got)
	}
	if !strings.Contains(got, "\n    \"permissions\"") {
		t.Errorf("the indentation changed:\n%s", got)
	}
	if fi, _ := os.Stat(file); fi.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, want 0640 kept", fi.Mode().Perm())
	}
	// Again: nothing to do.
	res, err = s.install(ClaudeCode, s.project)
	if err != nil || !res.Written[0].Unchanged || s.read(file) != got {
		t.Errorf("a second install changed the file (%v, %+v)", err, res)
	}
}

func TestInstallClaudeUserFileThroughLink(t *testing.T) {
	s := newSetup(t)
	real := filepath.Join(s.dir, "dotfiles", "settings.json")
	s.write(real, `{"theme": "dark"}`, 0o600)
	if err := os.MkdirAll(s.places.ClaudeDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, s.claudeUser); err != nil {
		t.Fatal(err)
	}
	if _, err := s.install(ClaudeCode, ""); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(s.claudeUser); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced: %v", err)
	}
	if got := s.read(real); !strings.Contains(got, `"theme":"dark"`) || !strings.Contains(got, "onFailure") {
		t.Errorf("the linked file: %s", got)
	}
}

func TestInstallRefused(t *testing.T) {
	for _, c := range []struct {
		name, want string
		agent      Agent
		project    bool
		prepare    func(s *setup)
	}{
		{"disableAllHooks", "disableAllHooks", ClaudeCode, true, func(s *setup) {
			s.write(filepath.Join(s.project, ".claude", "settings.local.json"), `{"disableAllHooks": true}`, 0o644)
		}},
		{"not JSON", "is not a JSON object", ClaudeCode, false, func(s *setup) { s.write(s.claudeUser, `{"hooks": `, 0o644) }},
		{"managed only", "allowManagedHooksOnly", ClaudeCode, false, func(s *setup) {
			s.write(s.places.ClaudeManaged, `{"allowManagedHooksOnly": true}`, 0o644)
			s.write(s.claudeUser, `{"hooks":{"PreToolUse":[{"hooks":[{"type":"command","command":"act hook claude-code"}]}]}}`, 0o644)
		}},
		{"act in the user's settings too", "is set here too", ClaudeCode, true, func(s *setup) {
			s.write(s.claudeUser, `{"hooks":{"PreToolUse":[{"hooks":[{"type":"command","command":"act hook claude-code"}]}]}}`, 0o644)
		}},
		{"hooks off", "[features] hooks = false", Codex, false, func(s *setup) { s.write(s.codexU, "[features]\nhooks = false\n", 0o600) }},
		{"codex_hooks off", "[features] codex_hooks = false", Codex, false, func(s *setup) { s.write(s.codexU, "[features]\ncodex_hooks = false\n", 0o600) }},
		{"project not trusted", "is not a trusted project", Codex, true, nil},
		{"project marked untrusted", "is marked untrusted", Codex, true, func(s *setup) {
			s.write(s.codexU, "[projects.\""+s.project+"\"]\ntrust_level = \"untrusted\"\n", 0o600)
		}},
		{"inline hooks", "in a form act does not edit", Codex, false, func(s *setup) {
			s.write(s.codexU, "hooks = { PreToolUse = [ { matcher = \"Bash\", hooks = [ { type = \"command\", command = \"act hook codex --workspace /w\" } ] } ] }\n", 0o600)
		}},
		{"not TOML", "is not valid TOML", Codex, false, func(s *setup) { s.write(s.codexU, "[hooks\n", 0o600) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newSetup(t)
			if c.prepare != nil {
				c.prepare(s)
			}
			project := ""
			if c.project {
				project = s.project
			}
			snap := snapshot(t, s.dir)
			_, err := s.install(c.agent, project)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("install: %v, want an error with %q", err, c.want)
			}
			var re *RefusedError
			if errors.As(err, &re) && !strings.Contains(err.Error(), "nothing written") {
				t.Errorf("refusal %q does not say nothing was written", err)
			}
			if d := cmp.Diff(snap, snapshot(t, s.dir)); d != "" {
				t.Errorf("a refused install wrote (-before +after):\n%s", d)
			}
		})
	}
}

// snapshot is every file under dir and its content.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			b, _ := os.ReadFile(p)
			m[p] = string(b)
		}
		return nil
	})
	return m
}

func TestCheckClaudeCode(t *testing.T) {
	for _, c := range []struct {
		name     string
		settings string
		severity Severity
		parts    []string
	}{
		{"no hook", `{}`, FailsOpen, []string{"no act hook Claude Code runs answers PreToolUse"}},
		{"short timeout, onFailure block", `{"hooks":{"PreToolUse":[{"matcher":"Write|Edit|MultiEdit|Bash","hooks":[{"type":"command","command":"ACT hook claude-code --workspace PROJ","timeout":50,"onFailure":"block"}]}]}}`,
			Broken, []string{"timeout (50 s)", "blocks the call"}},
		{"act's --timeout above the hook's", `{"hooks":{"PreToolUse":[{"matcher":"Write|Edit|MultiEdit|Bash","hooks":[{"type":"command","command":"ACT hook claude-code --workspace PROJ --timeout 2m","timeout":100}]}]}}`,
			FailsOpen, []string{"timeout (100 s)", "--timeout 2m0s", "runs the tool unreviewed"}},
		{"act not found, onFailure block", `{"hooks":{"PreToolUse":[{"hooks":[{"type":"command","command":"/nowhere/act hook claude-code --workspace PROJ","onFailure":"block"}]}]}}`,
			Broken, []string{"act is not at /nowhere/act", "blocks every call"}},
		{"act on PATH", `{"hooks":{"PreToolUse":[{"hooks":[{"type":"command","command":"act hook claude-code --workspace PROJ","onFailure":"block"}]}]}}`,
			Warning, []string{"found on PATH"}},
		{"async", `{"hooks":{"PreToolUse":[{"hooks":[{"type":"command","command":"ACT hook claude-code --workspace PROJ","async":true}]}]}}`,
			FailsOpen, []string{"is async"}},
		{"Codex's hook", `{"hooks":{"PreToolUse":[{"hooks":[{"type":"command","command":"ACT hook codex --workspace PROJ"}]}]}}`,
			Broken, []string{"runs act hook codex"}},
		{"a workspace that is not there", `{"hooks":{"PreToolUse":[{"hooks":[{"type":"command","command":"ACT hook claude-code --workspace /nowhere"}]}]}}`,
			Broken, []string{"/nowhere is not a directory"}},
		{"twice", `{"hooks":{"PreToolUse":[{"hooks":[{"type":"command","command":"ACT hook claude-code --workspace PROJ"}]},{"matcher":"Bash","hooks":[{"type":"command","command":"ACT hook claude-code --workspace PROJ"}]}]}}`,
			Broken, []string{"set 2 times for Bash"}},
		{"a matcher without Bash", `{"hooks":{"PreToolUse":[{"matcher":"Write|Edit|MultiEdit","hooks":[{"type":"command","command":"ACT hook claude-code --workspace PROJ"}]}]}}`,
			FailsOpen, []string{"does not match Bash"}},
		{"a regular expression matcher", `{"hooks":{"PreToolUse":[{"matcher":"Write|.*Edit|B.sh","hooks":[{"type":"command","command":"ACT hook claude-code --workspace PROJ","onFailure":"block"}]}],"PostToolUse":[{"matcher":"Write|Edit|MultiEdit","hooks":[{"type":"command","command":"ACT hook claude-code --workspace PROJ"}]}]}}`,
			"", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newSetup(t)
			s.write(filepath.Join(s.dir, "bin", "act"), "#!/bin/sh\n", 0o755)
			settings := strings.NewReplacer("ACT", s.act, "PROJ", s.project).Replace(c.settings)
			s.write(filepath.Join(s.project, ".claude", "settings.json"), settings, 0o644)
			r := s.check(ClaudeCode, s.project)
			if c.parts == nil {
				if r.Failing() {
					t.Errorf("findings %q, want none", findings(r))
				}
				return
			}
			if !has(r, c.severity, c.parts...) {
				t.Errorf("no %s finding with %q in\n%s", c.severity, c.parts, strings.Join(findings(r), "\n"))
			}
		})
	}
}

func TestInstallCodex(t *testing.T) {
	s := newSetup(t)
	// The person's config: comments, their own hooks around an earlier
	// act hook and its stale trust, another act hook among theirs in one
	// group, and in hooks.json an act hook too.
	orig := `# my config
model = "o3"

[[hooks.PreToolUse]]
matcher = "Read"
[[hooks.PreToolUse.hooks]]
type = "command"
command = "echo first"

# act, as docs/agents.md said to write it
[[hooks.PreToolUse]]
matcher = "Bash|apply_patch"
[[hooks.PreToolUse.hooks]]
type = "command"
command = "act hook codex --workspace ~/src/project"
timeout = 60

[[hooks.PreToolUse]]
matcher = "Grep"
[[hooks.PreToolUse.hooks]]
type = "command"
command = "act hook codex --workspace /tmp"
[[hooks.PreToolUse.hooks]]
type = "command"
command = "echo second"

[[hooks.PreToolUse]]
matcher = "Bash"
[[hooks.PreToolUse.hooks]]
type = "command"
command = "/old/act hook codex --workspace /w"

[[hooks.PreToolUse]]
matcher = "Glob"
[[hooks.PreToolUse.hooks]]
type = "command"
command = "echo third"

[hooks.state]
"CFG:pre_tool_use:0:0" = { trusted_hash = "HASH0" }

[hooks.state."CFG:pre_tool_use:2:1"]
trusted_hash = "HASH2"

[hooks.state."CFG:pre_tool_use:4:0"]
enabled = false
trusted_hash = "HASH4"

[projects."/somewhere"]
trust_level = "trusted"
`
	str := func(s string) *string { return &s }
	cmd := func(c string) map[string]any { return map[string]any{"type": "command", "command": c} }
	hash0 := TrustedHash("PreToolUse", str("Read"), cmd("echo first"))
	hash2 := TrustedHash("PreToolUse", str("Grep"), cmd("echo second"))
	hash4 := TrustedHash("PreToolUse", str("Glob"), cmd("echo third"))
	orig = strings.NewReplacer("CFG", s.codexU, "HASH0", hash0, "HASH2", hash2, "HASH4", hash4).Replace(orig)
	s.write(s.codexU, orig, 0o600)
	jsonFile := filepath.Join(s.places.CodexHome, "hooks.json")
	s.write(jsonFile, `{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "act hook codex"}]}], "Stop": []}}`, 0o644)

	before := s.check(Codex, "")
	if !has(before, FailsOpen, "is not trusted", "Codex skips it silently") {
		t.Errorf("check before: no untrusted finding in\n%s", strings.Join(findings(before), "\n"))
	}
	res, err := s.install(Codex, "")
	if err != nil {
		t.Fatal(err)
	}
	if res.Check.Failing() {
		t.Fatalf("after install: %q", findings(res.Check))
	}
	cmdline := s.act + " hook codex --workspace " + s.project + " --timeout 50s"
	hash := TrustedHash("PreToolUse", str(codexMatcher), map[string]any{"command": cmdline, "timeout": int64(60)})
	want := `# my config
model = "o3"

[[hooks.PreToolUse]]
matcher = "Read"
[[hooks.PreToolUse.hooks]]
type = "command"
command = "echo first"

# act, as docs/agents.md said to write it
` + codexBlock(cmdline, 60) + `
[[hooks.PreToolUse]]
matcher = "Grep"
[[hooks.PreToolUse.hooks]]
type = "command"
command = "echo second"

[[hooks.PreToolUse]]
matcher = "Glob"
[[hooks.PreToolUse.hooks]]
type = "command"
command = "echo third"

[hooks.state]
"CFG:pre_tool_use:0:0" = { trusted_hash = "HASH0" }

[projects."/somewhere"]
trust_level = "trusted"

[hooks.state."CFG:pre_tool_use:1:0"]
trusted_hash = "HASH"

[hooks.state."CFG:pre_tool_use:2:0"]
trusted_hash = "HASH2"

[hooks.state."CFG:pre_tool_use:3:0"]
enabled = false
trusted_hash = "HASH4"
`
	want = strings.NewReplacer("CFG", s.codexU, "HASH0", hash0, "HASH2", hash2, "HASH4", hash4, "HASH", hash).Replace(want)
	if d := cmp.Diff(want, s.read(s.codexU)); d != "" {
		t.Errorf("config.toml (-want +got):\n%s", d)
	}
	if got := s.read(jsonFile); got != `{"hooks":{"Stop":[]}}` {
		t.Errorf("hooks.json: %s", got)
	}
	// What Codex will see: act's hook trusted, the person's as they were
	// (the disabled one still disabled).
	trust := map[string]string{}
	for _, h := range s.check(Codex, "").Hooks {
		trust[h.Command] = h.Trust
	}
	if trust[cmdline] != "trusted" {
		t.Errorf("act's hook: %q", trust)
	}
	var doc map[string]any
	toml.Unmarshal([]byte(s.read(s.codexU)), &doc)
	states := doc["hooks"].(map[string]any)["state"].(map[string]any)
	if len(states) != 4 {
		t.Errorf("states: %v", states)
	}
	// Changing the hook (e.g. adding --timeout by hand) untrusts it.
	edited := strings.Replace(s.read(s.codexU), "--timeout 50s", "--timeout 40s", 1)
	s.write(s.codexU, edited, 0o600)
	if r := s.check(Codex, ""); !has(r, FailsOpen, "changed since it was trusted", "skips it silently") {
		t.Errorf("an edited hook: %q", findings(r))
	}
	// And install makes it right again, in place.
	if _, err := s.install(Codex, ""); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, s.read(s.codexU)); d != "" {
		t.Errorf("config.toml reinstalled (-want +got):\n%s", d)
	}
}

func TestInstallCodexProject(t *testing.T) {
	s := newSetup(t)
	s.write(s.codexU, "[projects.\""+s.project+"\"]\ntrust_level = \"trusted\"\n", 0o600)
	res, err := s.install(Codex, s.project)
	if err != nil {
		t.Fatal(err)
	}
	proj := filepath.Join(s.project, ".codex", "config.toml")
	if len(res.Written) != 2 || res.Written[0].File != s.codexU || res.Written[1].File != proj {
		t.Errorf("written: %+v", res.Written)
	}
	key := proj + ":pre_tool_use:0:0"
	if got := s.read(s.codexU); !strings.Contains(got, `[hooks.state."`+key+`"]`) {
		t.Errorf("the user's config.toml:\n%s", got)
	}
	if r := s.check(Codex, s.project); r.Failing() || len(r.Hooks) != 1 || r.Hooks[0].Trust != "trusted" {
		t.Errorf("check: %+v %q", r.Hooks, findings(r))
	}
	// Without --project, the project's hook is not read.
	if r := s.check(Codex, ""); !has(r, FailsOpen, "no act hook Codex runs") {
		t.Errorf("check without the project: %q", findings(r))
	}
}

func TestCheckCodex(t *testing.T) {
	for _, c := range []struct {
		name, config string
		severity     Severity
		parts        []string
	}{
		{"untrusted", "[[hooks.PreToolUse]]\nmatcher = \"Bash|apply_patch\"\n[[hooks.PreToolUse.hooks]]\ntype = \"command\"\ncommand = \"ACT hook codex --workspace PROJ\"\n",
			FailsOpen, []string{"is not trusted", "pre_tool_use:0:0"}},
		{"disabled", "[[hooks.PreToolUse]]\nmatcher = \"Bash|apply_patch\"\n[[hooks.PreToolUse.hooks]]\ntype = \"command\"\ncommand = \"ACT hook codex --workspace PROJ\"\n[hooks.state.\"CFG:pre_tool_use:0:0\"]\nenabled = false\n",
			FailsOpen, []string{"is disabled"}},
		{"apply_patch not matched", "[[hooks.PreToolUse]]\nmatcher = \"^Bash$\"\n[[hooks.PreToolUse.hooks]]\ntype = \"command\"\ncommand = \"ACT hook codex --workspace PROJ\"\n[hooks.state.\"CFG:pre_tool_use:0:0\"]\ntrusted_hash = \"TRUST\"\n",
			FailsOpen, []string{"does not match apply_patch"}},
		{"short timeout", "[[hooks.PreToolUse]]\n[[hooks.PreToolUse.hooks]]\ntype = \"command\"\ncommand = \"ACT hook codex --workspace PROJ\"\ntimeout = 50\n[hooks.state.\"CFG:pre_tool_use:0:0\"]\ntrusted_hash = \"TRUST\"\n",
			FailsOpen, []string{"timeout (50 s)", "Codex kills the hook and runs the tool unreviewed"}},
		{"no workspace", "[[hooks.PreToolUse]]\n[[hooks.PreToolUse.hooks]]\ntype = \"command\"\ncommand = \"ACT hook codex\"\n[hooks.state.\"CFG:pre_tool_use:0:0\"]\ntrusted_hash = \"TRUST\"\n",
			Broken, []string{"no --workspace"}},
		{"trusted", "[[hooks.PreToolUse]]\n[[hooks.PreToolUse.hooks]]\ntype = \"command\"\ncommand = \"ACT hook codex --workspace PROJ\"\n[hooks.state.\"CFG:pre_tool_use:0:0\"]\ntrusted_hash = \"TRUST\"\n",
			"", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newSetup(t)
			config := strings.NewReplacer("ACT", s.act, "PROJ", s.project, "CFG", s.codexU).Replace(c.config)
			var doc map[string]any
			if err := toml.Unmarshal([]byte(config), &doc); err != nil {
				t.Fatal(err)
			}
			g := doc["hooks"].(map[string]any)["PreToolUse"].([]any)[0].(map[string]any)
			var m *string
			if s, ok := g["matcher"].(string); ok {
				m = &s
			}
			config = strings.Replace(config, "TRUST", TrustedHash("PreToolUse", m, g["hooks"].([]any)[0].(map[string]any)), 1)
			s.write(s.codexU, config, 0o600)
			r := s.check(Codex, "")
			if c.parts == nil {
				if r.Failing() {
					t.Errorf("findings %q, want none", findings(r))
				}
				return
			}
			if !has(r, c.severity, c.parts...) {
				t.Errorf("no %s finding with %q in\n%s", c.severity, c.parts, strings.Join(findings(r), "\n"))
			}
		})
	}
}

func TestCheckCodexManaged(t *testing.T) {
	s := newSetup(t)
	s.write(s.places.CodexSystem, "[[hooks.PreToolUse]]\n[[hooks.PreToolUse.hooks]]\ntype = \"command\"\ncommand = \""+s.act+" hook codex --workspace "+s.project+"\"\n", 0o644)
	if r := s.check(Codex, ""); r.Failing() || r.Hooks[0].Trust != "managed" {
		t.Errorf("a managed hook: %+v %q", r.Hooks, findings(r))
	}
}

func TestRegroup(t *testing.T) {
	act := map[string]any{"type": "command", "command": "act hook codex"}
	user := map[string]any{"type": "command", "command": "echo"}
	g := regroupOf([][]map[string]any{{user}, {act}, {act, user}, {act}, {user, user}}, true)
	// Kept: group 0 (0), group 2 (its handler 1), group 4; act's new
	// group where group 1 was.
	want := map[[2]int][2]int{{0, 0}: {0, 0}, {2, 1}: {2, 0}, {4, 0}: {3, 0}, {4, 1}: {3, 1}}
	if d := cmp.Diff(want, g.moved); d != "" || g.at != 1 || g.cut != 3 {
		t.Errorf("moved (-want +got):\n%s at %d cut %d", d, g.at, g.cut)
	}
}
