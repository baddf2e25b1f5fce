package policy

import (
	"fmt"
	"path/filepath"
	"slices"

	"github.com/act-project/act/internal/document"
	"github.com/act-project/act/internal/pathglob"
)

// SystemTrees are the directories a workspace may be neither in nor above:
// the operating system's own trees.
var SystemTrees = []string{"/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/libx32",
	"/opt", "/proc", "/run", "/sbin", "/sys", "/usr", "/var"}

// CheckWorkspace says why dir may not be a workspace (docs/policy.md): it
// must be a clean absolute path, not "/", not a home directory's root
// (userHome, /root or a directory right under /home), and not a system
// tree nor inside one. A workspace above a home or a system tree is "/" or
// a home root's parent, both refused.
func CheckWorkspace(dir, userHome string) error {
	switch {
	case !filepath.IsAbs(dir) || filepath.Clean(dir) != dir:
		return fmt.Errorf("%q is not a clean absolute path", dir)
	case dir == "/":
		return fmt.Errorf("a workspace may not be /: it would take in the whole filesystem")
	case dir == userHome || dir == "/root" || dir == "/home" || filepath.Dir(dir) == "/home":
		return fmt.Errorf("%s is a home directory's root (or above one): its dot-files run code; name a project directory inside it", dir)
	}
	if i := slices.IndexFunc(SystemTrees, func(t string) bool { return pathglob.Within(dir, t) }); i >= 0 {
		return fmt.Errorf("%s is in the system tree %s", dir, SystemTrees[i])
	}
	return nil
}

// InWorkspace reports whether path lies inside one of workspaces that is
// itself inside an allowed root of p.
func (p *Policy) InWorkspace(path string, workspaces []string) bool {
	for _, w := range workspaces {
		if pathglob.Within(path, w) && p.UnderAllowedRoot(w) {
			return true
		}
	}
	return false
}

// WithinWorkspaces reports whether dir lies in one of the policy's own
// workspaces, by its name or by the directory a workspace leads to (/tmp
// may be a link): a session's workspace (a door's --workspace) counts
// only there, since whoever starts a door may be the agent
// (docs/policy.md, "Workspaces").
func (p *Policy) WithinWorkspaces(dir string) bool {
	return slices.ContainsFunc(p.Workspaces, func(w string) bool {
		if !p.UnderAllowedRoot(w) {
			return false
		}
		if pathglob.Within(dir, w) {
			return true
		}
		rw, err := filepath.EvalSymlinks(w)
		return err == nil && pathglob.Within(dir, rw)
	})
}

// SystemWorkspaces are the system policy's own workspaces, which bind
// every other layer's (nil when there is no system policy). A
// workspace a person fixes (act hook install's project) must lie in one;
// the effective Workspaces are those of both layers that overlap.
func (p *Policy) SystemWorkspaces() []string {
	if p.floor == nil {
		return nil
	}
	return p.floor.Workspaces
}

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
		raw = defaultValue()["workspaces"]
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
