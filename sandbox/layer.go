package sandbox

// Rules of this file:
//
//   - The lower System is never written to. Every write goes into the upper
//     directory, which has exactly the shape the kernel's overlayfs gives an
//     upper dir (userxattr form), so that a layer written here and one
//     written by a command under a real overlay mount are diffed alike.
//   - Paths are resolved one component at a time from the root, in the
//     merged view. Symbolic links are never followed: a symlink before the
//     last component is [ErrSymlinkInPath].
//   - Errors name the real path the caller asked about, never the path
//     inside the layer.

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/act-project/act/internal/overlay"

	"golang.org/x/sys/unix"
)

// ErrSymlinkInPath is returned by [LayerSystem] when a component of a path
// other than the last is a symbolic link. The caller resolves links itself
// (and checks that the result stays in scope), then asks again.
var ErrSymlinkInPath = errors.New("path goes through a symbolic link")

// Overlay extended attributes as the kernel writes them on a mount with the
// userxattr option (the only form available inside a user namespace).
const (
	// OpaqueXattr marks an upper directory whose lower twin is hidden: its
	// merged content is the upper directory alone. Its value is "y".
	OpaqueXattr = overlay.OpaqueXattr
)

// A LayerSystem is a [System] whose reads see a layer over a lower System
// and whose writes go only into the layer. The layer is a directory shaped
// like an overlayfs upper dir, holding the real absolute path P at
// UpperDir()+P:
//
//   - new and changed entries are plain files, directories and symlinks
//     (a directory is copied up, with its lower mode, when something below
//     it changes; a file is copied up, content and mode, when its mode
//     changes);
//   - a deleted entry that exists below is a whiteout: a character device
//     with device number 0/0;
//   - a directory created where a whiteout stood is opaque: it carries the
//     xattr [OpaqueXattr] = "y" and hides whatever was below.
//
// A kernel overlay mount with lowerdir = the real path R and upperdir =
// Upper(R) produces the same shape, so one diff serves both.
//
// Paths given to a LayerSystem are absolute and clean. Symbolic links are
// never followed, not even as the last component: Open of a symlink fails
// with ELOOP, Chmod of one with EOPNOTSUPP, and WriteFile replaces it.
//
// Permissions are those of the layer's own files, which mirror the real
// ones, so an ordinary user meets the errors the real tree would give
// (deleting a real directory checks every non-empty directory below it), with
// one exception: a copy-up works even inside a read-only directory (as the
// kernel's does). A LayerSystem is not safe for concurrent writes.
type LayerSystem struct {
	lower System
	dir   string
	upper string
}

var _ System = (*LayerSystem)(nil)

// NewLayerSystem returns a LayerSystem over lower that keeps its layer in
// dir. dir is created on the first write; it may already hold a layer.
func NewLayerSystem(lower System, dir string) *LayerSystem {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	return &LayerSystem{lower: lower, dir: dir, upper: filepath.Join(dir, "upper")}
}

// UpperDir returns the layer's upper directory: the root of the merged view.
func (l *LayerSystem) UpperDir() string { return l.upper }

// Upper returns where the real absolute path p lives in the layer.
func (l *LayerSystem) Upper(p string) string { return filepath.Join(l.upper, p) }

// node is one resolved path of the merged view.
type node struct {
	path   string
	info   fs.FileInfo // the merged entry; nil when absent
	upper  fs.FileInfo // the upper entry (possibly a whiteout); nil when none
	lower  fs.FileInfo // the lower twin, when the merged parent shows lower content
	opaque bool        // upper is an opaque directory
}

// lowerBelow reports whether the lower twin's content shows through below n.
func (n *node) lowerBelow() bool {
	return n.lower != nil && n.lower.IsDir() && !n.opaque && (n.upper == nil || n.upper.IsDir())
}

