package plan

import (
	"testing"

	"github.com/act-project/act/descriptors"
	"github.com/act-project/act/diff"
)

// TestEffectMatchersAgree checks that the plan's effects check and the
// descriptors' EffectMatcher give the same answer, paths holding `*`, `?`
// and `**` included: "declared" has one definition.
func TestEffectMatchersAgree(t *testing.T) {
	patterns := []string{"/t/a", "/t/*", "/t/a*", "/t/**", "/t/d", "/t/d/*.log", "/t/?", "/t/x*y/z"}
	paths := []string{"/t/a", "/t/a*", "/t/*", "/t/ab", "/t/d/x", "/t/d/x*", "/t/d/e.log", "/t/d/*.log", "/t/?", "/t/x*y/z", "/t/xAy/z", "/t/**", "/u/a"}
	for _, kind := range []diff.Kind{diff.Create, diff.Modify, diff.Delete} {
		for _, pat := range patterns {
			m := descriptors.NewEffectMatcher(descriptors.FilesystemEffects{Create: []string{pat}, Modify: []string{pat}, Delete: []string{pat}})
			for _, p := range paths {
				if a, b := effectMatches(kind, pat, p), m.Declared(string(kind), p); a != b {
					t.Errorf("%s of %s under effect %s: the plan says %v, the descriptors' matcher %v", kind, p, pat, a, b)
				}
			}
		}
	}
}
