package schema

import (
	"regexp"
	"unicode/utf8"
)

// The schemas' fast path. Compiling descriptor.cue or policy.cue costs a
// fresh act process several milliseconds, more than anything else in
// act validate and a large part of every decision, for documents that are
// nearly always valid. A shape below is the same schema written in Go: it
// only ever answers "certainly valid" (then CUE is not asked) or "ask
// CUE", which compiles the schema and says exactly what is wrong. A shape
// stricter than its schema costs only the compile; one looser would let
// through what the schema refuses, so TestFastAgreesWithCUE checks each
// answer against CUE on the corpus and on many mutations of it, and
// TestFastSchemaPinned fails when a schema changes until its shape has
// been checked against the change (docs/timings.md, "The schemas' shapes").

// A shape is a CUE schema's constraint on one value, as the strict
// parser hands values over (map[string]any, []any, string, bool, int64,
// float64, nil).
type shape interface{ holds(v any) bool }

// shapeFunc is a shape of a scalar.
type shapeFunc func(v any) bool

func (f shapeFunc) holds(v any) bool { return f(v) }

var (
	// anyValue is CUE's _: every concrete value.
	anyValue shapeFunc = func(any) bool { return true }
	// str is string: valid UTF-8 only (anything else: ask CUE).
	str shapeFunc = func(v any) bool { s, ok := v.(string); return ok && utf8.ValidString(s) }
	// text is strings.MinRunes(1).
	text shapeFunc = func(v any) bool { s, ok := v.(string); return ok && s != "" && utf8.ValidString(s) }
	// boolean is bool.
	boolean shapeFunc = func(v any) bool { _, ok := v.(bool); return ok }
	// integer is int (a float, even 5.0, is not an int in CUE).
	integer shapeFunc = func(v any) bool {
		switch v.(type) {
		case int64, int:
			return true
		}
		return false
	}
)

// pattern is =~re on a string.
func pattern(re string) shape {
	r := regexp.MustCompile(re)
	return shapeFunc(func(v any) bool { s, ok := v.(string); return ok && utf8.ValidString(s) && r.MatchString(s) })
}

// oneOf is a disjunction of strings.
func oneOf(vals ...string) shape {
	return shapeFunc(func(v any) bool {
		s, ok := v.(string)
		if !ok {
			return false
		}
		for _, x := range vals {
			if s == x {
				return true
			}
		}
		return false
	})
}

// allOf is a & b & ….
func allOf(shapes ...shape) shape {
	return shapeFunc(func(v any) bool {
		for _, s := range shapes {
			if !s.holds(v) {
				return false
			}
		}
		return true
	})
}

// eitherOf is a | b | ….
func eitherOf(shapes ...shape) shape {
	return shapeFunc(func(v any) bool {
		for _, s := range shapes {
			if s.holds(v) {
				return true
			}
		}
		return false
	})
}

// listOf is [...elem], with list.MinItems(min) where min > 0.
func listOf(elem shape, min int) shape {
	return shapeFunc(func(v any) bool {
		l, ok := v.([]any)
		if !ok || len(l) < min {
			return false
		}
		for _, e := range l {
			if !elem.holds(e) {
				return false
			}
		}
		return true
	})
}

// mapOf is {[string]: elem}, closed.
func mapOf(elem shape) shape {
	return shapeFunc(func(v any) bool {
		m, ok := v.(map[string]any)
		if !ok {
			return false
		}
		for k, e := range m {
			if !utf8.ValidString(k) || !elem.holds(e) {
				return false
			}
		}
		return true
	})
}

// field is one field of a closed struct: required (f!) or optional (f?).
type field struct {
	shape    shape
	required bool
}

func opt(s shape) field { return field{s, false} }
func req(s shape) field { return field{s, true} }

// object is a closed struct (every struct inside a definition is): only
// its fields, each holding its shape, the required ones present.
type object map[string]field

func (o object) holds(v any) bool {
	m, ok := v.(map[string]any)
	return ok && o.fieldsHold(m, nil)
}

// fieldsHold is holds for m, where the fields of more are allowed too.
func (o object) fieldsHold(m map[string]any, more object) bool {
	for k, e := range m {
		f, ok := o[k]
		if !ok {
			if f, ok = more[k]; !ok {
				return false
			}
		}
		if !f.shape.holds(e) {
			return false
		}
	}
	for _, fields := range []object{o, more} {
		for k, f := range fields {
			if _, ok := m[k]; f.required && !ok {
				return false
			}
		}
	}
	return true
}

// exactlyOne is matchN(1, …) over the presence of the named fields;
// atLeastOne is matchN(>=1, …).
func exactlyOne(m map[string]any, names ...string) bool { return present(m, names) == 1 }
func atLeastOne(m map[string]any, names ...string) bool { return present(m, names) >= 1 }

func present(m map[string]any, names []string) int {
	n := 0
	for _, k := range names {
		if _, ok := m[k]; ok {
			n++
		}
	}
	return n
}

// both is a & b.
func both(a shape, b func(map[string]any) bool) shape {
	return shapeFunc(func(v any) bool {
		m, ok := v.(map[string]any)
		return ok && a.holds(m) && b(m)
	})
}
