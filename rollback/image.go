package rollback

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/act-project/act/diff"
)

// An image is one side of a planned change: what a path held before it, or
// holds after it. Absent is true for the before of a create and the after
// of a delete.
type image struct {
	absent bool
	typ    string
	mode   *string
	sha256 *string
	link   *string
}

func before(c diff.Change) image {
	return image{absent: c.Kind == diff.Create, typ: c.Type, mode: c.ModeBefore, sha256: c.SHA256Before, link: c.LinkBefore}
}

func after(c diff.Change) image {
	return image{absent: c.Kind == diff.Delete, typ: c.Type, mode: c.ModeAfter, sha256: c.SHA256After, link: c.LinkAfter}
}

// mismatch says how the entry at name differs from im, or "" if it
// matches: type, mode, content digest, symlink target; absent still absent.
// A directory's contents are not compared (a deleted directory is moved
// whole to the backups, so nothing in it is lost).
func (im image) mismatch(name string) (string, error) {
	fi, err := os.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		if im.absent {
			return "", nil
		}
		return fmt.Sprintf("the %s is gone", typeName(im.typ)), nil
	}
	if err != nil {
		return "", err
	}
	got := typeOf(fi.Mode())
	if im.absent {
		return fmt.Sprintf("a %s is there now, where nothing was expected", typeName(got)), nil
	}
	if got != im.typ {
		return fmt.Sprintf("a %s is there now, not the %s", typeName(got), typeName(im.typ)), nil
	}
	if im.mode != nil {
		if m := diff.FormatMode(fi.Mode()); m != *im.mode {
			return fmt.Sprintf("its mode is %s, not %s", m, *im.mode), nil
		}
	}
	switch got {
	case diff.TypeFile:
		if im.sha256 == nil {
			return "", nil
		}
		sum, err := fileSHA256(name)
		if err != nil {
			return "", err
		}
		if sum != *im.sha256 {
			return fmt.Sprintf("its content changed (sha256 %s, not %s)", short(sum), short(*im.sha256)), nil
		}
	case diff.TypeSymlink:
		if im.link == nil {
			return "", nil
		}
		target, err := os.Readlink(name)
		if err != nil {
			return "", err
		}
		if target != *im.link {
			return fmt.Sprintf("it points to %q, not %q", target, *im.link), nil
		}
	}
	return "", nil
}

func typeName(t string) string {
	if t == diff.TypeDir {
		return "directory"
	}
	if t == "" {
		return "entry"
	}
	return t
}

func short(sum string) string {
	if len(sum) > 12 {
		return sum[:12] + "…"
	}
	return sum
}

func fileSHA256(name string) (string, error) {
	f, err := os.Open(name)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// typeOf names the type of an entry as changes do; anything else (a device,
// a socket) gets its mode type's name.
func typeOf(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return diff.TypeFile
	case m.IsDir():
		return diff.TypeDir
	case m&fs.ModeSymlink != 0:
		return diff.TypeSymlink
	}
	return m.Type().String()
}
