package schema

// This file turns CUE's errors into Violations. CUE says where a document
// fails and roughly why; the rule id and the sentence come from the schema
// and the document themselves:
//
//   - unknown and missing fields are found by walking the document against
//     the schema, because CUE's report of them is incomplete (missing
//     required fields are dropped as soon as any other error exists, and a
//     struct with one error may not report its disallowed fields); unknown
//     fields come with the fields allowed there;
//   - every other failing path gets exactly one violation, classified by
//     comparing the value with the schema at that path: wrong JSON type,
//     value outside an enum, string not matching a named pattern, or an
//     explained validator (non-empty, exactly one of …).

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/errors"
)

// patternNames describes the named string patterns of descriptor.cue.
var patternNames = map[string]string{
	"#UUID":      "a UUID (8-4-4-4-12 hexadecimal digits)",
	"#Timestamp": "an RFC 3339 timestamp such as 2025-01-02T15:04:05Z",
	"#Mode":      `a 4-digit octal mode such as "0644"`,
	"#SHA256":    "a SHA-256 digest (64 lowercase hexadecimal digits)",
}

// CUE error formats (cue/errors.Error.Msg) the collector recognizes.
const (
	fmtNotAllowed   = "field not allowed"
	fmtMismatch     = "conflicting values %s and %s (mismatched types %s and %s)"
	fmtMismatch1    = "conflicting value %s (mismatched types %s and %s)"
	fmtConflict     = "conflicting values %s and %s"
	fmtDisjunction  = "%d errors in empty disjunction:"
	fmtOutOfBound   = "invalid value %v (out of bound %s)"
	fmtNotSatisfied = "invalid value %s (does not satisfy %s)"
)

// silent lists CUE errors that never become violations by themselves:
// missing fields are found by [collector.walk], and the rest follow
// from an action_type that could not select an operation, which is
// reported on action_type.
var silent = map[string]bool{
	"field is required but not present":               true,
	"required field missing: %s":                      true,
	"incomplete value %v":                             true,
	"undefined field: %s":                             true,
	"missing required field in for comprehension: %v": true,
	"non-concrete value '%v'":                         true,
}

// rawErr is one CUE error with its path in the document.
type rawErr struct {
	path   []string
	format string
	args   []any
}

// collector gathers the violations of one document.
type collector struct {
	s    *descriptorSchema
	data any
	raws []rawErr
	out  []Violation
	// weak marks violations (by index in out) that are dropped when
	// another violation lies below their path: a failed "exactly one of"
	// check on an operation whose fields already failed says nothing new.
	weak map[int]bool
}

// addCUE records the errors in err, whose paths start with strip selectors
// of the schema's own path before the document's.
func (c *collector) addCUE(err error, strip int) {
	for _, e := range errors.Errors(err) {
		p := e.Path()
		if len(p) >= strip {
			p = p[strip:]
		} else {
			p = nil
		}
		var path []string
		for _, el := range p {
			path = append(path, unquoteLabel(el))
		}
		format, args := e.Msg()
		c.raws = append(c.raws, rawErr{path: path, format: format, args: args})
	}
}

func unquoteLabel(s string) string {
	if strings.HasPrefix(s, `"`) {
		if u, err := strconv.Unquote(s); err == nil {
			return u
		}
	}
	return s
}

func (c *collector) add(path []string, rule, msg string) int {
	if len(path) == 0 {
		path = nil
	}
	c.out = append(c.out, Violation{Path: slices.Clone(path), Rule: rule, Message: msg})
	return len(c.out) - 1
}

