package rollback

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
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
	// Backup is where the entry found at Path goes (OpRemove, and OpPut
	// over an existing entry). On Path's filesystem it is a rename (or, for
	// a file replaced by an OpPut, a hard link, so the replacement is one
	// atomic rename); on another filesystem (BackupCopy) a durable copy
	// made before Path is touched.
	Backup     string `json:"backup,omitempty"`
	BackupCopy bool   `json:"backup_copy,omitempty"`
	// Mode is the mode OpMkdir creates and OpChmod sets; ModeBefore is the
	// mode OpChmod found. Four-digit octal, as in plans.
	Mode       string `json:"mode,omitempty"`
	ModeBefore string `json:"mode_before,omitempty"`
	// Change is the index of the plan change the op carries out.
	Change int `json:"change"`
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
func inode(name string) (uint64, error) {
	fi, err := os.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return fi.Sys().(*syscall.Stat_t).Ino, nil
}

func exists(name string) (fs.FileInfo, bool, error) {
	fi, err := os.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	return fi, err == nil, err
}

func sameFile(a, b fs.FileInfo) bool {
	sa, sb := a.Sys().(*syscall.Stat_t), b.Sys().(*syscall.Stat_t)
	return sa.Dev == sb.Dev && sa.Ino == sb.Ino
}

// do carries out o. A failure part-way leaves a state undo can undo.
func (o *Op) do() error {
	switch o.Kind {
	case OpPut:
		return o.put()
	case OpMkdir:
		mode, err := diff.ParseMode(o.Mode)
		if err != nil {
			return err
		}
		if err := os.Mkdir(o.Path, 0o700); err != nil {
			return err
		}
		return os.Chmod(o.Path, mode) // exact, whatever the umask
	case OpRemove:
		// Absent already: only a forced rollback of a path deleted since
		// the apply gets here, and there is nothing to keep.
		if _, ok, err := exists(o.Path); err != nil || !ok {
			return err
		}
		return o.backUp(false)
	case OpChmod:
		mode, err := diff.ParseMode(o.Mode)
		if err != nil {
			return err
		}
		if _, ok, err := exists(o.Path); err != nil || !ok {
			return err
		}
		return os.Chmod(o.Path, mode)
	}
	return fmt.Errorf("unknown op %q", o.Kind)
}

