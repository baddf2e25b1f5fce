package gate

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/act-project/act/descriptors"
	"github.com/act-project/act/diff"
	"github.com/act-project/act/internal/pathglob"
	"github.com/act-project/act/plan"
	"github.com/act-project/act/policy"
)

// Risk is act's own grading of a plan beside the agent's (docs/risk.md):
// the mode is decided from the stricter of the two.
type Risk struct {
	Declared descriptors.RiskLevel `json:"risk_declared"`
	Assessed descriptors.RiskLevel `json:"risk_assessed"`
	// Reasons say why Assessed is above LOW, one sentence each.
	Reasons []string `json:"risk_reasons,omitempty"`
	// CommandMode is the mode the policy's command rules give every
	// command of the plan ("" where some command matches none); Rules
	// are the rules used, shown as [go test].
	CommandMode  policy.Mode `json:"-"`
	CommandRules []string    `json:"-"`
}

// Effective is the stricter of the declared and the assessed risk.
func (r Risk) Effective() descriptors.RiskLevel {
	if r.Assessed.Rank() > r.Declared.Rank() {
		return r.Assessed
	}
	return r.Declared
}

// RiskRules are the host's settings of the assessment.
type RiskRules struct {
	// MaxDeletes is the number of deleted paths above which a plan is HIGH.
	MaxDeletes int
	// SensitivePaths are globs whose change makes a plan HIGH.
	SensitivePaths []string
	// Homes are every home the static rules know (descriptors.HomeRoots),
	// for the files that run code later and the home dot-files.
	Homes []string
	// InWorkspace reports whether a path lies inside a workspace, where a
	// change may be LOW; nil: nowhere.
	InWorkspace func(path string) bool
	// UID is the user act runs as: a changed entry another user owns would
	// be promoted as this user's.
	UID uint32
	// PathDirs are directories whose programs run by name ($PATH's); the
	// usual ones under each home are in the list of files that run code
	// later (descriptors.RunsCodeLater).
	PathDirs []string
	// Commands is the policy's command rules (policy.Policy.CommandMode);
	// nil: none.
	Commands func(d *descriptors.Descriptor) (policy.Mode, []policy.CommandRule, bool)
	// Workspaces are the workspaces' roots, below which a dot-name hides
	// a change outside git (InWorkspace decides what is inside one).
	Workspaces []string
	// Home is the home whose git configuration and ignore file `git
	// status` reads ($HOME); "": none.
	Home string
	// Upper is the plan's layer's upper directory, where the content the
	// plan writes is (a git index it writes is read there); "": not known,
	// and such a change is not LOW.
	Upper string
	// CommandsByDiff grades a command by what its dry run did (the
	// policy's risk.commands: by_diff); false: every command is at least
	// MEDIUM (always_medium).
	CommandsByDiff bool
	// Unplanned: no dry run ended (a command stopped at a door's
	// deadline, a descriptor only validated), so changes are not what the
	// commands did, and a command is at least MEDIUM.
	Unplanned bool
	// Preview: the changes are what a descriptor says it will change,
	// before any dry run (Gate.Expect): graded by where they lie and what
	// they will be, not by what git shows of them, which only the tree
	// says (and act reads nothing of it then).
	Preview bool
}

// DefaultMaxDeletes is MaxDeletes when the policy sets none.
const DefaultMaxDeletes = 20

// Assess grades d and the changes its dry run made (docs/risk.md). LOW is
// an allow-list: a plan is LOW only when every change lies inside a
// workspace, is a regular file or a directory, is executable neither
// before nor after, has no setuid, setgid or sticky bit and no group or
// world write bit before or after, keeps its owner, is no file that runs
// code later or that a tool runs on its own, and is what the person's own
// review shows (reviewShows: in git, what git status shows or what a
// commit writes; outside git, no dot-name). Beyond that:
//   - by action type, steps included: a package manager or a delete is at
//     least MEDIUM; a command is graded by what its dry run did (its
//     changes, as a FILE_WRITE of them would be), unless the policy says
//     risk.commands: always_medium or no dry run ended (rules.Unplanned):
//     then it is at least MEDIUM;
//   - commands that had the network (sandbox.allow_network), and that no
//     command rule covers, are at least MEDIUM: what they sent or fetched
//     is in no diff;
//   - any deleted path is at least MEDIUM; more than MaxDeletes is HIGH;
//   - a special bit, an executable (new, made so, or replaced), a file
//     that runs code later (RunsCodeLater) or that a tool runs on its own
//     (Mechanisms), a home dot-file, a program in a PATH directory, a
//     change to a sensitive path, and a change that hides another from
//     git status or makes a git repository are HIGH.
func Assess(d *descriptors.Descriptor, changes []diff.Change, rules RiskRules) Risk {
	g := &grading{r: Risk{Declared: d.RiskLevel, Assessed: descriptors.RiskLow}}
	ruled := g.commandRules(d, rules)
	g.actionTypes(d, ruled, rules)
	g.network(d, ruled)
	deletes := g.eachChange(changes, rules)
	if !rules.Preview {
		g.reviewShows(changes, rules)
	}
	g.emit(descriptors.RiskMedium)
	g.deletes(deletes, rules.MaxDeletes)
	g.emit(descriptors.RiskHigh)
	g.scopeSecrets(d, rules)
	return g.r
}

