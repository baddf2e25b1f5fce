// Package diff computes what a dry run changed: it compares a layer shaped
// like an overlayfs upper dir with the real tree below it, and renders
// unified diffs of text files.
//
// # The layer
//
// [Compare] reads the upper dir the way overlayfs does: a plain entry is
// new or changed, a character device 0/0 is a whiteout (a deletion), and a
// directory with the xattr user.overlay.opaque (or trusted.overlay.opaque)
// = "y" hides what was below it. Layers written by act itself
// (sandbox.LayerSystem) and by a command under a kernel overlay mount have
// this one shape, so one diff serves both.
//
// # Cost
//
// The cost grows with the size of the change, not of the tree: Compare
// enumerates the upper dir and looks at the real twin of each entry it
// finds (lstat, and sha256 of files), never walking the real scope. The one
// exception is an opaque directory over a real one, and each directory of
// the layer below it: the real directory is listed, since the children it
// hides are deleted (one change each; a deleted directory is one change
// whose contents are not listed).
//
// Package diff only reads. It imports no other package of act.
package diff

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Kind is what happened to a path: [Create], [Modify] or [Delete].
type Kind string

// The kinds of change.
const (
	Create Kind = "create"
	Modify Kind = "modify"
	Delete Kind = "delete"
)

// The types of entry a Change describes.
const (
	TypeFile    = "file"
	TypeDir     = "dir"
	TypeSymlink = "symlink"
)

// A Change describes one path created, modified or deleted (docs/lifecycle.md and
// the changes[] of --json, docs/exit-codes.md). A change of type (a file replaced by a directory,
// say) is two changes at the same path: a delete of the old type, then a
// create of the new one.
//
// Before describes the real tree, After the layer. A field that does not
// apply (the mode of a symlink, the size of a directory, the before of a
// create) is nil and encodes as JSON null.
type Change struct {
	// Path is the real absolute path.
	Path string `json:"path"`
	Kind Kind   `json:"kind"`
	// Type is TypeFile, TypeDir or TypeSymlink.
	Type string `json:"type"`
	// ModeBefore and ModeAfter are 4-digit octal strings such as "0644":
	// permission bits plus setuid (04000), setgid (02000) and sticky
	// (01000). Files and directories only.
	ModeBefore *string `json:"mode_before"`
	ModeAfter  *string `json:"mode_after"`
	// SizeBefore and SizeAfter are content sizes in bytes. Files only.
	SizeBefore *int64 `json:"size_before"`
	SizeAfter  *int64 `json:"size_after"`
	// SHA256Before and SHA256After are lowercase hex digests of the
	// content. Files only.
	SHA256Before *string `json:"sha256_before"`
	SHA256After  *string `json:"sha256_after"`
	// LinkBefore and LinkAfter are symlink targets. Symlinks only.
	LinkBefore *string `json:"link_before,omitempty"`
	// OwnerBefore is the uid that owns the real entry before the change.
	// OwnerAfter is the uid that owns a created or modified entry once
	// promoted (PromotedOwner): a modified entry keeps its owner, a
	// created one takes its directory's (docs/sandbox-promotion.md).
	OwnerBefore *uint32 `json:"owner_before,omitempty"`
	OwnerAfter  *uint32 `json:"owner_after,omitempty"`
	LinkAfter   *string `json:"link_after,omitempty"`
}

// ContentKey names c's type and content after the change (after) or
// before it: "f" and a file's sha256, "l" and a symlink's target; "" for a
// directory or a content not recorded. A delete and a create with the
// same key moved one file (a rename, as risk and review read it).
func (c Change) ContentKey(after bool) string {
	sum, link := c.SHA256Before, c.LinkBefore
	if after {
		sum, link = c.SHA256After, c.LinkAfter
	}
	switch {
	case c.Type == TypeFile && sum != nil:
		return "f" + *sum
	case c.Type == TypeSymlink && link != nil:
		return "l" + *link
	}
	return ""
}

// Summary counts changes by kind, for the line "Plan: 2 to create, 1 to
// modify, 3 to delete."
func Summary(changes []Change) (create, modify, delete int) {
	for _, c := range changes {
		switch c.Kind {
		case Create:
			create++
		case Modify:
			modify++
		case Delete:
			delete++
		}
	}
	return create, modify, delete
}

// PromotedOwner is who a promoted entry of c belongs to, read from the
// real tree now: a modified entry keeps its owner; a created one takes
// the owner of the directory it is made in (the nearest that exists: a
// directory the same promotion makes takes it too). ok is false for a
// deletion, or where nothing can be read. docs/sandbox-promotion.md.
func PromotedOwner(c Change) (uid, gid uint32, ok bool) {
	return new(Owners).Of(c)
}

// Owners answers [PromotedOwner] for the changes of one plan, looking at
// each directory once: the nearest existing directory above a created
// path is looked for once for all the paths below it, which a deep tree
// of new entries would otherwise cost once per entry and per level.
type Owners struct {
	dirs map[string]dirOwner
}

type dirOwner struct {
	uid, gid uint32
	ok       bool
}

// Of is PromotedOwner(c).
func (o *Owners) Of(c Change) (uid, gid uint32, ok bool) {
	switch c.Kind {
	case Delete:
		return 0, 0, false
	case Create:
		d := o.dir(filepath.Dir(c.Path))
		return d.uid, d.gid, d.ok
	}
	fi, err := os.Lstat(c.Path)
	if err != nil {
		return 0, 0, false
	}
	st, isStat := fi.Sys().(*syscall.Stat_t)
	if !isStat {
		return 0, 0, false
	}
	return st.Uid, st.Gid, true
}

// dir is the owner of the directory p, or of its nearest existing
// ancestor where p does not exist.
func (o *Owners) dir(p string) dirOwner {
	if d, ok := o.dirs[p]; ok {
		return d
	}
	var d dirOwner
	fi, err := os.Lstat(p)
	switch {
	case err == nil && fi.IsDir():
		if st, isStat := fi.Sys().(*syscall.Stat_t); isStat {
			d = dirOwner{st.Uid, st.Gid, true}
		}
	case errors.Is(err, fs.ErrNotExist) && p != "/":
		d = o.dir(filepath.Dir(p))
	}
	if o.dirs == nil {
		o.dirs = map[string]dirOwner{}
	}
	o.dirs[p] = d
	return d
}

// SetOwnersAfter sets each change's OwnerAfter from the real tree
// (PromotedOwner).
func SetOwnersAfter(changes []Change) {
	var o Owners
	for i := range changes {
		changes[i].OwnerAfter = nil
		if uid, _, ok := o.Of(changes[i]); ok {
			changes[i].OwnerAfter = &uid
		}
	}
}
