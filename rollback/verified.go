package rollback

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/act-project/act/internal/problem"
)

// What apply promotes is what was reviewed (docs/sandbox-promotion.md,
// "Layer files are copied, not moved"): a file of the plan's layer lives
// in a directory its user may write, and any descriptor of it — held by a
// process of that user, or one that outlived a dry run — writes to its
// inode whenever it likes. Renamed into place, that inode would be the
// real file, changed after every check. So apply copies each layer file
// into a new file of its own, opened once, reading the layer's file
// through one descriptor and hashing exactly the bytes it writes; the copy
// goes into place only if its digest is the plan's. Nobody else holds a
// descriptor of the new file.

// A LayerChangedError is a file of the plan's layer whose copy is not what
// the plan recorded: the layer changed after apply's checks.
type LayerChangedError struct {
	Path string // the real path the file was to be promoted to
	Why  string
}

func (e *LayerChangedError) Error() string {
	return fmt.Sprintf("the plan's layer copy of %s no longer matches the plan (%s): plan again", e.Path, e.Why)
}

// layerChanged gathers the LayerChangedErrors err holds (errors.Join of
// them, and wrapped), as apply.layer-changed conflicts; nil when none.
func layerChanged(err error) problem.List {
	var probs problem.List
	var walk func(error)
	walk = func(err error) {
		switch e := err.(type) {
		case *LayerChangedError:
			probs = append(probs, conflict(RuleLayerChanged, e.Path, "%s", e.Error()))
		case interface{ Unwrap() []error }:
			for _, x := range e.Unwrap() {
				walk(x)
			}
		case interface{ Unwrap() error }:
			walk(e.Unwrap())
		}
	}
	walk(err)
	return probs
}

// copyBufs are copyVerified's buffers.
var copyBufs = sync.Pool{New: func() any { b := make([]byte, 128<<10); return &b }}

// stageVerified makes o's staged entry, name in the directory dfd (which
// must not hold it): a symbolic link to the reviewed Target, or a copy of
// the layer's file Src whose every byte written is hashed and must come to
// the reviewed SHA256 and Size; it gets the reviewed Mode and the layer
// file's times. Otherwise nothing is left at name and the error is a
// *LayerChangedError.
func (o *Op) stageVerified(dfd int, name string) error {
	if o.Target != "" {
		if err := unix.Symlinkat(o.Target, dfd, name); err != nil {
			return &fs.PathError{Op: "symlink", Path: o.Stage, Err: err}
		}
		return nil
	}
	mode, err := modeBits(o.Mode)
	if err != nil {
		return err
	}
	changed := func(format string, args ...any) error {
		return &LayerChangedError{Path: o.Path, Why: fmt.Sprintf(format, args...)}
	}
	in, err := unix.Open(o.Src, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	switch {
	case err == unix.ENOENT || err == unix.ENOTDIR:
		return changed("it is gone")
	case err == unix.ELOOP:
		return changed("it is a symbolic link now")
	case err != nil:
		return &fs.PathError{Op: "open", Path: o.Src, Err: err}
	}
	defer unix.Close(in)
	var st unix.Stat_t
	if err := unix.Fstat(in, &st); err != nil {
		return &fs.PathError{Op: "stat", Path: o.Src, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return changed("it is no longer a regular file")
	}
	out, err := unix.Openat(dfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return &fs.PathError{Op: "create", Path: o.Stage, Err: err}
	}
	err = o.copyHashed(in, out, changed)
	if err == nil {
		err = unix.Fchmod(out, mode)
	}
	if err == nil {
		err = unix.UtimesNanoAt(dfd, name, []unix.Timespec{st.Atim, st.Mtim}, unix.AT_SYMLINK_NOFOLLOW)
	}
	if cerr := unix.Close(out); err == nil && cerr != nil {
		err = &fs.PathError{Op: "close", Path: o.Stage, Err: cerr}
	}
	if err != nil {
		unix.Unlinkat(dfd, name, 0)
	}
	return err
}

// copyHashed copies in to out, at most one byte past o.Size, and checks
// the size and sha256 of what it wrote against o's.
func (o *Op) copyHashed(in, out int, changed func(string, ...any) error) error {
	bp := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(bp)
	buf := *bp
	h := sha256.New()
	var n int64
	for n <= o.Size {
		want := min(int64(len(buf)), o.Size+1-n)
		r, err := unix.Read(in, buf[:want])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return &fs.PathError{Op: "read", Path: o.Src, Err: err}
		}
		if r == 0 {
			break
		}
		h.Write(buf[:r])
		n += int64(r)
		for w := buf[:r]; len(w) > 0; {
			m, err := unix.Write(out, w)
			if err == unix.EINTR {
				continue
			}
			if err != nil {
				return &fs.PathError{Op: "write", Path: o.Stage, Err: err}
			}
			w = w[m:]
		}
	}
	if n > o.Size {
		return changed("it holds more than the %d bytes the plan recorded", o.Size)
	}
	if sum := hex.EncodeToString(h.Sum(nil)); sum != o.SHA256 {
		return changed("its content changed (sha256 %s, not %s)", short(sum), short(o.SHA256))
	}
	return nil
}
