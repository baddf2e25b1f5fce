package agentsetup

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Codex CLI's hooks (https://developers.openai.com/codex/hooks): each
// config layer — the system's /etc/codex/config.toml (managed), the
// user's $CODEX_HOME/config.toml, a project's .codex/config.toml — may
// hold them as [[hooks.EVENT]] tables, and a hooks.json beside it as
// JSON; a project's layer is read only when the user's config.toml trusts
// the project ([projects."DIR"] trust_level = "trusted"). [features]
// hooks = false (or codex_hooks = false) turns every hook off. A hook's
// timeout is in seconds (default 600). See trust.go for trusted_hash.

// codexEvents are the events act's hook answers in Codex: act hook codex
// answers PreToolUse only.
var codexEvents = []string{"PreToolUse"}

// codexAllEvents are the events whose handlers Codex numbers (the state
// keys of a handler of any of them move when act's tables are cut).
var codexAllEvents = []string{"PreToolUse", "PermissionRequest", "PostToolUse", "PreCompact", "PostCompact",
	"SessionStart", "UserPromptSubmit", "Stop"}

// codexNeeds are the events and tools act's hook must cover: Codex names
// its shell tools Bash in a hook's input, and its patch tool apply_patch.
var codexNeeds = []need{
	{"PreToolUse", []string{"Bash", "apply_patch"}, FailsOpen, "Codex runs these tools unreviewed"},
}

// codexMatcher is the matcher install writes.
const codexMatcher = "Bash|apply_patch"

// A codexLayer is one of Codex's config layers: its config.toml and the
// hooks.json beside it.
type codexLayer struct {
	name    string // the system's, the user's, the project's
	managed bool
	config  *tomlFile
	json    *jsonFile
	// off says why Codex does not read this layer ("" when it does).
	off string
}

// codexSettings are Codex's layers for one project (or none).
type codexSettings struct {
	system, user, project *codexLayer
}

func codexUserDir(p Places) string          { return p.CodexHome }
func codexProjectDir(project string) string { return filepath.Join(project, ".codex") }

// readTOMLFile reads path; a file that does not exist is empty.
func readTOMLFile(path string) (*tomlFile, error) {
	f := &tomlFile{path: path, mode: 0o644, doc: map[string]any{}, sections: []tomlSection{{}}}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	f.exists, f.data, f.mode = true, data, fi.Mode().Perm()
	doc, sections, err := parseTOML(data)
	if err != nil {
		f.err = fmt.Errorf("%s is not valid TOML: %v", path, err)
		return f, nil
	}
	f.doc, f.sections = doc, sections
	return f, nil
}

func readCodexLayer(name, dir string, managed bool) (*codexLayer, error) {
	l := &codexLayer{name: name, managed: managed}
	var err error
	if l.config, err = readTOMLFile(filepath.Join(dir, "config.toml")); err != nil {
		return nil, err
	}
	if l.json, err = readJSONFile(filepath.Join(dir, "hooks.json")); err != nil {
		return nil, err
	}
	return l, nil
}

func readCodex(p Places, project string) (*codexSettings, error) {
	s := &codexSettings{}
	var err error
	if p.CodexSystem != "" {
		if s.system, err = readCodexLayer("the system's", filepath.Dir(p.CodexSystem), true); err != nil {
			return nil, err
		}
	}
	if s.user, err = readCodexLayer("the user's", codexUserDir(p), false); err != nil {
		return nil, err
	}
	if project != "" {
		if s.project, err = readCodexLayer("the project's", codexProjectDir(project), false); err != nil {
			return nil, err
		}
		switch projectTrust(s.user.config.doc, project) {
		case "trusted":
		case "untrusted":
			s.project.off = fmt.Sprintf("%s is marked untrusted in %s, so Codex does not read %s", project, s.user.config.path, s.project.config.path)
		default:
			s.project.off = fmt.Sprintf("%s is not a trusted project in %s, so Codex does not read %s (trust it in Codex, or install without --project)", project, s.user.config.path, s.project.config.path)
		}
	}
	return s, nil
}

// projectTrust is the trust_level the user's config gives project: its
// own, else its repository's (the nearest directory above it holding
// .git), as Codex decides it (codex-rs/config/src/loader/mod.rs).
func projectTrust(userDoc map[string]any, project string) string {
	projects, _ := userDoc["projects"].(map[string]any)
	dirs := []string{project}
	for d := project; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			dirs = append(dirs, d)
			break
		}
		if d == filepath.Dir(d) {
			break
		}
	}
	for _, d := range dirs {
		if p, ok := projects[d].(map[string]any); ok {
			if t, ok := p["trust_level"].(string); ok {
				return t
			}
		}
	}
	return ""
}