// result classifies the recorded errors, adds missing fields and returns
// the deduplicated violations sorted by path.
func (c *collector) result() []Violation {
	var order []string
	groups := make(map[string][]rawErr)
	for _, r := range c.raws {
		switch {
		case r.format == fmtNotAllowed:
			c.unknown(r.path)
		case silent[r.format]:
		default:
			k := strings.Join(r.path, "\x00")
			if _, ok := groups[k]; !ok {
				order = append(order, k)
			}
			groups[k] = append(groups[k], r)
		}
	}
	for _, k := range order {
		g := groups[k]
		c.classify(g[0].path, g)
	}
	c.walk(c.s.root(c.data), nil)

	var out []Violation
	for i, v := range c.out {
		if c.weak[i] && c.hasBelow(v.Path) {
			continue
		}
		out = append(out, v)
	}
	if len(out) == 0 && len(c.raws) > 0 {
		// Never call an invalid document valid, even when CUE's only
		// complaint is one this file does not explain.
		r := c.raws[0]
		v := Violation{Path: r.path, Rule: RuleInvalid, Message: plainCUE(r)}
		if r.format == "field is required but not present" {
			v.Rule, v.Message = RuleMissingField, "required field is missing"
		}
		out = append(out, v)
	}
	return sortViolations(out)
}

func (c *collector) hasBelow(p []string) bool {
	for _, v := range c.out {
		if len(v.Path) > len(p) && slices.Equal(v.Path[:len(p)], p) {
			return true
		}
	}
	return false
}

// sortViolations sorts by path (list indexes numerically), then rule and
// message, and removes duplicates.
func sortViolations(vs []Violation) []Violation {
	slices.SortFunc(vs, func(a, b Violation) int {
		if c := comparePaths(a.Path, b.Path); c != 0 {
			return c
		}
		if c := strings.Compare(a.Rule, b.Rule); c != 0 {
			return c
		}
		return strings.Compare(a.Message, b.Message)
	})
	return slices.CompactFunc(vs, func(a, b Violation) bool {
		return slices.Equal(a.Path, b.Path) && a.Rule == b.Rule && a.Message == b.Message
	})
}

func comparePaths(a, b []string) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		x, errx := strconv.Atoi(a[i])
		y, erry := strconv.Atoi(b[i])
		if errx == nil && erry == nil {
			if x != y {
				return x - y
			}
			continue
		}
		if c := strings.Compare(a[i], b[i]); c != 0 {
			return c
		}
	}
	return len(a) - len(b)
}

// unknown reports a field the schema does not allow at path.
func (c *collector) unknown(path []string) {
	if len(path) == 0 {
		return
	}
	name := path[len(path)-1]
	parent, ok := c.resolve(path[:len(path)-1])
	if ok && parent.kind == nodeAction && (name == "operation" || name == "steps") {
		t := actionType(parent.data)
		switch {
		case !c.s.validType(t):
			// No operation or steps can be judged without a valid
			// action_type; that is reported on action_type itself.
			return
		case name == "operation":
			c.add(path, RuleUnknownField, "field not allowed: a MULTI_STEP_COMPOSITE has steps, not an operation")
			return
		default:
			c.add(path, RuleUnknownField, "field not allowed: only a MULTI_STEP_COMPOSITE has steps")
			return
		}
	}
	msg := "field not allowed"
	if ok {
		names := c.s.fieldNames(parent)
		mean := didYouMean(name, names)
		if mean != "" {
			msg += "; did you mean " + mean + "? ("
		} else {
			msg += "; "
		}
		switch len(names) {
		case 0:
			msg = strings.TrimSuffix(strings.TrimSuffix(msg, " ("), "; ")
		case 1:
			msg += "the only allowed field is " + names[0]
		default:
			msg += "allowed fields are " + joinList(names, "and")
		}
		if mean != "" && len(names) > 0 {
			msg += ")"
		}
	}
	c.add(path, RuleUnknownField, msg)
}

