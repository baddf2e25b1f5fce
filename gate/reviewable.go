package gate

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/act-project/act/descriptors"
	"github.com/act-project/act/diff"
)

// LOW by what the person's review shows (docs/risk.md): in a git work
// tree a change may be LOW only when `git status` shows it — a tracked
// file, or an untracked one no ignore rule hides — or when it is what a
// commit writes inside the repository's git directory; nothing else in
// any git directory (found by content, as git finds one) is LOW. Outside
// git, only entries that no dot-directory and no dot-name hides are.

// Reasons of the review, each with a %s for the paths.
const (
	whyMadeRepo     = "it makes a git repository, whose configuration any git command there obeys: %s"
	whyGitObeyed    = "it changes what git obeys or runs (a repository's config, hooks or info/): %s"
	whyGitInternals = "it changes git's own files beyond what a commit writes: %s"
	whyGitfile      = "it makes or changes %s, which makes its directory a git work tree"
	whyAttributes   = "it changes %s, whose filters and diff drivers can hide content from git diff"
	whyHidingFlag   = "it sets a flag in git's index that hides a file from git status: %s"
	whyForgedEntry  = "it records %s in git's index as content it does not hold: git status would not show the change"
	whyIndexCaches  = "it rewrites what git status trusts instead of looking (the index's untracked cache, fsmonitor token or split-index link): %s"
	whyIndexUnread  = "it writes a git index act cannot read: %s"
	whyIgnoreRules  = "it changes %s, which decides what git status shows"
	whyIgnored      = "it changes %s, which git ignores: git status does not show it"
	whyFlagged      = "it changes %s, which a flag in git's index hides from git status"
	whyNoUntracked  = "it makes %s, untracked where git status shows no untracked files (status.showUntrackedFiles)"
	whyNotShown     = "it makes or changes %s, which git status does not show (an empty directory, or a directory's mode)"
	whyRefusedRepo  = "it changes %s, in a git work tree git would not open (%s)"
	whyHiddenName   = "it changes %s, a dot-file or in a dot-directory, outside any git work tree: no listing shows it"
)

// A review grades what the person's own review shows of a plan's
// changes.
type review struct {
	g             *grading
	rules         RiskRules
	before, after *gitView
	repos         map[string]*gitRepo
	workTrees     map[string][3]string // workTreeAt's answers
	above         map[string]where     // where's answers
}

// where is what locate finds walking up from a directory: the first git
// directory, else the first work tree.
type where struct {
	gitDir          string
	made            bool
	wt, gd, refused string
}

// A gitRepo is one repository some change lies in.
type gitRepo struct {
	gitDir, common string
	root           string // its work tree; "" where none is known
	refused        string // why git would not open it
	before, after  *gitIndex
	indexErr       string // why the index the plan writes cannot be read
	cfg            gitConfig
	ignore         *ignoreRules
}

// A located change: where git puts it.
type located struct {
	c *diff.Change
	// gitDir is the innermost git directory holding the path, made by
	// the plan itself when made; rel is the path inside it.
	gitDir, rel string
	made        bool
	// repo is the repository whose work tree holds the path (nil:
	// outside git); rel is then the path in the work tree.
	repo *gitRepo
}

// maxIndex is the largest index act reads.
const maxIndex = 256 << 20

// reviewShows adds to g what the person's review of changes would not
// show (see above).
func (g *grading) reviewShows(changes []diff.Change, rules RiskRules) {
	rv := newReview(g, changes, rules)
	var all []located
	for i := range changes {
		c := &changes[i]
		if c.Kind == diff.Delete || !filepath.IsAbs(c.Path) {
			continue // a delete is graded as one already
		}
		all = append(all, rv.locate(c))
	}
	var shown []string
	var dirs []located
	for _, l := range all {
		switch {
		case l.gitDir != "":
			rv.inGitDir(l)
		case l.repo != nil && l.c.Type == diff.TypeDir:
			dirs = append(dirs, l)
		case l.repo != nil:
			if rv.inWorkTree(l) {
				shown = append(shown, l.c.Path)
			}
		default:
			rv.outsideGit(l)
		}
	}
	for _, l := range dirs {
		if l.repo.refused != "" {
			g.add(descriptors.RiskMedium, refusedWhy(l.repo), l.c.Path)
			continue
		}
		// An untracked directory is shown by what it holds.
		holds := l.c.Kind == diff.Create && slices.ContainsFunc(shown, func(p string) bool { return within(p, l.c.Path) })
		if !holds {
			g.add(descriptors.RiskMedium, whyNotShown, l.c.Path)
		}
	}
	for _, repo := range rv.sortedRepos() {
		rv.indexWritten(repo, all)
	}
}

