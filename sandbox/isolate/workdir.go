package isolate

import (
	"io/fs"
	"os"
	"path/filepath"
)

// RemoveWorkDir removes a scope's Work directory after a run. Overlayfs
// leaves directories of mode 0 in it (work/work, work/work/incompat/…),
// which os.RemoveAll cannot enter as an ordinary user.
func RemoveWorkDir(dir string) error {
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o700) // before WalkDir reads it
		}
		return nil
	})
	return os.RemoveAll(dir)
}
