// Package sandbox is where act carries out operations: the [System]
// interface every file operation writes through, its real implementation,
// and the [LayerSystem] decorator that turns writes into an overlayfs-shaped
// layer so that a dry run never touches the real tree.
//
// Dry run is a decorator, not a flag: the same operation code runs against
// [RealSystem] (apply) or a [LayerSystem] over it (plan).
package sandbox

import (
	"io"
	"io/fs"
	"os"
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

// RealSystem is the real filesystem.
type RealSystem struct{}

var _ System = RealSystem{}

// Lstat implements System.
func (RealSystem) Lstat(path string) (fs.FileInfo, error) { return os.Lstat(path) }

// Open implements System.
func (RealSystem) Open(path string) (io.ReadCloser, error) { return os.Open(path) }

// ReadDir implements System.
func (RealSystem) ReadDir(path string) ([]fs.DirEntry, error) { return os.ReadDir(path) }

// Readlink implements System.
func (RealSystem) Readlink(path string) (string, error) { return os.Readlink(path) }

// WriteFile implements System.
func (RealSystem) WriteFile(path string, data []byte, perm fs.FileMode) error {
	return os.WriteFile(path, data, perm)
}

// Mkdir implements System.
func (RealSystem) Mkdir(path string, perm fs.FileMode) error { return os.Mkdir(path, perm) }

// Remove implements System.
func (RealSystem) Remove(path string) error { return os.Remove(path) }

// RemoveAll implements System.
func (RealSystem) RemoveAll(path string) error { return os.RemoveAll(path) }

// Rename implements System.
func (RealSystem) Rename(from, to string) error { return os.Rename(from, to) }

// Chmod implements System.
func (RealSystem) Chmod(path string, mode fs.FileMode) error { return os.Chmod(path, mode) }
