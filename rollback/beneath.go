package rollback

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/act-project/act/internal/pathglob"
	"github.com/act-project/act/plan"
)

// dirs opens the directories a promotion changes entries in, so that every
// op works on a directory descriptor and a single name, never on a path
// the kernel resolves again (docs/sandbox-promotion.md):
//
//   - a directory the plan pinned (one on the way from / to a scope root,
//     [plan.ScopeRootIDs]) is opened by its path and refused unless the
//     descriptor is the device and inode the plan recorded;
//   - a directory below one is opened from the deepest pinned directory
//     above it with openat2(RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS), or, where
//     the kernel has no openat2, one O_NOFOLLOW component at a time: no
//     symbolic link, and no "..", is followed below a scope root.
//
// A directory swapped for a symbolic link (or another directory) at any
// moment of the promotion therefore cannot send an op outside the scope.
// Descriptors are kept until close, and dropped for a path an op moved.
// Where the plan pinned nothing above a path (a journal or plan written
// before pins were recorded), / stands as its pin, unchecked: no symbolic
// link is followed anywhere on the way, and a path through one (a host's
// /var/run) is refused rather than resolved.
type dirs struct {
	pins []plan.PathID // directories only
	fds  map[string]int
	keys []string // fds' keys, sorted: forget finds those below a path
}

// openat2Missing makes dirs take the component walk, as on a kernel
// without openat2 (tests set it).
var openat2Missing bool

func newDirs(pins []plan.PathID) *dirs {
	d := &dirs{fds: map[string]int{}}
	root := false
	for _, p := range pins {
		if p.Link == "" {
			d.pins = append(d.pins, p)
			root = root || p.Path == "/"
		}
	}
	if !root {
		d.pins = append(d.pins, plan.PathID{Path: "/"}) // Ino 0: unchecked
	}
	return d
}

func (d *dirs) close() {
	for k, fd := range d.fds {
		unix.Close(fd)
		delete(d.fds, k)
	}
	d.keys = nil
}

// add keeps fd as the descriptor of the directory dir.
func (d *dirs) add(dir string, fd int) {
	d.fds[dir] = fd
	i, found := slices.BinarySearch(d.keys, dir)
	if !found {
		d.keys = slices.Insert(d.keys, i, dir)
	}
}

// forget drops the descriptors of path and of every directory below it:
// an op moved or removed the entry at path. The directories below path
// are a run of the sorted keys, found without looking at the others: a
// promotion of thousands of entries in a deep tree keeps thousands.
func (d *dirs) forget(path string) {
	drop := func(k string) {
		if fd, ok := d.fds[k]; ok {
			unix.Close(fd)
			delete(d.fds, k)
		}
	}
	if path == "/" {
		for _, k := range d.keys {
			drop(k)
		}
		d.keys = d.keys[:0]
		return
	}
	if i, found := slices.BinarySearch(d.keys, path); found {
		drop(path)
		d.keys = slices.Delete(d.keys, i, i+1)
	}
	below := path + "/"
	i, _ := slices.BinarySearch(d.keys, below)
	j := i
	for j < len(d.keys) && strings.HasPrefix(d.keys[j], below) {
		drop(d.keys[j])
		j++
	}
	d.keys = slices.Delete(d.keys, i, j)
}

// at returns a descriptor of name's directory and name's last element.
// The descriptor belongs to d.
func (d *dirs) at(name string) (int, string, error) {
	fd, err := d.dir(filepath.Dir(name))
	return fd, filepath.Base(name), err
}

// dir returns a descriptor (O_PATH) of the directory dir.
func (d *dirs) dir(dir string) (int, error) {
	if fd, ok := d.fds[dir]; ok {
		return fd, nil
	}
	fd, err := d.open(dir)
	if err != nil {
		return -1, err
	}
	d.add(dir, fd)
	return fd, nil
}

func (d *dirs) open(dir string) (int, error) {
	pin := d.pinOf(dir)
	if dir == pin.Path {
		fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return -1, &fs.PathError{Op: "open", Path: dir, Err: err}
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			return -1, &fs.PathError{Op: "stat", Path: dir, Err: err}
		}
		if pin.Ino != 0 && (uint64(st.Dev) != pin.Dev || st.Ino != pin.Ino) {
			unix.Close(fd)
			return -1, fmt.Errorf("%s is no longer the directory the plan found (it was replaced)", dir)
		}
		return fd, nil
	}
	root, err := d.dir(pin.Path)
	if err != nil {
		return -1, err
	}
	rel := strings.TrimPrefix(strings.TrimPrefix(dir, pin.Path), "/")
	fd, err := openBeneath(root, rel)
	if err != nil {
		if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EXDEV) || errors.Is(err, unix.ENOTDIR) {
			return -1, fmt.Errorf("%s: a symbolic link or another file is in the way below %s (%v); act follows none there", dir, pin.Path, err)
		}
		return -1, &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	return fd, nil
}

