package descriptors

// Sets of effect patterns, so that the completeness and composite rules
// cost a map lookup per plain path rather than a scan of every effect, and
// the cap on wildcards that bounds the cost of the rest: a descriptor may
// hold at most MaxGlobs paths with wildcards (scope, effects, FILE_DELETE
// paths, steps included).

import (
	"strings"

	"github.com/act-project/act/internal/pathglob"
)

// MaxGlobs is the most paths with wildcards a descriptor may hold.
const MaxGlobs = 256

// A patternSet holds well-formed paths and globs: plain paths in a set,
// globs in a list.
type patternSet struct {
	plain map[string]bool
	globs []string
}

func newPatternSet(l []string) *patternSet {
	s := &patternSet{plain: make(map[string]bool, len(l))}
	for _, p := range l {
		switch {
		case CheckPath(p) != nil || pathTooLong(p) != "" || pathglob.Valid(p) != nil:
		case pathglob.HasMeta(p):
			s.globs = append(s.globs, p)
		default:
			s.plain[p] = true
		}
	}
	return s
}

// contains reports whether one entry matches every path p matches.
func (s *patternSet) contains(p string) bool {
	if s.plain[p] {
		return true
	}
	for _, g := range s.globs {
		if pathglob.Contains(g, p) {
			return true
		}
	}
	return false
}

// covers reports whether one entry matches p, or an ancestor of every path
// p matches.
func (s *patternSet) covers(p string) bool {
	if s.plain[p] || s.plain["/"] {
		return true
	}
	lit := len(p)
	if i := strings.IndexAny(p, "*?"); i >= 0 {
		lit = i
	}
	for i := 1; i < lit; i++ {
		if p[i] == '/' && s.plain[p[:i]] {
			return true
		}
	}
	for _, g := range s.globs {
		if pathglob.Covers(g, p) {
			return true
		}
	}
	return false
}

// effectSets are the filesystem effects of a node by kind.
type effectSets struct {
	create, modify, delete *patternSet
	effects                Effects
}

func newEffectSets(fs FilesystemEffects) *effectSets {
	return &effectSets{
		create: newPatternSet(fs.Create),
		modify: newPatternSet(fs.Modify),
		delete: newPatternSet(fs.Delete),
	}
}

// cover reports whether an effect of one of kinds covers p: a delete
// covers what lies below it too (a deleted directory covers its contents).
func (e *effectSets) cover(kinds []string, p string) bool {
	for _, k := range kinds {
		switch k {
		case "create":
			if e.create.contains(p) {
				return true
			}
		case "modify":
			if e.modify.contains(p) {
				return true
			}
		case "delete":
			if e.delete.covers(p) {
				return true
			}
		}
	}
	return false
}

// checkGlobCount counts the paths with wildcards of the descriptor and,
// above MaxGlobs, reports the first one past the limit and turns off the
// rules that compare patterns pairwise.
func (c *checker) checkGlobCount() {
	var extra []string // field path of the first glob past the limit
	n := 0
	count := func(f []string, l []string) {
		for i, p := range l {
			if pathglob.HasMeta(p) {
				n++
				if n == MaxGlobs+1 {
					extra = field(f, idx(i))
				}
			}
		}
	}
	count([]string{"scope", "filesystem", "paths"}, c.d.Scope.Filesystem.Paths)
	var walk func(nd node)
	walk = func(nd node) {
		fs := nd.effects.Filesystem
		count(field(nd.path, "effects", "filesystem", "create"), fs.Create)
		count(field(nd.path, "effects", "filesystem", "modify"), fs.Modify)
		count(field(nd.path, "effects", "filesystem", "delete"), fs.Delete)
		if op, ok := nd.op.(FileDeleteOp); ok {
			count(field(nd.path, "operation", "paths"), op.Paths)
		}
		for i := range nd.steps {
			walk(nd.child(i))
		}
	}
	walk(c.root())
	if n > MaxGlobs {
		c.add("glob.too-many", extra,
			"the descriptor has %d paths with wildcards, more than the limit of %d", n, MaxGlobs)
		c.tooManyGlobs = true
	}
}

// EffectMatches reports whether one declared effect pattern of kind
// ("create", "modify" or "delete") declares a change to the literal path
// p: the pattern matches p, or, for a delete, one of its ancestors (a
// deleted directory covers its contents). A `*` in p is an ordinary
// character. This is the one definition of "declared": [EffectMatcher] and
// the plan's effects check both use it.
func EffectMatches(kind, pattern, p string) bool {
	if kind == "delete" {
		return pathglob.CoversPath(pattern, p)
	}
	return pathglob.Match(pattern, p)
}

// An EffectMatcher says whether the filesystem effects of a descriptor (or
// a step) declare a change, for the plan's effects check (docs/lifecycle.md): a
// change of kind "create", "modify" or "delete" to a path is declared when
// an effect of the same kind matches the path, or, for a delete, matches one
// of its ancestors (a deleted directory covers its contents). Paths are
// taken literally: a `*` in a real file name is an ordinary character.
// Plain effect paths cost a map lookup per ancestor; globs are tried in
// turn.
type EffectMatcher struct {
	sets *effectSets
}

// NewEffectMatcher returns the matcher of fs. Effects that are not
// well-formed paths or globs match nothing.
func NewEffectMatcher(fs FilesystemEffects) *EffectMatcher {
	return &EffectMatcher{sets: newEffectSets(fs)}
}

// Declared reports whether a change of kind to the absolute, clean path p
// is declared.
func (m *EffectMatcher) Declared(kind, p string) bool {
	var s *patternSet
	switch kind {
	case "create":
		s = m.sets.create
	case "modify":
		s = m.sets.modify
	case "delete":
		s = m.sets.delete
	default:
		return false
	}
	if s.plain[p] {
		return true
	}
	if kind == "delete" {
		if s.plain["/"] {
			return true
		}
		for i := 1; i < len(p); i++ {
			if p[i] == '/' && s.plain[p[:i]] {
				return true
			}
		}
	}
	for _, g := range s.globs {
		if EffectMatches(kind, g, p) {
			return true
		}
	}
	return false
}
