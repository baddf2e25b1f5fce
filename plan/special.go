package plan

import (
	"fmt"
	"io/fs"

	"github.com/act-project/act/diff"
	"github.com/act-project/act/internal/problem"
)

// RuleSpecialMode: the dry run made a file setuid, setgid or sticky
// (docs/sandbox-promotion.md).
const RuleSpecialMode = "mode.special-undeclared"

// checkSpecialModes refuses a setuid, setgid or sticky bit on a file the
// plan creates or changes that it did not have: no_new_privs and nosuid
// hold inside the sandbox only, and a setuid-root copy of a shell promoted
// by a LOW action would be a way to root. A descriptor cannot declare one
// either (mode.special-bits): act never needs them. Directories keep their
// bits (a setgid directory only passes its group on).
func checkSpecialModes(changes []diff.Change) (rejected problem.List) {
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
			before, err := diff.ParseMode(*c.ModeBefore)
			rewritten := special&(fs.ModeSetuid|fs.ModeSetgid) != 0 && !sameContent(c)
			switch {
			case err == nil && before&specialBits == special && rewritten:
				// The kernel drops setuid and setgid on a write; a
				// promotion keeping them would hand the new content the
				// file's privileges.
				rejected = append(rejected, problem.Problem{
					Rule: RuleSpecialMode, Field: c.Path, Layer: problem.Rejected,
					Message: fmt.Sprintf("the dry run writes new content to %s, which is %s (mode %s); act never promotes new content with those bits: remove them first", c.Path, specialWords(special), *c.ModeAfter),
				})
				continue
			case err == nil && before&specialBits == special:
				continue // it was so before, and its content is the same
			}
		}
		rejected = append(rejected, problem.Problem{
			Rule: RuleSpecialMode, Field: c.Path, Layer: problem.Rejected,
			Message: fmt.Sprintf("the dry run made %s %s (mode %s); act never promotes a file it made setuid, setgid or sticky", c.Path, specialWords(special), *c.ModeAfter),
		})
	}
	return rejected
}

const specialBits = fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky

// sameContent reports whether c leaves its file's content as it was.
func sameContent(c diff.Change) bool {
	return c.SHA256Before != nil && c.SHA256After != nil && *c.SHA256Before == *c.SHA256After
}

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
