package review

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/act-project/act/descriptors"
	"github.com/act-project/act/diff"
	"github.com/act-project/act/internal/pathglob"
)

// How a plan's changes are shown where a person decides (plan, show,
// pending, the prompt of apply, history; docs/lifecycle.md, "Reading a
// plan"). Only the presentation: the change list, --json and the MCP
// tools' structured output keep every change with its absolute path.
//
//   - A path inside a workspace (the policy's workspaces and this
//     session's) is shown relative to it, under a line naming the
//     workspace once ("in /home/u/proj:"); a path outside is absolute.
//   - A delete of A and a create of B of the same type and content (a
//     file's sha256, a symlink's target) are one line, "→ rename file A →
//     B". The summary still counts a create and a delete, and says how
//     many of them are renames.
//   - The changes inside a .git directory are counted on one line
//     (".git: 12 objects, 2 refs, index"), but only the internals that
//     run nothing (gitCounted); everything else there is shown in full:
//     the hooks and the config, and those of a submodule
//     (.git/modules/NAME/) or a worktree, the attributes, whatever git
//     may run or obey.
//   - The changes inside one dependency's directory — node_modules/NAME
//     (or @SCOPE/NAME), site-packages/NAME (its .dist-info with it), the
//     rest of a .venv, a vendor/ directory whose manifest the plan
//     changes too (Go's modules.txt, Composer's autoload.php) — are
//     counted on one line per package ("node_modules/kleur: 12 created,
//     1 modified"), as a package manager's install makes hundreds. A file
//     that runs code later (descriptors.RunsCodeLater: a .pth, an .npmrc)
//     is shown in full, and so is a package with one change.

// A reviewEntry is one line of the change list as a person reads it.
type reviewEntry struct {
	kind  reviewKind
	index int    // the change (reviewChange), the create (reviewRename), the first change (reviewGit)
	from  int    // reviewRename: the delete
	ws    string // the workspace the line's paths are shown relative to; "" absolute
	git   string // reviewGit: the .git directory's summary, after its path
	dep   string // reviewDep: the package's directory
}

type reviewKind int

const (
	reviewChange reviewKind = iota
	reviewRename
	reviewGit
	reviewDep
)

// reviewEntries groups changes as they are shown: by workspace (in the
// order each first appears; the paths outside any last), with renames
// merged and .git internals counted.
func reviewEntries(changes []diff.Change, workspaces []string) []reviewEntry {
	var entries []reviewEntry
	merged := make([]bool, len(changes))

	// .git internals, by .git directory.
	gits := map[string]*gitCount{}
	var gitOrder []string
	for i, c := range changes {
		dir, rest, ok := gitDir(c.Path)
		if !ok || !gitCounted(rest, c.Type) {
			continue
		}
		g := gits[dir]
		if g == nil {
			g = &gitCount{first: i}
			gits[dir] = g
			gitOrder = append(gitOrder, dir)
		}
		g.add(rest, c.Type)
		merged[i] = true
	}
	gitAt := map[int]string{}
	for _, dir := range gitOrder {
		gitAt[gits[dir].first] = dir
	}

	// A dependency's files, by package.
	deps, depAt := dependencies(changes, merged)

	// Renames: each create paired with an earlier-unpaired delete of the
	// same type and content.
	deletes := map[string][]int{}
	for i, c := range changes {
		if k := c.ContentKey(false); !merged[i] && c.Kind == diff.Delete && k != "" {
			deletes[k] = append(deletes[k], i)
		}
	}
	renameOf := map[int]int{} // the first of the pair's indices → the other
	for i, c := range changes {
		k := c.ContentKey(true)
		if merged[i] || c.Kind != diff.Create || k == "" || len(deletes[k]) == 0 {
			continue
		}
		d := deletes[k][0]
		deletes[k] = deletes[k][1:]
		merged[i], merged[d] = true, true
		renameOf[min(i, d)] = max(i, d)
	}

	for i, c := range changes {
		switch {
		case gitAt[i] != "":
			dir := gitAt[i]
			entries = append(entries, reviewEntry{kind: reviewGit, index: i, ws: workspaceOf(dir, workspaces), git: gits[dir].String()})
		case depAt[i] != "":
			dir := depAt[i]
			entries = append(entries, reviewEntry{kind: reviewDep, index: i, ws: workspaceOf(dir, workspaces), dep: dir, git: deps[dir].String()})
		case !merged[i]:
			entries = append(entries, reviewEntry{kind: reviewChange, index: i, ws: workspaceOf(c.Path, workspaces)})
		default:
			other, ok := renameOf[i]
			if !ok {
				continue // the rename's other half, or a counted .git entry
			}
			create, del := i, other
			if changes[i].Kind == diff.Delete {
				create, del = other, i
			}
			ws := workspaceOf(changes[create].Path, workspaces)
			if workspaceOf(changes[del].Path, workspaces) != ws {
				ws = ""
			}
			entries = append(entries, reviewEntry{kind: reviewRename, index: create, from: del, ws: ws})
		}
	}
	// By workspace, in the order each first appears; outside last.
	order := map[string]int{}
	for _, e := range entries {
		if _, ok := order[e.ws]; !ok && e.ws != "" {
			order[e.ws] = len(order)
		}
	}
	order[""] = len(order)
	slices.SortStableFunc(entries, func(a, b reviewEntry) int { return order[a.ws] - order[b.ws] })
	return entries
}