func (o *Op) put() error {
	if o.Backup == "" {
		// Nothing may be at Path: one renameat2 that refuses to replace
		// (os.Rename would lstat Path twice first). Filesystems without
		// RENAME_NOREPLACE take the general way below.
		err := unix.Renameat2(unix.AT_FDCWD, o.from(), unix.AT_FDCWD, o.Path, unix.RENAME_NOREPLACE)
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
	cur, ok, err := exists(o.Path)
	if err != nil {
		return err
	}
	if ok {
		if o.Backup == "" {
			return &fs.PathError{Op: "put", Path: o.Path, Err: fs.ErrExist}
		}
		in, err := os.Lstat(o.from())
		if err != nil {
			return err
		}
		// A file or symlink replaced by one of the same kind goes in by one
		// atomic rename: the backup is a hard link to the old entry.
		keep := !cur.IsDir() && !in.IsDir()
		if err := o.backUp(keep); err != nil {
			return err
		}
	}
	return os.Rename(o.from(), o.Path)
}

// backUp saves the entry at Path to Backup. Unless keep is set, Path is
// then gone; with keep, it is still there (a hard link or a copy stands
// at Backup) so that the caller can rename its replacement over it.
func (o *Op) backUp(keep bool) error {
	if o.BackupCopy {
		if err := copyDurable(o.Path, o.partial()); err != nil {
			return err
		}
		if err := os.Rename(o.partial(), o.Backup); err != nil {
			return err
		}
		if keep {
			return nil
		}
		return os.RemoveAll(o.Path)
	}
	if keep {
		err := os.Link(o.Path, o.Backup)
		if err == nil {
			return nil
		}
		// Linking someone else's file is refused under
		// fs.protected_hardlinks; a rename does as well, with a moment in
		// which Path is absent.
		if !errors.Is(err, fs.ErrPermission) && !errors.Is(err, syscall.EPERM) && !errors.Is(err, syscall.EMLINK) {
			return err
		}
	}
	return os.Rename(o.Path, o.Backup)
}

// undo reverts o, which started and may be partly done; ino is the inode
// of the entry an OpPut moved in, recorded before it started. undo can be
// repeated: after a crash during recovery, recovery undoes it again.
func (o *Op) undo(ino uint64) error {
	switch o.Kind {
	case OpPut:
		cur, ok, err := exists(o.Path)
		if err != nil {
			return err
		}
		if ok && ino != 0 && cur.Sys().(*syscall.Stat_t).Ino == ino {
			// The new entry is in place: give it back.
			if o.Stage != "" {
				err = os.RemoveAll(o.Path)
			} else {
				err = os.Rename(o.Path, o.Src)
			}
			if err != nil {
				return err
			}
		}
		if err := o.restore(); err != nil {
			return err
		}
	case OpMkdir:
		fi, ok, err := exists(o.Path)
		if err != nil || !ok || !fi.IsDir() {
			return err
		}
		return os.Remove(o.Path)
	case OpRemove:
		return o.restore()
	case OpChmod:
		mode, err := diff.ParseMode(o.ModeBefore)
		if err != nil {
			return err
		}
		if _, ok, err := exists(o.Path); err != nil || !ok {
			return err
		}
		return os.Chmod(o.Path, mode)
	}
	return nil
}

// restore puts the backup, if one was made, back at Path.
func (o *Op) restore() error {
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
	cur, here, err := exists(o.Path)
	if err != nil {
		return err
	}
	switch {
	case here && sameFile(cur, bfi):
		// Linked but not yet replaced.
		return os.Remove(o.Backup)
	case here && !o.BackupCopy:
		return fmt.Errorf("restore %s: something else is there now; the original is kept at %s", o.Path, o.Backup)
	case here:
		// A copy is whole; what is at Path may be a part: the copy wins.
		if err := os.RemoveAll(o.Path); err != nil {
			return err
		}
	}
	if !o.BackupCopy {
		return os.Rename(o.Backup, o.Path)
	}
	tmp := o.Path + ".act-restore"
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	if err := copyDurable(o.Backup, tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, o.Path); err != nil {
		return err
	}
	return os.RemoveAll(o.Backup)
}

// cleanup removes what an op that never started may have left: its staged
// copy and a partial backup.
func (o *Op) cleanup() error {
	if o.Stage != "" {
		if err := os.RemoveAll(o.Stage); err != nil {
			return err
		}
	}
	if o.BackupCopy {
		return os.RemoveAll(o.partial())
	}
	return nil
}

// copyDurable copies the tree at from to to (which must not exist) with
// modes, owners (where permitted) and times, and fsyncs every file and
// directory it made.
func copyDurable(from, to string) error {
	var made []string
	if err := copyEntry(from, to, &made); err != nil {
		os.RemoveAll(to)
		return err
	}
	for _, name := range made {
		if err := syncPath(name); err != nil {
			return err
		}
	}
	return syncPath(filepath.Dir(to))
}

// copyEntry copies one entry and, for a directory, its contents; made
// collects the regular files and directories created, for fsync.
func copyEntry(from, to string, made *[]string) error {
	fi, err := os.Lstat(from)
	if err != nil {
		return err
	}
	mode := fi.Mode()
	switch {
	case mode.IsRegular():
		if err := copyFile(from, to, mode); err != nil {
			return err
		}
		*made = append(*made, to)
	case mode.IsDir():
		if err := os.Mkdir(to, 0o700); err != nil {
			return err
		}
		ents, err := os.ReadDir(from)
		if err != nil {
			return err
		}
		for _, e := range ents {
			if err := copyEntry(filepath.Join(from, e.Name()), filepath.Join(to, e.Name()), made); err != nil {
				return err
			}
		}
		*made = append(*made, to)
	case mode&fs.ModeSymlink != 0:
		target, err := os.Readlink(from)
		if err != nil {
			return err
		}
		if err := os.Symlink(target, to); err != nil {
			return err
		}
	default:
		return fmt.Errorf("copy %s: %s is not a file, directory or symlink", from, mode.Type())
	}
	st := fi.Sys().(*syscall.Stat_t)
	if err := os.Lchown(to, int(st.Uid), int(st.Gid)); err != nil && !errors.Is(err, fs.ErrPermission) {
		return err
	}
	if mode&fs.ModeSymlink == 0 {
		if err := os.Chmod(to, mode&(fs.ModePerm|fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky)); err != nil {
			return err
		}
	}
	ts := []unix.Timespec{unix.NsecToTimespec(st.Atim.Nano()), unix.NsecToTimespec(st.Mtim.Nano())}
	return unix.UtimesNanoAt(unix.AT_FDCWD, to, ts, unix.AT_SYMLINK_NOFOLLOW)
}

func copyFile(from, to string, mode fs.FileMode) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
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
