package pathglob

import (
	"path"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

func TestValid(t *testing.T) {
	tests := []struct {
		pattern string
		ok      bool
	}{
		{"/", true},
		{"/a/b", true},
		{"/a/*.log", true},
		{"/a/**", true},
		{"/**/x", true},
		{"/a/?b/**/c*", true},
		{"a/b", false},
		{"", false},
		{"/a//b", false},
		{"/a/", false},
		{"/a/./b", false},
		{"/a/../b", false},
		{"/a/x**", false},
		{"/a/**x/b", false},
		{"/a/***", false},
	}
	for _, tt := range tests {
		if err := Valid(tt.pattern); (err == nil) != tt.ok {
			t.Errorf("Valid(%q) = %v, want ok=%t", tt.pattern, err, tt.ok)
		}
	}
}

func TestMatch(t *testing.T) {
	tests := []struct {
		pattern, path string
		want          bool
	}{
		{"/a/b", "/a/b", true},
		{"/a/b", "/a/b/c", false},
		{"/a/b", "/a", false},
		{"/a/*", "/a/b", true},
		{"/a/*", "/a/b/c", false},
		{"/a/*", "/a", false},
		{"/a/*.log", "/a/x.log", true},
		{"/a/*.log", "/a/.log", true},
		{"/a/*.log", "/a/x.txt", false},
		{"/a/*.log", "/a/d/x.log", false},
		{"/a/?.log", "/a/x.log", true},
		{"/a/?.log", "/a/xy.log", false},
		{"/a/?", "/a/é", true},
		{"/a/**", "/a", true},
		{"/a/**", "/a/b", true},
		{"/a/**", "/a/b/c/d", true},
		{"/a/**", "/ab", false},
		{"/a/**/z", "/a/z", true},
		{"/a/**/z", "/a/b/c/z", true},
		{"/a/**/z", "/a/b/c/z/y", false},
		{"/**", "/", true},
		{"/**", "/etc/passwd", true},
		{"/*", "/", false},
		{"/", "/", true},
		{"/a/*b*c", "/a/xbyc", true},
		{"/a/*b*c", "/a/xbycd", false},
		{"/a/[x]", "/a/[x]", true},
		{"/a/[x]", "/a/x", false},
		{"/a/?", "/a/*", true}, // the path is literal: "*" is one character
		{"/a/x**", "/a/xy", false},
		{"/a/*", "a/b", false},
	}
	for _, tt := range tests {
		if got := Match(tt.pattern, tt.path); got != tt.want {
			t.Errorf("Match(%q, %q) = %t, want %t", tt.pattern, tt.path, got, tt.want)
		}
	}
}

func TestContains(t *testing.T) {
	tests := []struct {
		outer, inner string
		want         bool
	}{
		{"/a/**", "/a/b/*.log", true},
		{"/a/**", "/a/**", true},
		{"/a/**", "/a", true},
		{"/a/**", "/**", false},
		{"/a/*", "/a/*.log", true},
		{"/a/*.log", "/a/*", false},
		{"/a/*.log", "/a/x*.log", true},
		{"/a/*.log", "/a/x?.log", true},
		{"/a/x?.log", "/a/x*.log", false},
		{"/a/?", "/a/?", true},
		{"/a/*", "/a/**", false},
		{"/a/*", "/a/b/c", false},
		{"/**/z", "/a/**/z", true},
		{"/a/b", "/a/b", true},
		{"/a/b", "/a/c", false},
		{"/x/**", "/a/**", false},
		{"/**", "/", true},
	}
	for _, tt := range tests {
		if got := Contains(tt.outer, tt.inner); got != tt.want {
			t.Errorf("Contains(%q, %q) = %t, want %t", tt.outer, tt.inner, got, tt.want)
		}
	}
}

func TestCovers(t *testing.T) {
	tests := []struct {
		pattern, path string
		want          bool
	}{
		{"/a/b", "/a/b", true},
		{"/a/b", "/a/b/c/d", true},
		{"/a/b", "/a/bc", false},
		{"/a/b", "/a", false},
		{"/a/*", "/a/b/c", true},
		{"/a/*.d", "/a/x.d/y", true},
		{"/a/b", "/a/b/*.log", true},
		{"/", "/anything/at/all", true},
	}
	for _, tt := range tests {
		if got := Covers(tt.pattern, tt.path); got != tt.want {
			t.Errorf("Covers(%q, %q) = %t, want %t", tt.pattern, tt.path, got, tt.want)
		}
		if HasMeta(tt.path) {
			continue
		}
		if got := CoversPath(tt.pattern, tt.path); got != tt.want {
			t.Errorf("CoversPath(%q, %q) = %t, want %t", tt.pattern, tt.path, got, tt.want)
		}
	}
	// A plain path is literal: "*" in a file name is a character.
	if CoversPath("/a/x", "/a/*") || !CoversPath("/a/*", "/a/*/b") {
		t.Error("CoversPath does not take its path literally")
	}
}

func TestOverlaps(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{"/a/b", "/a/b", true},
		{"/a/b", "/a/c", false},
		{"/a/*", "/a/b", true},
		{"/home/*", "/home/alice", true},
		{"/home/*", "/home/alice/x", false},
		{"/home/*/**", "/home/alice", true},
		{"/a/*.log", "/a/*.txt", false},
		{"/a/x*", "/a/*y", true},
		{"/a/x*", "/a/y*", false},
		{"/**", "/etc", true},
		{"/tmp/**", "/etc", false},
		{"/tmp/**", "/home/*/.bashrc", false},
		{"/home/u/.config/**", "/home/*/.config/autostart/**", true},
		{"/a/**/z", "/a/b/**", true},
		{"/*", "/", false},
	}
	for _, tt := range tests {
		if got := Overlaps(tt.a, tt.b); got != tt.want {
			t.Errorf("Overlaps(%q, %q) = %t, want %t", tt.a, tt.b, got, tt.want)
		}
		if got := Overlaps(tt.b, tt.a); got != tt.want {
			t.Errorf("Overlaps(%q, %q) = %t, want %t (swapped)", tt.b, tt.a, got, tt.want)
		}
	}
}

