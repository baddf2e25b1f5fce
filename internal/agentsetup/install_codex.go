package agentsetup

import (
	"bytes"
	"fmt"
	"io/fs"
	"reflect"
	"sort"
	"strings"

	"github.com/act-project/act/internal/configedit"
)

// installCodex writes act's PreToolUse group into Codex's config.toml —
// the project's .codex/config.toml, else the user's — cuts act's earlier
// groups there and from the hooks.json beside it, and trusts the new one
// in the user's config.toml (hooks.state), moving the state of any of the
// person's hooks whose place in the list the cut changed.
func installCodex(o InstallOptions, res *InstallResult) error {
	s, err := readCodex(o.Places, o.Project)
	if err != nil {
		return err
	}
	layer, perm, dirPerm := s.user, fs.FileMode(0o600), fs.FileMode(0o700)
	if o.Project != "" {
		layer, perm, dirPerm = s.project, 0o644, 0o755
	}
	user := s.user.config
	targets := []string{layer.config.path, layer.json.path, user.path}
	if layer.off != "" {
		return &RefusedError{Agent: Codex, Findings: []Finding{{Severity: FailsOpen, File: layer.config.path, Message: layer.off}}}
	}
	var all []handler
	for _, l := range s.layers() {
		hs, _ := s.handlers(l, codexEvents)
		all = append(all, hs...)
	}
	if err := elsewhere(Codex, all, targets[:2]); err != nil {
		return err
	}
	co := CheckOptions{Places: o.Places, Agent: Codex, Project: o.Project, ActTimeout: o.Timeout}
	if err := refuse(Codex, s.check(co), targets); err != nil {
		return err
	}

	const event = "PreToolUse"
	matcher := codexMatcher
	ours := map[string]any{"type": "command", "command": res.Command, "timeout": res.Timeout}
	hash := TrustedHash(event, &matcher, ours)

	// The hooks.json beside the config: act's groups cut.
	jsonList, jg, err := rebuildJSON(layer.json, event, nil)
	if err != nil {
		return err
	}
	// The config.toml: act's groups cut, ours in.
	cfg := layer.config
	groupEdits, eof, want, tg, err := cutTOMLGroups(cfg, event, codexBlock(res.Command, res.Timeout))
	if err != nil {
		return err
	}
	ourKey := hookKey(cfg.path, event, tg.at, 0)

	// The trust states the cut moves, and ours.
	states := s.states()
	moved := map[string]any{}
	affected := map[string]bool{ourKey: true}
	for _, src := range []struct {
		path   string
		g      *regroup
		fields [][]map[string]any
	}{{cfg.path, tg, handlerFields(eventList(cfg.doc, event))}, {layer.json.path, jg, handlerFields(eventList(layer.json.doc, event))}} {
		for gi, hs := range src.fields {
			for hi := range hs {
				old := hookKey(src.path, event, gi, hi)
				affected[old] = true
				if to, ok := src.g.moved[[2]int{gi, hi}]; ok {
					nk := hookKey(src.path, event, to[0], to[1])
					affected[nk] = true
					if st, ok := states[old]; ok {
						moved[nk] = st
					}
				}
			}
		}
	}
	moved[ourKey] = map[string]any{"trusted_hash": hash}
	changed := map[string]any{} // key → new state, nil: none
	for k := range affected {
		if !reflect.DeepEqual(states[k], moved[k]) {
			changed[k] = moved[k]
		}
	}

	// The new texts, each checked to mean what it should, before any is
	// written.
	type out struct {
		f       *tomlFile
		data    []byte
		changes []string
	}
	var outs []out
	added := describe(event, tg, fmt.Sprintf("%s (matcher %s, timeout %d s)", res.Command, matcher, res.Timeout))
	userWant, userEdits, userEOF, changes := deepCopy(user.doc).(map[string]any), []textEdit(nil), "", []string{}
	if cfg == user {
		userWant, userEdits, userEOF, changes = want, groupEdits, eof, added
	} else {
		data, err := editedTOML(cfg, groupEdits, eof, want)
		if err != nil {
			return err
		}
		outs = append(outs, out{cfg, data, added})
	}
	stEdits, stEOF := stateEdits(user, changed, userWant)
	userEdits = append(userEdits, stEdits...)
	if userEOF != "" && stEOF != "" {
		userEOF += "\n"
	}
	userEOF += stEOF
	n := len(changed)
	if _, ok := changed[ourKey]; ok {
		changes = append(changes, fmt.Sprintf("hooks.state.%q: trusted_hash = %q (the hash Codex computes of act's hook; without it Codex skips the hook)", ourKey, hash))
		n--
	}
	if n > 0 {
		changes = append(changes, fmt.Sprintf("hooks.state: %d other entries moved or cut with the hooks they name", n))
	}
	data, err := editedTOML(user, userEdits, userEOF, userWant)
	if err != nil {
		return err
	}
	// The state first: a crash before the hook is written leaves a
	// trust for nothing, not an untrusted hook.
	outs = append([]out{{user, data, changes}}, outs...)
	for _, x := range outs {
		if x.f.exists && bytes.Equal(x.data, x.f.data) {
			res.Written = append(res.Written, Written{File: x.f.path, Unchanged: true, Changes: []string{}})
			continue
		}
		p, d := perm, dirPerm
		if x.f == user && x.f != cfg {
			p, d = 0o600, 0o700
		}
		if err := writeFile(x.f.path, x.data, x.f.exists, x.f.mode, p, d); err != nil {
			return err
		}
		res.Written = append(res.Written, Written{File: x.f.path, Created: !x.f.exists, Changes: x.changes})
	}
	if jg.cut > 0 {
		set, unset := map[string]any{}, []string(nil)
		if len(jsonList) == 0 {
			unset = []string{"hooks." + event}
		} else {
			set["hooks."+event] = jsonList
		}
		edited, err := configedit.Edit(configedit.JSON, layer.json.data, set, unset)
		if err != nil {
			return fmt.Errorf("%s: %w", layer.json.path, err)
		}
		if err := writeFile(layer.json.path, edited.Data, true, layer.json.mode, perm, dirPerm); err != nil {
			return err
		}
		res.Written = append(res.Written, Written{File: layer.json.path, Changes: describe(event, jg, "")})
	}
	return nil
}