// A grading is an assessment being made: the risk so far, and the
// findings about the changes, each with the paths it holds for.
type grading struct {
	r        Risk
	findings []*finding
}

// A finding is one reason, its format with a %s for its paths.
type finding struct {
	level  descriptors.RiskLevel
	format string
	paths  []string
	seen   map[string]bool
}

// raise adds a reason and raises the risk to at least to.
func (g *grading) raise(to descriptors.RiskLevel, format string, args ...any) {
	if to.Rank() > g.r.Assessed.Rank() {
		g.r.Assessed = to
	}
	g.r.Reasons = append(g.r.Reasons, fmt.Sprintf(format, args...)+" ("+string(to)+")")
}

// add records path under the finding of format, once.
func (g *grading) add(level descriptors.RiskLevel, format, path string) {
	for _, f := range g.findings {
		if f.format == format && f.level == level {
			if !f.seen[path] {
				f.seen[path] = true
				f.paths = append(f.paths, path)
			}
			return
		}
	}
	g.findings = append(g.findings, &finding{level, format, []string{path}, map[string]bool{path: true}})
}

// emit raises the findings of level, in the order each was first found.
func (g *grading) emit(level descriptors.RiskLevel) {
	for _, f := range g.findings {
		if f.level == level {
			g.raise(level, f.format, shownPaths(f.paths))
		}
	}
}

// commandRules reports whether the policy's command rules cover every
// command of d: then running commands does not make the plan MEDIUM, the
// rule decides their mode (Gate.decide), and only while the rest of the
// plan is LOW.
func (g *grading) commandRules(d *descriptors.Descriptor, rules RiskRules) bool {
	if rules.Commands == nil {
		return false
	}
	m, used, ok := rules.Commands(d)
	if !ok {
		return false
	}
	g.r.CommandMode = m
	for _, u := range used {
		if name := u.String(); !slices.Contains(g.r.CommandRules, name) {
			g.r.CommandRules = append(g.r.CommandRules, name)
		}
	}
	return m != policy.Deny
}

// actionTypes grades d by its action types, steps included. A command
// (unless the policy's command rules cover it: ruled) is graded by its
// dry run's changes where the policy says so (rules.CommandsByDiff) and a
// dry run ended; otherwise it is at least MEDIUM.
func (g *grading) actionTypes(d *descriptors.Descriptor, ruled bool, rules RiskRules) {
	seen := map[descriptors.ActionType]bool{}
	var walk func(t descriptors.ActionType, steps []descriptors.Step)
	walk = func(t descriptors.ActionType, steps []descriptors.Step) {
		if !seen[t] {
			seen[t] = true
			switch t {
			case descriptors.CommandExecution:
				switch {
				case ruled:
				case rules.Unplanned:
					g.raise(descriptors.RiskMedium, "it runs a command, whose effects only the dry run shows, and that did not end")
				case !rules.CommandsByDiff:
					g.raise(descriptors.RiskMedium, "it runs a command, and the policy grades every command at least MEDIUM (risk.commands: always_medium)")
				}
			case descriptors.PackageInstall, descriptors.PackageRemove:
				g.raise(descriptors.RiskMedium, "it runs a package manager, whose scripts run code")
			case descriptors.FileDelete, descriptors.DirectoryDelete:
				g.raise(descriptors.RiskMedium, "it is a %s", t)
			}
		}
		for _, s := range steps {
			walk(s.ActionType, s.Steps)
		}
	}
	walk(d.ActionType, d.Steps)
}