// pinOf returns the deepest pinned directory that is dir or above it (/
// is always pinned).
func (d *dirs) pinOf(dir string) plan.PathID {
	var best plan.PathID
	for _, p := range d.pins {
		if pathglob.Within(dir, p.Path) && len(p.Path) >= len(best.Path) {
			best = p
		}
	}
	return best
}

// openBeneath opens the directory rel below the directory root without
// following a symbolic link or leaving root.
func openBeneath(root int, rel string) (int, error) {
	if !openat2Missing {
		fd, err := unix.Openat2(root, rel, &unix.OpenHow{
			Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
		})
		if err != unix.ENOSYS {
			return fd, err
		}
	}
	cur := root
	for _, c := range strings.Split(rel, "/") {
		if c == "" || c == "." || c == ".." {
			if cur != root {
				unix.Close(cur)
			}
			return -1, unix.EXDEV
		}
		next, err := unix.Openat(cur, c, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if cur != root {
			unix.Close(cur)
		}
		if err != nil {
			return -1, err
		}
		cur = next
	}
	return cur, nil
}

// lstatAt is lstat of name in the directory dfd; ok is false if nothing is
// there.
func lstatAt(dfd int, name string) (st unix.Stat_t, ok bool, err error) {
	err = unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	if err == unix.ENOENT {
		return st, false, nil
	}
	if err != nil {
		return st, false, &fs.PathError{Op: "lstat", Path: name, Err: err}
	}
	return st, true, nil
}

func isDir(st unix.Stat_t) bool { return st.Mode&unix.S_IFMT == unix.S_IFDIR }

// chmodAt sets the mode bits m (permissions, setuid, setgid, sticky) of
// name in dfd, never through a symbolic link.
func chmodAt(dfd int, name string, m uint32) error {
	err := unix.Fchmodat(dfd, name, m, unix.AT_SYMLINK_NOFOLLOW)
	if err == unix.EOPNOTSUPP {
		// No fchmodat2: chmod the entry through an O_PATH descriptor of
		// it, which names the inode, not a path.
		fd, oerr := unix.Openat(dfd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if oerr != nil {
			return &fs.PathError{Op: "chmod", Path: name, Err: oerr}
		}
		defer unix.Close(fd)
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT == unix.S_IFLNK {
			return &fs.PathError{Op: "chmod", Path: name, Err: unix.ELOOP}
		}
		err = unix.Chmod(fmt.Sprintf("/proc/self/fd/%d", fd), m)
	}
	if err != nil {
		return &fs.PathError{Op: "chmod", Path: name, Err: err}
	}
	return nil
}

// renameAt renames (ofd, from) to (nfd, to), replacing what is at to.
func renameAt(ofd int, from string, nfd int, to string) error {
	if err := unix.Renameat(ofd, from, nfd, to); err != nil {
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: err}
	}
	return nil
}

// removeAt removes name in dfd and, for a directory, everything in it,
// each directory opened from its parent's descriptor without following a
// symbolic link. Absent is not an error.
func removeAt(dfd int, name string) error {
	err := unix.Unlinkat(dfd, name, 0)
	if err == nil || err == unix.ENOENT {
		return nil
	}
	if err != unix.EISDIR && err != unix.EPERM {
		return &fs.PathError{Op: "unlink", Path: name, Err: err}
	}
	fd, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err == unix.ENOENT {
		return nil
	}
	if err != nil {
		return &fs.PathError{Op: "open", Path: name, Err: err}
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	names, err := f.Readdirnames(-1) // all first: removing while reading may skip some
	if err != nil {
		return &fs.PathError{Op: "readdir", Path: name, Err: err}
	}
	for _, n := range names {
		if err := removeAt(fd, n); err != nil {
			return err
		}
	}
	if err := unix.Unlinkat(dfd, name, unix.AT_REMOVEDIR); err != nil && err != unix.ENOENT {
		return &fs.PathError{Op: "rmdir", Path: name, Err: err}
	}
	return nil
}

// syncAt fsyncs the directory dfd (an O_PATH descriptor).
func syncAt(dfd int) error {
	fd, err := unix.Openat(dfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return unix.Fsync(fd)
}