// codexBlock is act's matcher group as config.toml tables.
func codexBlock(command string, timeout int64) string {
	return fmt.Sprintf(`[[hooks.PreToolUse]]
# act's hook (act hook install codex): Codex runs it only while its
# trusted_hash in hooks.state matches; act hook check says whether it does.
matcher = %s

[[hooks.PreToolUse.hooks]]
type = "command"
command = %s
timeout = %d
`, tomlString(codexMatcher), tomlString(command), timeout)
}

// cutTOMLGroups are the edits of f that cut act's handlers from its
// hooks.EVENT tables and put block (act's group) where the first group
// cut whole was, else after everything (eof); want is f's document after
// them.
func cutTOMLGroups(f *tomlFile, event, block string) (edits []textEdit, eof string, want map[string]any, g *regroup, err error) {
	fields := handlerFields(eventList(f.doc, event))
	g = regroupOf(fields, true)
	spans, handlerSpans := f.groupSpans(event)
	if len(spans) != len(fields) {
		return nil, "", nil, nil, fmt.Errorf("%s defines hooks.%s in a form act does not edit (%d [[hooks.%s]] tables for %d groups): write each group as a [[hooks.%s]] table, its handlers as [[hooks.%s.hooks]] tables",
			f.path, event, len(spans), event, len(fields), event, event)
	}
	placed := false
	for gi, keep := range g.keep {
		switch {
		case keep == nil:
			text := ""
			sp, blank := trimTrailing(f.data, spans[gi])
			if !placed {
				text, placed = block, true
				if blank {
					text += "\n"
				}
			}
			edits = append(edits, textEdit{sp, text})
		case len(keep) < len(fields[gi]):
			if len(handlerSpans[gi]) != len(fields[gi]) {
				return nil, "", nil, nil, fmt.Errorf("%s: hooks.%s[%d] holds act's hook among others in a form act does not edit: write its handlers as [[hooks.%s.hooks]] tables", f.path, event, gi, event)
			}
			for hi := range fields[gi] {
				if !containsInt(keep, hi) {
					sp, _ := trimTrailing(f.data, handlerSpans[gi][hi])
					edits = append(edits, textEdit{sp, ""})
				}
			}
		}
	}
	if !placed {
		eof = block
	}
	// What the file means after.
	want, _ = deepCopy(f.doc).(map[string]any)
	list, _ := eventList(f.doc, event).([]any)
	var groups []any
	for gi, keep := range g.keep {
		if len(groups) == g.at {
			groups = append(groups, nil)
		}
		if keep == nil {
			continue
		}
		gm, _ := deepCopy(list[gi]).(map[string]any)
		if hs, ok := gm["hooks"].([]any); ok {
			var kept []any
			for _, i := range keep {
				kept = append(kept, hs[i])
			}
			gm["hooks"] = kept
		}
		groups = append(groups, gm)
	}
	if len(groups) == g.at {
		groups = append(groups, nil)
	}
	ours, err := blockGroup(block, event)
	if err != nil {
		return nil, "", nil, nil, err
	}
	groups[g.at] = ours
	hooks, _ := want["hooks"].(map[string]any)
	if hooks == nil {
		hooks = map[string]any{}
		want["hooks"] = hooks
	}
	hooks[event] = groups
	return edits, eof, want, g, nil
}

