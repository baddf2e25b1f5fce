package descriptors

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/act-project/act/internal/pathglob"
)

// TestLiteralRun: the run CodeLater checks before matching is in every
// path a pattern matches, for each pattern of the list (with a home) and
// for patterns made to test the edges (`**` at either end, matching no
// element), on paths made from each pattern by filling in its wildcards.
func TestLiteralRun(t *testing.T) {
	for pat, want := range map[string]string{
		"/a/**":             "/a",
		"/**/.git/hooks/**": "/.git/hooks",
		"/**/x/*.pth":       ".pth",
		"/**":               "",
		"/a/*/bc?d/**/e":    "/a/",
	} {
		if got := literalRun(pat); got != want {
			t.Errorf("literalRun(%q) = %q, want %q", pat, got, want)
		}
	}
	pats := []string{"/a/**", "/**/b", "/a/**/b", "/**", "/a?c/*.d/**/e*f"}
	for _, p := range NewCodeLater([]string{"/home/u"}).pats {
		pats = append(pats, p.pat)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	word := func() string {
		const chars = "ab.-_x"
		n := rng.IntN(4)
		var b strings.Builder
		for range n {
			b.WriteByte(chars[rng.IntN(len(chars))])
		}
		return b.String()
	}
	for _, pat := range pats {
		lit := literalRun(pat)
		for range 200 {
			var elems []string
			for _, e := range strings.Split(pat[1:], "/") {
				if e == "**" {
					for range rng.IntN(3) {
						elems = append(elems, "w"+word())
					}
					continue
				}
				var b strings.Builder
				for _, r := range e {
					switch r {
					case '*':
						b.WriteString(word())
					case '?':
						b.WriteByte('q')
					default:
						b.WriteRune(r)
					}
				}
				if b.Len() == 0 {
					b.WriteByte('e')
				}
				elems = append(elems, b.String())
			}
			path := "/" + strings.Join(elems, "/")
			if !pathglob.Match(pat, path) {
				continue // an element made empty, or the like: not a path the pattern matches
			}
			if !strings.Contains(path, lit) {
				t.Fatalf("%q matches %q, which does not hold its literal run %q", pat, path, lit)
			}
		}
	}
}
