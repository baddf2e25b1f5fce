// Package problem defines the one shape every finding about a descriptor or
// policy takes: a stable rule id, the field path, the position in the user's
// file and one plain sentence.
//
// Parsing, the CUE schema, the static rules and the host policy all report
// [Problem] values; cmd renders them and decides exit codes from their [Layer].
package problem

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Layer is the check that produced a problem. The order of the constants is
// the order of the checks (docs/rules.md).
type Layer int

const (
	// Parse problems: the bytes are not one strict YAML or JSON document.
	Parse Layer = iota
	// Schema problems: the document does not satisfy the CUE schema.
	Schema
	// Rule problems: a static rule of docs/rules.md is broken.
	Rule
	// Policy problems: the host's policy blocks the action.
	Policy
	// Precondition problems: a precondition does not hold on the real
	// machine (docs/descriptor.md).
	Precondition
	// Rejected problems: the dry run was rejected: an undeclared effect, a
	// cap exceeded, an operation that cannot be carried out (docs/lifecycle.md).
	Rejected
	// Conflict problems: the real tree or act's records disagree with what
	// apply or rollback expects: a stale plan, an action id already
	// promoted with other content, a rollback target changed (docs/promotion.md).
	Conflict
)

func (l Layer) String() string {
	switch l {
	case Parse:
		return "parse"
	case Schema:
		return "schema"
	case Rule:
		return "rule"
	case Policy:
		return "policy"
	case Precondition:
		return "precondition"
	case Rejected:
		return "rejected"
	case Conflict:
		return "conflict"
	}
	return "layer(" + strconv.Itoa(int(l)) + ")"
}

// A Problem is one finding. Line and Column are 1-based and zero when the
// problem has no place in the file (for example a missing field reported at
// its parent's position is still given that position).
type Problem struct {
	Rule    string `json:"rule"`
	Field   string `json:"field"`
	File    string `json:"file"`
	Line    int    `json:"line"`
	Column  int    `json:"column"`
	Message string `json:"message"`
	Layer   Layer  `json:"-"`
}

// Error formats p as "file:line:col: rule: field: message".
func (p Problem) Error() string {
	var b strings.Builder
	if p.File != "" {
		b.WriteString(p.File)
		if p.Line > 0 {
			fmt.Fprintf(&b, ":%d:%d", p.Line, p.Column)
		}
		b.WriteString(": ")
	}
	b.WriteString(p.Rule)
	if p.Field != "" {
		b.WriteString(": ")
		b.WriteString(p.Field)
	}
	b.WriteString(": ")
	b.WriteString(p.Message)
	return b.String()
}

// List is a set of problems from one layer. It is an error so that it can
// travel through ordinary error returns; cmd unwraps it with errors.As.
type List []Problem

func (l List) Error() string {
	switch len(l) {
	case 0:
		return "no problems"
	case 1:
		return l[0].Error()
	}
	return fmt.Sprintf("%s (and %d more)", l[0].Error(), len(l)-1)
}

// Layer reports the layer of the first problem, or Parse for an empty list.
func (l List) Layer() Layer {
	if len(l) == 0 {
		return Parse
	}
	return l[0].Layer
}

// Sort orders problems by file position, then rule, then field, so output is
// stable whatever order the checks ran in.
func (l List) Sort() {
	sort.SliceStable(l, func(i, j int) bool {
		a, b := l[i], l[j]
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		if a.Column != b.Column {
			return a.Column < b.Column
		}
		if a.Rule != b.Rule {
			return a.Rule < b.Rule
		}
		return a.Field < b.Field
	})
}

// Pos is a 1-based line and column in a file.
type Pos struct {
	Line   int
	Column int
}

// FieldPath renders path elements the way every problem names a field:
// identifiers joined by dots, list indexes and other keys in brackets,
// e.g. scope.filesystem.paths[0] or preconditions.sha256["/tmp/a"].
func FieldPath(elems ...string) string {
	var b strings.Builder
	for _, e := range elems {
		switch {
		case isIndex(e):
			b.WriteString("[" + e + "]")
		case isIdent(e):
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(e)
		default:
			b.WriteString("[" + strconv.Quote(e) + "]")
		}
	}
	return b.String()
}

func isIndex(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z':
		case i > 0 && (r >= '0' && r <= '9' || r == '-'):
		default:
			return false
		}
	}
	return true
}

// SplitFieldPath is the inverse of [FieldPath]: it returns the path elements
// of a field path.
func SplitFieldPath(s string) []string {
	var elems []string
	for s != "" {
		switch s[0] {
		case '.':
			s = s[1:]
		case '[':
			end := strings.IndexByte(s, ']')
			if len(s) > 1 && s[1] == '"' {
				// A quoted key: find the closing quote that Quote wrote.
				if q, err := strconv.QuotedPrefix(s[1:]); err == nil {
					u, _ := strconv.Unquote(q)
					elems = append(elems, u)
					s = s[1+len(q):]
					s = strings.TrimPrefix(s, "]")
					continue
				}
			}
			if end < 0 {
				return append(elems, s)
			}
			elems = append(elems, s[1:end])
			s = s[end+1:]
		default:
			end := strings.IndexAny(s, ".[")
			if end < 0 {
				return append(elems, s)
			}
			elems = append(elems, s[:end])
			s = s[end:]
		}
	}
	return elems
}
