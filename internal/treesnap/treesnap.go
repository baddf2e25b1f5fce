// Package treesnap records a directory tree exactly enough to compare two
// states of it: each entry's type, permission bits, owner, content digest
// and symlink target. Tests of apply, rollback and recovery use it to check
// that a tree is exactly as before or exactly as after.
package treesnap

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/act-project/act/internal/digest"
)

// An Entry is one path of a tree. Mode holds the permission, setuid,
// setgid and sticky bits of files and directories; it is 0 for symlinks.
type Entry struct {
	Type     string
	Mode     fs.FileMode
	UID, GID uint32
	SHA256   string
	Link     string
}

// Take records every entry under root, root itself as ".", by path
// relative to root. A missing root is an empty snapshot.
func Take(root string) (map[string]Entry, error) {
	out := map[string]Entry{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) && p == root {
			return filepath.SkipAll
		}
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		st := fi.Sys().(*syscall.Stat_t)
		e := Entry{Mode: fi.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky), UID: st.Uid, GID: st.Gid}
		switch {
		case fi.Mode().IsRegular():
			e.Type = "file"
			if e.SHA256, err = digest.File(p); err != nil {
				return err
			}
		case fi.IsDir():
			e.Type = "dir"
		case fi.Mode()&fs.ModeSymlink != 0:
			e.Type, e.Mode = "symlink", 0
			if e.Link, err = os.Readlink(p); err != nil {
				return err
			}
		default:
			e.Type = fi.Mode().Type().String()
		}
		out[rel] = e
		return nil
	})
	return out, err
}