// workspaceOf returns the innermost of workspaces that holds path, or "".
func workspaceOf(path string, workspaces []string) string {
	best := ""
	for _, w := range workspaces {
		if pathglob.Within(path, w) && len(w) > len(best) {
			best = w
		}
	}
	return best
}

// shownPath is path as a line under workspace ws shows it.
func shownPath(path, ws string) string {
	if ws == "" {
		return path
	}
	rel, err := filepath.Rel(ws, path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return path
	}
	return rel
}

// gitDir splits path at its first ".git" component: the .git directory
// and the path inside it ("" for the directory itself).
func gitDir(path string) (dir, rest string, ok bool) {
	parts := strings.Split(path, "/")
	for i, p := range parts {
		if p == ".git" {
			return strings.Join(parts[:i+1], "/"), strings.Join(parts[i+1:], "/"), true
		}
	}
	return "", "", false
}

// gitCounted says whether the change at rest inside a .git directory, of
// type typ, is one of the internals git runs nothing from, which a review
// counts: a directory, objects, refs, logs, the index, HEAD and the other
// *HEAD files, the last commit's message. Anything else (hooks, config,
// config.worktree, info/attributes, a submodule's or a worktree's own
// hooks and config) is shown in full: a list of what is not counted could
// not keep up with what git reads.
func gitCounted(rest, typ string) bool {
	top, _, nested := strings.Cut(rest, "/")
	switch {
	case typ == diff.TypeDir || rest == "":
		return true
	case top == "objects" || top == "refs" || top == "logs":
		return true
	case nested:
		return false
	}
	return rest == "index" || rest == "packed-refs" || rest == "COMMIT_EDITMSG" || strings.HasSuffix(rest, "HEAD")
}

// gitCount counts the changes inside one .git directory.
type gitCount struct {
	first                       int
	objects, refs, logs, others int
	index                       bool
	dirs                        int
}

func (g *gitCount) add(rest, typ string) {
	top, _, _ := strings.Cut(rest, "/")
	switch {
	case typ == diff.TypeDir || rest == "":
		g.dirs++
	case top == "objects":
		g.objects++
	case top == "refs" || rest == "packed-refs" || (!strings.Contains(rest, "/") && strings.HasSuffix(rest, "HEAD")):
		g.refs++
	case rest == "index":
		g.index = true
	case top == "logs":
		g.logs++
	default:
		g.others++
	}
}

func (g *gitCount) String() string {
	var parts []string
	if g.objects > 0 {
		parts = append(parts, Plural(g.objects, "object"))
	}
	if g.refs > 0 {
		parts = append(parts, Plural(g.refs, "ref"))
	}
	if g.index {
		parts = append(parts, "index")
	}
	if g.logs > 0 {
		parts = append(parts, Plural(g.logs, "log"))
	}
	if g.others > 0 {
		parts = append(parts, Plural(g.others, "other file"))
	}
	if len(parts) == 0 {
		parts = append(parts, Plural(g.dirs, "directory"))
	}
	return strings.Join(parts, ", ")
}

// renames counts the renames among entries.
func renames(entries []reviewEntry) int {
	n := 0
	for _, e := range entries {
		if e.kind == reviewRename {
			n++
		}
	}
	return n
}

// entryLine is the line of entry e: its marker and style, and the text.
func entryLine(st Styles, changes []diff.Change, e reviewEntry) (Style, string, string) {
	switch e.kind {
	case reviewRename:
		c, from := changes[e.index], changes[e.from]
		desc := ""
		if c.Type == diff.TypeFile && c.SizeAfter != nil {
			desc = fmt.Sprintf("(%d bytes)", *c.SizeAfter)
		}
		if mb, ma := from.ModeBefore, c.ModeAfter; mb != nil && ma != nil && *mb != *ma {
			desc = strings.TrimSuffix(strings.TrimPrefix(desc, "("), ")")
			if desc != "" {
				desc = ", " + desc
			}
			desc = "(mode " + Line(*mb) + " → " + Line(*ma) + desc + ")"
		}
		return st.Modify, fmt.Sprintf("→ rename %s %s → %s", Line(c.Type), Line(shownPath(from.Path, e.ws)), Line(shownPath(c.Path, e.ws))), desc
	case reviewGit:
		dir, _, _ := gitDir(changes[e.index].Path)
		return st.Modify, fmt.Sprintf("· %s: %s", Line(shownPath(dir, e.ws)), e.git), "(inside a git repository: counted; --json lists each)"
	case reviewDep:
		return st.Modify, fmt.Sprintf("· %s: %s", Line(shownPath(e.dep, e.ws)), e.git), "(a dependency's files: counted; --json lists each)"
	}
	c := changes[e.index]
	s, sign := st.Modify, "~"
	switch c.Kind {
	case diff.Create:
		s, sign = st.Create, "+"
	case diff.Delete:
		s, sign = st.Remove, "-"
	}
	return s, fmt.Sprintf("%s %s %s %s", sign, Line(string(c.Kind)), Line(c.Type), Line(shownPath(c.Path, e.ws))), describe(c)
}

