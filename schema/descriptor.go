package schema

import (
	_ "embed"
	"fmt"
	"sync"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/errors"
)

//go:embed descriptor.cue
var descriptorCUE string

// DescriptorSource returns the CUE source of the Action Descriptor schema
// embedded in the binary (what `act schema` prints).
func DescriptorSource() string { return descriptorCUE }

// composite is the one action type that has steps instead of an operation.
const composite = "MULTI_STEP_COMPOSITE"

// descriptorSchema is the compiled descriptor.cue and the definitions the
// validator looks up by name.
type descriptorSchema struct {
	descriptor cue.Value // #Descriptor: what a document is unified with
	base       cue.Value // #Base: a descriptor's fields but operation and steps
	stepBase   cue.Value // #StepBase: a step's fields but operation and steps

	operations cue.Value // #Operation

	// ops maps each action type but MULTI_STEP_COMPOSITE to the shape of
	// its operation (#Operation[type]).
	ops map[string]cue.Value

	// actionTypes lists the action types in schema order.
	actionTypes []string
}

var (
	descOnce sync.Once
	desc     *descriptorSchema
	descErr  error
)

// loadDescriptor compiles descriptor.cue on first use.
func loadDescriptor() (*descriptorSchema, error) {
	descOnce.Do(func() {
		evalMu.Lock()
		defer evalMu.Unlock()
		desc, descErr = compileDescriptor()
	})
	return desc, descErr
}

func compileDescriptor() (*descriptorSchema, error) {
	root := Context().CompileString(descriptorCUE, cue.Filename("descriptor.cue"))
	if err := root.Err(); err != nil {
		return nil, fmt.Errorf("compile descriptor.cue: %s", errors.Details(err, nil))
	}
	s := &descriptorSchema{
		descriptor: root.LookupPath(cue.ParsePath("#Descriptor")),
		base:       root.LookupPath(cue.ParsePath("#Base")),
		stepBase:   root.LookupPath(cue.ParsePath("#StepBase")),
		ops:        make(map[string]cue.Value),
	}
	for _, v := range []cue.Value{s.descriptor, s.base, s.stepBase} {
		if !v.Exists() {
			return nil, fmt.Errorf("descriptor.cue: %v", v.Err())
		}
	}
	types, ok := enumValues(root.LookupPath(cue.ParsePath("#ActionType")))
	if !ok {
		return nil, fmt.Errorf("descriptor.cue: #ActionType is not an enum")
	}
	s.actionTypes = types
	s.operations = root.LookupPath(cue.ParsePath("#Operation"))
	ops := s.operations
	for _, t := range types {
		if t == composite {
			continue
		}
		op := ops.LookupPath(cue.MakePath(cue.Str(t)))
		if !op.Exists() {
			return nil, fmt.Errorf("descriptor.cue: no #Operation for %s", t)
		}
		s.ops[t] = op
	}
	return s, nil
}

// ValidateDescriptor checks v, a descriptor decoded into plain Go values
// (map[string]any, []any, string, bool, int64, float64 and nil), against
// the embedded #Descriptor schema. It returns every violation, sorted by
// path, or nil when v is valid.
//
// The operation's shape is looked up by action_type inside CUE
// (#Body[action_type]), at every depth of a composite's steps; when the
// action type itself is missing or unknown, only that is reported, not the
// operation or steps it would have chosen.
//
// A document the schema's shape in Go holds (fast.go) is valid without
// compiling the schema.
func ValidateDescriptor(v any) []Violation {
	if fastDescriptor()(v) {
		return nil
	}
	return validateDescriptorCUE(v)
}

// validateDescriptorCUE is ValidateDescriptor by CUE alone.
func validateDescriptorCUE(v any) []Violation {
	s, err := loadDescriptor()
	if err != nil {
		return []Violation{{Rule: RuleInvalid, Message: "the embedded descriptor schema does not compile: " + err.Error()}}
	}
	evalMu.Lock()
	defer evalMu.Unlock()
	u := s.descriptor.Unify(Context().Encode(v))
	err = u.Validate(cue.Concrete(true), cue.Final())
	if err == nil {
		return nil
	}
	c := &collector{s: s, data: v}
	c.addCUE(err, len(s.descriptor.Path().Selectors()))
	return c.result()
}
