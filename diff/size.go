package diff

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// LayerSize measures the directory dir (a plan's layer) as
// [Extra.LayerBytes] counts a layer: the name of every entry below dir and
// the size of every regular file. It stops once the count passes limit (0:
// no limit), returning the count so far; so it reads no more than limit
// allows, a directory [readBatch] entries at a time. A missing dir holds 0
// bytes, and so does an entry gone while it reads. whole is false when a
// directory below dir could not be read (a command may leave one with
// mode 000, which only root reads): what it holds is not counted.
func LayerSize(dir string, limit int64) (n int64, whole bool, err error) {
	s := &sizer{limit: limit, whole: true}
	err = s.dir(dir)
	if errors.Is(err, errOverLimit) || errors.Is(err, fs.ErrNotExist) {
		err = nil
	}
	return s.n, s.whole, err
}

// errOverLimit stops a LayerSize past its limit.
var errOverLimit = errors.New("over the limit")

// A sizer is one LayerSize.
type sizer struct {
	limit, n int64
	whole    bool
}

func (s *sizer) add(n int64) error {
	s.n += n
	if s.limit > 0 && s.n > s.limit {
		return errOverLimit
	}
	return nil
}

// dir adds what the directory p holds.
func (s *sizer) dir(p string) error {
	fd, err := openDir(unix.AT_FDCWD, p, 0)
	if err != nil {
		return s.unreadable(err)
	}
	return s.dirFd(fd, p)
}

// dirFd adds what the directory open as fd (at path p, for errors) holds,
// and closes fd. Its entries are looked up from fd, one lookup each
// however deep the layer's directories lie.
func (s *sizer) dirFd(fd int, p string) error {
	return eachEntry(fd, p, func(e fs.DirEntry) error {
		if err := s.entry(fd, p, e); !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil // gone since: it holds nothing now
	})
}

// eachEntry calls each with every entry of the directory open as fd (at
// path p, for errors), readBatch at a time, until each returns an error,
// and closes fd. The error is each's, or reading the directory's.
func eachEntry(fd int, p string, each func(fs.DirEntry) error) error {
	f := os.NewFile(uintptr(fd), p)
	defer f.Close()
	for {
		ents, rerr := f.ReadDir(readBatch)
		for _, e := range ents {
			if err := each(e); err != nil {
				return err
			}
		}
		if rerr == io.EOF {
			return nil
		}
		if rerr != nil {
			return rerr
		}
	}
}

// unreadable is what a directory that cannot be opened adds: nothing, and
// the count is no longer whole, where act may not read it (mode 000, as
// an ordinary user); err otherwise.
func (s *sizer) unreadable(err error) error {
	if errors.Is(err, fs.ErrPermission) {
		s.whole = false
		return nil
	}
	return err
}

// openDir opens the directory name in dfd, not following a final
// symbolic link where flags has O_NOFOLLOW.
func openDir(dfd int, name string, flags int) (int, error) {
	for {
		fd, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC|flags, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return -1, &fs.PathError{Op: "open", Path: name, Err: err}
		}
		return fd, nil
	}
}

// entry adds the entry e of the directory dfd (at path p), and what lies
// below it.
func (s *sizer) entry(dfd int, p string, e fs.DirEntry) error {
	if err := s.add(int64(len(e.Name()))); err != nil {
		return err
	}
	switch {
	case e.IsDir():
		fd, err := openDir(dfd, e.Name(), unix.O_NOFOLLOW)
		if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
			return nil // no longer a directory: a link or a file now, measured by the next count
		}
		if err != nil {
			return s.unreadable(err)
		}
		return s.dirFd(fd, filepath.Join(p, e.Name()))
	case e.Type().IsRegular():
		fi, err := statAt(dfd, e.Name(), filepath.Join(p, e.Name()))
		if err != nil {
			return err
		}
		return s.add(fi.Size())
	}
	return nil
}