func (s *codexSettings) layers() []*codexLayer {
	var ls []*codexLayer
	for _, l := range []*codexLayer{s.system, s.user, s.project} {
		if l != nil {
			ls = append(ls, l)
		}
	}
	return ls
}

// states are the user's hooks.state entries.
func (s *codexSettings) states() map[string]any {
	h, _ := s.user.config.doc["hooks"].(map[string]any)
	st, _ := h["state"].(map[string]any)
	return st
}

// handlers lists the handlers of layer l's two files, with their trust.
func (s *codexSettings) handlers(l *codexLayer, events []string) (hs []handler, problems []Finding) {
	states := s.states()
	for _, src := range []struct {
		path  string
		hooks any
		err   error
	}{{l.config.path, l.config.doc["hooks"], l.config.err}, {l.json.path, l.json.doc["hooks"], l.json.err}} {
		if src.err != nil {
			problems = append(problems, Finding{Severity: FailsOpen, File: src.path,
				Message: src.err.Error() + ": Codex does not read its hooks"})
			continue
		}
		fhs, ps := handlersOf(src.path, src.hooks, events)
		for _, p := range ps {
			problems = append(problems, Finding{Severity: Warning, File: src.path, Message: p})
		}
		for i := range fhs {
			h := &fhs[i]
			h.managed = l.managed
			h.key = hookKey(h.file, h.event, h.group, h.index)
			h.trust = trustOf(h, states)
		}
		hs = append(hs, fhs...)
	}
	return hs, problems
}

// trustOf is Codex's trust status of h: managed, disabled, trusted,
// modified (trusted as it read before) or untrusted.
func trustOf(h *handler, states map[string]any) string {
	if h.managed {
		return "managed"
	}
	st, _ := states[h.key].(map[string]any)
	if st["enabled"] == false {
		return "disabled"
	}
	trusted, ok := st["trusted_hash"].(string)
	switch {
	case !ok:
		return "untrusted"
	case trusted != TrustedHash(h.event, h.matcher, h.fields):
		return "modified"
	}
	return "trusted"
}

// hooksOff says where hooks are turned off, "" when they are not.
func hooksOff(doc map[string]any) string {
	f, _ := doc["features"].(map[string]any)
	for _, k := range []string{"hooks", "codex_hooks"} {
		if f[k] == false {
			return "[features] " + k + " = false"
		}
	}
	return ""
}

func (s *codexSettings) check(o CheckOptions) *Report {
	r := &Report{Agent: Codex, Files: []string{}, Findings: []Finding{}}
	var hs []handler
	for _, l := range s.layers() {
		r.Files = append(r.Files, l.config.path, l.json.path)
		if off := hooksOff(l.config.doc); off != "" && l.off == "" {
			r.Findings = append(r.Findings, Finding{Severity: FailsOpen, File: l.config.path,
				Message: off + ": Codex runs no hook, and every tool runs unreviewed"})
		}
		lhs, problems := s.handlers(l, codexEvents)
		if l.off != "" {
			for _, h := range lhs {
				if h.act != nil {
					r.Findings = append(r.Findings, Finding{Severity: FailsOpen, File: h.file, Message: l.off})
					break
				}
			}
			continue
		}
		r.Findings = append(r.Findings, problems...)
		hs = append(hs, lhs...)
	}
	r.Hooks = hooksOf(hs)
	never := func(*handler) bool { return false }
	var running []handler
	for i := range hs {
		h := &hs[i]
		if h.act == nil {
			continue
		}
		switch h.trust {
		case "managed", "trusted":
			running = append(running, *h)
			continue
		case "disabled":
			r.Findings = append(r.Findings, Finding{Severity: FailsOpen, File: h.file, repair: true,
				Message: fmt.Sprintf("%s hook %q is disabled in %s (hooks.state.%q.enabled = false): Codex skips it", h.event, h.command(), s.user.config.path, h.key)})
		case "modified":
			r.Findings = append(r.Findings, Finding{Severity: FailsOpen, File: h.file, repair: true,
				Message: fmt.Sprintf("%s hook %q changed since it was trusted (its trusted_hash in %s is of another matcher, command or timeout): Codex skips it silently", h.event, h.command(), s.user.config.path)})
		default:
			r.Findings = append(r.Findings, Finding{Severity: FailsOpen, File: h.file, repair: true,
				Message: fmt.Sprintf("%s hook %q is not trusted (no trusted_hash for %q in %s): Codex skips it silently", h.event, h.command(), h.key, s.user.config.path)})
		}
	}
	// What is wrong with each act hook, and what the hooks Codex runs
	// cover.
	for _, f := range checkHandlers(Codex, hs, nil, o, never) {
		r.Findings = append(r.Findings, f)
	}
	r.Findings = append(r.Findings, checkHandlers(Codex, running, codexNeeds, o, never)...)
	r.Findings = dedupe(r.Findings)
	return r
}
