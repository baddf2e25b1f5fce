package agentsetup

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
)

// Claude Code's settings (https://code.claude.com/docs/en/settings):
// JSON files, the managed one, the user's (~/.claude/settings.json) and
// a project's (.claude/settings.json, and .claude/settings.local.json
// kept out of the repository); the hooks of all of them run. A hook of
// type command runs through the shell with its timeout in seconds
// (default 600); onFailure: "block" (Claude Code 2.1.295 and later)
// makes a hook that cannot start, times out or exits with an unexpected
// code block the call instead of letting it run.

// claudeEvents are the events act's hook answers in Claude Code.
var claudeEvents = []string{"PreToolUse", "PostToolUse"}

// claudeNeeds are the events and tools act's hook must cover.
var claudeNeeds = []need{
	{"PreToolUse", []string{"Write", "Edit", "MultiEdit", "Bash"}, FailsOpen, "Claude Code runs these tools unreviewed"},
	{"PostToolUse", []string{"Write", "Edit", "MultiEdit"}, Broken,
		"a Write or Edit a person allows at Claude Code's prompt is not recorded, and act rollback cannot undo it"},
}

// The matchers install writes.
const (
	claudePreMatcher  = "Write|Edit|MultiEdit|Bash"
	claudePostMatcher = "Write|Edit|MultiEdit"
)

// A jsonFile is a settings file read as JSON.
type jsonFile struct {
	path   string
	exists bool
	data   []byte
	mode   fs.FileMode
	doc    map[string]any
	err    error // it exists and does not parse
}

// readJSONFile reads path; a file that does not exist is empty.
func readJSONFile(path string) (*jsonFile, error) {
	f := &jsonFile{path: path, mode: 0o644}
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
	if len(bytes.TrimSpace(data)) == 0 {
		return f, nil
	}
	if err := json.Unmarshal(data, &f.doc); err != nil {
		f.err = fmt.Errorf("%s is not a JSON object: %v", path, err)
	}
	return f, nil
}

// claudeSettings are Claude Code's settings files for one project (or
// none).
type claudeSettings struct {
	managed *jsonFile
	files   []*jsonFile // the user's, then the project's and its local one
}

// claudeUserFile and claudeProjectFile are the files install writes.
func claudeUserFile(p Places) string { return filepath.Join(p.ClaudeDir, "settings.json") }
func claudeProjectFile(project string) string {
	return filepath.Join(project, ".claude", "settings.json")
}

func readClaude(p Places, project string) (*claudeSettings, error) {
	s := &claudeSettings{}
	var err error
	if p.ClaudeManaged != "" {
		if s.managed, err = readJSONFile(p.ClaudeManaged); err != nil {
			return nil, err
		}
	}
	paths := []string{claudeUserFile(p)}
	if project != "" {
		paths = append(paths, claudeProjectFile(project), filepath.Join(project, ".claude", "settings.local.json"))
	}
	for _, path := range paths {
		f, err := readJSONFile(path)
		if err != nil {
			return nil, err
		}
		s.files = append(s.files, f)
	}
	return s, nil
}

// all lists every file read, the managed one first.
func (s *claudeSettings) all() []*jsonFile {
	if s.managed == nil {
		return s.files
	}
	return append([]*jsonFile{s.managed}, s.files...)
}