// classify turns the errors at one path into one violation.
func (c *collector) classify(path []string, raws []rawErr) {
	node, resolved := c.resolve(path)
	dv, _ := dataAt(c.data, path)
	var enum []string
	if resolved && node.kind == nodeValue {
		enum, _ = enumValues(node.v)
	}

	// A value of the wrong JSON type.
	var expected []string
	for _, r := range raws {
		var k1, k2 any
		switch {
		case r.format == fmtMismatch && len(r.args) == 4:
			k1, k2 = r.args[2], r.args[3]
		case r.format == fmtMismatch1 && len(r.args) == 3:
			k1, k2 = r.args[1], r.args[2]
		default:
			continue
		}
		got := cueKind(dv)
		for _, k := range []string{fmt.Sprint(k1), fmt.Sprint(k2)} {
			if k != got && !slices.Contains(expected, k) {
				expected = append(expected, k)
			}
		}
	}
	if len(expected) > 0 {
		var want string
		if len(enum) > 0 {
			want = enumPhrase(enum)
		} else {
			want = kindPhrase(expected)
		}
		c.add(path, RuleType, "must be "+want+", not "+dataKindPhrase(dv))
		return
	}

	for _, r := range raws {
		switch r.format {
		case fmtConflict, fmtDisjunction:
			if len(enum) == 0 {
				enum = conflictValues(raws, dv)
			}
			if len(enum) > 0 {
				c.add(path, RuleEnum, "must be "+enumPhrase(enum)+", not "+valuePhrase(dv))
				return
			}
		case fmtOutOfBound:
			if len(r.args) == 2 {
				bound := fmt.Sprint(r.args[1])
				if re, ok := strings.CutPrefix(bound, "=~"); ok {
					desc := ""
					if resolved && node.kind == nodeValue {
						desc = patternDesc(node.v)
					}
					if desc == "" {
						desc = "a string matching " + re
					}
					c.add(path, RulePattern, "must be "+desc+", not "+valuePhrase(dv))
					return
				}
				if bound == `!=""` {
					c.add(path, RuleInvalid, "must not be empty")
					return
				}
			}
		case fmtNotSatisfied:
			if len(r.args) == 2 {
				if msg, weak := c.validatorMessage(fmt.Sprint(r.args[1]), node, resolved); msg != "" {
					i := c.add(path, RuleInvalid, msg)
					if weak {
						if c.weak == nil {
							c.weak = make(map[int]bool)
						}
						c.weak[i] = true
					}
					return
				}
			}
		}
	}
	c.add(path, RuleInvalid, plainCUE(raws[0]))
}

// validatorMessage explains a failed validator call such as
// list.MinItems(1) or matchN. weak reports whether the violation should give
// way to violations below it.
func (c *collector) validatorMessage(call string, node schemaNode, resolved bool) (msg string, weak bool) {
	name, arg, _ := strings.Cut(strings.TrimSuffix(call, ")"), "(")
	switch name {
	case "strings.MinRunes", "list.MinItems":
		if arg == "1" {
			return "must not be empty", false
		}
		unit := "characters"
		if name == "list.MinItems" {
			unit = "items"
		}
		return fmt.Sprintf("must have at least %s %s", arg, unit), false
	case "matchN":
		if resolved && node.kind == nodeValue {
			if msg := matchNMessage(node.v); msg != "" {
				return msg, true
			}
		}
		return "does not match the required combination of fields", true
	}
	return "", false
}

// plainCUE is the last resort: CUE's own message.
func plainCUE(r rawErr) string {
	return "is not valid: " + fmt.Sprintf(r.format, r.args...)
}

// conflictValues collects the allowed values named by CUE's conflict errors
// when the schema could not be consulted.
func conflictValues(raws []rawErr, dv any) []string {
	got := valuePhrase(dv)
	var vals []string
	for _, r := range raws {
		if r.format != fmtConflict || len(r.args) != 2 {
			continue
		}
		for _, a := range r.args {
			s := fmt.Sprint(a)
			if s == got {
				continue
			}
			if u, err := strconv.Unquote(s); err == nil && !slices.Contains(vals, u) {
				vals = append(vals, u)
			}
		}
	}
	return vals
}

