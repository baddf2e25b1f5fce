package review

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

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

// A reviewEntry is one line of the change list as a person reads it.
type reviewEntry struct {
	kind  reviewKind
	index int    // the change (reviewChange), the create (reviewRename), the first change (reviewGit)
	from  int    // reviewRename: the delete
	ws    string // the workspace the line's paths are shown relative to; "" absolute
	git   string // reviewGit: the .git directory's summary, after its path
}

type reviewKind int

const (
	reviewChange reviewKind = iota
	reviewRename
	reviewGit
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