// resolve walks p from the root through the merged view and returns the
// node of every component, the root first and p last. Only p itself may be
// absent.
func (l *LayerSystem) resolve(op, p string) ([]node, error) {
	if !filepath.IsAbs(p) || filepath.Clean(p) != p {
		return nil, &fs.PathError{Op: op, Path: p, Err: fs.ErrInvalid}
	}
	root := node{path: "/"}
	var err error
	if root.upper, err = lstatUpper(l.upper); err != nil {
		return nil, l.pathErr(op, p, err)
	}
	if root.lower, err = l.lower.Lstat("/"); err != nil {
		return nil, l.pathErr(op, p, err)
	}
	root.info = root.lower
	if root.upper != nil {
		root.info = root.upper
	}
	chain := []node{root}
	if p == "/" {
		return chain, nil
	}
	rest := p[1:]
	for rest != "" {
		name, tail, _ := strings.Cut(rest, "/")
		rest = tail
		parent := &chain[len(chain)-1]
		switch {
		case parent.info == nil:
			return nil, &fs.PathError{Op: op, Path: p, Err: fs.ErrNotExist}
		case parent.info.Mode()&fs.ModeSymlink != 0:
			return nil, &fs.PathError{Op: op, Path: p, Err: fmt.Errorf("%w (%s)", ErrSymlinkInPath, parent.path)}
		case !parent.info.IsDir():
			return nil, &fs.PathError{Op: op, Path: p, Err: syscall.ENOTDIR}
		}
		n := node{path: filepath.Join(parent.path, name)}
		if parent.upper != nil {
			if n.upper, err = lstatUpper(l.Upper(n.path)); err != nil {
				return nil, l.pathErr(op, p, err)
			}
		}
		if parent.lowerBelow() {
			n.lower, err = l.lower.Lstat(n.path)
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
				n.lower, err = nil, nil
			}
			if err != nil {
				return nil, l.pathErr(op, p, err)
			}
		}
		switch {
		case n.upper == nil:
			n.info = n.lower
		case overlay.IsWhiteout(n.upper):
			// absent in the merged view
		default:
			n.info = n.upper
			if n.upper.IsDir() {
				n.opaque = overlay.IsOpaque(l.Upper(n.path))
			}
		}
		chain = append(chain, n)
	}
	return chain, nil
}

// lstatUpper is os.Lstat with absence as a nil FileInfo.
func lstatUpper(name string) (fs.FileInfo, error) {
	fi, err := os.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return fi, err
}

// pathErr reports err as an error of op on the real path p: a path inside
// the layer is replaced by p, keeping the underlying cause.
func (l *LayerSystem) pathErr(op, p string, err error) error {
	var pe *fs.PathError
	var le *os.LinkError
	var se *os.SyscallError
	switch {
	case errors.As(err, &pe):
		if pe.Path == p {
			return err
		}
		err = pe.Err
	case errors.As(err, &le):
		err = le.Err
	case errors.As(err, &se):
		err = se.Err
	}
	return &fs.PathError{Op: op, Path: p, Err: err}
}

// Lstat implements [System].
func (l *LayerSystem) Lstat(p string) (fs.FileInfo, error) {
	chain, err := l.resolve("lstat", p)
	if err != nil {
		return nil, err
	}
	n := chain[len(chain)-1]
	if n.info == nil {
		return nil, &fs.PathError{Op: "lstat", Path: p, Err: fs.ErrNotExist}
	}
	return n.info, nil
}

// Open implements [System]. A directory is EISDIR, a symlink ELOOP.
func (l *LayerSystem) Open(p string) (io.ReadCloser, error) {
	n, err := l.existing("open", p)
	if err != nil {
		return nil, err
	}
	switch {
	case n.info.IsDir():
		return nil, &fs.PathError{Op: "open", Path: p, Err: syscall.EISDIR}
	case n.info.Mode()&fs.ModeSymlink != 0:
		return nil, &fs.PathError{Op: "open", Path: p, Err: syscall.ELOOP}
	case n.upper == nil:
		return l.lower.Open(p)
	}
	f, err := os.Open(l.Upper(p))
	if err != nil {
		return nil, l.pathErr("open", p, err)
	}
	return f, nil
}

// existing resolves p and requires it to exist in the merged view.
func (l *LayerSystem) existing(op, p string) (node, error) {
	chain, err := l.resolve(op, p)
	if err != nil {
		return node{}, err
	}
	n := chain[len(chain)-1]
	if n.info == nil {
		return node{}, &fs.PathError{Op: op, Path: p, Err: fs.ErrNotExist}
	}
	return n, nil
}