// walk reports the required fields absent below n and the fields present
// that the schema does not allow. CUE reports neither completely: it drops
// missing required fields as soon as another error exists, and skips some
// "field not allowed" errors in a struct that already has one.
func (c *collector) walk(n schemaNode, path []string) {
	switch d := n.data.(type) {
	case map[string]any:
		if n.kind == nodeSteps {
			return
		}
		req, ok := c.s.requiredFields(n)
		if !ok {
			return // not a struct schema: a type error, reported by CUE
		}
		for _, f := range req {
			if _, ok := d[f]; !ok {
				c.add(append(slices.Clone(path), f), RuleMissingField, "required field is missing")
			}
		}
		for k := range d {
			p := append(slices.Clone(path), k)
			if ch, ok := c.s.child(n, k); ok {
				c.walk(ch, p)
			} else {
				c.unknown(p)
			}
		}
	case []any:
		for i := range d {
			k := strconv.Itoa(i)
			if ch, ok := c.s.child(n, k); ok {
				c.walk(ch, append(slices.Clone(path), k))
			}
		}
	}
}

// nodeKind tells how a schemaNode finds its children.
type nodeKind int

const (
	nodeValue  nodeKind = iota // v is the schema of the value
	nodeAction                 // a descriptor or step: v is #Base or #StepBase
	nodeSteps                  // a composite's steps: each is a step
)

// A schemaNode is the schema at one path of a document, with the document's
// value there (nil if absent).
type schemaNode struct {
	kind nodeKind
	v    cue.Value
	data any
}

func (s *descriptorSchema) root(data any) schemaNode {
	return schemaNode{kind: nodeAction, v: s.base, data: data}
}

// resolve finds the schema at path in the collector's document.
func (c *collector) resolve(path []string) (schemaNode, bool) {
	n := c.s.root(c.data)
	for _, el := range path {
		var ok bool
		if n, ok = c.s.child(n, el); !ok {
			return n, false
		}
	}
	return n, true
}

// child returns the schema of n's member el: a field name or a list index.
// The operation of a descriptor or step is chosen by its action_type, as
// #Body[action_type] does in CUE.
func (s *descriptorSchema) child(n schemaNode, el string) (schemaNode, bool) {
	sub, _ := dataAt(n.data, []string{el})
	switch n.kind {
	case nodeAction:
		t := actionType(n.data)
		switch el {
		case "operation":
			op, ok := s.ops[t]
			return schemaNode{kind: nodeValue, v: op, data: sub}, ok
		case "steps":
			return schemaNode{kind: nodeSteps, data: sub}, t == composite
		}
		v, ok := fieldSchema(n.v, el)
		return schemaNode{kind: nodeValue, v: v, data: sub}, ok
	case nodeSteps:
		if _, err := strconv.Atoi(el); err != nil {
			return schemaNode{}, false
		}
		return schemaNode{kind: nodeAction, v: s.stepBase, data: sub}, true
	}
	if _, isList := n.data.([]any); isList {
		i, err := strconv.Atoi(el)
		if err != nil {
			return schemaNode{}, false
		}
		v, ok := elemSchema(n.v, i)
		return schemaNode{kind: nodeValue, v: v, data: sub}, ok
	}
	v, ok := fieldSchema(n.v, el)
	return schemaNode{kind: nodeValue, v: v, data: sub}, ok
}

// requiredFields lists the required fields of n's schema, including the
// operation or steps its action type calls for. ok is false when the schema
// is not a struct.
func (s *descriptorSchema) requiredFields(n schemaNode) (req []string, ok bool) {
	it, err := n.v.Fields(cue.Optional(true))
	if err != nil {
		return nil, false
	}
	for it.Next() {
		if it.Selector().ConstraintType() == cue.RequiredConstraint {
			req = append(req, it.Selector().Unquoted())
		}
	}
	if n.kind == nodeAction {
		switch t := actionType(n.data); {
		case t == composite:
			req = append(req, "steps")
		case s.validType(t):
			req = append(req, "operation")
		}
	}
	return req, true
}

// fieldNames lists the fields n's schema declares, in schema order.
func (s *descriptorSchema) fieldNames(n schemaNode) []string {
	if n.kind == nodeSteps {
		return nil
	}
	var names []string
	if it, err := n.v.Fields(cue.Optional(true)); err == nil {
		for it.Next() {
			names = append(names, it.Selector().Unquoted())
		}
	}
	if n.kind == nodeAction {
		switch t := actionType(n.data); {
		case t == composite:
			names = append(names, "steps")
		case s.validType(t):
			names = append(names, "operation")
		default:
			names = append(names, "operation", "steps")
		}
	}
	return names
}