// network grades commands that had the network: the sandbox gives them
// one only where the descriptor asks (sandbox.allow_network, which must
// agree with scope.network.required) and the policy allows it, and what
// they sent or fetched is in no diff. Derived from the descriptor alone,
// as apply derives it again; commands the policy's rules cover are the
// rules' (a person pre-approved them).
func (g *grading) network(d *descriptors.Descriptor, ruled bool) {
	if ruled || !plan.NeedsSandbox(d) || !(d.Sandbox.AllowNetwork || d.Scope.Network.Required) {
		return
	}
	g.raise(descriptors.RiskMedium, "its commands have the network (sandbox.allow_network): what they send or fetch shows in no diff")
}

// eachChange grades each change on its own: where it lies, what it is,
// whose it is, its mode, and what runs it; it returns the deletes'
// count.
func (g *grading) eachChange(changes []diff.Change, rules RiskRules) (deletes int) {
	if len(changes) == 0 {
		return 0 // and the lists below, built for the homes, are not needed
	}
	codeLater, homeDots, autorun := descriptors.NewCodeLater(rules.Homes), homeDotPatterns(rules.Homes), newAutorun()
	for _, c := range changes {
		if rules.InWorkspace == nil || !rules.InWorkspace(c.Path) {
			g.add(descriptors.RiskMedium, "it changes %s, outside every workspace", c.Path)
		}
		if c.Kind == diff.Delete {
			deletes++
			continue
		}
		if c.Type == diff.TypeSymlink {
			g.add(descriptors.RiskMedium, "it makes or changes the symlink %s", c.Path)
		}
		if c.OwnerBefore != nil && *c.OwnerBefore != rules.UID {
			g.add(descriptors.RiskMedium, "it changes %s, another user's: promoted, it stays theirs", fmt.Sprintf("%s (uid %d)", c.Path, *c.OwnerBefore))
		} else if c.OwnerAfter != nil && *c.OwnerAfter != rules.UID {
			g.add(descriptors.RiskMedium, "it changes %s, another user's: promoted, it stays theirs", fmt.Sprintf("%s (uid %d, its directory's)", c.Path, *c.OwnerAfter))
		}
		g.modes(c)
		if why, ok := codeLater.Match(c.Path); ok {
			g.add(descriptors.RiskHigh, "it changes a file that runs code later ("+escapeFormat(why)+"): %s", c.Path)
		}
		if m := autorun.match(c.Path); m != nil && m.Dependency {
			g.add(descriptors.RiskMedium, "it changes dependency code ("+escapeFormat(m.Tool)+"): %s", c.Path)
		} else if m != nil {
			g.add(descriptors.RiskHigh, "it changes a file "+escapeFormat(m.Tool)+" runs on its own: %s", c.Path)
		}
		if homeDotFile(c.Path, homeDots) {
			g.add(descriptors.RiskHigh, "it changes a home directory's dot-file: %s", c.Path)
		}
		if onPath(c.Path, rules.PathDirs) {
			g.add(descriptors.RiskHigh, "it changes a program on PATH: %s", c.Path)
		}
		for _, p := range rules.SensitivePaths {
			if pathglob.CoversPath(p, c.Path) {
				g.add(descriptors.RiskHigh, "it changes a path the host policy marks sensitive: %s", c.Path)
				break
			}
		}
	}
	return deletes
}

// modes grades c's mode bits: a special bit or an executable is HIGH; a
// group or world write bit, on a file before or after or on a directory
// made or changed, lets another account change what a person reviewed.
func (g *grading) modes(c diff.Change) {
	before, after := uint32(0), uint32(0)
	if c.ModeBefore != nil {
		before = modeBits(*c.ModeBefore)
	}
	if c.ModeAfter != nil {
		after = modeBits(*c.ModeAfter)
	}
	switch c.Type {
	case diff.TypeFile:
		switch {
		case (after|before)&0o7000 != 0:
			g.add(descriptors.RiskHigh, "it changes a setuid, setgid or sticky file: %s", c.Path)
		case before&0o111 != 0:
			g.add(descriptors.RiskHigh, "it replaces an executable: %s", c.Path)
		case after&0o111 != 0:
			g.add(descriptors.RiskHigh, "it makes a new executable: %s", c.Path)
		}
		if (after|before)&0o022 != 0 {
			g.add(descriptors.RiskMedium, "it leaves %s writable by other users (a group or world write bit)", c.Path)
		}
	case diff.TypeDir:
		if after&0o022 != 0 {
			g.add(descriptors.RiskMedium, "it leaves %s writable by other users (a group or world write bit)", c.Path)
		}
	}
}

