package schema

import (
	"fmt"
	"strings"
	"testing"

	"cuelang.org/go/cue"
)

// BenchmarkCompile measures compiling descriptor.cue, which every act
// process that validates pays once.
func BenchmarkCompile(b *testing.B) {
	for b.Loop() {
		evalMu.Lock()
		_, err := compileDescriptor()
		evalMu.Unlock()
		if err != nil {
			b.Fatal(err)
		}
	}
}

var benchDocs = []struct{ name, file string }{
	{"single", "valid_file_write_content.json"},
	{"composite4", "valid_composite_four_steps.json"},
	{"invalid", "invalid_several_errors.json"},
}

// BenchmarkValidateDescriptor measures ValidateDescriptor on a
// single-operation descriptor, a 4-step composite and an invalid
// descriptor (which also walks the document for violations).
func BenchmarkValidateDescriptor(b *testing.B) {
	if _, err := loadDescriptor(); err != nil {
		b.Fatal(err)
	}
	for _, d := range benchDocs {
		doc := readCorpus(b, d.file)
		b.Run(d.name, func(b *testing.B) {
			for b.Loop() {
				ValidateDescriptor(doc)
			}
		})
	}
}

// BenchmarkSelection compares three ways of choosing the operation's shape
// by action_type on valid documents:
//
//   - lookup: #Body[action_type] inside CUE (what ValidateDescriptor does);
//   - disjunction: one disjunct per action type, CUE picks;
//   - go: unify #Base without operation and steps, then each operation
//     with #Operation[type] and each step with #StepBase, chosen in Go.
func BenchmarkSelection(b *testing.B) {
	s, err := loadDescriptor()
	if err != nil {
		b.Fatal(err)
	}
	disj := compileDisjunction(b, s)
	for _, d := range benchDocs[:2] {
		doc := readCorpus(b, d.file)
		b.Run(d.name+"/lookup", func(b *testing.B) {
			for b.Loop() {
				if err := validateWith(s.descriptor, doc); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(d.name+"/disjunction", func(b *testing.B) {
			for b.Loop() {
				if err := validateWith(disj, doc); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(d.name+"/go", func(b *testing.B) {
			for b.Loop() {
				if err := validateGoSelect(s, doc, true); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func validateWith(def cue.Value, doc any) error {
	evalMu.Lock()
	defer evalMu.Unlock()
	return def.Unify(Context().Encode(doc)).Validate(cue.Concrete(true), cue.Final())
}

// compileDisjunction builds #Descriptor's 12-way disjunction twin.
func compileDisjunction(tb testing.TB, s *descriptorSchema) cue.Value {
	var arms []string
	for _, t := range s.actionTypes {
		if t == composite {
			arms = append(arms, `{action_type: "MULTI_STEP_COMPOSITE", steps!: list.MinItems(1) & [...#StepDisj]}`)
			continue
		}
		arms = append(arms, fmt.Sprintf(`{action_type: %q, operation!: #Operation.%s}`, t, t))
	}
	src := descriptorCUE + `
#DescriptorDisj: {
	#Base
	action_type!: #ActionType
	#OpDisj
}
#StepDisj: {
	#StepBase
	action_type!: #ActionType
	#OpDisj
}
#OpDisj: ` + strings.Join(arms, " |\n\t") + "\n"
	evalMu.Lock()
	defer evalMu.Unlock()
	v := Context().CompileString(src).LookupPath(cue.ParsePath("#DescriptorDisj"))
	if v.Err() != nil {
		tb.Fatal(v.Err())
	}
	// Sanity: the disjunction accepts the benchmark documents.
	for _, d := range benchDocs[:2] {
		if err := v.Unify(Context().Encode(readCorpus(tb, d.file))).Validate(cue.Concrete(true), cue.Final()); err != nil {
			tb.Fatalf("disjunction rejects %s: %v", d.file, err)
		}
	}
	return v
}

// validateGoSelect is the Go-side selection: several small unifications.
func validateGoSelect(s *descriptorSchema, doc any, top bool) error {
	m := doc.(map[string]any)
	rest := make(map[string]any, len(m))
	for k, v := range m {
		if k != "operation" && k != "steps" {
			rest[k] = v
		}
	}
	def := s.stepBase
	if top {
		def = s.base
	}
	if err := validateWith(def, rest); err != nil {
		return err
	}
	t := actionType(m)
	if t != composite {
		return validateWith(s.ops[t], m["operation"])
	}
	for _, st := range m["steps"].([]any) {
		if err := validateGoSelect(s, st, false); err != nil {
			return err
		}
	}
	return nil
}
