package isolate

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/act-project/act/internal/rmtree"
)

// RemoveWorkDir removes a scope's Work directory after a run. Overlayfs
// leaves directories of mode 0 in it (work/work, work/work/incompat/…),
// which os.RemoveAll cannot enter as an ordinary user.
func RemoveWorkDir(dir string) error {
	// What a volatile mount leaves, removed by name: a handful of calls
	// instead of a walk of every level twice. Anything else there (or a
	// failure) falls through to the walk.
	w := filepath.Join(dir, "work")
	inc := filepath.Join(w, "incompat")
	vol := filepath.Join(inc, "volatile")
	if err := os.Chmod(w, 0o700); err == nil {
		_ = os.Chmod(inc, 0o700)
		_ = os.Chmod(vol, 0o700)
		_ = os.Remove(filepath.Join(vol, "dirty"))
		_ = os.Remove(vol)
		_ = os.Remove(inc)
		_ = os.Remove(w)
	}
	err := os.Remove(dir)
	if err == nil || errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return rmtree.RemoveAll(dir)
}
