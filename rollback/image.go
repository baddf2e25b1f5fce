package rollback

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/act-project/act/diff"
	"github.com/act-project/act/internal/digest"
	"github.com/act-project/act/internal/parallel"
	"github.com/act-project/act/internal/pathglob"
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

// retyped lists the paths whose type a plan changes (a directory replaced
// by a file, say): diff reports each as a Delete and a Create of the same
// path, so the path's pre-image is the Delete's before and what the apply
// leaves there is the Create's after.
func retyped(changes []diff.Change) map[string]bool {
	kinds := map[string]diff.Kind{}
	out := map[string]bool{}
	for _, c := range changes {
		if k, ok := kinds[c.Path]; ok && k != c.Kind {
			out[c.Path] = true
		}
		kinds[c.Path] = c.Kind
	}
	return out
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
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) { // ENOTDIR: a file where a directory was
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
		sum, err := digest.File(name)
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

// A check is the outcome of one image.mismatch.
type check struct {
	why string
	err error
}

// checkAll runs f(i) for every i in [0, n) and returns the outcomes in
// order. The checks only read (lstat, readlink, sha256 of a file), so they
// run on up to GOMAXPROCS goroutines: apply checks every path of a plan and
// every file of its layer before it starts, 10,000 of each for a plan of
// 10,000 files.
func checkAll(n int, f func(i int) (string, error)) []check {
	out := make([]check, n)
	parallel.Do(n, parallel.CPUs(), chunk, func(_, i int) { out[i].why, out[i].err = f(i) })
	return out
}

// chunk is how many consecutive checks a checkAll worker takes at a time:
// neighbours share directories, and the counter is touched less.
const chunk = 64

// A goneDir is a directory on the way to a path of a promotion that is no
// longer a real directory: the promotion could not put anything in it, or
// would put it somewhere else.
type goneDir struct{ dir, why string }

// goneParents returns, sorted, the directories on the way from a scope
// root (of the plan's canonical descriptor) to the paths of changes that
// are no longer real directories: gone, something else, or a symbolic
// link — through which a rename would land outside the scope, wherever the
// link points. At plan time these were all directories (the layer resolves
// symlinks in paths, and an overlay records a change at its real path).
// Directories that are changes themselves are left out (the promotion makes
// or restores them first), as are those above the scope roots, which may
// be symlinks of the host's own. Each directory is looked at once.
func goneParents(changes []diff.Change, scope []string) ([]goneDir, error) {
	roots := scopeRoots(scope)
	own := map[string]bool{}
	for _, c := range changes {
		own[c.Path] = true
	}
	var dirs []string
	seen := map[string]bool{}
	walked := map[string]string{} // directories walked up from, by root
	for _, c := range changes {
		root, ok := rootOf(roots, c.Path)
		if !ok {
			continue
		}
		for d := filepath.Dir(c.Path); ; d = filepath.Dir(d) {
			if r, ok := walked[d]; ok && r == root {
				break // and all above it, for a change below it before
			}
			walked[d] = root
			if !own[d] && !seen[d] {
				seen[d] = true
				dirs = append(dirs, d)
			}
			if d == root || d == "/" || !pathglob.Within(d, root) {
				break
			}
		}
	}
	slices.Sort(dirs)
	res := checkAll(len(dirs), func(i int) (string, error) {
		fi, err := os.Lstat(dirs[i])
		switch {
		case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
			return "the directory no longer exists", nil
		case err != nil:
			return "", err
		case fi.Mode()&fs.ModeSymlink != 0:
			return "it is now a symbolic link, not the directory it was", nil
		case !fi.IsDir():
			return "it is no longer a directory", nil
		}
		return "", nil
	})
	var gone []goneDir
	for i, r := range res {
		if r.err != nil {
			return nil, r.err
		}
		if r.why != "" {
			gone = append(gone, goneDir{dirs[i], r.why})
		}
	}
	return gone, nil
}

// scopeRoots returns the directories the scope paths name: a glob's
// literal leading directories.
func scopeRoots(scope []string) []string {
	var roots []string
	for _, p := range scope {
		roots = append(roots, pathglob.Prefix(filepath.Clean(p)))
	}
	return roots
}

// rootOf returns the outermost scope root that holds p (p itself
// excluded: a root's own parent is above the scope). Outermost, so that a
// root nested in another is checked too: a link above it would redirect it.
func rootOf(roots []string, p string) (string, bool) {
	best, ok := "", false
	for _, r := range roots {
		if r != p && pathglob.Within(p, r) && (!ok || len(r) < len(best)) {
			best, ok = r, true
		}
	}
	return best, ok
}

// addedEntries returns, sorted, the entries now in the directories the
// apply created that the apply did not create: put there since, by
// someone else. The rollback removes those directories, so each such
// entry is drift, reported by its own path (its contents go with it). A
// directory already in changed (it is no longer what the apply left) is
// drift as a whole and not looked into.
func addedEntries(changes []diff.Change, changed map[string]string) ([]goneDir, error) {
	created := map[string]bool{}
	var dirs []string
	for _, c := range changes {
		if c.Kind == diff.Create {
			created[c.Path] = true
			if c.Type == diff.TypeDir {
				dirs = append(dirs, c.Path)
			}
		}
	}
	var out []goneDir
	for _, d := range dirs {
		if _, ok := changed[d]; ok {
			continue
		}
		ents, err := os.ReadDir(d)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			continue // reported by the check of d itself
		}
		if err != nil {
			return nil, err
		}
		for _, e := range ents {
			p := filepath.Join(d, e.Name())
			if !created[p] {
				out = append(out, goneDir{p, fmt.Sprintf("a %s was put there since", typeName(typeOf(e.Type())))})
			}
		}
	}
	slices.SortFunc(out, func(a, b goneDir) int { return strings.Compare(a.dir, b.dir) })
	return out, nil
}