// blockGroup decodes act's block as the one group of hooks.EVENT it is.
func blockGroup(block, event string) (map[string]any, error) {
	doc, _, err := parseTOML([]byte(block))
	if err != nil {
		return nil, err
	}
	list, _ := eventList(doc, event).([]any)
	if len(list) != 1 {
		return nil, fmt.Errorf("act's hook block does not parse as one group")
	}
	group, _ := list[0].(map[string]any)
	return group, nil
}

func containsInt(l []int, i int) bool {
	for _, x := range l {
		if x == i {
			return true
		}
	}
	return false
}

// stateEdits are the edits of f (the user's config.toml) that give each
// hooks.state key of changed its new state (nil: none): its tables and
// lines cut, its new table after everything (eof). It makes want, f's
// document after them, so.
func stateEdits(f *tomlFile, changed map[string]any, want map[string]any) (edits []textEdit, eof string) {
	keys := make([]string, 0, len(changed))
	for k := range changed {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		for _, sp := range f.stateSpans(k) {
			sp, _ = trimTrailing(f.data, sp)
			edits = append(edits, textEdit{sp, ""})
		}
		hooks, _ := want["hooks"].(map[string]any)
		if hooks == nil {
			hooks = map[string]any{}
			want["hooks"] = hooks
		}
		state, _ := hooks["state"].(map[string]any)
		if state == nil {
			state = map[string]any{}
			hooks["state"] = state
		}
		st, _ := changed[k].(map[string]any)
		if st == nil {
			delete(state, k)
			continue
		}
		state[k] = st
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "[hooks.state.%s]\n", tomlKeyPart(k))
		for _, field := range []string{"enabled", "trusted_hash"} {
			switch v := st[field].(type) {
			case bool:
				fmt.Fprintf(&b, "%s = %t\n", field, v)
			case string:
				fmt.Fprintf(&b, "%s = %s\n", field, tomlString(v))
			}
		}
	}
	return edits, b.String()
}

// editedTOML is f's text with edits and eof appended, if it means want.
func editedTOML(f *tomlFile, edits []textEdit, eof string, want map[string]any) ([]byte, error) {
	for i := range edits {
		for j := range edits {
			if i != j && edits[i].start < edits[j].end && edits[j].start < edits[i].end {
				return nil, fmt.Errorf("%s: act's edits overlap; it does not edit this file's form of hooks", f.path)
			}
		}
	}
	data := applyEdits(f.data, edits)
	if eof != "" {
		data = appendBlock(data, eof)
	} else if len(edits) > 0 && !bytes.HasSuffix(f.data, []byte("\n\n")) {
		data = append(bytes.TrimRight(data, "\n"), '\n') // no blank lines left at the end by a cut
	}
	if !sameTOML(data, want) {
		return nil, fmt.Errorf("%s holds its hooks in a form act does not edit (an inline table or list of hooks, or hooks.state): cutting act's entries would change more than them; write the hooks as [[hooks.EVENT]] tables and hooks.state as [hooks.state.\"KEY\"] tables", f.path)
	}
	if !bytes.HasSuffix(data, []byte("\n")) && len(data) > 0 {
		data = append(data, '\n')
	}
	return data, nil
}
