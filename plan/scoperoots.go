package plan

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"

	"github.com/act-project/act/internal/pathglob"
)

// A PathID is what identifies one directory on the way to a scope root:
// its device and inode, and, for a symbolic link (a host's own, such as
// /var/run), its target.
type PathID struct {
	Path string `json:"path"`
	Dev  uint64 `json:"dev"`
	Ino  uint64 `json:"ino"`
	Link string `json:"link,omitempty"`
}

// ScopeRootIDs records, for each scope root of a plan (a scope path's
// literal leading directories), every entry from / down to it as the plan
// found them: apply and rollback check that none was replaced
// (docs/sandbox-promotion.md) — a symlink swapped in above a saved plan's
// scope root would otherwise send the promotion wherever it points. A root
// that does not exist yet records the entries that do.
func ScopeRootIDs(scopes []string) ([]PathID, error) {
	var out []PathID
	seen := map[string]bool{}
	for _, s := range scopes {
		root := pathglob.Prefix(filepath.Clean(s))
		var chain []string
		for d := root; ; d = filepath.Dir(d) {
			chain = append(chain, d)
			if d == "/" {
				break
			}
		}
		slices.Reverse(chain)
		for _, d := range chain {
			if seen[d] {
				continue
			}
			id, err := pathID(d)
			if errors.Is(err, fs.ErrNotExist) {
				break
			}
			if errors.Is(err, errNotDir) && d == root {
				// A scope that names one file (the short form's
				// scope of a file in a home directory's root,
				// docs/descriptor.md): the directories above it are
				// pinned, the file is the promotion's to check.
				break
			}
			if err != nil {
				return nil, err
			}
			seen[d] = true
			out = append(out, id)
		}
	}
	return out, nil
}

// errNotDir is pathID's error for an entry that is neither a directory
// nor a symbolic link.
var errNotDir = errors.New("not a directory")

func pathID(p string) (PathID, error) {
	fi, err := os.Lstat(p)
	if err != nil {
		return PathID{}, err
	}
	st := fi.Sys().(*syscall.Stat_t)
	id := PathID{Path: p, Dev: uint64(st.Dev), Ino: st.Ino}
	if fi.Mode()&fs.ModeSymlink != 0 {
		if id.Link, err = os.Readlink(p); err != nil {
			return PathID{}, err
		}
	} else if !fi.IsDir() {
		return PathID{}, fmt.Errorf("%s is %w", p, errNotDir)
	}
	return id, nil
}

// CheckScopeRootIDs returns, for each recorded entry that is no longer the
// same (gone, another inode, a symlink now or to elsewhere), why.
func CheckScopeRootIDs(ids []PathID) map[string]string {
	out := map[string]string{}
	for _, want := range ids {
		got, err := pathID(want.Path)
		switch {
		case err != nil:
			out[want.Path] = fmt.Sprintf("it is no longer the directory it was (%v)", err)
		case got.Link != want.Link && want.Link == "":
			out[want.Path] = fmt.Sprintf("it is now a symbolic link to %q, not the directory it was", got.Link)
		case got.Link != want.Link:
			out[want.Path] = fmt.Sprintf("it now points to %q, not %q", got.Link, want.Link)
		case got.Dev != want.Dev || got.Ino != want.Ino:
			out[want.Path] = "it was replaced by another directory"
		}
	}
	return out
}
