package plan

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/act-project/act/diff"
	"github.com/act-project/act/internal/problem"
)

// checkPromotable reports, as op.permission-denied, each change that the
// promotion would not be allowed to make as the user running act, so that
// a plan apply cannot carry out fails at plan, not part-way through apply
// (docs/promotion.md). Promotion renames new content into each change's
// directory and moves what it replaces or removes to the backups in
// stateDir (a copy when they are on another filesystem), so it needs:
//   - write and search permission on the directory holding each change
//     (unless the plan creates that directory);
//   - in a sticky directory, to own the entry it replaces or removes, or
//     the directory;
//   - to own a directory whose mode it changes;
//   - write permission on a directory it moves elsewhere (its ".." entry
//     changes);
//   - read permission on what it backs up by copying.
//
// Root passes all of these but a read-only filesystem.
func checkPromotable(changes []diff.Change, stateDir string) problem.List {
	euid := uint32(os.Geteuid())
	created := map[string]bool{}
	for _, c := range changes {
		if c.Kind == diff.Create && c.Type == diff.TypeDir {
			created[c.Path] = true
		}
	}
	stateDev, stateErr := deviceOf(stateDir)
	var probs problem.List
	deny := func(path, format string, args ...any) {
		probs = append(probs, problem.Problem{
			Rule: "op.permission-denied", Field: path, Layer: problem.Rejected,
			Message: fmt.Sprintf("apply could not promote %s: ", path) + fmt.Sprintf(format, args...),
		})
	}
	dirOK := map[string]error{}
	for _, c := range changes {
		dir := filepath.Dir(c.Path)
		chmod := c.Kind == diff.Modify && c.Type == diff.TypeDir // moves nothing
		if !created[dir] && !chmod {
			err, seen := dirOK[dir]
			if !seen {
				err = unix.Faccessat(unix.AT_FDCWD, dir, unix.W_OK|unix.X_OK, unix.AT_EACCESS)
				dirOK[dir] = err
			}
			if err != nil {
				deny(c.Path, "the directory %s is not writable by uid %d (%v)", dir, euid, err)
				continue
			}
		}
		if c.Kind == diff.Create {
			continue
		}
		// What is there now is replaced, removed or changed in mode.
		var st, dst unix.Stat_t
		if err := unix.Lstat(c.Path, &st); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue // the stale check at apply reports it
			}
			deny(c.Path, "%v", err)
			continue
		}
		if err := unix.Stat(dir, &dst); err != nil {
			deny(c.Path, "%v", err)
			continue
		}
		isDir := st.Mode&unix.S_IFMT == unix.S_IFDIR
		switch {
		case euid == 0:
		case chmod && isDir:
			if st.Uid != euid {
				deny(c.Path, "its mode can be changed only by its owner (uid %d), not uid %d", st.Uid, euid)
			}
			continue // a mode change moves nothing
		case dst.Mode&unix.S_ISVTX != 0 && st.Uid != euid && dst.Uid != euid:
			deny(c.Path, "%s is a sticky directory: only the owner of %s (uid %d) or of the directory (uid %d) may replace or remove it, not uid %d", dir, c.Path, st.Uid, dst.Uid, euid)
			continue
		case isDir:
			if err := unix.Faccessat(unix.AT_FDCWD, c.Path, unix.W_OK, unix.AT_EACCESS); err != nil {
				deny(c.Path, "the directory is moved to the backups, which needs write permission on it (%v)", err)
				continue
			}
		}
		if stateErr == nil && st.Dev != stateDev && st.Mode&unix.S_IFMT != unix.S_IFLNK {
			need := uint32(unix.R_OK)
			if isDir {
				need |= unix.X_OK
			}
			if err := unix.Faccessat(unix.AT_FDCWD, c.Path, need, unix.AT_EACCESS); err != nil {
				deny(c.Path, "it is on another filesystem than the state directory %s, so its backup is a copy, which needs read permission on it (%v)", stateDir, err)
			}
		}
	}
	return probs
}

// deviceOf returns the device of name or of its nearest existing ancestor.
func deviceOf(name string) (uint64, error) {
	for {
		var st syscall.Stat_t
		err := syscall.Stat(name, &st)
		if err == nil {
			return st.Dev, nil
		}
		parent := filepath.Dir(name)
		if !errors.Is(err, fs.ErrNotExist) || parent == name {
			return 0, err
		}
		name = parent
	}
}
