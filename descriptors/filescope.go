package descriptors

import (
	"path/filepath"
	"slices"

	"github.com/act-project/act/internal/pathglob"
)

// The one choice of the scope of an action that changes a file, for the
// short form (expandTail) and for every door that builds a descriptor
// around a file (act hook's Write, Edit, MultiEdit and apply_patch):
// docs/descriptor.md, "Short form".

// TooWideScope reports whether dir cannot be a scope: / or a home
// directory itself (homes as HomeRoots lists them, patterns too), which
// the rules refuse as a scope (forbidden.home-root).
func TooWideScope(dir string, homes []string) bool {
	dir = filepath.Clean(dir)
	return dir == "/" || slices.ContainsFunc(homes, func(h string) bool { return pathglob.Match(h, dir) })
}

// FileScope is the scope of an action that changes the file p: its
// directory, not recursive, or p itself where that directory is too wide
// to be one (TooWideScope: ~/.bashrc is scoped to ~/.bashrc). A scope
// that names the file itself is also what lets an action change a file
// that runs code later (forbidden.persistence-outside-scope), and act
// grades the plan that does HIGH (docs/persistence.md). itself says
// which it is.
func FileScope(p string, homes []string) (scope string, itself bool) {
	dir := filepath.Dir(p)
	if dir == p || TooWideScope(dir, homes) {
		return p, true
	}
	return dir, false
}

// MadeDirScope is the scope, recursive, of an action that makes the
// directories missing (outermost first, as a Write makes the ones its file
// goes in) below base, the nearest directory that exists: base, or the
// outermost missing directory where base is too wide to be a scope
// (TooWideScope: ~/notes/a.md, ~/notes missing, is scoped to ~/notes).
func MadeDirScope(missing []string, base string, homes []string) string {
	if len(missing) > 0 && TooWideScope(base, homes) {
		return missing[0]
	}
	return base
}
