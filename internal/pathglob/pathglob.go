// Package pathglob matches absolute, clean slash-separated paths against the
// globs of Action Descriptors (docs/rules.md) and compares globs with each other.
//
// # Syntax
//
// A pattern is an absolute path whose elements may hold wildcards:
//
//   - `*` matches any run of characters within one path element, including
//     none, never a `/`;
//   - `?` matches exactly one character within one path element;
//   - `**`, as a whole element, matches zero or more whole elements: `/a/**`
//     matches `/a`, `/a/b` and `/a/b/c`, and `/a/**/z` matches `/a/z` and
//     `/a/b/c/z`.
//
// There are no character classes and no escapes: `[`, `]`, `{`, `}` and `\`
// stand for themselves. A `**` that is not a whole element (`/a/x**`) is
// invalid. Leading dots are not special: `*` matches `.git`.
//
// # Relations
//
// [Match] says whether a pattern matches a path, and [CoversPath] whether
// it matches the path or one of its ancestors. [Contains] says whether one
// pattern matches every path another one does, [Overlaps] whether two
// patterns may match a common path, and [Covers] whether a pattern matches a
// path or one of its ancestors (a deleted directory covers its contents).
// Contains errs towards false and Overlaps towards true, so that a check built
// on them fails closed.
package pathglob

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// HasMeta reports whether s holds a wildcard (`*` or `?`).
func HasMeta(s string) bool { return strings.ContainsAny(s, "*?") }

// Valid reports whether pattern is a well-formed pattern: absolute, clean
// (no empty, `.` or `..` element, no trailing slash) and with `**` only as a
// whole element.
func Valid(pattern string) error {
	if !strings.HasPrefix(pattern, "/") {
		return errors.New("a pattern must be absolute")
	}
	if pattern == "/" {
		return nil
	}
	for rest := pattern[1:]; ; {
		e, next, more := strings.Cut(rest, "/")
		switch {
		case e == "":
			return errors.New("a pattern must not have empty elements")
		case e == "." || e == "..":
			return fmt.Errorf("a pattern must not have %q elements", e)
		case e != "**" && strings.Contains(e, "**"):
			return fmt.Errorf("%q: ** must be a whole path element", e)
		}
		if !more {
			return nil
		}
		rest = next
	}
}

// split returns the elements of an absolute path; "/" has none.
func split(p string) []string {
	p = strings.TrimPrefix(p, "/")
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}

// Match reports whether path matches pattern. Both are absolute; an invalid
// pattern matches nothing.
func Match(pattern, path string) bool {
	if Valid(pattern) != nil || !strings.HasPrefix(path, "/") {
		return false
	}
	return matchPath(pattern, path)
}

// matchPath matches a plain absolute path against a valid pattern, element
// by element, without allocating: the classic wildcard algorithm with "**"
// as the star and element patterns as the symbols.
func matchPath(pattern, path string) bool {
	pi, si := elems(pattern), elems(path)
	var starP, starS elemIter
	star := false
	for {
		if si.done() {
			for !pi.done() && pi.elem() == "**" {
				pi.next()
			}
			return pi.done()
		}
		switch {
		case !pi.done() && pi.elem() == "**":
			star, starP, starS = true, pi, si
			pi.next()
		case !pi.done() && elemMatch(pi.elem(), si.elem()):
			pi.next()
			si.next()
		case star:
			starS.next()
			pi, si = starP, starS
			pi.next()
		default:
			return false
		}
	}
}

// An elemIter walks the elements of an absolute path without allocating.
type elemIter struct {
	s          string
	start, end int // the current element is s[start:end]; start > len(s) when done
}

func elems(p string) elemIter {
	it := elemIter{s: p, start: 1}
	if p == "/" {
		it.start = len(p) + 1
	}
	it.find()
	return it
}

func (it *elemIter) find() {
	if it.start > len(it.s) {
		return
	}
	if i := strings.IndexByte(it.s[it.start:], '/'); i >= 0 {
		it.end = it.start + i
	} else {
		it.end = len(it.s)
	}
}

func (it *elemIter) done() bool   { return it.start > len(it.s) }
func (it *elemIter) elem() string { return it.s[it.start:it.end] }
func (it *elemIter) next() {
	it.start = it.end + 1
	it.find()
}

