package rollback

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/act-project/act/diff"
)

// OpKind names what an [Op] does to the real tree.
type OpKind string

// The operations a promotion is made of. Apply and rollback are both lists
// of them: rollback is the inverse list, with the apply's backups as the
// new content.
const (
	// OpPut moves the entry at Src (or its copy at Stage) to Path. An entry
	// already at Path is moved to Backup first.
	OpPut OpKind = "put"
	// OpMkdir creates the directory Path with Mode.
	OpMkdir OpKind = "mkdir"
	// OpRemove moves the entry at Path, a whole tree for a directory, to
	// Backup.
	OpRemove OpKind = "remove"
	// OpChmod changes the mode of Path from ModeBefore to Mode.
	OpChmod OpKind = "chmod"
)

// An Op is one step of a promotion, as recorded in the journal's [Begin]:
// everything recovery needs to undo it is here and in the [Step] record
// written just before it started.
type Op struct {
	Kind OpKind `json:"op"`
	// Path is the real absolute path the op changes.
	Path string `json:"path"`
	// Src is where an OpPut's new entry is (the plan's layer, or a backup
	// when rolling back). It is renamed into place, so it must be on
	// Path's filesystem; otherwise Stage names a copy of it in Path's
	// directory, made and made durable before any op starts.
	Src   string `json:"src,omitempty"`
	Stage string `json:"stage,omitempty"`
	// SHA256, Size and Mode, for an OpPut of a file of the plan's layer,
	// are the reviewed content's digest and size and the reviewed mode:
	// the layer's file is never renamed into place (a descriptor held on
	// it would reach the real file), but copied to Stage, a new file of
	// act's own, hashing every byte written; a copy whose digest is not
	// SHA256 is refused (docs/sandbox-promotion.md). Target, for an OpPut
	// of a symbolic link of the layer, is the reviewed target: the link
	// at Stage is made with it, never read from the layer again.
	SHA256 string `json:"sha256,omitempty"`
	Size   int64  `json:"size,omitempty"`
	Target string `json:"target,omitempty"`
	// Backup is where the entry found at Path goes (OpRemove, and OpPut
	// over an existing entry). On Path's filesystem it is a rename (or, for
	// a file replaced by an OpPut, a hard link, so the replacement is one
	// atomic rename); on another filesystem (BackupCopy) a durable copy
	// made before Path is touched.
	Backup     string `json:"backup,omitempty"`
	BackupCopy bool   `json:"backup_copy,omitempty"`
	// Mode is the mode OpMkdir creates, OpChmod sets and an OpPut's
	// verified copy (SHA256) gets; ModeBefore is the mode OpChmod found.
	// Four-digit octal, as in plans.
	Mode       string `json:"mode,omitempty"`
	ModeBefore string `json:"mode_before,omitempty"`
	// Owner, when act runs as root, is who OpPut's and OpMkdir's entry
	// belongs to once in place: a modified entry keeps its owner, a new
	// one takes its directory's (docs/sandbox-promotion.md). Set on the
	// entry before it is renamed into place.
	Owner *Owner `json:"owner,omitempty"`
	// Change is the index of the plan change the op carries out.
	Change int `json:"change"`
}

// An Owner is a uid and a gid.
type Owner struct {
	UID uint32 `json:"uid"`
	GID uint32 `json:"gid"`
}

// chown gives the entry name in dfd o's owner, if o has one.
func (o *Op) chown(dfd int, name string) error {
	if o.Owner == nil {
		return nil
	}
	if err := unix.Fchownat(dfd, name, int(o.Owner.UID), int(o.Owner.GID), unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return &fs.PathError{Op: "chown", Path: o.Path, Err: err}
	}
	return nil
}

// from is where an OpPut's new entry is renamed from.
func (o *Op) from() string {
	if o.Stage != "" {
		return o.Stage
	}
	return o.Src
}

// partial is where a BackupCopy is built before it is renamed to Backup:
// Backup exists only once the copy is whole and durable.
func (o *Op) partial() string { return o.Backup + ".partial" }

// inode returns the inode number of the entry at name, 0 if absent.
func (d *dirs) inode(name string) (uint64, error) {
	dfd, base, err := d.at(name)
	if err != nil {
		return 0, err
	}
	st, ok, err := lstatAt(dfd, base)
	if err != nil || !ok {
		return 0, err
	}
	return st.Ino, nil
}

// newInode returns the inode of the entry an OpPut moves in.
func (o *Op) newInode(d *dirs) (uint64, error) {
	if o.Stage != "" {
		return d.inode(o.Stage)
	}
	fi, ok, err := exists(o.Src)
	if err != nil || !ok {
		return 0, err
	}
	return fi.Sys().(*syscall.Stat_t).Ino, nil
}

