package gate

import (
	"path/filepath"
	"slices"
	"strings"

	"github.com/act-project/act/descriptors"
	"github.com/act-project/act/diff"
	"github.com/act-project/act/internal/pathglob"
	"github.com/act-project/act/plan"
)

// By-products (docs/risk.md): what a command writes to a path git ignores
// in a work tree — coverage, caches, build output — is not part of the
// plan. It is taken out of the dry run's changes before they are checked
// and graded, recorded in the plan as discarded, and never promoted,
// unless the descriptor declares it by a pattern that names it: then it
// stays, graded as what it is. The ignore rules are the tree's before the
// plan, so a command cannot make its own writes by-products; .gitignore,
// .gitattributes and .git are never by-products, nor is a tracked file or
// anything in a git directory. A directory the command made that holds
// only by-products is one too.

// byProducts is the gate's split of d's dry run (plan.Options.ByProducts):
// nil unless d runs a command and installs or removes no package (a
// package manager writes its dependency directories on purpose).
func (g *Gate) byProducts(d *descriptors.Descriptor) plan.ByProducts {
	if !runsCommand(d.ActionType, d.Steps) {
		return nil
	}
	rules := g.riskRules()
	return func(changes []diff.Change, upper string) ([]diff.Change, []string) {
		rules.Upper = upper
		return ByProducts(d, changes, rules)
	}
}

// runsCommand reports whether an action of type t with steps runs a
// command and no package operation.
func runsCommand(t descriptors.ActionType, steps []descriptors.Step) bool {
	cmd := false
	var walk func(t descriptors.ActionType, steps []descriptors.Step) bool
	walk = func(t descriptors.ActionType, steps []descriptors.Step) bool {
		switch t {
		case descriptors.PackageInstall, descriptors.PackageRemove:
			return false
		case descriptors.CommandExecution:
			cmd = true
		}
		for _, s := range steps {
			if !walk(s.ActionType, s.Steps) {
				return false
			}
		}
		return true
	}
	return walk(t, steps) && cmd
}

// ByProducts splits changes into those a plan of d keeps and the paths of
// its by-products (see above).
func ByProducts(d *descriptors.Descriptor, changes []diff.Change, rules RiskRules) (kept []diff.Change, discarded []string) {
	rv := newReview(&grading{}, changes, rules)
	drop := make([]bool, len(changes))
	inTree := make([]bool, len(changes)) // a candidate: in a work tree, not declared
	for i := range changes {
		c := &changes[i]
		if !filepath.IsAbs(c.Path) {
			continue
		}
		l := rv.locate(c)
		if l.gitDir != "" || l.repo == nil || l.repo.refused != "" || l.repo.root == "" {
			continue
		}
		switch filepath.Base(c.Path) {
		case ".git", ".gitignore", ".gitattributes":
			continue
		}
		if declaredBy(d, c, l.repo.root) || tracked(l.repo, l.rel) {
			continue
		}
		inTree[i] = true
		drop[i] = l.repo.ignore.ignored(l.rel, c.Type == diff.TypeDir)
	}
	// ancestors calls f with the index of each change at a directory
	// above changes[i].
	idx := make(map[string]int, len(changes))
	for i, c := range changes {
		idx[c.Path] = i
	}
	ancestors := func(i int, f func(a int)) {
		// The diff's paths are clean: each parent is a prefix of the
		// path, taken without copying it (filepath.Dir cleans and copies,
		// which a deep tree pays for at every level of every change).
		for p := changes[i].Path; p != "/" && p != "."; {
			switch j := strings.LastIndexByte(p, '/'); {
			case j > 0:
				p = p[:j]
			case j == 0:
				p = "/"
			default:
				p = "."
			}
			if a, ok := idx[p]; ok && changes[a].Type == diff.TypeDir {
				f(a)
			}
		}
	}
	// A directory that holds a change kept is kept.
	for i := range changes {
		if !drop[i] {
			ancestors(i, func(a int) { drop[a] = false })
		}
	}
	// A directory the command made that holds only by-products is one,
	// deepest first.
	holds, keeps := make([]int, len(changes)), make([]int, len(changes))
	for i := range changes {
		ancestors(i, func(a int) {
			holds[a]++
			if !drop[i] {
				keeps[a]++
			}
		})
	}
	var made []int
	for i, c := range changes {
		if inTree[i] && !drop[i] && c.Kind == diff.Create && c.Type == diff.TypeDir {
			made = append(made, i)
		}
	}
	slices.SortFunc(made, func(a, b int) int { return len(changes[b].Path) - len(changes[a].Path) })
	for _, i := range made {
		if holds[i] > 0 && keeps[i] == 0 {
			drop[i] = true
			ancestors(i, func(a int) { keeps[a]-- })
		}
	}
	for i, c := range changes {
		if drop[i] {
			discarded = append(discarded, c.Path)
		} else {
			kept = append(kept, c)
		}
	}
	return kept, discarded
}

// tracked reports whether the index holds rel, before or after the plan.
func tracked(r *gitRepo, rel string) bool {
	for _, ix := range []*gitIndex{r.before, r.after} {
		if ix == nil {
			continue
		}
		if _, ok := ix.lookup(rel); ok {
			return true
		}
	}
	return false
}

// declaredBy reports whether d's effects declare c by a pattern that
// names it: any matching pattern but a catch-all ROOT/** of a directory
// that holds the whole work tree at root (act run's and the hooks'
// WORKSPACE/**, doors.CommandDescriptor).
func declaredBy(d *descriptors.Descriptor, c *diff.Change, root string) bool {
	fx := d.Effects.Filesystem
	var pats []string
	switch c.Kind {
	case diff.Create:
		pats = fx.Create
	case diff.Modify:
		pats = fx.Modify
	case diff.Delete:
		pats = fx.Delete
	}
	for _, p := range pats {
		if !descriptors.EffectMatches(string(c.Kind), p, c.Path) {
			continue
		}
		if dir, ok := strings.CutSuffix(p, "/**"); ok && !pathglob.HasMeta(dir) &&
			(dir == "" || pathglob.Within(root, dir)) {
			continue // the whole work tree
		}
		return true
	}
	return false
}
