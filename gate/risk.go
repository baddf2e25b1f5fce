package gate

import (
	"fmt"
	"strings"

	"github.com/act-project/act/descriptors"
	"github.com/act-project/act/diff"
	"github.com/act-project/act/internal/pathglob"
)

// Risk is act's own grading of a plan beside the agent's (docs/risk.md):
// the mode is decided from the stricter of the two.
type Risk struct {
	Declared descriptors.RiskLevel `json:"risk_declared"`
	Assessed descriptors.RiskLevel `json:"risk_assessed"`
	// Reasons say why Assessed is above LOW, one sentence each.
	Reasons []string `json:"risk_reasons,omitempty"`
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
	// for the files that run code later.
	Homes []string
}

// DefaultMaxDeletes is MaxDeletes when the policy sets none.
const DefaultMaxDeletes = 20

// Assess grades d and the changes its dry run made:
//   - by action type, steps included: a command, a package manager or a
//     delete is at least MEDIUM;
//   - from the real diff: any deleted path is at least MEDIUM; a setuid,
//     setgid or sticky bit, a new or newly executable file, a file that
//     runs code later (RunsCodeLater), more than MaxDeletes deleted paths,
//     or a change to a sensitive path is HIGH.
func Assess(d *descriptors.Descriptor, changes []diff.Change, rules RiskRules) Risk {
	r := Risk{Declared: d.RiskLevel, Assessed: descriptors.RiskLow}
	raise := func(to descriptors.RiskLevel, format string, args ...any) {
		if to.Rank() > r.Assessed.Rank() {
			r.Assessed = to
		}
		r.Reasons = append(r.Reasons, fmt.Sprintf(format, args...)+" ("+string(to)+")")
	}
	seen := map[descriptors.ActionType]bool{}
	var walk func(t descriptors.ActionType, steps []descriptors.Step)
	walk = func(t descriptors.ActionType, steps []descriptors.Step) {
		if !seen[t] {
			seen[t] = true
			switch t {
			case descriptors.CommandExecution:
				raise(descriptors.RiskMedium, "it runs a command, whose effects only the dry run shows")
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
	const shown = 3 // paths named per reason; the rest are counted
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
	for _, c := range changes {
		if c.Kind == diff.Delete {
			deletes++
			continue
		}
		if c.Type == diff.TypeFile && c.ModeAfter != nil {
			after := modeBits(*c.ModeAfter)
			before := uint32(0)
			if c.ModeBefore != nil {
				before = modeBits(*c.ModeBefore)
			}
			if after&0o7000 != 0 && after&0o7000 != before&0o7000 {
				add("sets a setuid, setgid or sticky bit", c.Path)
			}
			if after&0o111 != 0 && before&0o111 == 0 {
				add("makes a new executable", c.Path)
			}
		}
		if why, ok := descriptors.RunsCodeLater(c.Path, rules.Homes); ok {
			add("changes a file that runs code later ("+why+")", c.Path)
		}
		for _, g := range rules.SensitivePaths {
			if pathglob.CoversPath(g, c.Path) {
				add("changes a path the host policy marks sensitive", c.Path)
				break
			}
		}
	}
	if deletes > 0 {
		raise(descriptors.RiskMedium, "it deletes %s", plural(deletes, "path"))
	}
	if deletes > max {
		raise(descriptors.RiskHigh, "it deletes %s, more than the host's %d", plural(deletes, "path"), max)
	}
	for _, f := range findings {
		list := strings.Join(f.paths[:min(len(f.paths), shown)], ", ")
		if n := len(f.paths) - shown; n > 0 {
			list += fmt.Sprintf(" and %d more", n)
		}
		raise(descriptors.RiskHigh, "it %s: %s", f.what, list)
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