func (s *claudeSettings) check(o CheckOptions) *Report {
	r := &Report{Agent: ClaudeCode, Files: []string{}, Findings: []Finding{}}
	managedOnly := s.managed != nil && s.managed.doc["allowManagedHooksOnly"] == true
	var hs []handler
	for _, f := range s.all() {
		r.Files = append(r.Files, f.path)
		if f.err != nil {
			r.Findings = append(r.Findings, Finding{Severity: FailsOpen, File: f.path,
				Message: f.err.Error() + ": Claude Code does not read its hooks", repair: false})
			continue
		}
		if f.doc["disableAllHooks"] == true {
			r.Findings = append(r.Findings, Finding{Severity: FailsOpen, File: f.path,
				Message: "disableAllHooks is true: Claude Code runs no hook, and every tool runs unreviewed"})
		}
		fhs, problems := handlersOf(f.path, f.doc["hooks"], claudeEvents)
		for _, p := range problems {
			r.Findings = append(r.Findings, Finding{Severity: Warning, File: f.path, Message: p})
		}
		if managedOnly && f != s.managed {
			for _, h := range fhs {
				if h.act != nil {
					r.Findings = append(r.Findings, Finding{Severity: FailsOpen, File: f.path,
						Message: fmt.Sprintf("the managed settings allow only managed hooks (allowManagedHooksOnly): Claude Code skips act's %s hook here", h.event)})
				}
			}
			continue
		}
		hs = append(hs, fhs...)
	}
	r.Hooks = hooksOf(hs)
	r.Findings = append(r.Findings, checkHandlers(ClaudeCode, hs, claudeNeeds, o, func(h *handler) bool {
		return h.fields["onFailure"] == "block"
	})...)
	for i := range hs {
		h := &hs[i]
		if h.act != nil && h.event == "PreToolUse" && h.fields["onFailure"] != "block" {
			r.Findings = append(r.Findings, Finding{Severity: FailsOpen, File: h.file, repair: true,
				Message: fmt.Sprintf("PreToolUse hook %q has no onFailure: block: if it cannot start, is killed or crashes, Claude Code runs the tool unreviewed (onFailure needs Claude Code 2.1.295 or later)", h.command())})
		}
	}
	r.Findings = dedupe(r.Findings)
	return r
}

// claudeGroup is act's matcher group for event, as install writes it.
func claudeGroup(matcher, command string, timeout int64, block bool) json.RawMessage {
	type handler struct {
		Type      string `json:"type"`
		Command   string `json:"command"`
		Timeout   int64  `json:"timeout"`
		OnFailure string `json:"onFailure,omitempty"`
	}
	h := handler{Type: "command", Command: command, Timeout: timeout}
	if block {
		h.OnFailure = "block"
	}
	b, err := json.Marshal(struct {
		Matcher string    `json:"matcher"`
		Hooks   []handler `json:"hooks"`
	}{matcher, []handler{h}})
	if err != nil {
		panic(err) // strings and integers only
	}
	return b
}

// A ClaudeRule is a permission rule of Claude Code's settings ("Bash",
// "Bash(rm:*)") and the file it is in.
type ClaudeRule struct {
	Rule, File string
}

// ClaudeDenyRules are the permissions.deny rules of Claude Code's
// settings for project ("" none): the managed file and the drop-ins of
// managed-settings.d beside it, the user's, the project's and its local
// one, in that order. A file that exists but does not parse, or whose
// permissions.deny is not a list of strings, is an error: the caller
// fails closed.
func ClaudeDenyRules(p Places, project string) ([]ClaudeRule, error) {
	var paths []string
	if p.ClaudeManaged != "" {
		paths = append(paths, p.ClaudeManaged)
		dropIns, _ := filepath.Glob(filepath.Join(filepath.Dir(p.ClaudeManaged), "managed-settings.d", "*.json"))
		sort.Strings(dropIns)
		paths = append(paths, dropIns...)
	}
	paths = append(paths, claudeUserFile(p))
	if project != "" {
		paths = append(paths, claudeProjectFile(project), filepath.Join(project, ".claude", "settings.local.json"))
	}
	var rules []ClaudeRule
	for _, path := range paths {
		f, err := readJSONFile(path)
		if err != nil {
			return nil, err
		}
		if f.err != nil {
			return nil, f.err
		}
		perms, ok := f.doc["permissions"]
		if !ok || perms == nil {
			continue
		}
		pm, ok := perms.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s: permissions is not an object", path)
		}
		deny, ok := pm["deny"]
		if !ok || deny == nil {
			continue
		}
		list, ok := deny.([]any)
		if !ok {
			return nil, fmt.Errorf("%s: permissions.deny is not a list", path)
		}
		for _, r := range list {
			s, ok := r.(string)
			if !ok {
				return nil, fmt.Errorf("%s: permissions.deny holds %v, not a rule", path, r)
			}
			rules = append(rules, ClaudeRule{Rule: s, File: path})
		}
	}
	return rules, nil
}
