package schema

import (
	_ "embed"
	"fmt"
	"sort"
	"strings"
	"sync"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/errors"
)

//go:embed policy.cue
var policySource string

// PolicySource returns the CUE source of the host policy schema (#Policy).
func PolicySource() string { return policySource }

var (
	policyOnce   sync.Once
	policyDef    cue.Value
	policyDefErr error
)

// policySchema compiles policy.cue once and returns #Policy.
func policySchema() (cue.Value, error) {
	policyOnce.Do(func() {
		evalMu.Lock()
		defer evalMu.Unlock()
		v := Context().CompileString(policySource, cue.Filename("policy.cue"))
		if err := v.Err(); err != nil {
			policyDefErr = fmt.Errorf("compile policy schema: %w", err)
			return
		}
		policyDef = v.LookupPath(cue.ParsePath("#Policy"))
		if err := policyDef.Err(); err != nil {
			policyDefErr = fmt.Errorf("compile policy schema: %w", err)
		}
	})
	return policyDef, policyDefErr
}

// ValidatePolicy checks v, a plain Go value as produced by the strict parser,
// against #Policy and returns every violation, sorted by path. It reports
// unknown fields (schema.unknown-field), missing required fields
// (schema.missing-field), values of the wrong type (schema.type), values
// outside an enumeration (schema.enum), strings not matching a pattern
// (schema.pattern) and values outside a bound (schema.invalid).
//
// A document the schema's shape in Go holds (fast.go) is valid without
// compiling the schema.
func ValidatePolicy(v any) []Violation {
	if fastPolicy()(v) {
		return nil
	}
	return validatePolicyCUE(v)
}

// validatePolicyCUE is ValidatePolicy by CUE alone.
func validatePolicyCUE(v any) []Violation {
	def, err := policySchema()
	if err != nil {
		// The schema is embedded and tested; this is an internal error.
		return []Violation{{Rule: RuleInvalid, Message: err.Error()}}
	}
	evalMu.Lock()
	defer evalMu.Unlock()
	w := &policyWalker{}
	w.walk(def, v, nil, "")
	sort.SliceStable(w.out, func(i, j int) bool {
		return strings.Join(w.out[i].Path, "\x00") < strings.Join(w.out[j].Path, "\x00")
	})
	return w.out
}

// policyWalker checks a plain Go value against a CUE schema value by walking
// the Go value. Walking in Go, rather than unifying the whole document at
// once, reports every unknown field: CUE drops closedness errors of a struct
// that has other errors.
type policyWalker struct {
	out []Violation
}

func (w *policyWalker) add(path []string, rule, format string, args ...any) {
	w.out = append(w.out, Violation{
		Path:    append([]string(nil), path...),
		Rule:    rule,
		Message: fmt.Sprintf(format, args...),
	})
}

// walk checks in against s at path. desc is the @desc attribute of the
// nearest field, describing its pattern in words.
func (w *policyWalker) walk(s cue.Value, in any, path []string, desc string) {
	want := s.IncompleteKind()
	got := policyGoKind(in)
	if want&got == 0 {
		if vals, ok := policyEnum(s); ok {
			w.add(path, RuleEnum, "must be one of %s, not %s", policyJoinOr(vals), policyDescribe(in))
			return
		}
		w.add(path, RuleType, "must be %s, not %s", policyKindWords(want), policyKindWord(got))
		return
	}
	switch in := in.(type) {
	case map[string]any:
		// A mapping where one disjunct is a struct (a mode, or one a
		// risk level): check it against that struct.
		if op, args := s.Eval().Expr(); op == cue.OrOp {
			for _, a := range args {
				if a.IncompleteKind()&cue.StructKind != 0 {
					s = a
					break
				}
			}
		}
		keys := make([]string, 0, len(in))
		for k := range in {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			sel := cue.Str(k)
			child := append(path[:len(path):len(path)], k)
			if !s.Allows(sel) {
				w.add(child, RuleUnknownField, "unknown field %q: %s", k, policyTakes(s, path, k))
				continue
			}
			fs := s.LookupPath(cue.MakePath(sel.Optional()))
			if !fs.Exists() {
				fs = s.LookupPath(cue.MakePath(sel))
			}
			fdesc := ""
			if a := fs.Attribute("desc"); a.Err() == nil {
				fdesc, _ = a.String(0)
			}
			w.walk(fs, in[k], child, fdesc)
		}
		w.required(s, in, path)
	case []any:
		es := s.LookupPath(cue.MakePath(cue.AnyIndex))
		for i, e := range in {
			w.walk(es, e, append(path[:len(path):len(path)], fmt.Sprint(i)), desc)
		}
	default:
		u := s.Unify(Context().Encode(in))
		err := u.Validate(cue.Concrete(true))
		if err == nil {
			return
		}
		if vals, ok := policyEnum(s); ok {
			w.add(path, RuleEnum, "must be one of %s, not %s", policyJoinOr(vals), policyDescribe(in))
			return
		}
		w.scalarError(path, in, err, desc)
	}
}

// required reports required fields of s missing from in.
func (w *policyWalker) required(s cue.Value, in map[string]any, path []string) {
	it, err := s.Fields(cue.Optional(true))
	if err != nil {
		return
	}
	for it.Next() {
		sel := it.Selector()
		if sel.ConstraintType() != cue.RequiredConstraint {
			continue
		}
		name := sel.Unquoted()
		if _, ok := in[name]; !ok {
			w.add(append(path[:len(path):len(path)], name), RuleMissingField,
				"missing required field %q", name)
		}
	}
}

