package diff

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
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
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrPermission) {
		s.whole = false
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	for {
		ents, rerr := f.ReadDir(readBatch)
		for _, e := range ents {
			err := s.entry(filepath.Join(p, e.Name()), e)
			if errors.Is(err, fs.ErrNotExist) {
				continue // gone since: it holds nothing now
			}
			if err != nil {
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

// entry adds the entry e at p, and what lies below it.
func (s *sizer) entry(p string, e fs.DirEntry) error {
	if err := s.add(int64(len(e.Name()))); err != nil {
		return err
	}
	switch {
	case e.IsDir():
		return s.dir(p)
	case e.Type().IsRegular():
		fi, err := e.Info()
		if err != nil {
			return err
		}
		return s.add(fi.Size())
	}
	return nil
}