// workspaceHeader is the line before the entries of workspace ws.
func workspaceHeader(ws string) string {
	if ws == "" {
		return "elsewhere:"
	}
	return "in " + Line(ws) + ":"
}

// depCount counts the changes of one dependency's package.
type depCount struct {
	first                  int
	changes                []int
	create, modify, remove int
}

func (d *depCount) String() string {
	var parts []string
	for _, p := range []struct {
		n    int
		verb string
	}{{d.create, "created"}, {d.modify, "modified"}, {d.remove, "deleted"}} {
		if p.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", p.n, p.verb))
		}
	}
	return strings.Join(parts, ", ")
}

// dependencies counts the changes not merged yet that lie in a
// dependency's package (depPackage), by package, and marks them merged:
// but a package with one change, and a change that runs code later.
// depAt maps each package's first change to its directory.
func dependencies(changes []diff.Change, merged []bool) (deps map[string]*depCount, depAt map[int]string) {
	manifests := map[string]bool{}
	for _, c := range changes {
		if b := filepath.Base(c.Path); b == "modules.txt" || b == "autoload.php" {
			if d := filepath.Dir(c.Path); filepath.Base(d) == "vendor" {
				manifests[d] = true
			}
		}
	}
	later := descriptors.NewCodeLater(nil)
	deps = map[string]*depCount{}
	for i, c := range changes {
		if merged[i] {
			continue
		}
		pkg, ok := depPackage(c.Path, manifests)
		if !ok {
			continue
		}
		if _, runs := later.Match(c.Path); runs {
			continue
		}
		d := deps[pkg]
		if d == nil {
			d = &depCount{first: i}
			deps[pkg] = d
		}
		d.changes = append(d.changes, i)
		switch c.Kind {
		case diff.Create:
			d.create++
		case diff.Delete:
			d.remove++
		default:
			d.modify++
		}
	}
	depAt = map[int]string{}
	for pkg, d := range deps {
		if len(d.changes) < 2 {
			delete(deps, pkg)
			continue
		}
		for _, i := range d.changes {
			merged[i] = true
		}
		depAt[d.first] = pkg
	}
	return deps, depAt
}

// depPackage is the directory of the dependency's package path lies in:
// node_modules/NAME or node_modules/@SCOPE/NAME (the first node_modules:
// a package's own dependencies are its), site-packages/NAME (or
// dist-packages; NAME-VERSION.dist-info is NAME's), the rest of a .venv,
// or vendor/MODULE of a vendor directory in manifests (a host's module
// path by three elements, another by two).
func depPackage(path string, manifests map[string]bool) (string, bool) {
	parts := strings.Split(path, "/")
	join := func(n int) string { return strings.Join(parts[:n], "/") }
	for i, p := range parts {
		switch p {
		case "node_modules":
			switch {
			case i+1 >= len(parts):
				return join(i + 1), true
			case strings.HasPrefix(parts[i+1], "@") && i+2 < len(parts):
				return join(i + 3), true
			}
			return join(i + 2), true
		case "site-packages", "dist-packages":
			if i+1 >= len(parts) {
				return join(i + 1), true
			}
			name := parts[i+1]
			for _, suf := range []string{".dist-info", ".egg-info"} {
				if base, ok := strings.CutSuffix(name, suf); ok {
					name, _, _ = strings.Cut(base, "-")
				}
			}
			name = strings.TrimSuffix(name, ".py")
			return join(i+1) + "/" + name, true
		case "vendor":
			if !manifests[join(i+1)] || i+1 >= len(parts) || parts[i+1] == "modules.txt" || parts[i+1] == "autoload.php" {
				continue
			}
			n := 2
			if strings.Contains(parts[i+1], ".") {
				n = 3
			}
			return join(min(len(parts), i+1+n)), true
		}
	}
	for i, p := range parts {
		if p == ".venv" {
			return join(i + 1), true
		}
	}
	return "", false
}
