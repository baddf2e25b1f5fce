package plan

// Resolving the paths operations name: symlinks followed component by
// component through the System, the scope checked on the result, and globs
// expanded by listing directories (see the rules at the top of ops.go).

import (
	"errors"
	"io/fs"
	"path"
	"slices"
	"strings"
	"syscall"

	"github.com/act-project/act/internal/pathglob"
)

// contains reports whether p lies inside the scope: a recursive scope path
// holds its subtree, one that is not recursive itself and its direct
// children.
func (s scope) contains(p string) bool {
	for _, sp := range s.paths {
		if pathglob.HasMeta(sp) {
			if pathglob.Match(pathglob.Join(sp, "**"), p) ||
				!s.recursive && (pathglob.Match(sp, p) || pathglob.Match(pathglob.Join(sp, "*"), p)) {
				return true
			}
			continue
		}
		switch {
		case p == sp:
			return true
		case s.recursive:
			if pathglob.Within(p, sp) {
				return true
			}
		case p != "/" && path.Dir(p) == sp:
			return true
		}
	}
	return false
}

// resolve returns the path p names once symlinks are resolved: every
// component of p but the last, and the last too when followLast is set.
// The result must lie in the scope. f is the field naming p.
func (r *runner) resolve(f []string, p string, followLast bool) (string, error) {
	if !r.scope.contains(p) {
		return "", opErr("path.outside-scope", f, p, nil, "%q lies outside the scope %s", p, r.scope)
	}
	res, linked, err := r.walk(f, p, followLast)
	if err != nil {
		return "", err
	}
	if err := r.inScope(f, p, res, linked); err != nil {
		return "", err
	}
	return res, nil
}

// inScope checks that res, what p resolved to, lies in the scope.
func (r *runner) inScope(f []string, p, res string, linked bool) error {
	switch {
	case r.scope.contains(res):
		return nil
	case linked:
		return opErr("path.symlink-outside-scope", f, p, nil,
			"%q resolves through a symlink to %q, outside the scope %s", p, res, r.scope)
	}
	return opErr("path.outside-scope", f, p, nil, "%q lies outside the scope %s", res, r.scope)
}

// walk resolves p one component at a time from the root. A component that
// does not exist ends the resolution: the rest of p is appended as it is.
// linked reports whether a symlink was followed.
func (r *runner) walk(f []string, p string, followLast bool) (res string, linked bool, err error) {
	todo := strings.Split(strings.TrimPrefix(p, "/"), "/")
	cur := "/"
	hops := 0
	for len(todo) > 0 {
		e := todo[0]
		todo = todo[1:]
		switch e {
		case "", ".":
			continue
		case "..":
			cur = path.Dir(cur)
			continue
		}
		next := path.Join(cur, e)
		if len(todo) == 0 && !followLast {
			return next, linked, nil
		}
		fi, err := r.sys.Lstat(next)
		switch {
		case missing(err):
			if slices.Contains(todo, "..") {
				return "", false, opErr("op.parent-missing", f, p, err,
					"%q resolves through %q, which does not exist", p, next)
			}
			return path.Join(append([]string{next}, todo...)...), linked, nil
		case err != nil:
			return "", false, fsErr(f, "resolve", p, err)
		case fi.Mode()&fs.ModeSymlink == 0:
			cur = next
			continue
		}
		if hops++; hops > maxSymlinks {
			return "", false, opErr("path.symlink-loop", f, p, nil,
				"resolving %q follows more than %d symlinks", p, maxSymlinks)
		}
		target, err := r.sys.Readlink(next)
		if err != nil {
			return "", false, fsErr(f, "resolve", p, err)
		}
		linked = true
		if strings.HasPrefix(target, "/") {
			cur = "/"
		}
		todo = append(strings.Split(target, "/"), todo...)
	}
	return cur, linked, nil
}

// missing reports whether err says a path does not exist (a component
// that is not a directory included).
func missing(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

// lstat describes p, already resolved; absent is nil, nil.
func (r *runner) lstat(f []string, p string) (fs.FileInfo, error) {
	fi, err := r.sys.Lstat(p)
	switch {
	case missing(err):
		return nil, nil
	case err != nil:
		return nil, fsErr(f, "stat", p, err)
	}
	return fi, nil
}

// parentDir checks that the parent of the resolved path p is a directory.
// named is p as the descriptor names it.
func (r *runner) parentDir(f []string, named, p string) error {
	dir := path.Dir(p)
	fi, err := r.lstat(f, dir)
	switch {
	case err != nil:
		return err
	case fi == nil:
		return opErr("op.parent-missing", f, named, nil, "the directory %q does not exist", dir)
	case !fi.IsDir():
		return opErr("op.parent-not-directory", f, named, nil, "%q is not a directory", dir)
	}
	return nil
}

// glob returns the paths pattern matches, sorted, each resolved: the
// longest literal prefix is resolved (and must stay in the scope if it
// goes through a symlink), then the rest of the pattern is matched by
// listing directories, never through a symlink. Each match must lie in the
// scope.
func (r *runner) glob(f []string, pattern string) ([]string, error) {
	prefix := pathglob.Prefix(pattern)
	base, linked, err := r.walk(f, prefix, true)
	if err != nil {
		return nil, err
	}
	if linked {
		if err := r.inScope(f, prefix, base, linked); err != nil {
			return nil, err
		}
	}
	var rest []string // the elements after the prefix
	if tail := strings.TrimPrefix(strings.TrimPrefix(pattern, prefix), "/"); tail != "" {
		rest = strings.Split(tail, "/")
	}
	full := base
	for _, e := range rest {
		full = pathglob.Join(full, e)
	}
	var out []string
	seen := map[string]bool{}
	add := func(p string) {
		if !seen[p] && pathglob.Match(full, p) {
			seen[p] = true
			out = append(out, p)
		}
	}
	var match func(dir string, rest []string) error
	match = func(dir string, rest []string) error {
		if err := r.ctx.Err(); err != nil {
			return err
		}
		if len(rest) == 0 {
			add(dir)
			return nil
		}
		e := rest[0]
		if !pathglob.HasMeta(e) && e != "**" {
			next := pathglob.Join(dir, e)
			fi, err := r.lstat(f, next)
			switch {
			case err != nil:
				return err
			case fi == nil:
			case len(rest) == 1:
				add(next)
			case fi.IsDir():
				return match(next, rest[1:])
			}
			return nil
		}
		ents, err := r.sys.ReadDir(dir)
		switch {
		case missing(err):
			return nil
		case err != nil:
			return fsErr(f, "list", dir, err)
		}
		if e == "**" {
			if err := match(dir, rest[1:]); err != nil { // zero elements
				return err
			}
			for _, ent := range ents {
				if ent.IsDir() {
					if err := match(pathglob.Join(dir, ent.Name()), rest); err != nil {
						return err
					}
				}
			}
			return nil
		}
		for _, ent := range ents {
			if !pathglob.Match("/"+e, "/"+ent.Name()) {
				continue
			}
			next := pathglob.Join(dir, ent.Name())
			switch {
			case len(rest) == 1:
				add(next)
			case ent.IsDir():
				if err := match(next, rest[1:]); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := match(base, rest); err != nil {
		return nil, err
	}
	slices.Sort(out)
	for _, p := range out {
		if err := r.inScope(f, pattern, p, linked); err != nil {
			return nil, err
		}
	}
	return out, nil
}