// exists reports whether anything is at name.
func exists(name string) (fs.FileInfo, bool, error) {
	fi, err := os.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	return fi, err == nil, err
}

// do carries out o, every change to the real tree made through d
// (docs/sandbox-promotion.md). A failure part-way leaves a state undo can
// undo.
func (o *Op) do(d *dirs) error {
	defer d.forget(o.Path)
	dfd, base, err := d.at(o.Path)
	if errors.Is(err, fs.ErrNotExist) && (o.Kind == OpRemove || o.Kind == OpChmod) {
		return nil // gone with its directory: nothing to keep or change
	}
	if err != nil {
		return err
	}
	switch o.Kind {
	case OpPut:
		return o.put(d, dfd, base)
	case OpMkdir:
		mode, err := modeBits(o.Mode)
		if err != nil {
			return err
		}
		if err := unix.Mkdirat(dfd, base, 0o700); err != nil {
			return &fs.PathError{Op: "mkdir", Path: o.Path, Err: err}
		}
		if err := o.chown(dfd, base); err != nil {
			return err
		}
		return chmodAt(dfd, base, mode) // exact, whatever the umask
	case OpRemove:
		// Absent already: only a forced rollback of a path deleted since
		// the apply gets here, and there is nothing to keep.
		if _, ok, err := lstatAt(dfd, base); err != nil || !ok {
			return err
		}
		return o.backUp(dfd, base, false)
	case OpChmod:
		mode, err := modeBits(o.Mode)
		if err != nil {
			return err
		}
		if _, ok, err := lstatAt(dfd, base); err != nil || !ok {
			return err
		}
		return chmodAt(dfd, base, mode)
	}
	return fmt.Errorf("unknown op %q", o.Kind)
}

// source returns the directory descriptor and name an OpPut's new entry is
// renamed from: the staged copy (in Path's directory or an ancestor), or
// Src in act's state directory.
func (o *Op) source(d *dirs) (int, string, error) {
	if o.Stage != "" {
		return d.at(o.Stage)
	}
	return unix.AT_FDCWD, o.Src, nil
}

func (o *Op) put(d *dirs, dfd int, base string) error {
	sfd, sname, err := o.source(d)
	if err != nil {
		return err
	}
	if err := o.chown(sfd, sname); err != nil {
		return err
	}
	if o.Backup == "" {
		// Nothing may be at Path: one renameat2 that refuses to replace.
		// Filesystems without RENAME_NOREPLACE take the general way below.
		err := unix.Renameat2(sfd, sname, dfd, base, unix.RENAME_NOREPLACE)
		switch err {
		case nil:
			return nil
		case unix.EEXIST:
			return &fs.PathError{Op: "put", Path: o.Path, Err: fs.ErrExist}
		case unix.EINVAL, unix.ENOSYS:
		default:
			return &os.LinkError{Op: "rename", Old: o.from(), New: o.Path, Err: err}
		}
	}
	cur, ok, err := lstatAt(dfd, base)
	if err != nil {
		return err
	}
	if ok {
		if o.Backup == "" {
			return &fs.PathError{Op: "put", Path: o.Path, Err: fs.ErrExist}
		}
		in, _, err := lstatAt(sfd, sname)
		if err != nil {
			return err
		}
		// A file or symlink replaced by one of the same kind goes in by one
		// atomic rename: the backup is a hard link to the old entry.
		keep := !isDir(cur) && !isDir(in)
		if err := o.backUp(dfd, base, keep); err != nil {
			return err
		}
	}
	return renameAt(sfd, sname, dfd, base)
}

// backUp saves the entry at Path (base in dfd) to Backup. Unless keep is
// set, Path is then gone; with keep, it is still there (a hard link or a
// copy stands at Backup) so that the caller can rename its replacement
// over it.
func (o *Op) backUp(dfd int, base string, keep bool) error {
	if o.BackupCopy {
		if err := copyDurable(dfd, base, unix.AT_FDCWD, o.partial()); err != nil {
			return err
		}
		if err := os.Rename(o.partial(), o.Backup); err != nil {
			return err
		}
		if keep {
			return nil
		}
		return removeAt(dfd, base)
	}
	if keep {
		err := unix.Linkat(dfd, base, unix.AT_FDCWD, o.Backup, 0)
		if err == nil {
			return nil
		}
		// Linking someone else's file is refused under
		// fs.protected_hardlinks; a rename does as well, with a moment in
		// which Path is absent.
		if err != unix.EPERM && err != unix.EACCES && err != unix.EMLINK {
			return &os.LinkError{Op: "link", Old: o.Path, New: o.Backup, Err: err}
		}
	}
	return renameAt(dfd, base, unix.AT_FDCWD, o.Backup)
}

