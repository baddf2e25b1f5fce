package agentsetup

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"

	"github.com/act-project/act/internal/configedit"
)

// installClaude writes act's PreToolUse and PostToolUse groups into
// Claude Code's settings file: the project's .claude/settings.json, else
// the user's.
func installClaude(o InstallOptions, res *InstallResult) error {
	s, err := readClaude(o.Places, o.Project)
	if err != nil {
		return err
	}
	target, perm, dirPerm := claudeUserFile(o.Places), fs.FileMode(0o600), fs.FileMode(0o700)
	if o.Project != "" {
		target, perm, dirPerm = claudeProjectFile(o.Project), 0o644, 0o755
	}
	var f *jsonFile
	var all []handler
	for _, file := range s.all() {
		if file.path == target {
			f = file
		}
		hs, _ := handlersOf(file.path, file.doc["hooks"], claudeEvents)
		all = append(all, hs...)
	}
	if err := elsewhere(ClaudeCode, all, []string{target}); err != nil {
		return err
	}
	co := CheckOptions{Places: o.Places, Agent: ClaudeCode, Project: o.Project, ActTimeout: o.Timeout}
	if err := refuse(ClaudeCode, s.check(co), []string{target}); err != nil {
		return err
	}
	data := f.data
	if len(bytes.TrimSpace(data)) == 0 {
		data = []byte("{\n}\n")
	}
	w := Written{File: target, Created: !f.exists, Changes: []string{}}
	for _, ev := range []struct {
		event, matcher string
		block          bool
	}{{"PreToolUse", claudePreMatcher, true}, {"PostToolUse", claudePostMatcher, false}} {
		list, g, err := rebuildJSON(f, ev.event, claudeGroup(ev.matcher, res.Command, res.Timeout, ev.block))
		if err != nil {
			return err
		}
		edited, err := configedit.Edit(configedit.JSON, data, map[string]any{"hooks." + ev.event: list}, nil)
		if err != nil {
			return fmt.Errorf("%s: %w", target, err)
		}
		data = edited.Data
		w.Changes = append(w.Changes, describe(ev.event, g, fmt.Sprintf("%s (matcher %s, timeout %d s%s)",
			res.Command, ev.matcher, res.Timeout, map[bool]string{true: ", onFailure block"}[ev.block]))...)
	}
	if bytes.Equal(data, f.data) {
		w.Unchanged, w.Changes = true, []string{}
		res.Written = append(res.Written, w)
		return nil
	}
	if err := writeFile(target, data, f.exists, f.mode, perm, dirPerm); err != nil {
		return err
	}
	res.Written = append(res.Written, w)
	return nil
}

// rebuildJSON is the list of matcher groups of f's hooks.EVENT with act's
// handlers cut, and ours (if any) where the first group cut whole was, or
// last: each group as the file has it, unless a handler was cut from it.
func rebuildJSON(f *jsonFile, event string, ours json.RawMessage) ([]any, *regroup, error) {
	raws, err := rawGroups(f, event)
	if err != nil {
		return nil, nil, err
	}
	g := regroupOf(handlerFields(eventList(f.doc, event)), ours != nil)
	list := []any{}
	for gi, raw := range raws {
		if ours != nil && len(list) == g.at {
			list = append(list, ours)
		}
		keep := g.keep[gi]
		if keep == nil {
			continue
		}
		if n, _ := rawHandlers(raw); len(n) == len(keep) {
			list = append(list, raw)
			continue
		}
		trimmed, err := keepHandlers(raw, keep)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: hooks.%s[%d]: %w", f.path, event, gi, err)
		}
		list = append(list, trimmed)
	}
	if ours != nil && len(list) == g.at {
		list = append(list, ours)
	}
	return list, g, nil
}

// rawGroups are the groups of f's hooks.EVENT as written.
func rawGroups(f *jsonFile, event string) ([]json.RawMessage, error) {
	if len(bytes.TrimSpace(f.data)) == 0 {
		return nil, nil
	}
	var top struct {
		Hooks map[string]json.RawMessage `json:"hooks"`
	}
	if err := json.Unmarshal(f.data, &top); err != nil {
		return nil, fmt.Errorf("%s: hooks: %v", f.path, err)
	}
	raw, ok := top.Hooks[event]
	if !ok || string(raw) == "null" {
		return nil, nil
	}
	var groups []json.RawMessage
	if err := json.Unmarshal(raw, &groups); err != nil {
		return nil, fmt.Errorf("%s: hooks.%s is not a list: %v", f.path, event, err)
	}
	return groups, nil
}

// rawHandlers are a group's handlers as written.
func rawHandlers(group json.RawMessage) ([]json.RawMessage, error) {
	var g struct {
		Hooks []json.RawMessage `json:"hooks"`
	}
	err := json.Unmarshal(group, &g)
	return g.Hooks, err
}

// keepHandlers is group with only its handlers keep, its members in
// their order.
func keepHandlers(group json.RawMessage, keep []int) (json.RawMessage, error) {
	hs, err := rawHandlers(group)
	if err != nil {
		return nil, err
	}
	kept := []json.RawMessage{}
	for _, i := range keep {
		kept = append(kept, hs[i])
	}
	dec := json.NewDecoder(bytes.NewReader(group))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, fmt.Errorf("not an object")
	}
	var b bytes.Buffer
	b.WriteByte('{')
	for n := 0; dec.More(); n++ {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		if n > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(t)
		b.Write(k)
		b.WriteByte(':')
		if t == "hooks" {
			v, _ = json.Marshal(kept)
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}
