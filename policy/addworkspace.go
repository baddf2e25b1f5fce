package policy

import (
	"fmt"
	"slices"

	"github.com/act-project/act/internal/document"
)

// WorkspacesAsWritten is the workspaces list of the policy file data (name
// is the name positions use) as the file writes it ("~/src/p" unexpanded),
// or the embedded default's when it names none: the list a person's
// policy file would hold with one more workspace added to it (act hook
// install records the project there: docs/policy.md, "Workspaces").
func WorkspacesAsWritten(name string, data []byte) ([]string, error) {
	v := map[string]any{}
	doc, probs := document.Parse(name, data)
	switch {
	case len(probs) == 1 && probs[0].Rule == "parse.empty":
	case len(probs) > 0:
		return nil, &LoadError{File: name, Problems: probs}
	default:
		m, ok := doc.Value().(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s: a policy file is a mapping", name)
		}
		v = m
	}
	raw, ok := v["workspaces"]
	if !ok {
		def, err := defaultValue()
		if err != nil {
			return nil, err
		}
		raw = def["workspaces"]
	}
	items, ok := raw.([]any)
	if !ok {
		return nil, fmt.Errorf("%s: workspaces is not a list", name)
	}
	out := []string{}
	for _, it := range items {
		s, ok := it.(string)
		if !ok {
			return nil, fmt.Errorf("%s: workspaces holds %v, not a path", name, it)
		}
		out = append(out, s)
	}
	return out, nil
}

// ListsWorkspace reports whether list, a policy file's workspaces as
// written, names dir (absolute), "~" expanded to userHome.
func ListsWorkspace(list []string, dir, userHome string) bool {
	return slices.ContainsFunc(list, func(w string) bool {
		return w == dir || (userHome != "" && isTilde(w) && expandHome(w, userHome) == dir)
	})
}
