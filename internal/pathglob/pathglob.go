// Package pathglob matches absolute, clean slash-separated paths against the
// globs of Action Descriptors (SPEC §2.3) and compares globs with each other.
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
// [Match] says whether a pattern matches a path. [Contains] says whether one
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
	for _, e := range strings.Split(pattern[1:], "/") {
		switch {
		case e == "":
			return errors.New("a pattern must not have empty elements")
		case e == "." || e == "..":
			return fmt.Errorf("a pattern must not have %q elements", e)
		case e != "**" && strings.Contains(e, "**"):
			return fmt.Errorf("%q: ** must be a whole path element", e)
		}
	}
	return nil
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
	return seqContains(split(pattern), split(path), true)
}

// Covers reports whether pattern matches p or one of p's ancestors, so that
// a deleted directory covers everything below it. p may itself be a pattern:
// then every path it matches must be covered.
func Covers(pattern, p string) bool {
	return Contains(pattern, p) || Contains(Join(pattern, "**"), p)
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
	if Valid(outer) != nil || Valid(inner) != nil {
		return false
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
	or, ir := []rune(o), []rune(in)
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

// elemMatch matches one plain element against an element pattern.
func elemMatch(pattern, name string) bool {
	p, s := []rune(pattern), []rune(name)
	// Iterative wildcard match with single-star backtracking.
	pi, si := 0, 0
	star, mark := -1, 0
	for si < len(s) {
		switch {
		case pi < len(p) && (p[pi] == '?' || p[pi] == s[si]):
			pi++
			si++
		case pi < len(p) && p[pi] == '*':
			star, mark = pi, si
			pi++
		case star >= 0:
			pi = star + 1
			mark++
			si = mark
		default:
			return false
		}
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}

// Overlaps reports whether some path may match both a and b. It is exact
// when either is a plain path and may say true for two patterns that share
// no path, never the reverse.
func Overlaps(a, b string) bool {
	if Valid(a) != nil || Valid(b) != nil {
		return false
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
