package pathglob

import (
	"testing"

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

// FuzzMatchContains checks that Contains agrees with Match: a plain path is
// contained exactly when it matches, and a pattern contained in another
// matches only what the other matches.
func FuzzMatchContains(f *testing.F) {
	f.Add("/a/*.log", "/a/x.log", "/a/**")
	f.Add("/a/**/z", "/a/b/z", "/**/z")
	f.Add("/a/?", "/a/b", "/a/*")
	f.Fuzz(func(t *testing.T, pattern, path, outer string) {
		if Valid(pattern) != nil || Valid(path) != nil || HasMeta(path) {
			return
		}
		if Match(pattern, path) != Contains(pattern, path) {
			t.Errorf("Match(%q, %q) = %t but Contains says %t", pattern, path, Match(pattern, path), Contains(pattern, path))
		}
		if Contains(outer, pattern) && Match(pattern, path) && !Match(outer, path) {
			t.Errorf("Contains(%q, %q) but %q matches only the inner pattern", outer, pattern, path)
		}
		if Match(pattern, path) && !Overlaps(pattern, path) {
			t.Errorf("Match(%q, %q) but Overlaps says false", pattern, path)
		}
	})
}