// Covers reports whether pattern matches p or one of p's ancestors, so that
// a deleted directory covers everything below it. p may itself be a pattern:
// then every path it matches must be covered.
func Covers(pattern, p string) bool {
	return Contains(pattern, p) || Contains(Join(pattern, "**"), p)
}

// CoversPath is Covers for a plain path: path is taken literally, a `*` or
// `?` in it being an ordinary character (as a real file name may hold).
func CoversPath(pattern, path string) bool {
	return Match(pattern, path) || Match(Join(pattern, "**"), path)
}

// Within reports whether the plain path p is dir or lies below it, element
// by element (/a/bc is not within /a/b).
func Within(p, dir string) bool {
	if p == dir || dir == "/" {
		return true
	}
	// p holds dir and then a slash, with no string made for dir+"/":
	// callers ask this of every change against every pattern.
	d := strings.TrimSuffix(dir, "/")
	return len(p) > len(d) && p[len(d)] == '/' && p[:len(d)] == d
}

// Prefix returns the longest run of literal leading elements of pattern:
// the directory every path it matches lies within ("/" when the first
// element already holds a wildcard). A plain path is its own prefix.
func Prefix(pattern string) string {
	elems := strings.Split(strings.TrimPrefix(pattern, "/"), "/")
	i := 0
	for i < len(elems) && !HasMeta(elems[i]) {
		i++
	}
	return "/" + strings.Join(elems[:i], "/")
}

// Join appends the element elem to the pattern or path p.
func Join(p, elem string) string {
	if p == "/" {
		return "/" + elem
	}
	return p + "/" + elem
}

// Contains reports whether outer matches every path that inner matches.
// inner may be a plain path or a pattern. The answer is exact when inner is a
// plain path; for two patterns it may be false where a cleverer test would
// say true, never the reverse.
func Contains(outer, inner string) bool {
	if !compatible(outer, inner) || Valid(outer) != nil || Valid(inner) != nil {
		return false
	}
	if !HasMeta(inner) {
		return matchPath(outer, inner)
	}
	return seqContains(split(outer), split(inner), false)
}

// seqContains decides element sequences: o[i] == "**" may absorb any run of
// inner elements (including inner "**"); any other outer element absorbs
// exactly one inner element it contains. When literal is set, the inner
// elements are plain names, wildcard characters included.
func seqContains(o, in []string, literal bool) bool {
	// memo[i][j]: 0 unknown, 1 true, 2 false.
	memo := make([][]uint8, len(o)+1)
	for i := range memo {
		memo[i] = make([]uint8, len(in)+1)
	}
	var rec func(i, j int) bool
	rec = func(i, j int) bool {
		if m := memo[i][j]; m != 0 {
			return m == 1
		}
		var ok bool
		switch {
		case i == len(o):
			ok = j == len(in)
		case o[i] == "**":
			ok = rec(i+1, j) || j < len(in) && rec(i, j+1)
		case j == len(in):
			ok = false
		case literal:
			ok = elemMatch(o[i], in[j]) && rec(i+1, j+1)
		case in[j] == "**":
			ok = false
		default:
			ok = elemContains(o[i], in[j]) && rec(i+1, j+1)
		}
		if ok {
			memo[i][j] = 1
		} else {
			memo[i][j] = 2
		}
		return ok
	}
	return rec(0, 0)
}

// elemContains reports whether the element pattern o matches every string
// the element pattern in matches. An outer `*` absorbs any run of inner
// tokens, an outer `?` one inner literal character or `?`, an outer literal
// only the same inner literal.
func elemContains(o, in string) bool {
	if !HasMeta(in) {
		return elemMatch(o, in)
	}
	if o == "*" || o == in {
		return true
	}
	or, ir := runes(o), runes(in)
	memo := make([][]uint8, len(or)+1)
	for i := range memo {
		memo[i] = make([]uint8, len(ir)+1)
	}
	var rec func(i, j int) bool
	rec = func(i, j int) bool {
		if m := memo[i][j]; m != 0 {
			return m == 1
		}
		var ok bool
		switch {
		case i == len(or):
			ok = j == len(ir)
		case or[i] == '*':
			ok = rec(i+1, j) || j < len(ir) && rec(i, j+1)
		case j == len(ir) || ir[j] == '*':
			ok = false
		case or[i] == '?':
			ok = rec(i+1, j+1)
		default:
			ok = ir[j] == or[i] && rec(i+1, j+1)
		}
		if ok {
			memo[i][j] = 1
		} else {
			memo[i][j] = 2
		}
		return ok
	}
	return rec(0, 0)
}

