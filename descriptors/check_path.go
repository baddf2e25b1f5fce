package descriptors

// Path rules (docs/rules.md):
//   - every path is absolute and clean: no "..", "." or empty ("//")
//     element, no trailing "/", no NUL;
//   - wildcards only where a field takes globs (effects, FILE_DELETE paths,
//     scope paths with recursive: true), and then well-formed;
//   - every path an action names lies inside scope.filesystem.paths: a
//     non-recursive scope path covers itself and its direct children, a
//     recursive one its whole subtree.

import (
	"errors"
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/act-project/act/internal/pathglob"
)

// CheckPath reports whether p is absolute and clean, the form every path in
// a descriptor must have. It does not look at wildcards.
func CheckPath(p string) error {
	switch {
	case !strings.HasPrefix(p, "/"):
		return errors.New("it is not absolute")
	case strings.ContainsRune(p, 0):
		return errors.New("it contains a NUL byte")
	case p == "/":
		return nil
	case strings.HasSuffix(p, "/"):
		return errors.New("it ends with a slash")
	}
	for _, e := range strings.Split(p[1:], "/") {
		switch e {
		case "":
			return errors.New("it has an empty element (//)")
		case ".", "..":
			return errors.New(`it has a "` + e + `" element`)
		}
	}
	return nil
}

// Limits of Linux paths (PATH_MAX, NAME_MAX). They also bound the cost of
// matching globs.
const (
	maxPathBytes    = 4095
	maxElementBytes = 255
)

// pathTooLong says why p is longer than a path can be, or "".
func pathTooLong(p string) string {
	if len(p) > maxPathBytes {
		return fmt.Sprintf("it is %d bytes long, more than %d", len(p), maxPathBytes)
	}
	for _, e := range strings.Split(p, "/") {
		if len(e) > maxElementBytes {
			return fmt.Sprintf("an element is %d bytes long, more than %d", len(e), maxElementBytes)
		}
	}
	return ""
}

// checkPath checks the form of the path s at field path. glob says whether
// the field takes globs. It reports whether s is usable by later checks.
func (c *checker) checkPath(f []string, s string, glob bool) bool {
	return c.checkPathRules(f, s, glob, "path.not-absolute", "path.not-clean")
}

func (c *checker) checkPathRules(f []string, s string, glob bool, absRule, cleanRule string) bool {
	if err := CheckPath(s); err != nil {
		if !strings.HasPrefix(s, "/") {
			c.add(absRule, f, "the path %q is not absolute", s)
		} else {
			c.add(cleanRule, f, "the path %q is not clean: %v", s, err)
		}
		return false
	}
	if why := pathTooLong(s); why != "" {
		c.add("path.too-long", f, "the path %.40q… is too long: %s", s, why)
		return false
	}
	if !pathglob.HasMeta(s) {
		return true
	}
	if !glob {
		c.add("path.wildcard-not-allowed", f,
			"the path %q has a wildcard, which this field does not take", s)
		return false
	}
	if err := pathglob.Valid(s); err != nil {
		c.add("glob.invalid", f, "the glob %q is invalid: %v", s, err)
		return false
	}
	return true
}

// checkScope checks scope.filesystem.paths: form, wildcards only with
// recursive, and the forbidden roots of docs/descriptor.md.
func (c *checker) checkScope() {
	fs := c.d.Scope.Filesystem
	for i, s := range fs.Paths {
		f := []string{"scope", "filesystem", "paths", idx(i)}
		if !c.checkPathRules(f, s, true, "scope.path-not-absolute", "scope.path-not-clean") {
			// A scope path that is only unclean still means its clean
			// form: check what it takes in.
			if !strings.HasPrefix(s, "/") || strings.ContainsRune(s, 0) {
				continue
			}
			if s = path.Clean(s); pathglob.Valid(s) != nil {
				continue
			}
		}
		if !fs.Recursive && pathglob.HasMeta(s) {
			c.add("scope.wildcard-not-recursive", f,
				"the scope path %q has a wildcard but scope.filesystem.recursive is false", s)
		}
		c.checkForbiddenScope(f, s, fs.Recursive)
	}
}

// scopeCovers returns the patterns of everything the scope path s covers.
func scopeCovers(s string, recursive bool) []string {
	if recursive {
		return []string{pathglob.Join(s, "**")}
	}
	return []string{s, pathglob.Join(s, "*")}
}

// scopeRoots returns the scope paths containment is judged against: each
// absolute scope path in its clean form (a scope path that is not clean is
// reported, and read as the path it evidently means), plain paths in a set
// and globs in a list. ok is false when a scope path is relative or
// otherwise unusable: then what lies inside the scope is unknown, and no
// path is reported as outside it. The result is computed once.
func (c *checker) scopeRoots() (plain map[string]bool, globs []string, ok bool) {
	if c.roots == nil {
		c.roots = &scopeRoots{plain: map[string]bool{}, ok: true}
		for _, s := range c.d.Scope.Filesystem.Paths {
			if !strings.HasPrefix(s, "/") || strings.ContainsRune(s, 0) || pathTooLong(s) != "" {
				c.roots.ok = false
				break
			}
			s = path.Clean(s)
			switch {
			case pathglob.Valid(s) != nil:
				c.roots.ok = false
			case pathglob.HasMeta(s):
				c.roots.globs = append(c.roots.globs, s)
			default:
				c.roots.plain[s] = true
			}
		}
	}
	return c.roots.plain, c.roots.globs, c.roots.ok
}

type scopeRoots struct {
	plain map[string]bool
	globs []string
	ok    bool
}

// inScope reports whether every path p (a plain path or a glob) may match
// lies inside the scope.
func (c *checker) inScope(p string) bool {
	plain, globs, _ := c.scopeRoots()
	recursive := c.d.Scope.Filesystem.Recursive
	// Plain scope paths: look p and its ancestors up.
	if plain[p] {
		return true
	}
	if recursive {
		if plain["/"] {
			return true
		}
		for i := 1; i < len(p); i++ {
			if p[i] == '/' && plain[p[:i]] {
				return true
			}
		}
	} else if i := strings.LastIndexByte(p, '/'); i >= 0 {
		parent := p[:i]
		if parent == "" {
			parent = "/"
		}
		// A "**" child may stand for grandchildren too.
		if plain[parent] && p[i+1:] != "**" {
			return true
		}
	}
	for _, s := range globs {
		for _, cov := range scopeCovers(s, recursive) {
			if pathglob.Contains(cov, p) {
				return true
			}
		}
	}
	return false
}

// checkInScope reports p, already of good form, when it lies outside the
// scope.
func (c *checker) checkInScope(field []string, p string) {
	fs := c.d.Scope.Filesystem
	if _, _, ok := c.scopeRoots(); !ok || c.tooManyGlobs || c.inScope(p) {
		return
	}
	how := "not recursive"
	if fs.Recursive {
		how = "recursive"
	}
	c.add("path.outside-scope", field, "%q lies outside the scope %s (%s)", p, quoteList(fs.Paths), how)
}

func quoteList(l []string) string {
	const most = 3
	q := make([]string, 0, most+1)
	for i, s := range l {
		if i == most {
			q = append(q, fmt.Sprintf("and %d more", len(l)-most))
			break
		}
		q = append(q, strconv.Quote(s))
	}
	return "[" + strings.Join(q, ", ") + "]"
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
