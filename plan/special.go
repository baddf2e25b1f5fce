package plan

import (
	"fmt"
	"io/fs"

	"github.com/act-project/act/descriptors"
	"github.com/act-project/act/diff"
	"github.com/act-project/act/internal/problem"
)

// Rule ids of special mode bits (docs/sandbox-promotion.md).
const (
	// RuleSpecialMode: the dry run made a file setuid, setgid or sticky that
	// no FILE_WRITE of the descriptor declares with that exact mode.
	RuleSpecialMode = "mode.special-undeclared"
	// RuleSpecialDeclared: a warning that the plan sets a setuid, setgid
	// or sticky bit its descriptor declares.
	RuleSpecialDeclared = "mode.special-bits"
)

// checkSpecialModes refuses a setuid, setgid or sticky bit on a file the
// plan creates or changes, unless a FILE_WRITE of d (or of a step) writes
// that very path with that very mode: no_new_privs and nosuid hold inside
// the sandbox only, and a setuid-root copy of a shell promoted by a LOW
// action would be a way to root. A declared one is a warning the reviewer
// sees (and act grades the plan HIGH). Directories keep their bits: a
// setgid directory only passes its group on.
func checkSpecialModes(d *descriptors.Descriptor, changes []diff.Change) (rejected, warnings problem.List) {
	declared := map[string]string{}
	var walk func(op descriptors.Operation, steps []descriptors.Step)
	walk = func(op descriptors.Operation, steps []descriptors.Step) {
		if w, ok := op.(descriptors.FileWriteOp); ok && w.Mode != "" {
			declared[w.Path] = w.Mode
		}
		for _, s := range steps {
			walk(s.Op, s.Steps)
		}
	}
	walk(d.Op, d.Steps)
	for _, c := range changes {
		if c.Kind == diff.Delete || c.Type == diff.TypeDir || c.ModeAfter == nil {
			continue
		}
		after, err := diff.ParseMode(*c.ModeAfter)
		if err != nil {
			continue
		}
		special := after & specialBits
		if special == 0 {
			continue
		}
		if c.ModeBefore != nil {
			if before, err := diff.ParseMode(*c.ModeBefore); err == nil && before&specialBits == special {
				continue // it was so before: nothing new
			}
		}
		if declared[c.Path] == *c.ModeAfter {
			warnings = append(warnings, problem.Problem{
				Rule: RuleSpecialDeclared, Field: c.Path, Layer: problem.Rejected,
				Message: fmt.Sprintf("%s gets mode %s: %s, as the descriptor declares", c.Path, *c.ModeAfter, specialWords(special)),
			})
			continue
		}
		rejected = append(rejected, problem.Problem{
			Rule: RuleSpecialMode, Field: c.Path, Layer: problem.Rejected,
			Message: fmt.Sprintf("the dry run made %s %s (mode %s), which no FILE_WRITE of the descriptor declares with that mode; act never promotes such a file undeclared", c.Path, specialWords(special), *c.ModeAfter),
		})
	}
	return rejected, warnings
}

const specialBits = fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky

func specialWords(bits fs.FileMode) string {
	var w []string
	if bits&fs.ModeSetuid != 0 {
		w = append(w, "setuid")
	}
	if bits&fs.ModeSetgid != 0 {
		w = append(w, "setgid")
	}
	if bits&fs.ModeSticky != 0 {
		w = append(w, "sticky")
	}
	switch len(w) {
	case 1:
		return w[0]
	case 2:
		return w[0] + " and " + w[1]
	}
	return "setuid, setgid and sticky"
}