// elemMatch matches one plain element against an element pattern without
// allocating. `?` stands for one character; a byte that is not UTF-8 is one
// character, equal only to itself.
func elemMatch(pattern, name string) bool {
	pi, si := 0, 0
	starP, starS := -1, 0
	for si < len(name) {
		_, ns := utf8.DecodeRuneInString(name[si:])
		if pi < len(pattern) {
			switch pattern[pi] {
			case '*':
				starP, starS = pi, si
				pi++
				continue
			case '?':
				pi++
				si += ns
				continue
			default:
				_, ps := utf8.DecodeRuneInString(pattern[pi:])
				if pattern[pi:pi+ps] == name[si:si+ns] {
					pi += ps
					si += ns
					continue
				}
			}
		}
		if starP < 0 {
			return false
		}
		_, ss := utf8.DecodeRuneInString(name[starS:])
		starS += ss
		pi, si = starP+1, starS
	}
	for pi < len(pattern) && pattern[pi] == '*' {
		pi++
	}
	return pi == len(pattern)
}

// runes splits s into characters, a byte that is not UTF-8 being a
// character of its own, distinct from every rune.
func runes(s string) []rune {
	out := make([]rune, 0, len(s))
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			r = utf8.MaxRune + 1 + rune(s[i])
		}
		out = append(out, r)
		i += n
	}
	return out
}

// Overlaps reports whether some path may match both a and b. It is exact
// when either is a plain path and may say true for two patterns that share
// no path, never the reverse.
func Overlaps(a, b string) bool {
	if !compatible(a, b) || Valid(a) != nil || Valid(b) != nil {
		return false
	}
	switch {
	case !HasMeta(a):
		return matchPath(b, a)
	case !HasMeta(b):
		return matchPath(a, b)
	}
	as, bs := split(a), split(b)
	memo := make([][]uint8, len(as)+1)
	for i := range memo {
		memo[i] = make([]uint8, len(bs)+1)
	}
	var rec func(i, j int) bool
	rec = func(i, j int) bool {
		if m := memo[i][j]; m != 0 {
			return m == 1
		}
		var ok bool
		switch {
		case i < len(as) && as[i] == "**":
			ok = rec(i+1, j) || j < len(bs) && rec(i, j+1)
		case j < len(bs) && bs[j] == "**":
			ok = rec(i, j+1) || i < len(as) && rec(i+1, j)
		case i == len(as) || j == len(bs):
			ok = i == len(as) && j == len(bs)
		default:
			ok = elemOverlaps(as[i], bs[j]) && rec(i+1, j+1)
		}
		if ok {
			memo[i][j] = 1
		} else {
			memo[i][j] = 2
		}
		return ok
	}
	return rec(0, 0)
}

// elemOverlaps reports whether two element patterns may match a common
// element: exactly when one is plain, by their fixed prefixes and suffixes
// otherwise.
func elemOverlaps(a, b string) bool {
	switch {
	case !HasMeta(a):
		return elemMatch(b, a)
	case !HasMeta(b):
		return elemMatch(a, b)
	}
	ap, bp := fixedPrefix(a), fixedPrefix(b)
	if !strings.HasPrefix(ap, bp) && !strings.HasPrefix(bp, ap) {
		return false
	}
	as, bs := fixedSuffix(a), fixedSuffix(b)
	return strings.HasSuffix(as, bs) || strings.HasSuffix(bs, as)
}

// compatible is a quick necessary condition for two patterns to share a
// path: the literal text before their first wildcard (without a trailing
// slash, which a "**" matching nothing drops) agrees.
func compatible(a, b string) bool {
	a, b = strings.TrimSuffix(fixedPrefix(a), "/"), strings.TrimSuffix(fixedPrefix(b), "/")
	return strings.HasPrefix(a, b) || strings.HasPrefix(b, a)
}

func fixedPrefix(p string) string {
	if i := strings.IndexAny(p, "*?"); i >= 0 {
		return p[:i]
	}
	return p
}

func fixedSuffix(p string) string {
	if i := strings.LastIndexAny(p, "*?"); i >= 0 {
		return p[i+1:]
	}
	return p
}
