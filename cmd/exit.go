package cmd

import (
	"fmt"
	"strings"

	"github.com/act-project/act/doors/report"
	"github.com/act-project/act/internal/outcome"
)

// outcomeOf is where an error becomes an outcome, and so an exit code and
// a --json status: report.OutcomeOf, the one place for every door
// (docs/exit-codes.md, from internal/outcome).
func outcomeOf(err error) outcome.Outcome { return report.OutcomeOf(err) }

// exitCode is the exit code of err's outcome.
func exitCode(err error) int { return outcomeOf(err).Code }

// statusOf is the --json status of outcome o: on plain success, the
// command's own (success, if not "").
func statusOf(o outcome.Outcome, success string) string { return report.StatusOf(o, success) }

// ruleOf is the rule id of an error of outcome o that is not a problem.
func ruleOf(o outcome.Outcome) string { return report.RuleOf(o) }

// ends declares the exit codes a command can end with, beyond 0; its help
// method renders the EXIT STATUS section of the command's help from the
// table.
type ends struct {
	success string
	codes   []int
	notes   map[int]string
	// own are outcomes of the table's own rows (outcome.Own), listed
	// after the codes.
	own []outcome.Outcome
}

// endsWith declares a command that names its success success and can end
// with codes (each of the table, in order).
func endsWith(success string, codes ...int) ends {
	return ends{success: success, codes: codes}
}

// note says more of code than the table's label, for this command.
func (e ends) note(code int, text string) ends {
	n := map[int]string{code: text}
	for c, t := range e.notes {
		if c != code {
			n[c] = t
		}
	}
	e.notes = n
	return e
}

// with lists o, a row of outcome.Own (130 interrupted), after the codes.
func (e ends) with(o outcome.Outcome) ends {
	e.own = append(e.own[:len(e.own):len(e.own)], o)
	return e
}

// help is the EXIT STATUS section: "0 success, 1 error, ...", wrapped as the
// rest of the help is.
func (e ends) help() string {
	items := []string{"0 " + e.success}
	for _, c := range e.codes {
		label := outcome.ForCode(c).Label
		if t, ok := e.notes[c]; ok {
			label = t
		}
		items = append(items, fmt.Sprintf("%d %s", c, label))
	}
	for _, o := range e.own {
		items = append(items, fmt.Sprintf("%d %s", o.Code, o.Label))
	}
	const indent, width = "   ", 78
	var b strings.Builder
	b.WriteString("EXIT STATUS:\n" + indent)
	line := len(indent)
	for i, it := range items {
		if i < len(items)-1 {
			it += ","
		}
		if i > 0 {
			if line+1+len(it) > width {
				b.WriteString("\n" + indent)
				line = len(indent)
			} else {
				b.WriteByte(' ')
				line++
			}
		}
		b.WriteString(it)
		line += len(it)
	}
	return b.String()
}
