package policy

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"

	"golang.org/x/sys/unix"
)

// maxTrustedSize is the most of a system policy or approvers file act reads.
const maxTrustedSize = 1 << 20

// maxLinks is how many symbolic links one path may pass through.
const maxLinks = 40

// An UntrustedError is a file act reads only when no one but root could
// have changed it — the system policy, an approvers_file — that someone
// else could have (docs/policy.md, "Files only root may change").
type UntrustedError struct {
	// Path is the file asked for; At the file or directory at fault.
	Path, At string
	// Why says what is wrong with At.
	Why string
}

func (e *UntrustedError) Error() string {
	if e.At == e.Path {
		return fmt.Sprintf("%s %s", e.Path, e.Why)
	}
	return fmt.Sprintf("%s: %s %s", e.Path, e.At, e.Why)
}

// ReadTrusted reads the regular file name, which counts only if no one but
// root (SystemOwner) could have changed it: it and every directory on the
// way to it belong to root (a directory may also belong to SystemOwner)
// and are writable by no one else. A directory writable by others counts
// only when it belongs to root and is sticky (/tmp): no one else can
// rename or remove what root put there. The path is walked from "/" one
// element at a time without following links; a symbolic link is followed
// only when the directory holding it is one no one else can write (not a
// sticky one). The file is checked with fstat on the descriptor it is
// then read from. A missing file is an error wrapping fs.ErrNotExist.
func ReadTrusted(name string) ([]byte, error) {
	f, err := openTrusted(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxTrustedSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxTrustedSize {
		return nil, fmt.Errorf("%s is larger than %d bytes", name, maxTrustedSize)
	}
	return data, nil
}

// dirFD is one directory of the walk, opened O_PATH.
type dirFD struct {
	fd   int
	path string
	st   unix.Stat_t
}

// openTrusted is ReadTrusted's walk: it returns the file open for reading.
func openTrusted(name string) (*os.File, error) {
	if !path.IsAbs(name) {
		return nil, &UntrustedError{Path: name, At: name, Why: "is not an absolute path"}
	}
	untrusted := func(at, format string, args ...any) error {
		return &UntrustedError{Path: name, At: at, Why: fmt.Sprintf(format, args...)}
	}
	var stack []dirFD
	defer func() {
		for _, d := range stack {
			unix.Close(d.fd)
		}
	}()
	push := func(fd int, p string, st unix.Stat_t) error {
		stack = append(stack, dirFD{fd, p, st})
		if st.Uid != 0 && st.Uid != SystemOwner {
			return untrusted(p, "is a directory of uid %d, not root's", st.Uid)
		}
		if st.Mode&0o022 != 0 && (st.Uid != 0 || st.Mode&unix.S_ISVTX == 0) {
			return untrusted(p, "is a directory others can write (mode %04o)", st.Mode&0o7777)
		}
		return nil
	}
	toRoot := func() error {
		for _, d := range stack {
			unix.Close(d.fd)
		}
		stack = nil
		fd, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return &fs.PathError{Op: "open", Path: "/", Err: err}
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			return &fs.PathError{Op: "stat", Path: "/", Err: err}
		}
		return push(fd, "/", st)
	}
	if err := toRoot(); err != nil {
		return nil, err
	}
	todo := strings.Split(name, "/")
	links := 0
	for len(todo) > 0 {
		c := todo[0]
		todo = todo[1:]
		dir := stack[len(stack)-1]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(stack) > 1 {
				unix.Close(dir.fd)
				stack = stack[:len(stack)-1]
			}
			continue
		}
		p := path.Join(dir.path, c)
		last := len(strings.Join(todo, "")) == 0 // only "" and "/" left
		fd, err := unix.Openat(dir.fd, c, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil, &fs.PathError{Op: "open", Path: p, Err: err}
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			return nil, &fs.PathError{Op: "stat", Path: p, Err: err}
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFLNK:
			target, err := readlink(fd)
			unix.Close(fd)
			if err != nil {
				return nil, &fs.PathError{Op: "readlink", Path: p, Err: err}
			}
			if dir.st.Mode&0o022 != 0 {
				return nil, untrusted(p, "is a symbolic link in %s, a directory others can write (mode %04o): act follows no link there", dir.path, dir.st.Mode&0o7777)
			}
			if links++; links > maxLinks {
				return nil, &fs.PathError{Op: "open", Path: name, Err: unix.ELOOP}
			}
			if strings.HasPrefix(target, "/") {
				if err := toRoot(); err != nil {
					return nil, err
				}
			}
			todo = append(strings.Split(target, "/"), todo...)
		case unix.S_IFDIR:
			if err := push(fd, p, st); err != nil {
				return nil, err
			}
			if last {
				return nil, untrusted(p, "is a directory, not a file")
			}
		case unix.S_IFREG:
			unix.Close(fd)
			if !last {
				return nil, &fs.PathError{Op: "open", Path: p, Err: unix.ENOTDIR}
			}
			// The directory is one no one else can change: the name
			// still holds what was looked at. fstat below checks what
			// was opened, and it is what is read.
			rfd, err := unix.Openat(dir.fd, c, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
			if err != nil {
				return nil, &fs.PathError{Op: "open", Path: p, Err: err}
			}
			if err := unix.Fstat(rfd, &st); err != nil {
				unix.Close(rfd)
				return nil, &fs.PathError{Op: "stat", Path: p, Err: err}
			}
			switch {
			case st.Mode&unix.S_IFMT != unix.S_IFREG:
				err = untrusted(p, "is not a regular file")
			case st.Uid != SystemOwner:
				err = untrusted(p, "belongs to uid %d, not root", st.Uid)
			case st.Mode&0o022 != 0:
				err = untrusted(p, "is writable by others (mode %04o)", st.Mode&0o7777)
			}
			if err != nil {
				unix.Close(rfd)
				return nil, err
			}
			return os.NewFile(uintptr(rfd), p), nil
		default:
			unix.Close(fd)
			return nil, untrusted(p, "is not a regular file")
		}
	}
	return nil, untrusted(name, "names no file")
}

// readlink reads the target of the symbolic link open (O_PATH) as fd.
func readlink(fd int) (string, error) {
	for size := 256; ; size *= 2 {
		buf := make([]byte, size)
		n, err := unix.Readlinkat(fd, "", buf)
		if err != nil {
			return "", err
		}
		if n < size {
			return string(buf[:n]), nil
		}
		if size > 1<<16 {
			return "", errors.New("link target too long")
		}
	}
}
