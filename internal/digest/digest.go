// Package digest is act's one file hasher: the sha256, as lower-case hex,
// of a file's content or of what a reader yields. Plans record these
// digests (a FILE_READ, a precondition, a change's before and after) and
// apply and rollback compare against them, so every side computes them
// here, one way.
//
// Reading is the hot part of an apply (10,000 small files are 10,000
// hashes), so the buffers are pooled and a file is read with plain
// open/read/close system calls: an *os.File would try to register each
// regular file with the poller, five failing system calls per file, and
// io.Copy from an *os.File allocates a buffer of its own per call. [OpenRaw]
// gives the other readers of many files (the diff, the review, the text
// diffs) the same plain descriptor.
package digest

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"sync"

	"golang.org/x/sys/unix"
)

// ErrNotRegular is what [RegularFile] wraps when the file it opened is not
// a regular file.
var ErrNotRegular = errors.New("not a regular file")

// bufs are the read buffers, reused across calls.
var bufs = sync.Pool{New: func() any { b := make([]byte, 128<<10); return &b }}

// Reader returns the sha256 of everything r yields until io.EOF, as hex,
// and how many bytes that was. An error from r other than io.EOF is
// returned as r gave it, with what was read so far counted in n.
func Reader(r io.Reader) (sum string, n int64, err error) {
	bp := bufs.Get().(*[]byte)
	defer bufs.Put(bp)
	buf := *bp
	h := sha256.New()
	for {
		m, err := r.Read(buf)
		if m > 0 {
			h.Write(buf[:m])
			n += int64(m)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", n, err
		}
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

// File returns the sha256 of the content of the file name, as hex. It
// opens name as open(2) does, following symbolic links, and reads whatever
// it opens; callers that have already seen a regular file there (with
// lstat) use it. Errors are *fs.PathError, Op "open" or "read".
func File(name string) (string, error) {
	return file(name, false)
}

// RegularFile is [File] for a path that must be a regular file: what name
// opens to is checked on the open descriptor, and anything else (a
// directory, a device, a FIFO) is an *fs.PathError wrapping
// [ErrNotRegular], never read. It opens with O_NONBLOCK, which a regular
// file ignores, so that a FIFO without a writer is refused rather than
// waited on forever.
func RegularFile(name string) (string, error) {
	return file(name, true)
}

func file(name string, regular bool) (string, error) {
	flags := 0
	if regular {
		flags |= unix.O_NONBLOCK
	}
	f, err := OpenRaw(name, flags)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if regular {
		t, err := f.Type()
		if err != nil {
			return "", err
		}
		if t != unix.S_IFREG {
			return "", &fs.PathError{Op: "open", Path: name, Err: ErrNotRegular}
		}
	}
	sum, _, err := Reader(f)
	return sum, err
}

func openAt(dfd int, name string, flags int) (int, error) {
	for {
		fd, err := unix.Openat(dfd, name, flags, 0)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// A RawFile is a file opened for reading with open(2) alone: the runtime's
// poller never sees it (see the package doc), and nothing closes it but
// Close.
type RawFile struct {
	fd   int
	name string
}

// OpenRaw opens name for reading, with O_RDONLY, O_CLOEXEC and flags
// (O_NOFOLLOW, O_NONBLOCK, …). Errors are *fs.PathError, Op "open".
func OpenRaw(name string, flags int) (*RawFile, error) {
	return OpenRawAt(unix.AT_FDCWD, name, flags)
}

// OpenRawAt is OpenRaw of name in the directory open as dfd.
func OpenRawAt(dfd int, name string, flags int) (*RawFile, error) {
	fd, err := openAt(dfd, name, unix.O_RDONLY|unix.O_CLOEXEC|flags)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	return &RawFile{fd, name}, nil
}

// Fd is the file's descriptor, for fstat(2) and the like; Close closes
// it.
func (f *RawFile) Fd() int { return f.fd }

// Type is the file's type as fstat(2) gives it: its mode's S_IFMT bits
// (S_IFREG, S_IFDIR, …). Errors are *fs.PathError, Op "stat".
func (f *RawFile) Type() (uint32, error) {
	var st unix.Stat_t
	if err := unix.Fstat(f.fd, &st); err != nil {
		return 0, &fs.PathError{Op: "stat", Path: f.name, Err: err}
	}
	return st.Mode & unix.S_IFMT, nil
}

// Close closes the file; a second Close is an error, as for an *os.File.
func (f *RawFile) Close() error {
	if f.fd < 0 {
		return &fs.PathError{Op: "close", Path: f.name, Err: fs.ErrClosed}
	}
	err := unix.Close(f.fd)
	f.fd = -1
	if err != nil {
		return &fs.PathError{Op: "close", Path: f.name, Err: err}
	}
	return nil
}

// Read reads as read(2) does; the end of the file is io.EOF. Errors are
// *fs.PathError, Op "read".
func (f *RawFile) Read(b []byte) (int, error) {
	if f.fd < 0 {
		return 0, &fs.PathError{Op: "read", Path: f.name, Err: fs.ErrClosed}
	}
	if len(b) == 0 {
		return 0, nil
	}
	for {
		n, err := unix.Read(f.fd, b)
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return 0, &fs.PathError{Op: "read", Path: f.name, Err: err}
		case n == 0:
			return 0, io.EOF
		}
		return n, nil
	}
}
