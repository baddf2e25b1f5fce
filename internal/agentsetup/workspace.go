package agentsetup

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"

	"github.com/act-project/act/internal/configedit"
)

// A WorkspaceRecord is where install records the project it installs the
// hook for as a workspace of every act of the user, not only of the
// hook's session (act apply --as-command, act run, act mcp decide again
// with the policy's workspaces): the user policy file, which is as
// trusted for workspaces as for every other setting (docs/policy.md,
// "Workspaces").
type WorkspaceRecord struct {
	// File is the user policy file (it may not exist yet).
	File string
	// Listed is its workspaces list as the file writes it (the default's
	// when it names none); Has reports whether such a list names dir.
	Listed []string
	Has    func(list []string, dir string) bool
	// Check says why a policy file's new bytes would not load.
	Check func(data []byte) error
}

// recordWorkspace adds ws to the workspaces of the user policy r names,
// keeping the rest of the file as it was.
func recordWorkspace(r *WorkspaceRecord, ws string) (Written, error) {
	w := Written{File: r.File, Changes: []string{}, Policy: true}
	if r.Has(r.Listed, ws) {
		w.Unchanged = true
		return w, nil
	}
	data, err := os.ReadFile(r.File)
	exists := err == nil
	mode := fs.FileMode(0o644)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		data = []byte("# act's user policy (docs/policy.md): settings left out take the default's.\n")
		w.Created = true
	case err != nil:
		return w, err
	default:
		if fi, err := os.Stat(r.File); err == nil {
			mode = fi.Mode().Perm()
		}
	}
	list := make([]any, 0, len(r.Listed)+1)
	for _, l := range r.Listed {
		list = append(list, l)
	}
	list = append(list, ws)
	edited, err := configedit.Edit(configedit.YAML, data, map[string]any{"workspaces": list}, nil)
	if err != nil {
		return w, fmt.Errorf("recording the workspace in %s: %w", r.File, err)
	}
	if err := r.Check(edited.Data); err != nil {
		return w, fmt.Errorf("recording the workspace in %s: %w", r.File, err)
	}
	if err := writeFile(r.File, edited.Data, exists, mode, 0o644, 0o700); err != nil {
		return w, err
	}
	w.Changes = append(w.Changes, fmt.Sprintf("workspaces: added %s, for every act of this user (act run, act apply, act mcp), not only the hook's", ws))
	r.Listed = append(slices.Clip(r.Listed), ws)
	return w, nil
}