// ReadDir implements [System]: the upper entries, then the lower entries
// neither shadowed nor whited out, sorted by name.
func (l *LayerSystem) ReadDir(p string) ([]fs.DirEntry, error) {
	n, err := l.existing("readdirent", p)
	if err != nil {
		return nil, err
	}
	return l.readDir(n)
}

func (l *LayerSystem) readDir(n node) ([]fs.DirEntry, error) {
	if !n.info.IsDir() {
		return nil, &fs.PathError{Op: "readdirent", Path: n.path, Err: syscall.ENOTDIR}
	}
	var out []fs.DirEntry
	seen := map[string]bool{}
	if n.upper != nil {
		ents, err := os.ReadDir(l.Upper(n.path))
		if err != nil {
			return nil, l.pathErr("readdirent", n.path, err)
		}
		for _, e := range ents {
			seen[e.Name()] = true
			if e.Type() == fs.ModeDevice|fs.ModeCharDevice {
				fi, err := e.Info()
				if err != nil {
					return nil, l.pathErr("readdirent", n.path, err)
				}
				if overlay.IsWhiteout(fi) {
					continue
				}
			}
			out = append(out, e)
		}
	}
	if n.lowerBelow() {
		ents, err := l.lower.ReadDir(n.path)
		if err != nil {
			return nil, err
		}
		for _, e := range ents {
			if !seen[e.Name()] {
				out = append(out, e)
			}
		}
		slices.SortFunc(out, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	}
	return out, nil
}

// Readlink implements [System].
func (l *LayerSystem) Readlink(p string) (string, error) {
	n, err := l.existing("readlink", p)
	if err != nil {
		return "", err
	}
	switch {
	case n.info.Mode()&fs.ModeSymlink == 0:
		return "", &fs.PathError{Op: "readlink", Path: p, Err: syscall.EINVAL}
	case n.upper == nil:
		return l.lower.Readlink(p)
	}
	target, err := os.Readlink(l.Upper(p))
	if err != nil {
		return "", l.pathErr("readlink", p, err)
	}
	return target, nil
}

// WriteFile implements [System]. The file gets exactly the mode perm
// (permission bits and setuid, setgid, sticky; the umask does not apply).
// A file or symlink at p is replaced, a directory is EISDIR.
func (l *LayerSystem) WriteFile(p string, data []byte, perm fs.FileMode) error {
	const op = "write"
	chain, err := l.resolve(op, p)
	if err != nil {
		return err
	}
	n := chain[len(chain)-1]
	if n.info != nil && n.info.IsDir() {
		return &fs.PathError{Op: op, Path: p, Err: syscall.EISDIR}
	}
	if err := l.copyUpDirs(op, p, chain[:len(chain)-1]); err != nil {
		return err
	}
	if n.upper != nil {
		if err := os.Remove(l.Upper(p)); err != nil {
			return l.pathErr(op, p, err)
		}
	}
	if err := createFile(l.Upper(p), data, nil, perm, nil); err != nil {
		return l.pathErr(op, p, err)
	}
	return nil
}

// createFile creates name (which must not exist) with data, or else the
// content of r, and exactly the mode perm. When owner is not nil, the file
// gets its owner (see chown) before its mode, since chown clears setuid.
func createFile(name string, data []byte, r io.Reader, perm fs.FileMode, owner fs.FileInfo) error {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if r != nil {
		_, err = io.Copy(f, r)
	} else {
		_, err = f.Write(data)
	}
	if err == nil {
		if owner != nil {
			chown(name, owner)
		}
		err = f.Chmod(perm & modeBits)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(name)
	}
	return err
}

// modeBits are the mode bits a System sets: permissions, setuid, setgid and
// sticky.
const modeBits = fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky

// Mkdir implements [System]. The directory gets exactly the mode perm. One
// created where a whiteout stands is opaque, as overlayfs makes it.
func (l *LayerSystem) Mkdir(p string, perm fs.FileMode) error {
	const op = "mkdir"
	chain, err := l.resolve(op, p)
	if err != nil {
		return err
	}
	n := chain[len(chain)-1]
	if n.info != nil {
		return &fs.PathError{Op: op, Path: p, Err: fs.ErrExist}
	}
	if err := l.copyUpDirs(op, p, chain[:len(chain)-1]); err != nil {
		return err
	}
	return l.mkdirUpper(op, p, n, perm)
}

// mkdirUpper creates the directory p, absent in the merged view, in the
// upper dir: opaque when it replaces a whiteout.
func (l *LayerSystem) mkdirUpper(op, p string, n node, perm fs.FileMode) error {
	u := l.Upper(p)
	whiteout := n.upper != nil
	if whiteout {
		if err := os.Remove(u); err != nil {
			return l.pathErr(op, p, err)
		}
	}
	err := os.Mkdir(u, 0o700)
	if err == nil && whiteout {
		err = unix.Lsetxattr(u, OpaqueXattr, []byte("y"), 0)
	}
	if err == nil {
		err = os.Chmod(u, perm&modeBits)
	}
	if err != nil {
		return l.pathErr(op, p, err)
	}
	return nil
}

// copyUpDirs makes sure every directory of chain (merged directories, the
// root first) exists in the upper dir, creating missing ones as plain
// directories with the lower's mode (and owner, when act runs as root).
// p is the path of the operation, for errors.
func (l *LayerSystem) copyUpDirs(op, p string, chain []node) error {
	for i := range chain {
		n := &chain[i]
		if n.upper != nil {
			continue
		}
		u := l.Upper(n.path)
		if n.path == "/" {
			if err := os.MkdirAll(l.dir, 0o700); err != nil {
				return l.pathErr(op, p, err)
			}
		}
		if err := copyUpDir(u, n.info); err != nil && !errors.Is(err, fs.ErrExist) {
			return l.pathErr(op, p, err)
		}
		n.upper = n.info
	}
	return nil
}

// copyUpDir creates the upper twin u of the lower directory fi.
func copyUpDir(u string, fi fs.FileInfo) error {
	err := asOwner(filepath.Dir(u), func() error { return os.Mkdir(u, 0o700) })
	if err != nil {
		return err
	}
	chown(u, fi)
	return os.Chmod(u, fi.Mode()&modeBits)
}

// asOwner runs f, which creates an entry in dir; if that fails for lack of
// permission, it makes dir writable for its owner for the time of f. Only
// copy-up uses it: the kernel copies up with the mounter's credentials too,
// since a copy-up is no change of the merged view.
func asOwner(dir string, f func() error) error {
	err := f()
	if !errors.Is(err, fs.ErrPermission) {
		return err
	}
	fi, serr := os.Lstat(dir)
	if serr != nil {
		return err
	}
	if cerr := os.Chmod(dir, fi.Mode()&modeBits|0o700); cerr != nil {
		return err
	}
	err = f()
	if cerr := os.Chmod(dir, fi.Mode()&modeBits); err == nil {
		err = cerr
	}
	return err
}

// chown gives u the owner of the lower entry fi when act runs as root, as
// the kernel's copy-up does. Failure is not an error: ownership is not part
// of a diff.
func chown(u string, fi fs.FileInfo) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if ok && os.Geteuid() == 0 {
		_ = os.Lchown(u, int(st.Uid), int(st.Gid))
	}
}

