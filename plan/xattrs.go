package plan

import (
	"errors"
	"io/fs"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// keptXattr reports whether an extended attribute of a layer entry stays:
// only overlayfs's own (user.overlay.*), which say what the layer deletes
// or makes opaque. A command's own xattrs (user.*, POSIX ACLs) would reach
// the real tree unseen — neither the diff nor --json shows them — so act
// does not promote them (docs/sandbox-promotion.md).
func keptXattr(name string) bool { return strings.HasPrefix(name, "user.overlay.") }

// dropXattrs removes from every entry of the layer under upper the extended
// attributes keptXattr does not keep.
func dropXattrs(upper string) error {
	return filepath.WalkDir(upper, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		names, err := listXattrs(p)
		if err != nil {
			return err
		}
		for _, n := range names {
			if keptXattr(n) {
				continue
			}
			if err := unix.Lremovexattr(p, n); err != nil && !errors.Is(err, unix.ENODATA) {
				return &fs.PathError{Op: "removexattr " + n, Path: p, Err: err}
			}
		}
		return nil
	})
}

// listXattrs returns the names of the extended attributes of p (not
// following a symlink).
func listXattrs(p string) ([]string, error) {
	size, err := unix.Llistxattr(p, nil)
	if err != nil {
		if errors.Is(err, unix.ENOTSUP) {
			return nil, nil
		}
		return nil, &fs.PathError{Op: "listxattr", Path: p, Err: err}
	}
	if size == 0 {
		return nil, nil
	}
	buf := make([]byte, size)
	n, err := unix.Llistxattr(p, buf)
	if err != nil {
		return nil, &fs.PathError{Op: "listxattr", Path: p, Err: err}
	}
	var names []string
	for _, s := range strings.Split(string(buf[:n]), "\x00") {
		if s != "" {
			names = append(names, s)
		}
	}
	return names, nil
}

// ForeignXattrs returns the extended attributes of the layer entry p that
// dropXattrs would have removed: any is a change to the layer since the
// plan.
func ForeignXattrs(p string) ([]string, error) {
	names, err := listXattrs(p)
	var out []string
	for _, n := range names {
		if !keptXattr(n) {
			out = append(out, n)
		}
	}
	return out, err
}
