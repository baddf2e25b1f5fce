package gate

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
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
}

// DefaultMaxDeletes is MaxDeletes when the policy sets none.
const DefaultMaxDeletes = 20

// Assess grades d and the changes its dry run made (docs/risk.md). LOW is
// an allow-list: a plan is LOW only when every change lies inside a
// workspace, is a regular file or a directory, is executable neither
// before nor after, has no setuid, setgid or sticky bit before or after,
// keeps its owner, and is no file that runs code later. Beyond that:
//   - by action type, steps included: a command, a package manager or a
//     delete is at least MEDIUM;
//   - any deleted path is at least MEDIUM; more than MaxDeletes is HIGH;
//   - a special bit, an executable (new, made so, or replaced), a file
//     that runs code later (RunsCodeLater), a home dot-file, a program in
//     a PATH directory, or a change to a sensitive path is HIGH.
func Assess(d *descriptors.Descriptor, changes []diff.Change, rules RiskRules) Risk {
	r := Risk{Declared: d.RiskLevel, Assessed: descriptors.RiskLow}
	raise := func(to descriptors.RiskLevel, format string, args ...any) {
		if to.Rank() > r.Assessed.Rank() {
			r.Assessed = to
		}
		r.Reasons = append(r.Reasons, fmt.Sprintf(format, args...)+" ("+string(to)+")")
	}
	// A plan whose every command a command rule covers is not MEDIUM for
	// running commands: the rule decides their mode (Gate.decide), and
	// only while the rest of the plan is LOW.
	ruled := false
	if rules.Commands != nil {
		if m, used, ok := rules.Commands(d); ok {
			r.CommandMode = m
			for _, u := range used {
				if name := u.String(); !slices.Contains(r.CommandRules, name) {
					r.CommandRules = append(r.CommandRules, name)
				}
			}
			ruled = m != policy.Deny
		}
	}
	seen := map[descriptors.ActionType]bool{}
	var walk func(t descriptors.ActionType, steps []descriptors.Step)
	walk = func(t descriptors.ActionType, steps []descriptors.Step) {
		if !seen[t] {
			seen[t] = true
			switch t {
			case descriptors.CommandExecution:
				if !ruled {
					raise(descriptors.RiskMedium, "it runs a command, whose effects only the dry run shows")
				}
			case descriptors.PackageInstall, descriptors.PackageRemove:
				raise(descriptors.RiskMedium, "it runs a package manager, whose scripts run code")
			case descriptors.FileDelete, descriptors.DirectoryDelete:
				raise(descriptors.RiskMedium, "it is a %s", t)
			}
		}
		for _, s := range steps {
			walk(s.ActionType, s.Steps)
		}
	}
	walk(d.ActionType, d.Steps)

	max := rules.MaxDeletes
	if max <= 0 {
		max = DefaultMaxDeletes
	}
	deletes := 0
	type finding struct {
		what  string
		paths []string
	}
	var findings []*finding
	add := func(what, path string) {
		for _, f := range findings {
			if f.what == what {
				f.paths = append(f.paths, path)
				return
			}
		}
		findings = append(findings, &finding{what, []string{path}})
	}
	codeLater, homeDots := descriptors.NewCodeLater(rules.Homes), homeDotPatterns(rules.Homes)
	var outside, links, owners []string
	for _, c := range changes {
		if rules.InWorkspace == nil || !rules.InWorkspace(c.Path) {
			outside = append(outside, c.Path)
		}
		if c.Kind == diff.Delete {
			deletes++
			continue
		}
		if c.Type == diff.TypeSymlink {
			links = append(links, c.Path)
		}
		if c.OwnerBefore != nil && *c.OwnerBefore != rules.UID {
			owners = append(owners, fmt.Sprintf("%s (uid %d)", c.Path, *c.OwnerBefore))
		} else if c.OwnerAfter != nil && *c.OwnerAfter != rules.UID {
			owners = append(owners, fmt.Sprintf("%s (uid %d, its directory's)", c.Path, *c.OwnerAfter))
		}
		if c.Type == diff.TypeFile {
			before, after := uint32(0), uint32(0)
			if c.ModeBefore != nil {
				before = modeBits(*c.ModeBefore)
			}
			if c.ModeAfter != nil {
				after = modeBits(*c.ModeAfter)
			}
			switch {
			case (after|before)&0o7000 != 0:
				add("changes a setuid, setgid or sticky file", c.Path)
			case before&0o111 != 0:
				add("replaces an executable", c.Path)
			case after&0o111 != 0:
				add("makes a new executable", c.Path)
			}
		}
		if why, ok := codeLater.Match(c.Path); ok {
			add("changes a file that runs code later ("+why+")", c.Path)
		}
		if homeDotFile(c.Path, homeDots) {
			add("changes a home directory's dot-file", c.Path)
		}
		if onPath(c.Path, rules.PathDirs) {
			add("changes a program on PATH", c.Path)
		}
		for _, g := range rules.SensitivePaths {
			if pathglob.CoversPath(g, c.Path) {
				add("changes a path the host policy marks sensitive", c.Path)
				break
			}
		}
	}
	for _, m := range []struct {
		what  string
		paths []string
	}{
		{"it changes %s, outside every workspace", outside},
		{"it makes or changes the symlink %s", links},
		{"it changes %s, another user's: promoted, it stays theirs", owners},
	} {
		if len(m.paths) > 0 {
			raise(descriptors.RiskMedium, m.what, shownPaths(m.paths))
		}
	}
	if deletes > 0 {
		raise(descriptors.RiskMedium, "it deletes %s", plural(deletes, "path"))
	}
	if deletes > max {
		raise(descriptors.RiskHigh, "it deletes %s, more than the host's %d", plural(deletes, "path"), max)
	}
	for _, f := range findings {
		raise(descriptors.RiskHigh, "it %s: %s", f.what, shownPaths(f.paths))
	}
	if plan.NeedsSandbox(d) {
		// A scope that is or holds a credential store un-hides it for
		// the commands, which may print it.
		if s := plan.ScopeSecrets(d.Scope.Filesystem.Paths, rules.Homes); len(s) > 0 {
			raise(descriptors.RiskHigh, "its commands see %s, a credential store the sandbox hides otherwise", shownPaths(s))
		}
	}
	return r
}

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