// newReview is a review of changes for g.
func newReview(g *grading, changes []diff.Change, rules RiskRules) *review {
	byPath := make(map[string]*diff.Change, len(changes))
	for i := range changes {
		byPath[changes[i].Path] = &changes[i]
	}
	rv := &review{g: g, rules: rules, repos: map[string]*gitRepo{}, workTrees: map[string][3]string{},
		before: &gitView{cache: map[string]bool{}}, after: &gitView{after: true, changes: byPath, upper: rules.Upper}}
	// A path the plan creates, and deletes nothing at, held nothing in
	// the real tree when the diff looked: no git directory and no work
	// tree there before, and nothing to look up (a plan of 10,000 new
	// files saves as many lstats). Should the tree have changed since,
	// the promotion's stale check finds the path taken and refuses.
	deleted := map[string]bool{}
	for i := range changes {
		if changes[i].Kind == diff.Delete {
			deleted[changes[i].Path] = true
		}
	}
	for i := range changes {
		if c := &changes[i]; c.Kind == diff.Create && !deleted[c.Path] {
			rv.before.cache[c.Path] = false
			rv.workTrees[c.Path] = [3]string{}
		}
	}
	return rv
}

// locate finds where git puts c: walking up from its path, the first
// git directory (before or after the plan) holds it; else the first
// directory whose .git names a repository is its work tree.
func (rv *review) locate(c *diff.Change) located {
	l := located{c: c}
	d := c.Path
	if rv.gitDirAt(d) {
		l.gitDir, l.made = d, !rv.before.isGitDir(d)
		l.rel = relPath(d, c.Path)
		return l
	}
	var w where
	if d != "/" && d != "." {
		w = rv.where(filepath.Dir(d))
	}
	if w.gitDir != "" {
		l.gitDir, l.made = w.gitDir, w.made
		l.rel = relPath(w.gitDir, c.Path)
		return l
	}
	wt, gd, refused := w.wt, w.gd, w.refused
	if wt != "" {
		l.repo = rv.repo(gd, wt)
		if refused != "" && l.repo.refused == "" {
			l.repo.refused = refused
		}
		l.rel = relPath(wt, c.Path)
	}
	return l
}

// gitDirAt reports whether d is a git directory before or after the plan.
func (rv *review) gitDirAt(d string) bool {
	return rv.before.isGitDir(d) || (rv.after.touches(d) && rv.after.isGitDir(d))
}

// where walks up from the directory d as locate does: the first git
// directory holds what is below it; else the first work tree does. It is
// remembered for every directory on the way, so that the changes below a
// deep directory cost one walk, not one each.
func (rv *review) where(d string) where {
	if w, ok := rv.above[d]; ok {
		return w
	}
	var w where
	switch {
	case rv.gitDirAt(d):
		w.gitDir, w.made = d, !rv.before.isGitDir(d)
	case d == "/" || d == ".":
		w.wt, w.gd, w.refused = rv.workTreeAt(d)
	default:
		w = rv.where(filepath.Dir(d))
		if w.gitDir == "" {
			if wt, gd, refused := rv.workTreeAt(d); wt != "" {
				w = where{wt: wt, gd: gd, refused: refused}
			}
		}
	}
	if rv.above == nil {
		rv.above = map[string]where{}
	}
	rv.above[d] = w
	return w
}

// workTreeAt reports whether d is a work tree's root, as git discovers
// one: its .git is a git directory, or a file naming one.
func (rv *review) workTreeAt(d string) (wt, gitDir, refused string) {
	if r, ok := rv.workTrees[d]; ok {
		return r[0], r[1], r[2]
	}
	wt, gitDir, refused = rv.findWorkTree(d)
	rv.workTrees[d] = [3]string{wt, gitDir, refused}
	return wt, gitDir, refused
}

