package plan

import (
	"fmt"
	"slices"

	"github.com/act-project/act/descriptors"
	"github.com/act-project/act/diff"
	"github.com/act-project/act/internal/problem"
)

// CheckEffects compares the changes of a dry run with the effects d declares
// (docs/lifecycle.md). Every change must match a declared effect of the same kind —
// globs allowed, and a declared delete covers everything below it. It
// returns one Rejected problem per undeclared change, and a warning per
// declared effect that did not happen, but for a command's claim on its
// workdir (WORKDIR/**, descriptors.MayChangeBelow): a command that only
// reads, such as go test, changes nothing, and that is fine.
func CheckEffects(d *descriptors.Descriptor, changes []diff.Change) (rejected problem.List, warnings []problem.Problem) {
	fx := d.Effects.Filesystem
	mayChange := descriptors.MayChangeBelow(d)
	declared := map[diff.Kind][]string{
		diff.Create: fx.Create,
		diff.Modify: fx.Modify,
		diff.Delete: fx.Delete,
	}
	happened := map[diff.Kind][]bool{}
	for k, pats := range declared {
		happened[k] = make([]bool, len(pats))
	}
	for _, c := range changes {
		matched := false
		for i, pat := range declared[c.Kind] {
			if effectMatches(c.Kind, pat, c.Path) {
				happened[c.Kind][i] = true
				matched = true
			}
		}
		if matched {
			continue
		}
		msg := fmt.Sprintf("the dry run would %s the %s %s, and effects.filesystem.%s does not declare it",
			c.Kind, c.Type, c.Path, c.Kind)
		for _, other := range []diff.Kind{diff.Create, diff.Modify, diff.Delete} {
			if other == c.Kind {
				continue
			}
			for _, pat := range declared[other] {
				if effectMatches(other, pat, c.Path) {
					msg += fmt.Sprintf(" (it is declared under %s)", other)
					break
				}
			}
		}
		rejected = append(rejected, problem.Problem{
			Rule: "effects.undeclared-change", Field: "effects.filesystem." + string(c.Kind),
			Message: msg, Layer: problem.Rejected,
		})
	}
	// A path declared as both create and modify (a write that may do either)
	// happened if either did.
	either := func(k diff.Kind, pat string) bool {
		other := diff.Modify
		if k == diff.Modify {
			other = diff.Create
		} else if k != diff.Create {
			return false
		}
		for i, p := range declared[other] {
			if p == pat && happened[other][i] {
				return true
			}
		}
		return false
	}
	for _, k := range []diff.Kind{diff.Create, diff.Modify, diff.Delete} {
		for i, pat := range declared[k] {
			if happened[k][i] || either(k, pat) || slices.Contains(mayChange, pat) {
				continue
			}
			warnings = append(warnings, problem.Problem{
				Rule:    "effects.not-happened",
				Field:   problem.FieldPath("effects", "filesystem", string(k), itoa(i)),
				Message: fmt.Sprintf("the declared %s of %s did not happen in the dry run", k, pat),
				Layer:   problem.Rejected,
			})
		}
	}
	return rejected, warnings
}

func effectMatches(k diff.Kind, pattern, path string) bool {
	return descriptors.EffectMatches(string(k), pattern, path)
}