// scalarError turns the CUE error of a scalar into one violation.
func (w *policyWalker) scalarError(path []string, in any, err error, desc string) {
	for _, e := range errors.Errors(err) {
		format, args := e.Msg()
		if format != "invalid value %v (out of bound %s)" || len(args) != 2 {
			continue
		}
		bound := fmt.Sprint(args[1])
		switch {
		case strings.HasPrefix(bound, "=~"):
			if desc != "" {
				w.add(path, RulePattern, "%s is not %s", policyDescribe(in), desc)
			} else {
				w.add(path, RulePattern, "%s does not match the pattern %s", policyDescribe(in), strings.TrimPrefix(bound, "=~"))
			}
		case strings.HasPrefix(bound, ">="):
			w.add(path, RuleInvalid, "must be at least %s, not %s", strings.TrimPrefix(bound, ">="), policyDescribe(in))
		case strings.HasPrefix(bound, "<="):
			w.add(path, RuleInvalid, "must be at most %s, not %s", strings.TrimPrefix(bound, "<="), policyDescribe(in))
		case strings.HasPrefix(bound, "!="):
			w.add(path, RuleInvalid, "must not be %s", strings.TrimPrefix(bound, "!="))
		case strings.HasPrefix(bound, ">"):
			w.add(path, RuleInvalid, "must be greater than %s, not %s", strings.TrimPrefix(bound, ">"), policyDescribe(in))
		case strings.HasPrefix(bound, "<"):
			w.add(path, RuleInvalid, "must be less than %s, not %s", strings.TrimPrefix(bound, "<"), policyDescribe(in))
		default:
			w.add(path, RuleInvalid, "%s is out of the bound %s", policyDescribe(in), bound)
		}
		return
	}
	msg := err.Error()
	if i := strings.LastIndex(msg, ": "); i >= 0 {
		msg = msg[i+2:]
	}
	w.add(path, RuleInvalid, "%s is not valid here: %s", policyDescribe(in), msg)
}

// policyEnum reports the values of s when s is a disjunction of concrete
// scalars.
func policyEnum(s cue.Value) ([]string, bool) {
	op, args := s.Eval().Expr()
	if op != cue.OrOp || len(args) == 0 {
		return nil, false
	}
	vals := make([]string, 0, len(args))
	for _, a := range args {
		if a.IncompleteKind()&(cue.StructKind|cue.ListKind) != 0 {
			continue // a mode or a mapping of modes: the mapping is checked apart
		}
		if !a.IsConcrete() {
			return nil, false
		}
		str, err := a.String()
		if err != nil {
			str = fmt.Sprint(a)
		}
		vals = append(vals, str)
	}
	return vals, len(vals) > 0
}

// takes names the fields a struct accepts, for unknown-field messages.
func policyTakes(s cue.Value, path []string, unknown string) string {
	var names []string
	if it, err := s.Fields(cue.Optional(true)); err == nil {
		for it.Next() {
			names = append(names, it.Selector().Unquoted())
		}
	}
	where := "the policy"
	if len(path) > 0 {
		where = path[len(path)-1]
	}
	if len(names) == 0 {
		return where + " takes no fields"
	}
	mean := ""
	if m := didYouMean(unknown, names); m != "" {
		mean = "did you mean " + m + "? "
	}
	return mean + where + " takes " + policyJoinAnd(names)
}

func policyJoinAnd(s []string) string { return policyJoinWord(s, "and") }
func policyJoinOr(s []string) string  { return policyJoinWord(s, "or") }

func policyJoinWord(s []string, word string) string {
	switch len(s) {
	case 0:
		return ""
	case 1:
		return s[0]
	}
	return strings.Join(s[:len(s)-1], ", ") + " " + word + " " + s[len(s)-1]
}

// policyGoKind is the CUE kind of a plain Go value.
func policyGoKind(v any) cue.Kind {
	switch v.(type) {
	case nil:
		return cue.NullKind
	case bool:
		return cue.BoolKind
	case int, int64:
		return cue.IntKind
	case float64:
		return cue.FloatKind
	case string:
		return cue.StringKind
	case []any:
		return cue.ListKind
	case map[string]any:
		return cue.StructKind
	}
	return cue.BottomKind
}

// policyKindWord names one kind with its article.
func policyKindWord(k cue.Kind) string {
	switch k {
	case cue.NullKind:
		return "null"
	case cue.BoolKind:
		return "a boolean"
	case cue.IntKind:
		return "an integer"
	case cue.FloatKind, cue.NumberKind:
		return "a number"
	case cue.StringKind:
		return "a string"
	case cue.BytesKind:
		return "bytes"
	case cue.ListKind:
		return "a list"
	case cue.StructKind:
		return "an object"
	}
	return "an unsupported value"
}

// policyKindWords names every kind in k.
func policyKindWords(k cue.Kind) string {
	if k&cue.NumberKind == cue.NumberKind {
		k &^= cue.NumberKind
		if k == 0 {
			return "a number"
		}
	}
	var words []string
	for _, one := range []cue.Kind{cue.NullKind, cue.BoolKind, cue.IntKind, cue.FloatKind, cue.StringKind, cue.BytesKind, cue.ListKind, cue.StructKind} {
		if k&one != 0 {
			words = append(words, policyKindWord(one))
		}
	}
	if len(words) == 0 {
		return "absent"
	}
	return policyJoinOr(words)
}

// policyDescribe renders a scalar for a message: strings quoted, others as is.
func policyDescribe(v any) string {
	switch v := v.(type) {
	case string:
		return fmt.Sprintf("%q", v)
	case nil:
		return "null"
	case map[string]any:
		return "an object"
	case []any:
		return "a list"
	}
	return fmt.Sprint(v)
}