func (s *descriptorSchema) validType(t string) bool {
	return t == composite || s.ops[t].Exists()
}

func actionType(data any) string {
	m, _ := data.(map[string]any)
	t, _ := m["action_type"].(string)
	return t
}

// fieldSchema returns the schema of field name of the struct schema v: a
// declared field (regular, optional or required) or a pattern constraint.
func fieldSchema(v cue.Value, name string) (cue.Value, bool) {
	sel := cue.Str(name)
	for _, s := range []cue.Selector{sel.Required(), sel.Optional(), sel} {
		if f := v.LookupPath(cue.MakePath(s)); f.Exists() {
			return f, true
		}
	}
	if f := v.LookupPath(cue.MakePath(cue.AnyString)); f.Exists() {
		return f, true
	}
	return cue.Value{}, false
}

// elemSchema returns the schema of element i of the list schema v, looking
// through conjunctions such as list.MinItems(1) & [...T].
func elemSchema(v cue.Value, i int) (cue.Value, bool) {
	for _, x := range conjuncts(v) {
		for _, s := range []cue.Selector{cue.Index(i), cue.AnyIndex} {
			if e := x.LookupPath(cue.MakePath(s)); e.Exists() {
				return e, true
			}
		}
	}
	return cue.Value{}, false
}

// conjuncts returns v and, following references, the operands of the
// conjunction v is made of.
func conjuncts(v cue.Value) []cue.Value {
	out := []cue.Value{v}
	for i := 0; i < len(out) && i < 32; i++ {
		x := out[i]
		op, args := x.Expr()
		switch op {
		case cue.AndOp:
			out = append(out, args...)
		case cue.SelectorOp, cue.NoOp:
			if inst, p := x.ReferencePath(); inst.Exists() {
				out = append(out, inst.LookupPath(p))
			}
		}
	}
	return out
}

// enumValues returns the allowed values of a schema that is a string
// constant or a disjunction of string constants.
func enumValues(v cue.Value) ([]string, bool) {
	for _, x := range conjuncts(v) {
		op, args := x.Expr()
		switch {
		case op == cue.OrOp:
			var vals []string
			for _, a := range args {
				lit, ok := literal(a)
				if !ok {
					return nil, false
				}
				vals = append(vals, lit)
			}
			return vals, true
		case op == cue.NoOp && x.IsConcrete():
			if lit, ok := literal(x); ok {
				return []string{lit}, true
			}
		}
	}
	return nil, false
}

func literal(v cue.Value) (string, bool) {
	if v.Kind() == cue.StringKind {
		s, err := v.String()
		return s, err == nil
	}
	return "", false
}

// patternDesc describes the named pattern (#UUID, …) v refers to.
func patternDesc(v cue.Value) string {
	for _, x := range conjuncts(v) {
		if _, p := x.ReferencePath(); len(p.Selectors()) > 0 {
			if d, ok := patternNames[p.String()]; ok {
				return d
			}
		}
	}
	return ""
}

// matchNMessage explains the matchN(1, …) or matchN(>=1, …) validator in v
// whose alternatives each require one field.
func matchNMessage(v cue.Value) string {
	for _, x := range conjuncts(v) {
		op, args := x.Expr()
		if op != cue.CallOp || len(args) != 3 || fmt.Sprint(args[0]) != "matchN" {
			continue
		}
		var fields []string
		it, err := args[2].List()
		if err != nil {
			return ""
		}
		for it.Next() {
			fit, err := it.Value().Fields(cue.Optional(true))
			if err != nil {
				return ""
			}
			for fit.Next() {
				if fit.Selector().ConstraintType() == cue.RequiredConstraint {
					fields = append(fields, fit.Selector().Unquoted())
				}
			}
		}
		switch fmt.Sprint(args[1]) {
		case "1":
			return "must have exactly one of " + joinList(fields, "or")
		case ">=1":
			return "must have at least one of " + joinList(fields, "or")
		}
	}
	return ""
}

