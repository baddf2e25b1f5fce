package gate

import (
	"slices"

	"github.com/act-project/act/descriptors"
	"github.com/act-project/act/diff"
	"github.com/act-project/act/internal/pathglob"
)

// An implied type is an action type a plan's changes amount to, whatever
// type it declared, with the paths that make it so: a command that
// deletes a file is decided at least as strictly as a FILE_DELETE of it
// (docs/risk.md, "What a plan does").
type implied struct {
	typ   descriptors.ActionType
	paths []string
}

// impliedTypes lists the action types changes amount to, in a fixed order:
//   - a deleted file or symlink whose content is not created elsewhere
//     by the same plan: FILE_DELETE; a deleted directory holding such a
//     delete, or with no directory created beside it: DIRECTORY_DELETE;
//   - a deleted file whose content the plan creates at another path:
//     FILE_MOVE;
//   - a created or modified file or symlink, or a directory's mode:
//     FILE_WRITE; a created directory: DIRECTORY_CREATE.
func impliedTypes(changes []diff.Change) []implied {
	created := map[string]bool{} // type and content of each created file
	dirsCreated := false
	for _, c := range changes {
		if c.Kind == diff.Create {
			if k := c.ContentKey(true); k != "" {
				created[k] = true
			}
			dirsCreated = dirsCreated || c.Type == diff.TypeDir
		}
	}
	byType := map[descriptors.ActionType][]string{}
	var deleted []string // deletes that are not moves
	for _, c := range changes {
		var t descriptors.ActionType
		switch {
		case c.Kind == diff.Delete && c.Type == diff.TypeDir:
			continue // below, once the other deletes are known
		case c.Kind == diff.Delete && created[c.ContentKey(false)]:
			t = descriptors.FileMove
		case c.Kind == diff.Delete:
			t = descriptors.FileDelete
			deleted = append(deleted, c.Path)
		case c.Kind == diff.Create && c.Type == diff.TypeDir:
			t = descriptors.DirectoryCreate
		default:
			t = descriptors.FileWrite
		}
		byType[t] = append(byType[t], c.Path)
	}
	for _, c := range changes {
		if c.Kind != diff.Delete || c.Type != diff.TypeDir {
			continue
		}
		lost := !dirsCreated || slices.ContainsFunc(deleted, func(p string) bool { return pathglob.Within(p, c.Path) })
		if lost {
			byType[descriptors.DirectoryDelete] = append(byType[descriptors.DirectoryDelete], c.Path)
		} else {
			byType[descriptors.FileMove] = append(byType[descriptors.FileMove], c.Path)
		}
	}
	var out []implied
	for _, t := range []descriptors.ActionType{descriptors.FileDelete, descriptors.DirectoryDelete, descriptors.FileMove, descriptors.FileWrite, descriptors.DirectoryCreate} {
		if len(byType[t]) > 0 {
			out = append(out, implied{t, byType[t]})
		}
	}
	return out
}
