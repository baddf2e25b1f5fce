// Package rmtree removes directory trees a sandboxed command made, whatever
// modes it left on them.
package rmtree

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// RemoveAll removes dir and everything in it, as os.RemoveAll does, even
// where a command left directories its owner cannot enter or change (mode
// 000, 555): each directory is given back its owner's rwx first, without
// following symbolic links. A layer or a plan's temporary directory is
// always the user's own, so this always can.
func RemoveAll(dir string) error {
	err := os.RemoveAll(dir)
	if err == nil || errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o700) // before WalkDir reads it
		}
		return nil
	})
	return os.RemoveAll(dir)
}
