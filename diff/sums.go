package diff

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"

	"github.com/act-project/act/internal/digest"
	"golang.org/x/sys/unix"
)

// A FileSum is what [CompareExtra] reads of a regular file: its size and
// sha256, whether it is binary as [Unified] decides (a NUL in its head, or
// more than [MaxTextSize] bytes), and its modification time (ns since the
// epoch), which says which copy of it the rest describes.
type FileSum struct {
	Size    int64
	ModTime int64
	SHA256  string
	Binary  bool
}

// sumReader is the size, sha256 and binary-ness of what r yields.
func sumReader(r io.Reader) (n int64, sum string, binary bool, err error) {
	head := &sniffer{r: r}
	sum, n, err = digest.Reader(head)
	return n, sum, head.binary || n > MaxTextSize, err
}

// maxSumDepth bounds [SumTree]'s walk: what lies deeper is not summed
// (the diff reads it from the layer, as it reads everything SumTree
// skips), and the walk holds one descriptor per level.
const maxSumDepth = 64

// SumTree sums the regular files below the directory dir, calling found
// with each one's path relative to dir ("a/b") and its sum, until found
// returns false or the files' sizes pass maxBytes (if above 0): a sparse
// file may claim far more than its filesystem holds, and is not read
// past what the diff would read of the layer ([Limits.MaxBytes]). It
// follows no symbolic link, opens nothing but directories and regular
// files (a FIFO, a device or an overlay whiteout is passed over), and
// passes over what it cannot open or read, and what lies more than
// maxSumDepth levels down: found is called only for a file read whole. It is for a tree
// nothing writes while it runs (a sandbox's tmpfs upper once its command
// has ended), whose sums stand for a copy's (the layer) only where
// that copy's size and modification time agree; apply checks every
// digest against the layer again.
func SumTree(dir *os.File, maxBytes int64, found func(rel string, s FileSum) bool) {
	fd, err := openDir(int(dir.Fd()), ".", unix.O_NOFOLLOW)
	if err != nil {
		return
	}
	left := maxBytes
	if left <= 0 {
		left = math.MaxInt64
	}
	sumDir(fd, "", 0, &left, found)
}

// errStop ends a SumTree: found said so, or the bytes left ran out.
var errStop = errors.New("stop")

// sumDir is SumTree of the directory open as fd, at rel, and closes fd.
// Its error is errStop, or a directory that cannot be read (the rest of
// the tree is still summed).
func sumDir(fd int, rel string, depth int, left *int64, found func(string, FileSum) bool) error {
	return eachEntry(fd, rel, func(e fs.DirEntry) error {
		p := e.Name()
		if rel != "" {
			p = rel + "/" + p
		}
		switch {
		case e.IsDir() && depth < maxSumDepth:
			if sub, err := openDir(fd, e.Name(), unix.O_NOFOLLOW); err == nil {
				if err := sumDir(sub, p, depth+1, left, found); errors.Is(err, errStop) {
					return err
				}
			}
		case e.Type().IsRegular():
			s, err := sumAt(fd, e.Name(), left)
			if errors.Is(err, errTooMuch) || (err == nil && !found(p, s)) {
				return errStop
			}
		}
		return nil
	})
}

// errNotRegular is sumAt's answer for an entry that is no regular file.
var errNotRegular = errors.New("not a regular file")

// errTooMuch is sumAt's answer for a file larger than the bytes left.
var errTooMuch = errors.New("more than the bytes left")

// sumAt sums the regular file name in the directory dfd, if its size is
// within the bytes left, which it takes from.
func sumAt(dfd int, name string, left *int64) (FileSum, error) {
	f, err := digest.OpenRawAt(dfd, name, unix.O_NOFOLLOW|unix.O_NONBLOCK)
	if err != nil {
		return FileSum{}, err
	}
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(f.Fd(), &st); err != nil {
		return FileSum{}, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return FileSum{}, errNotRegular
	}
	if st.Size > *left {
		return FileSum{}, errTooMuch
	}
	*left -= st.Size
	n, sum, binary, err := sumReader(io.LimitReader(f, st.Size+1))
	if err != nil {
		return FileSum{}, err
	}
	if n != st.Size {
		return FileSum{}, fmt.Errorf("%s: read %d bytes of %d", name, n, st.Size)
	}
	return FileSum{Size: n, ModTime: st.Mtim.Nano(), SHA256: sum, Binary: binary}, nil
}
