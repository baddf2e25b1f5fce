// Package sandbox is where act carries out operations: the [System]
// interface every file operation writes through, its real implementation,
// and the [LayerSystem] decorator that turns writes into an overlayfs-shaped
// layer so that a dry run never touches the real tree.
//
// Dry run is a decorator, not a flag: the same operation code runs against
// [RealSystem] (apply) or a [LayerSystem] over it (plan).
package sandbox

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// System is the filesystem as operations see it. Every path is absolute and
// clean. Errors are *fs.PathError values wrapping the usual fs errors
// (fs.ErrNotExist, fs.ErrExist, …) so callers can test them with errors.Is.
type System interface {
	// Lstat describes path without following a final symlink.
	Lstat(path string) (fs.FileInfo, error)
	// Open opens a regular file for reading.
	Open(path string) (io.ReadCloser, error)
	// ReadDir lists a directory, sorted by name.
	ReadDir(path string) ([]fs.DirEntry, error)
	// Readlink returns a symlink's target.
	Readlink(path string) (string, error)

	// WriteFile creates or replaces a regular file with data and mode perm.
	// The parent directory must exist.
	WriteFile(path string, data []byte, perm fs.FileMode) error
	// Mkdir creates one directory; the parent must exist.
	Mkdir(path string, perm fs.FileMode) error
	// Remove removes a file, a symlink or an empty directory.
	Remove(path string) error
	// RemoveAll removes path and everything below it; absent is not an error.
	RemoveAll(path string) error
	// Rename moves from to to, replacing a file at to.
	Rename(from, to string) error
	// Chmod sets the permission bits of path.
	Chmod(path string, mode fs.FileMode) error
}

// RealSystem is the real filesystem, with the semantics of [LayerSystem]:
// exact modes (no umask), a final symlink never followed (Open refuses it,
// WriteFile replaces it, Chmod refuses it), rename(2)'s rules for
// directories, and a directory rename across filesystems done as copy and
// delete, like mv.
type RealSystem struct{}

var _ System = RealSystem{}

// Lstat implements System.
func (RealSystem) Lstat(path string) (fs.FileInfo, error) { return os.Lstat(path) }

// Open implements System.
func (RealSystem) Open(path string) (io.ReadCloser, error) {
	// An *os.File, which costs the poller's system calls an open
	// (internal/digest's package doc) but lets io.Copy into another
	// (LayerSystem's copies of a lower file) copy inside the kernel.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	if fi, err := f.Stat(); err == nil && fi.IsDir() {
		f.Close()
		return nil, &fs.PathError{Op: "open", Path: path, Err: syscall.EISDIR}
	}
	return f, nil
}

// ReadDir implements System.
func (RealSystem) ReadDir(path string) ([]fs.DirEntry, error) { return os.ReadDir(path) }

// Readlink implements System.
func (RealSystem) Readlink(path string) (string, error) { return os.Readlink(path) }

// WriteFile implements System: whatever non-directory is at path is
// replaced by a new file with exactly mode perm.
func (RealSystem) WriteFile(path string, data []byte, perm fs.FileMode) error {
	if fi, err := os.Lstat(path); err == nil {
		if fi.IsDir() {
			return &fs.PathError{Op: "write", Path: path, Err: syscall.EISDIR}
		}
		if err := os.Remove(path); err != nil {
			return err
		}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(perm)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Mkdir implements System, with exactly mode perm.
func (RealSystem) Mkdir(path string, perm fs.FileMode) error {
	if err := os.Mkdir(path, 0o700); err != nil {
		return err
	}
	return os.Chmod(path, perm)
}

// Remove implements System.
func (RealSystem) Remove(path string) error { return os.Remove(path) }

// RemoveAll implements System.
func (RealSystem) RemoveAll(path string) error { return os.RemoveAll(path) }

// Rename implements System with rename(2) (os.Rename refuses any directory
// at to, even an empty one). A directory that cannot be renamed across
// filesystems (or an overlay's lower part) is copied and then removed.
func (RealSystem) Rename(from, to string) error {
	err := unix.Rename(from, to)
	if !errors.Is(err, syscall.EXDEV) {
		if err != nil {
			return &os.LinkError{Op: "rename", Old: from, New: to, Err: err}
		}
		return nil
	}
	if _, err := os.Lstat(to); err == nil {
		if err := os.Remove(to); err != nil {
			return err
		}
	}
	if err := CopyTree(from, to); err != nil {
		return err
	}
	return os.RemoveAll(from)
}

// Chmod implements System; a symlink has no mode of its own to set.
func (RealSystem) Chmod(path string, mode fs.FileMode) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return &fs.PathError{Op: "chmod", Path: path, Err: syscall.EOPNOTSUPP}
	}
	return os.Chmod(path, mode)
}

// CopyTree copies the tree at from to to with exact modes, like cp -a
// without times and owners.
func CopyTree(from, to string) error {
	fi, err := os.Lstat(from)
	if err != nil {
		return err
	}
	mode := fi.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)
	switch {
	case fi.IsDir():
		if err := os.Mkdir(to, 0o700); err != nil {
			return err
		}
		ents, err := os.ReadDir(from)
		if err != nil {
			return err
		}
		for _, e := range ents {
			if err := CopyTree(filepath.Join(from, e.Name()), filepath.Join(to, e.Name())); err != nil {
				return err
			}
		}
		return os.Chmod(to, mode)
	case fi.Mode()&fs.ModeSymlink != 0:
		target, err := os.Readlink(from)
		if err != nil {
			return err
		}
		return os.Symlink(target, to)
	}
	data, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	if err := os.WriteFile(to, data, 0o600); err != nil {
		return err
	}
	return os.Chmod(to, mode)
}
