// Package schema holds act's CUE schemas, embedded in the binary: the Action
// Descriptor (descriptor.cue) and the host policy (policy.cue). Each schema is
// compiled at most once per process, on first use.
//
// Validation takes plain Go values (map[string]any, []any, string, bool,
// int64, float64, nil) as produced by the strict parser and returns
// [Violation] values with the path of the offending field; callers attach
// file positions.
//
// # The descriptor schema
//
// [DescriptorSource] is the CUE text `act schema` prints. [ValidateDescriptor]
// unifies a document with its closed #Descriptor definition, which picks the
// shape of "operation" by "action_type" (#Body[action_type]) rather than
// trying every shape, and turns CUE's errors into violations with these rule
// ids:
//
//   - schema.unknown-field: a field the closed schema does not allow;
//   - schema.missing-field: a required field is absent (the path names it);
//   - schema.type: a value of the wrong JSON type;
//   - schema.enum: a value outside an enum (the message lists the values);
//   - schema.pattern: a string of the wrong form (UUID, RFC 3339, mode, digest);
//   - schema.invalid: anything else, such as an empty list that must not be.
//
// [JSONSchema] exports the same schema as JSON Schema (draft 2020-12) for
// agents that produce structured output.
package schema

import (
	"sync"

	"cuelang.org/go/cue"
	// The builtins the schemas import, and no others: cuecontext
	// registers every builtin of cuelang.org/go/pkg (protobuf, TOML, HTTP
	// and the rest), whose package initialisation every act process would
	// pay (see Context).
	_ "cuelang.org/go/pkg/list"
	_ "cuelang.org/go/pkg/strings"
)

// A Violation is one schema failure: the path of the field in the validated
// value, a stable rule id and one plain sentence.
type Violation struct {
	Path    []string
	Rule    string
	Message string
}

// The rule ids of schema violations.
const (
	// RuleUnknownField: a field the closed schema does not allow. The
	// path names the field.
	RuleUnknownField = "schema.unknown-field"
	// RuleMissingField: a required field is absent. The path names the
	// missing field.
	RuleMissingField = "schema.missing-field"
	// RuleType: a value of the wrong JSON type, e.g. a string where an
	// integer is required.
	RuleType = "schema.type"
	// RuleEnum: a value outside an enumeration; the message lists the
	// allowed values.
	RuleEnum = "schema.enum"
	// RulePattern: a string of the wrong form, e.g. not a UUID.
	RulePattern = "schema.pattern"
	// RuleInvalid: any other schema failure, e.g. an empty list where one
	// item is required.
	RuleInvalid = "schema.invalid"
)

var (
	ctxOnce sync.Once
	ctx     *cue.Context

	// evalMu serializes evaluation in the shared context: cue.Context is
	// not documented as safe for concurrent evaluation.
	evalMu sync.Mutex
)

// Context returns the process-wide CUE context all schemas are compiled in.
//
// It is made without cuecontext, whose import links and initialises all
// of CUE's builtin packages — protobuf's descriptors among them — in every
// act process, at start-up, whether it validates anything or not
// (docs/timings.md). A cue.Runtime is the same runtime, initialised on its
// first compile; the context of what it compiles is the runtime itself.
// The schemas may import only the builtins registered above
// (TestSchemaBuiltins).
func Context() *cue.Context {
	ctxOnce.Do(func() {
		rt := new(cue.Runtime)
		inst, err := rt.Compile("empty.cue", "")
		if err != nil {
			panic("schema: the CUE runtime: " + err.Error())
		}
		ctx = inst.Value().Context()
	})
	return ctx
}