// deletes grades the number of deleted paths.
func (g *grading) deletes(n, max int) {
	if max <= 0 {
		max = DefaultMaxDeletes
	}
	if n > 0 {
		g.raise(descriptors.RiskMedium, "it deletes %s", plural(n, "path"))
	}
	if n > max {
		g.raise(descriptors.RiskHigh, "it deletes %s, more than the host's %d", plural(n, "path"), max)
	}
}

// scopeSecrets grades a scope that is or holds a credential store: it
// un-hides it for the commands, which may print it.
func (g *grading) scopeSecrets(d *descriptors.Descriptor, rules RiskRules) {
	if !plan.NeedsSandbox(d) {
		return
	}
	if s := plan.ScopeSecrets(d.Scope.Filesystem.Paths, rules.Homes); len(s) > 0 {
		g.raise(descriptors.RiskHigh, "its commands see %s, a credential store the sandbox hides otherwise", shownPaths(s))
	}
}

// escapeFormat quotes the % of s for a format.
func escapeFormat(s string) string { return strings.ReplaceAll(s, "%", "%%") }

// modeBits parses a plan's four-digit octal mode; a malformed one counts as
// every bit set, so that it fails towards HIGH.
func modeBits(s string) uint32 {
	var m uint32
	for _, ch := range s {
		if ch < '0' || ch > '7' {
			return 0o7777
		}
		m = m<<3 | uint32(ch-'0')
	}
	return m
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// homeDotPatterns are the patterns of the dot-files and dot-directories
// right under each of homes, and what is below them: where shells,
// editors and tools read their start-up files.
func homeDotPatterns(homes []string) []string {
	var out []string
	for _, h := range homes {
		out = append(out, h+"/.*", h+"/.*/**")
	}
	return out
}

// homeDotFile reports whether path matches one of patterns
// (homeDotPatterns), looking at the literal prefix first.
func homeDotFile(path string, patterns []string) bool {
	for _, p := range patterns {
		if pathglob.Within(path, pathglob.Prefix(p)) && pathglob.Match(p, path) {
			return true
		}
	}
	return false
}

// onPath reports whether path is a program right in one of dirs, whose
// programs run by name.
func onPath(path string, dirs []string) bool {
	dir := filepath.Dir(path)
	for _, d := range dirs {
		if filepath.IsAbs(d) && filepath.Clean(d) == dir {
			return true
		}
	}
	return false
}

// AssessReads grades what a plan's FILE_READ operations read, adding to r
// (docs/risk.md): a read is LOW only inside a workspace; elsewhere it is
// MEDIUM, so that a person approves it before its content is shown; a
// credential store or a system secret is HIGH.
func AssessReads(r *Risk, reads []plan.ReadResult, rules RiskRules) {
	var outside, secrets []string
	for _, rd := range reads {
		for _, p := range []string{rd.Path, rd.Resolved} {
			if plan.IsCredentialStore(p, rules.Homes) {
				secrets = append(secrets, rd.Path)
				break
			}
		}
		if rules.InWorkspace == nil || !rules.InWorkspace(rd.Resolved) {
			outside = append(outside, rd.Path)
		}
	}
	raise := func(to descriptors.RiskLevel, why string) {
		if to.Rank() > r.Assessed.Rank() {
			r.Assessed = to
		}
		r.Reasons = append(r.Reasons, why+" ("+string(to)+")")
	}
	if len(outside) > 0 {
		raise(descriptors.RiskMedium, "it reads "+shownPaths(outside)+", outside every workspace: a person sees it first")
	}
	if len(secrets) > 0 {
		raise(descriptors.RiskHigh, "it reads a credential store or a system secret: "+shownPaths(secrets))
	}
}

// ownersNow is changes with each existing entry's owner read again from
// the real tree: plan.json, which the agent may write, can drop or change
// owner_before, and a change of another user's file must not grade LOW
// for that. An entry that cannot be read keeps what the plan says (apply's
// stale check refuses it anyway). The plan's own changes are not altered:
// they are what a signed approval and the action record hold.
func ownersNow(changes []diff.Change) []diff.Change {
	out := slices.Clone(changes)
	diff.SetOwnersAfter(out)
	for i, c := range out {
		if c.Kind == diff.Create {
			continue
		}
		if fi, err := os.Lstat(c.Path); err == nil {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				uid := st.Uid
				out[i].OwnerBefore = &uid
			}
		}
	}
	return out
}