// dataAt returns the value at path in a plain Go document.
func dataAt(data any, path []string) (any, bool) {
	for _, el := range path {
		switch d := data.(type) {
		case map[string]any:
			v, ok := d[el]
			if !ok {
				return nil, false
			}
			data = v
		case []any:
			i, err := strconv.Atoi(el)
			if err != nil || i < 0 || i >= len(d) {
				return nil, false
			}
			data = d[i]
		default:
			return nil, false
		}
	}
	return data, true
}

// cueKind names the CUE kind of a plain Go value, as CUE's errors do.
func cueKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "bool"
	case string:
		return "string"
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return "int"
	case float32, float64:
		return "float"
	case map[string]any:
		return "struct"
	case []any:
		return "list"
	}
	return ""
}

var kindPhrases = map[string]string{
	"null":   "null",
	"bool":   "a boolean",
	"string": "a string",
	"bytes":  "a string",
	"int":    "an integer",
	"float":  "a number",
	"number": "a number",
	"struct": "an object",
	"list":   "an array",
}

// kindPhrase renders CUE kinds such as "int" or "(int|string)" in JSON
// terms.
func kindPhrase(kinds []string) string {
	var ps []string
	for _, k := range kinds {
		for _, k := range strings.Split(strings.Trim(k, "()"), "|") {
			p, ok := kindPhrases[k]
			if !ok {
				p = k
			}
			if !slices.Contains(ps, p) {
				ps = append(ps, p)
			}
		}
	}
	return joinList(ps, "or")
}

func dataKindPhrase(v any) string {
	return kindPhrase([]string{cueKind(v)})
}

// valuePhrase renders a scalar of the document for a message; composite
// values are named by their kind.
func valuePhrase(v any) string {
	switch v := v.(type) {
	case string:
		if len(v) > 80 {
			v = v[:77] + "..."
		}
		return strconv.Quote(v)
	case nil, bool, int, int64, float64:
		return fmt.Sprint(v)
	}
	return dataKindPhrase(v)
}

func enumPhrase(vals []string) string {
	q := make([]string, len(vals))
	for i, v := range vals {
		q[i] = strconv.Quote(v)
	}
	switch len(q) {
	case 1, 2:
		return joinList(q, "or")
	}
	return "one of " + joinList(q, "or")
}

// joinList joins items as "a, b and c".
func joinList(items []string, conj string) string {
	switch len(items) {
	case 0:
		return ""
	case 1:
		return items[0]
	}
	return strings.Join(items[:len(items)-1], ", ") + " " + conj + " " + items[len(items)-1]
}

// didYouMean is the one name of names closest to the unknown field name,
// by edit distance (a typo, a letter swapped or missed, another case),
// or "" when none is close or two are as close.
func didYouMean(name string, names []string) string {
	best, bestD, tie := "", 0, false
	limit := max(1, min(3, len([]rune(name))/3))
	for _, n := range names {
		d := levenshtein(strings.ToLower(name), strings.ToLower(n))
		if d > limit {
			continue
		}
		switch {
		case best == "" || d < bestD:
			best, bestD, tie = n, d, false
		case d == bestD:
			tie = true
		}
	}
	if tie {
		return ""
	}
	return best
}

// levenshtein is the edit distance of a and b (insertions, deletions,
// substitutions, and a swap of two neighbours counted as one).
func levenshtein(a, b string) int {
	x, y := []rune(a), []rune(b)
	prev2 := make([]int, len(y)+1)
	prev := make([]int, len(y)+1)
	cur := make([]int, len(y)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(x); i++ {
		cur[0] = i
		for j := 1; j <= len(y); j++ {
			cost := 1
			if x[i-1] == y[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && x[i-1] == y[j-2] && x[i-2] == y[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(y)]
}