// whiteout records in the upper dir that p, which exists below, is deleted.
// The parent must already exist in the upper dir.
func (l *LayerSystem) whiteout(op, p string) error {
	if err := unix.Mknod(l.Upper(p), unix.S_IFCHR, 0); err != nil {
		return l.pathErr(op, p, &fs.PathError{Op: "mknod", Path: l.Upper(p), Err: err})
	}
	return nil
}

// Remove implements [System]: a file, a symlink or a directory that is
// empty in the merged view.
func (l *LayerSystem) Remove(p string) error {
	const op = "remove"
	chain, err := l.resolve(op, p)
	if err != nil {
		return err
	}
	n := chain[len(chain)-1]
	if n.info == nil {
		return &fs.PathError{Op: op, Path: p, Err: fs.ErrNotExist}
	}
	if n.info.IsDir() {
		ents, err := l.readDir(n)
		if err != nil {
			return err
		}
		if len(ents) > 0 {
			return &fs.PathError{Op: op, Path: p, Err: syscall.ENOTEMPTY}
		}
	}
	return l.remove(op, chain)
}

// remove deletes the last node of chain, which exists, with all below it.
func (l *LayerSystem) remove(op string, chain []node) error {
	n := chain[len(chain)-1]
	if n.path == "/" {
		return &fs.PathError{Op: op, Path: n.path, Err: syscall.EBUSY}
	}
	if n.upper != nil {
		if err := os.RemoveAll(l.Upper(n.path)); err != nil {
			return l.pathErr(op, n.path, err)
		}
	}
	if n.lower == nil {
		return nil
	}
	if n.lower.IsDir() {
		if err := l.checkRemovable(op, n.path); err != nil {
			return err
		}
	}
	if err := l.copyUpDirs(op, n.path, chain[:len(chain)-1]); err != nil {
		return err
	}
	return l.whiteout(op, n.path)
}