func (rv *review) findWorkTree(d string) (wt, gitDir, refused string) {
	dotgit := filepath.Join(d, ".git")
	exists, dir := rv.before.kind(dotgit)
	switch {
	case !exists:
		return "", "", ""
	case dir && rv.before.isGitDir(dotgit):
		return d, dotgit, ""
	case dir:
		return "", "", "" // git looks further up
	}
	if target, ok := gitfile(dotgit); ok && rv.before.isGitDir(target) {
		return d, target, ""
	}
	return d, dotgit, dotgit + " names no repository"
}

// repo loads the repository of git directory gitDir, work tree root.
func (rv *review) repo(gitDir, root string) *gitRepo {
	if r, ok := rv.repos[gitDir]; ok {
		if r.root == "" {
			r.root = root
		}
		return r
	}
	r := &gitRepo{gitDir: gitDir, common: gitDir, root: root}
	rv.repos[gitDir] = r
	if data, ok, _ := rv.before.read(filepath.Join(gitDir, "commondir"), 4096); ok {
		if c := strings.TrimSpace(string(data)); filepath.IsAbs(c) {
			r.common = filepath.Clean(c)
		} else {
			r.common = filepath.Join(gitDir, c)
		}
	}
	// git opens only a repository of the user it runs as (safe.directory).
	for _, p := range []string{root, gitDir} {
		if fi, err := os.Stat(p); p != "" && err == nil {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Uid != rv.rules.UID {
				r.refused = fmt.Sprintf("%s is uid %d's", p, st.Uid)
			}
		}
	}
	r.before = &gitIndex{entries: map[string]indexEntry{}, ext: map[string][]byte{}}
	if data, ok, _ := rv.before.read(filepath.Join(gitDir, "index"), maxIndex); ok {
		ix, err := parseIndex(data)
		if err != nil {
			r.refused = "its index cannot be read"
		} else {
			r.before = ix
		}
	}
	r.after = r.before
	if c := rv.after.changes[filepath.Join(gitDir, "index")]; c != nil && c.Kind != diff.Delete {
		r.after = nil
		data, ok := readLayer(rv.after.upper, c, maxIndex)
		if ix, err := parseIndex(data); ok && err == nil {
			r.after = ix
		} else {
			r.indexErr = "not readable"
		}
	}
	home := rv.rules.Home
	if home != "" {
		readGitConfig(filepath.Join(home, ".config/git/config"), home, &r.cfg, 0)
		readGitConfig(filepath.Join(home, ".gitconfig"), home, &r.cfg, 0)
	}
	readGitConfig(filepath.Join(r.common, "config"), home, &r.cfg, 0)
	readGitConfig(filepath.Join(gitDir, "config.worktree"), home, &r.cfg, 0)
	ign := &ignoreRules{load: func(dir string) []ignorePattern {
		if r.root == "" {
			return nil
		}
		data, _, _ := rv.before.read(filepath.Join(r.root, dir, ".gitignore"), 1<<20)
		return parseIgnore(data, dir)
	}}
	data, _, _ := rv.before.read(filepath.Join(r.common, "info/exclude"), 1<<20)
	ign.exclude = parseIgnore(data, "")
	global := r.cfg.excludesFile
	if global == "" && home != "" {
		global = filepath.Join(home, ".config/git/ignore")
	}
	if global != "" {
		data, _, _ := rv.before.read(global, 1<<20)
		ign.global = parseIgnore(data, "")
	}
	r.ignore = ign
	return r
}

func (rv *review) sortedRepos() []*gitRepo {
	var out []*gitRepo
	for _, k := range slices.Sorted(maps.Keys(rv.repos)) {
		out = append(out, rv.repos[k])
	}
	return out
}

// inGitDir grades a change inside a git directory: only what a commit
// writes in a repository that was there before is LOW.
func (rv *review) inGitDir(l located) {
	g, p := rv.g, l.c.Path
	switch {
	case l.made:
		g.add(descriptors.RiskHigh, whyMadeRepo, l.gitDir)
	case gitObeyed(l.rel):
		g.add(descriptors.RiskHigh, whyGitObeyed, p)
	case !commitWrite(l.rel, l.c.Type):
		g.add(descriptors.RiskMedium, whyGitInternals, p)
	case l.rel == "index":
		rv.repo(l.gitDir, "") // checked with the work tree's changes (indexWritten)
	}
}

