package schema

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"sync"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/errors"
	"cuelang.org/go/encoding/jsonschema"
)

//go:embed output.cue
var outputSource string

var (
	outputOnce sync.Once
	outputVal  cue.Value
	outputErr  error
)

func outputSchema() (cue.Value, error) {
	outputOnce.Do(func() {
		evalMu.Lock()
		defer evalMu.Unlock()
		v := Context().CompileString(outputSource, cue.Filename("output.cue"))
		outputVal, outputErr = v.LookupPath(cue.ParsePath("#Output")), v.Err()
	})
	return outputVal, outputErr
}

// OutputCommands lists the commands whose --json output has a schema.
func OutputCommands() []string {
	s, err := outputSchema()
	if err != nil {
		return nil
	}
	it, err := s.Fields(cue.Definitions(false))
	if err != nil {
		return nil
	}
	var names []string
	for it.Next() {
		names = append(names, it.Selector().String())
	}
	sort.Strings(names)
	return names
}

func outputOf(command string) (cue.Value, error) {
	s, err := outputSchema()
	if err != nil {
		return cue.Value{}, err
	}
	if !slices.Contains(OutputCommands(), command) {
		return cue.Value{}, fmt.Errorf("no output schema for %q (there is one for %v)", command, OutputCommands())
	}
	return s.LookupPath(cue.MakePath(cue.Str(command))), nil
}

// OutputJSONSchema returns the JSON Schema of command's --json output.
func OutputJSONSchema(command string) ([]byte, error) {
	v, err := outputOf(command)
	if err != nil {
		return nil, err
	}
	evalMu.Lock()
	defer evalMu.Unlock()
	expr, err := jsonschema.Generate(v, nil)
	if err != nil {
		return nil, fmt.Errorf("generate JSON Schema of %s output: %s", command, errors.Details(err, nil))
	}
	b, err := json.Marshal(Context().BuildExpr(expr))
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	m["$schema"] = "https://json-schema.org/draft/2020-12/schema"
	m["title"] = "act " + command + " --json"
	return json.MarshalIndent(m, "", "  ")
}

// ValidateOutput checks a --json document of command against its schema.
func ValidateOutput(command string, doc []byte) error {
	v, err := outputOf(command)
	if err != nil {
		return err
	}
	evalMu.Lock()
	defer evalMu.Unlock()
	d := Context().CompileBytes(doc, cue.Filename(command+".json"))
	if d.Err() != nil {
		return fmt.Errorf("not JSON: %w", d.Err())
	}
	u := v.Unify(d)
	if err := u.Validate(cue.Concrete(true)); err != nil {
		return fmt.Errorf("%s", errors.Details(err, nil))
	}
	return nil
}
