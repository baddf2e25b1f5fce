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
// io.Copy from an *os.File allocates a buffer of its own per call.
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
	flags := unix.O_RDONLY | unix.O_CLOEXEC
	if regular {
		flags |= unix.O_NONBLOCK
	}
	fd, err := open(name, flags)
	if err != nil {
		return "", &fs.PathError{Op: "open", Path: name, Err: err}
	}
	defer unix.Close(fd)
	if regular {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return "", &fs.PathError{Op: "stat", Path: name, Err: err}
		}
		if st.Mode&unix.S_IFMT != unix.S_IFREG {
			return "", &fs.PathError{Op: "open", Path: name, Err: ErrNotRegular}
		}
	}
	sum, _, err := Reader(fdReader{fd, name})
	return sum, err
}

func open(name string, flags int) (int, error) {
	for {
		fd, err := unix.Open(name, flags, 0)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// fdReader reads the descriptor fd of the file name.
type fdReader struct {
	fd   int
	name string
}

func (r fdReader) Read(b []byte) (int, error) {
	for {
		n, err := unix.Read(r.fd, b)
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return 0, &fs.PathError{Op: "read", Path: r.name, Err: err}
		case n == 0:
			return 0, io.EOF
		}
		return n, nil
	}
}