// inWorkTree grades a file in a work tree, and reports whether git
// status shows it.
func (rv *review) inWorkTree(l located) bool {
	g, p, r := rv.g, l.c.Path, l.repo
	name := filepath.Base(p)
	switch {
	case name == ".git":
		g.add(descriptors.RiskHigh, whyGitfile, p)
		return false
	case name == ".gitattributes":
		g.add(descriptors.RiskHigh, whyAttributes, p)
	case name == ".gitignore":
		g.add(descriptors.RiskMedium, whyIgnoreRules, p)
	}
	if r.refused != "" {
		g.add(descriptors.RiskMedium, refusedWhy(r), p)
		return false
	}
	for _, ix := range []*gitIndex{r.before, r.after} {
		if ix == nil {
			continue
		}
		if e, ok := ix.lookup(l.rel); ok {
			if e.hidden != "" && ix == r.before {
				g.add(descriptors.RiskMedium, whyFlagged, p)
				return false
			}
			return true // tracked: status shows its change
		}
	}
	if r.ignore.ignored(l.rel, false) {
		g.add(descriptors.RiskMedium, whyIgnored, p)
		return false
	}
	switch r.cfg.showUntracked {
	case "no", "false", "off", "0":
		g.add(descriptors.RiskMedium, whyNoUntracked, p)
		return false
	}
	return true
}

// outsideGit grades a change in no git work tree: LOW only where no
// dot-name hides it from a listing, below its workspace.
func (rv *review) outsideGit(l located) {
	p := l.c.Path
	base := "/"
	for _, w := range rv.rules.Workspaces {
		if within(p, w) && len(w) > len(base) {
			base = w
		}
	}
	for _, part := range strings.Split(relPath(base, p), "/") {
		if strings.HasPrefix(part, ".") && part != "." {
			rv.g.add(descriptors.RiskMedium, whyHiddenName, p)
			return
		}
	}
}

// indexWritten checks an index the plan writes: it must be readable, set
// no flag that hides a file, keep what status trusts instead of looking,
// and record each file the plan also changes as the content it holds.
func (rv *review) indexWritten(r *gitRepo, all []located) {
	c := rv.after.changes[filepath.Join(r.gitDir, "index")]
	if c == nil || c.Kind == diff.Delete {
		return
	}
	g := rv.g
	if r.after == nil {
		g.add(descriptors.RiskMedium, whyIndexUnread, c.Path)
		return
	}
	show := func(rel string) string {
		if r.root != "" {
			return filepath.Join(r.root, rel)
		}
		return rel
	}
	for _, rel := range slices.Sorted(maps.Keys(r.after.entries)) {
		e := r.after.entries[rel]
		if e.hidden == "" {
			continue
		}
		if old, ok := r.before.entries[rel]; !ok || old.hidden == "" {
			g.add(descriptors.RiskHigh, whyHidingFlag, show(rel)+" ("+e.hidden+")")
		}
	}
	for _, sig := range []string{"UNTR", "FSMN", "link"} {
		if !bytes.Equal(r.after.ext[sig], r.before.ext[sig]) {
			g.add(descriptors.RiskHigh, whyIndexCaches, c.Path)
			break
		}
	}
	for _, l := range all {
		if l.repo != r || l.c.Type != diff.TypeFile {
			continue
		}
		e, ok := r.after.entries[l.rel]
		if !ok {
			continue
		}
		if old, ok := r.before.entries[l.rel]; ok && old.stat == e.stat && bytes.Equal(old.oid, e.oid) {
			continue // the entry is as it was: status compares the file with it
		}
		data, ok := readLayer(rv.after.upper, l.c, maxIndex)
		if !ok {
			g.add(descriptors.RiskMedium, whyIndexUnread, c.Path)
			continue
		}
		if !bytes.Equal(blobID(data, r.after.hashLen), e.oid) {
			g.add(descriptors.RiskHigh, whyForgedEntry, l.c.Path)
		}
	}
}

// refusedWhy is whyRefusedRepo for r, with a %s for the paths.
func refusedWhy(r *gitRepo) string {
	return fmt.Sprintf(whyRefusedRepo, "%s", strings.ReplaceAll(r.refused, "%", "%%"))
}

// relPath is p relative to dir ("" for dir itself), with slashes.
func relPath(dir, p string) string {
	if p == dir {
		return ""
	}
	if dir == "/" {
		return strings.TrimPrefix(p, "/")
	}
	return strings.TrimPrefix(p, dir+"/")
}