func TestJoin(t *testing.T) {
	got := []string{Join("/", "a"), Join("/a", "**"), Join("/a/b", "*")}
	want := []string{"/a", "/a/**", "/a/b/*"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Join mismatch (-want +got):\n%s", d)
	}
}

// FuzzMatchContains checks the matchers against each other and against
// path.Match: the fast matcher of plain paths agrees with the general one,
// a plain path is contained exactly when it matches, a pattern contained in
// another matches only what the other matches, and matching implies
// overlapping.
func FuzzMatchContains(f *testing.F) {
	f.Add("/a/*.log", "/a/x.log", "/a/**")
	f.Add("/a/**/z", "/a/b/z", "/**/z")
	f.Add("/a/?", "/a/b", "/a/*")
	f.Fuzz(func(t *testing.T, pattern, p, outer string) {
		if Valid(pattern) != nil || Valid(p) != nil || HasMeta(p) {
			return
		}
		m := Match(pattern, p)
		if want := seqContains(split(pattern), split(p), true); m != want {
			t.Errorf("Match(%q, %q) = %t, the general matcher says %t", pattern, p, m, want)
		}
		if m != Contains(pattern, p) {
			t.Errorf("Match(%q, %q) = %t but Contains says %t", pattern, p, m, !m)
		}
		if Contains(outer, pattern) && m && !Match(outer, p) {
			t.Errorf("Contains(%q, %q) but %q matches only the inner pattern", outer, pattern, p)
		}
		if m && !Overlaps(pattern, p) {
			t.Errorf("Match(%q, %q) but Overlaps says false", pattern, p)
		}
		if m && Valid(outer) == nil && Overlaps(outer, pattern) == false && Match(outer, p) {
			t.Errorf("%q matches %q and %q, but Overlaps says they share nothing", p, pattern, outer)
		}
		// One element against path.Match, which has the same * and ? (but
		// compares bytes where the text is not UTF-8).
		e, n := strings.TrimPrefix(pattern, "/"), strings.TrimPrefix(p, "/")
		if utf8.ValidString(e+n) && !strings.ContainsAny(e+n, "/[\\") {
			want, err := path.Match(e, n)
			if err == nil && elemMatch(e, n) != want {
				t.Errorf("elemMatch(%q, %q) = %t, path.Match says %t", e, n, !want, want)
			}
		}
	})
}

func TestWithin(t *testing.T) {
	for _, tc := range []struct {
		p, dir string
		want   bool
	}{
		{"/a/b", "/a/b", true},
		{"/a/b/c", "/a/b", true},
		{"/a/bc", "/a/b", false},
		{"/a", "/a/b", false},
		{"/anything", "/", true},
		{"/a/b/c", "/a/b/", true},
		{"/a/b", "/a/b/c", false},
		{"/a/b", "/a/bc", false},
		{"/ab/c", "/a", false},
		{"/a", "", true},
		{"a", "", false},
	} {
		if got := Within(tc.p, tc.dir); got != tc.want {
			t.Errorf("Within(%q, %q) = %v, want %v", tc.p, tc.dir, got, tc.want)
		}
	}
}

func TestPrefix(t *testing.T) {
	for pattern, want := range map[string]string{
		"/a/b":        "/a/b",
		"/a/b/*.log":  "/a/b",
		"/a/**/z":     "/a",
		"/srv/*/data": "/srv",
		"/x*":         "/",
		"/":           "/",
	} {
		if got := Prefix(pattern); got != want {
			t.Errorf("Prefix(%q) = %q, want %q", pattern, got, want)
		}
	}
}