// checkRemovable refuses, as the real removal would, to delete a real
// directory tree holding a non-empty directory this process may not write
// to or search: otherwise the dry run would approve what apply cannot do.
func (l *LayerSystem) checkRemovable(op, dir string) error {
	ents, err := l.lower.ReadDir(dir)
	if err != nil {
		return l.pathErr(op, dir, err)
	}
	if len(ents) == 0 {
		return nil
	}
	if err := unix.Faccessat(unix.AT_FDCWD, dir, unix.W_OK|unix.X_OK, unix.AT_EACCESS); err != nil {
		return &fs.PathError{Op: op, Path: dir, Err: syscall.EACCES}
	}
	for _, e := range ents {
		if e.IsDir() {
			if err := l.checkRemovable(op, filepath.Join(dir, e.Name())); err != nil {
				return err
			}
		}
	}
	return nil
}

// RemoveAll implements [System]. A path that does not exist, or whose
// parent does not, is not an error.
func (l *LayerSystem) RemoveAll(p string) error {
	const op = "removeall"
	chain, err := l.resolve(op, p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if chain[len(chain)-1].info == nil {
		return nil
	}
	return l.remove(op, chain)
}

// Rename implements [System]. A file or symlink replaces a file or symlink
// at to; a directory replaces an empty directory. A file or symlink moves
// whole; a directory is copied, merged view and all, to to and then
// removed from from — the shape overlayfs leaves when a tool falls back
// from rename(2) to copy and delete (overlayfs refuses to rename a
// directory that has a lower part with EXDEV).
func (l *LayerSystem) Rename(from, to string) error {
	const op = "rename"
	// The checks come in the order rename(2) makes them.
	fchain, err := l.resolve(op, from)
	if err != nil {
		return err
	}
	tchain, err := l.resolve(op, to)
	if err != nil {
		return err
	}
	src, dst := fchain[len(fchain)-1], tchain[len(tchain)-1]
	switch {
	case src.info == nil:
		return &fs.PathError{Op: op, Path: from, Err: fs.ErrNotExist}
	case from == "/" || to == "/":
		return &fs.PathError{Op: op, Path: from, Err: syscall.EBUSY}
	case strings.HasPrefix(to, from+"/"):
		return &fs.PathError{Op: op, Path: to, Err: syscall.EINVAL}
	case strings.HasPrefix(from, to+"/"):
		return &fs.PathError{Op: op, Path: to, Err: syscall.ENOTEMPTY}
	case from == to:
		return nil
	}
	if dst.info != nil {
		switch {
		case src.info.IsDir() && !dst.info.IsDir():
			return &fs.PathError{Op: op, Path: to, Err: syscall.ENOTDIR}
		case !src.info.IsDir() && dst.info.IsDir():
			return &fs.PathError{Op: op, Path: to, Err: syscall.EISDIR}
		case dst.info.IsDir():
			ents, err := l.readDir(dst)
			if err != nil {
				return err
			}
			if len(ents) > 0 {
				return &fs.PathError{Op: op, Path: to, Err: syscall.ENOTEMPTY}
			}
		}
	}
	if err := l.copyUpDirs(op, to, tchain[:len(tchain)-1]); err != nil {
		return err
	}
	// Clear to: what is there is replaced. An empty merged directory
	// becomes a whiteout when it has a lower part, like any removal.
	if dst.info != nil && dst.info.IsDir() {
		if err := l.remove(op, tchain); err != nil {
			return err
		}
		if tchain, err = l.resolve(op, to); err != nil {
			return err
		}
		dst = tchain[len(tchain)-1]
	} else if dst.upper != nil && dst.info != nil {
		if err := os.Remove(l.Upper(to)); err != nil {
			return l.pathErr(op, to, err)
		}
		dst.upper = nil
	}
	whiteoutAtTo := dst.upper != nil // a whiteout: to is absent now

	switch {
	case src.upper != nil && src.lower == nil:
		// Wholly in the upper dir: move it there.
		if whiteoutAtTo {
			if err := os.Remove(l.Upper(to)); err != nil {
				return l.pathErr(op, to, err)
			}
		}
		if err := os.Rename(l.Upper(from), l.Upper(to)); err != nil {
			return l.pathErr(op, from, err)
		}
		if whiteoutAtTo && src.info.IsDir() {
			if err := unix.Lsetxattr(l.Upper(to), OpaqueXattr, []byte("y"), 0); err != nil {
				return l.pathErr(op, to, err)
			}
		}
		return nil
	case src.info.IsDir():
		if err := l.copyTree(op, from, to, dst, src.info); err != nil {
			return err
		}
	default:
		if whiteoutAtTo {
			if err := os.Remove(l.Upper(to)); err != nil {
				return l.pathErr(op, to, err)
			}
		}
		if src.upper != nil {
			if err := os.Rename(l.Upper(from), l.Upper(to)); err != nil {
				return l.pathErr(op, from, err)
			}
		} else if err := l.copyEntry(op, from, to, src.info); err != nil {
			return err
		}
	}
	// Remove from; it has a lower part, so this leaves a whiteout.
	fchain, err = l.resolve(op, from)
	if err != nil {
		return err
	}
	src = fchain[len(fchain)-1]
	if src.info == nil && src.lower == nil {
		return nil
	}
	if src.upper != nil && src.info != nil {
		if err := os.RemoveAll(l.Upper(from)); err != nil {
			return l.pathErr(op, from, err)
		}
	}
	if src.upper != nil && src.info == nil {
		return nil // already a whiteout
	}
	if err := l.copyUpDirs(op, from, fchain[:len(fchain)-1]); err != nil {
		return err
	}
	return l.whiteout(op, from)
}

// copyEntry copies the merged file or symlink from, described by fi, to
// the upper path of to, which is free.
func (l *LayerSystem) copyEntry(op, from, to string, fi fs.FileInfo) error {
	u := l.Upper(to)
	if fi.Mode()&fs.ModeSymlink != 0 {
		target, err := l.Readlink(from)
		if err != nil {
			return err
		}
		if err := os.Symlink(target, u); err != nil {
			return l.pathErr(op, to, err)
		}
		chown(u, fi)
		return nil
	}
	if !fi.Mode().IsRegular() {
		return &fs.PathError{Op: op, Path: from, Err: fmt.Errorf("unsupported file type %v", fi.Mode().Type())}
	}
	r, err := l.Open(from)
	if err != nil {
		return err
	}
	defer r.Close()
	if err := createFile(u, nil, r, fi.Mode(), fi); err != nil {
		return l.pathErr(op, to, err)
	}
	return nil
}

// copyTree copies the merged directory from, described by fi, and all
// below it to to, which is absent in the merged view (dst).
func (l *LayerSystem) copyTree(op, from, to string, dst node, fi fs.FileInfo) (err error) {
	// Writable while it is filled, its mode at the end.
	if err := l.mkdirUpper(op, to, dst, 0o700); err != nil {
		return err
	}
	defer func() {
		if err == nil {
			chown(l.Upper(to), fi)
			if err = os.Chmod(l.Upper(to), fi.Mode()&modeBits); err != nil {
				err = l.pathErr(op, to, err)
			}
		}
	}()
	ents, err := l.ReadDir(from)
	if err != nil {
		return err
	}
	for _, e := range ents {
		cfrom, cto := filepath.Join(from, e.Name()), filepath.Join(to, e.Name())
		cfi, err := l.Lstat(cfrom)
		if err != nil {
			return err
		}
		if cfi.IsDir() {
			err = l.copyTree(op, cfrom, cto, node{path: cto}, cfi)
		} else {
			err = l.copyEntry(op, cfrom, cto, cfi)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// Chmod implements [System]: it sets exactly the permission, setuid,
// setgid and sticky bits of mode. An entry only below is copied up first
// (a file with its content). A symlink is EOPNOTSUPP, as lchmod is on
// Linux.
func (l *LayerSystem) Chmod(p string, mode fs.FileMode) error {
	const op = "chmod"
	chain, err := l.resolve(op, p)
	if err != nil {
		return err
	}
	n := chain[len(chain)-1]
	switch {
	case n.info == nil:
		return &fs.PathError{Op: op, Path: p, Err: fs.ErrNotExist}
	case n.info.Mode()&fs.ModeSymlink != 0:
		return &fs.PathError{Op: op, Path: p, Err: syscall.EOPNOTSUPP}
	case n.upper == nil && n.info.IsDir():
		if err := l.copyUpDirs(op, p, chain); err != nil {
			return err
		}
	case n.upper == nil:
		if err := l.copyUpDirs(op, p, chain[:len(chain)-1]); err != nil {
			return err
		}
		r, err := l.lower.Open(p)
		if err != nil {
			return err
		}
		u := l.Upper(p)
		err = asOwner(filepath.Dir(u), func() error { return createFile(u, nil, r, n.info.Mode(), n.info) })
		r.Close()
		if err != nil {
			return l.pathErr(op, p, err)
		}
	}
	if err := os.Chmod(l.Upper(p), mode&modeBits); err != nil {
		return l.pathErr(op, p, err)
	}
	return nil
}

// CopiedUp reports whether the directory p and its ancestors are in the
// upper dir as CopyUpDir would make them now from the lower: directories
// with the lower's mode bits (and owner, when act runs as root). A layer
// made ahead for p (plan.SpareDirs) is used only if they still are.
func (l *LayerSystem) CopiedUp(p string) bool {
	if !filepath.IsAbs(p) || filepath.Clean(p) != p {
		return false
	}
	for q := p; ; q = filepath.Dir(q) {
		lo, err := l.lower.Lstat(q)
		if err != nil || !lo.IsDir() {
			return false
		}
		up, err := os.Lstat(l.Upper(q))
		if err != nil || !up.IsDir() || up.Mode()&modeBits != lo.Mode()&modeBits {
			return false
		}
		if os.Geteuid() == 0 {
			ls, ok1 := lo.Sys().(*syscall.Stat_t)
			us, ok2 := up.Sys().(*syscall.Stat_t)
			if !ok1 || !ok2 || ls.Uid != us.Uid || ls.Gid != us.Gid {
				return false
			}
		}
		if q == "/" {
			return true
		}
	}
}

// CopyUpDir makes sure the merged directory p and its ancestors exist in
// the upper dir, creating missing ones with the lower's mode. Call it for
// each scope root before mounting an overlay with upperdir = Upper(root),
// so that the mount's root has the real directory's mode.
func (l *LayerSystem) CopyUpDir(p string) error {
	const op = "copyup"
	chain, err := l.resolve(op, p)
	if err != nil {
		return err
	}
	n := chain[len(chain)-1]
	if n.info == nil {
		return &fs.PathError{Op: op, Path: p, Err: fs.ErrNotExist}
	}
	if !n.info.IsDir() {
		return &fs.PathError{Op: op, Path: p, Err: syscall.ENOTDIR}
	}
	return l.copyUpDirs(op, p, chain)
}