// undo reverts o, which started and may be partly done; ino is the inode
// of the entry an OpPut moved in, recorded before it started. undo can be
// repeated: after a crash during recovery, recovery undoes it again.
func (o *Op) undo(d *dirs, ino uint64) error {
	defer d.forget(o.Path)
	dfd, base, err := d.at(o.Path)
	if errors.Is(err, fs.ErrNotExist) {
		// Its directory is not there (yet): the op never changed Path,
		// and anything it moved out kept that directory.
		return nil
	}
	if err != nil {
		if o.untouched(ino) {
			// Path's directory cannot be reached safely (something was
			// swapped in), but act's own side shows the op did nothing.
			return nil
		}
		return err
	}
	switch o.Kind {
	case OpPut:
		cur, ok, err := lstatAt(dfd, base)
		if err != nil {
			return err
		}
		if ok && ino != 0 && cur.Ino == ino {
			// The new entry is in place: give it back.
			if o.Stage != "" {
				err = removeAt(dfd, base)
			} else {
				err = renameAt(dfd, base, unix.AT_FDCWD, o.Src)
			}
			if err != nil {
				return err
			}
		}
		return o.restore(dfd, base)
	case OpMkdir:
		st, ok, err := lstatAt(dfd, base)
		if err != nil || !ok || !isDir(st) {
			return err
		}
		if err := unix.Unlinkat(dfd, base, unix.AT_REMOVEDIR); err != nil {
			return &fs.PathError{Op: "rmdir", Path: o.Path, Err: err}
		}
	case OpRemove:
		return o.restore(dfd, base)
	case OpChmod:
		mode, err := modeBits(o.ModeBefore)
		if err != nil {
			return err
		}
		if _, ok, err := lstatAt(dfd, base); err != nil || !ok {
			return err
		}
		return chmodAt(dfd, base, mode)
	}
	return nil
}

// untouched reports whether what act keeps in its state directory shows
// that o changed nothing in the real tree: an OpPut's new entry is still
// in the layer (ino) and nothing was backed up, or an OpRemove backed
// nothing up.
func (o *Op) untouched(ino uint64) bool {
	if o.Backup != "" {
		for _, p := range []string{o.Backup, o.partial()} {
			if _, ok, err := exists(p); err != nil || ok {
				return false
			}
		}
	}
	switch o.Kind {
	case OpPut:
		if o.Stage != "" {
			return false
		}
		fi, ok, err := exists(o.Src)
		return err == nil && ok && ino != 0 && fi.Sys().(*syscall.Stat_t).Ino == ino
	case OpRemove:
		return true
	}
	return false
}

// restore puts the backup, if one was made, back at Path (base in dfd).
func (o *Op) restore(dfd int, base string) error {
	if o.Backup == "" {
		return nil
	}
	if err := os.RemoveAll(o.partial()); err != nil {
		return err
	}
	bfi, ok, err := exists(o.Backup)
	if err != nil || !ok {
		return err
	}
	bst := bfi.Sys().(*syscall.Stat_t)
	cur, here, err := lstatAt(dfd, base)
	if err != nil {
		return err
	}
	switch {
	case here && uint64(cur.Dev) == uint64(bst.Dev) && cur.Ino == bst.Ino:
		// Linked but not yet replaced.
		return os.Remove(o.Backup)
	case here && !o.BackupCopy:
		return fmt.Errorf("restore %s: something else is there now; the original is kept at %s", o.Path, o.Backup)
	case here:
		// A copy is whole; what is at Path may be a part: the copy wins.
		if err := removeAt(dfd, base); err != nil {
			return err
		}
	}
	if !o.BackupCopy {
		return renameAt(unix.AT_FDCWD, o.Backup, dfd, base)
	}
	tmp := base + ".act-restore"
	if err := removeAt(dfd, tmp); err != nil {
		return err
	}
	if err := copyDurable(unix.AT_FDCWD, o.Backup, dfd, tmp); err != nil {
		return err
	}
	if err := renameAt(dfd, tmp, dfd, base); err != nil {
		return err
	}
	return os.RemoveAll(o.Backup)
}

// cleanup removes what an op that never started may have left: its staged
// copy and a partial backup.
func (o *Op) cleanup(d *dirs) error {
	if o.Stage != "" {
		dfd, base, err := d.at(o.Stage)
		switch {
		case errors.Is(err, fs.ErrNotExist): // no directory, no stage
		case err != nil:
			return err
		default:
			if err := removeAt(dfd, base); err != nil {
				return err
			}
		}
	}
	if o.BackupCopy {
		return os.RemoveAll(o.partial())
	}
	return nil
}

// copyDurable copies the tree at from (in the directory ffd) to to (in
// tfd; it must not exist) with modes, owners (where permitted) and times,
// and fsyncs every file and directory it made and to's directory. Neither
// side follows a symbolic link but as a link to copy; AT_FDCWD with an
// absolute path is a path in act's state directory.
func copyDurable(ffd int, from string, tfd int, to string) error {
	if err := copyEntry(ffd, from, tfd, to, true); err != nil {
		removeAt(tfd, to)
		return err
	}
	if tfd == unix.AT_FDCWD {
		return syncPath(filepath.Dir(to))
	}
	return syncAt(tfd)
}

// copyEntry copies one entry and, for a directory, its contents, from
// (ffd, from) to (tfd, to); with durable, each regular file and directory
// made is fsync'd.
func copyEntry(ffd int, from string, tfd int, to string, durable bool) error {
	var st unix.Stat_t
	if err := unix.Fstatat(ffd, from, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return &fs.PathError{Op: "lstat", Path: from, Err: err}
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		if err := copyFile(ffd, from, tfd, to); err != nil {
			return err
		}
	case unix.S_IFDIR:
		if err := unix.Mkdirat(tfd, to, 0o700); err != nil {
			return &fs.PathError{Op: "mkdir", Path: to, Err: err}
		}
		if err := copyDir(ffd, from, tfd, to, durable); err != nil {
			return err
		}
	case unix.S_IFLNK:
		buf := make([]byte, unix.PathMax)
		n, err := unix.Readlinkat(ffd, from, buf)
		if err != nil {
			return &fs.PathError{Op: "readlink", Path: from, Err: err}
		}
		if err := unix.Symlinkat(string(buf[:n]), tfd, to); err != nil {
			return &fs.PathError{Op: "symlink", Path: to, Err: err}
		}
	default:
		return fmt.Errorf("copy %s: not a file, directory or symlink (mode %o)", from, st.Mode)
	}
	if err := unix.Fchownat(tfd, to, int(st.Uid), int(st.Gid), unix.AT_SYMLINK_NOFOLLOW); err != nil && err != unix.EPERM {
		return &fs.PathError{Op: "chown", Path: to, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFLNK {
		if err := chmodAt(tfd, to, st.Mode&0o7777); err != nil {
			return err
		}
	}
	ts := []unix.Timespec{st.Atim, st.Mtim}
	if err := unix.UtimesNanoAt(tfd, to, ts, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return &fs.PathError{Op: "utimes", Path: to, Err: err}
	}
	if !durable || st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return nil
	}
	// Last, so that the mode and times are durable with the content.
	fd, err := unix.Openat(tfd, to, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return &fs.PathError{Op: "open", Path: to, Err: err}
	}
	defer unix.Close(fd)
	if err := unix.Fsync(fd); err != nil {
		return &fs.PathError{Op: "fsync", Path: to, Err: err}
	}
	return nil
}

// modeBits is the mode s, four octal digits as plans record them
// (diff.FormatMode), as chmod's bits.
func modeBits(s string) (uint32, error) {
	if _, err := diff.ParseMode(s); err != nil {
		return 0, err
	}
	v, err := strconv.ParseUint(s, 8, 32)
	return uint32(v), err
}

func copyDir(ffd int, from string, tfd int, to string, durable bool) error {
	sfd, err := unix.Openat(ffd, from, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return &fs.PathError{Op: "open", Path: from, Err: err}
	}
	src := os.NewFile(uintptr(sfd), from)
	defer src.Close()
	dfd, err := unix.Openat(tfd, to, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return &fs.PathError{Op: "open", Path: to, Err: err}
	}
	defer unix.Close(dfd)
	names, err := src.Readdirnames(-1)
	if err != nil {
		return err
	}
	for _, n := range names {
		if err := copyEntry(sfd, n, dfd, n, durable); err != nil {
			return err
		}
	}
	return nil
}

func copyFile(ffd int, from string, tfd int, to string) error {
	ifd, err := unix.Openat(ffd, from, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return &fs.PathError{Op: "open", Path: from, Err: err}
	}
	in := os.NewFile(uintptr(ifd), from)
	defer in.Close()
	if fi, err := in.Stat(); err != nil || !fi.Mode().IsRegular() {
		return fmt.Errorf("copy %s: no longer a regular file", from)
	}
	ofd, err := unix.Openat(tfd, to, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return &fs.PathError{Op: "create", Path: to, Err: err}
	}
	out := os.NewFile(uintptr(ofd), to)
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func syncPath(name string) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", name, err)
	}
	return nil
}

// device returns the filesystem device of the entry at name, or of its
// nearest existing ancestor.
func device(name string) (uint64, error) {
	for {
		fi, err := os.Lstat(name)
		if err == nil {
			return fi.Sys().(*syscall.Stat_t).Dev, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return 0, err
		}
		parent := filepath.Dir(name)
		if parent == name {
			return 0, err
		}
		name = parent
	}
}
