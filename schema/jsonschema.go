package schema

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sync"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/errors"
	"cuelang.org/go/encoding/jsonschema"
)

// JSONSchema returns the Action Descriptor schema as an indented JSON
// Schema (draft 2020-12) document, closed like the CUE schema: every object
// has "additionalProperties": false except UI_AUTOMATION's operation and the
// string maps (env, headers, set, sha256).
//
// CUE's generator (experimental) renders the plain definitions: #Base,
// #StepBase and each #Operation. JSON Schema cannot look a schema up by the
// value of another field, so the choice #Body[action_type] makes in CUE is
// spelled out as one if/then per action type in $defs.Body.
func JSONSchema() ([]byte, error) {
	jsonOnce.Do(func() { jsonDoc, jsonErr = generateJSONSchema() })
	return slices.Clone(jsonDoc), jsonErr
}

var (
	jsonOnce sync.Once
	jsonDoc  []byte
	jsonErr  error
)

func generateJSONSchema() ([]byte, error) {
	s, err := loadDescriptor()
	if err != nil {
		return nil, err
	}
	evalMu.Lock()
	defer evalMu.Unlock()

	defs := make(map[string]any)
	gen := func(v cue.Value) (map[string]any, error) {
		expr, err := jsonschema.Generate(v, nil)
		if err != nil {
			return nil, fmt.Errorf("generate JSON Schema for %v: %s", v.Path(), errors.Details(err, nil))
		}
		b, err := json.Marshal(Context().BuildExpr(expr))
		if err != nil {
			return nil, fmt.Errorf("generate JSON Schema for %v: %w", v.Path(), err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, err
		}
		sub, _ := m["$defs"].(map[string]any)
		for name, d := range sub {
			if old, ok := defs[name]; ok && !reflect.DeepEqual(old, d) {
				return nil, fmt.Errorf("generate JSON Schema: two different definitions named %q", name)
			}
			defs[name] = d
		}
		delete(m, "$defs")
		delete(m, "$schema")
		return m, nil
	}

	ops, err := gen(s.operations)
	if err != nil {
		return nil, err
	}
	opSchemas, _ := ops["properties"].(map[string]any)
	descriptor, err := gen(s.base)
	if err != nil {
		return nil, err
	}
	step, err := gen(s.stepBase)
	if err != nil {
		return nil, err
	}

	var body []any
	for _, t := range s.actionTypes {
		cond := map[string]any{
			"properties": map[string]any{"action_type": map[string]any{"const": t}},
			"required":   []any{"action_type"},
		}
		var then map[string]any
		if t == composite {
			then = map[string]any{
				"required": []any{"steps"},
				"not":      map[string]any{"required": []any{"operation"}},
			}
		} else {
			op, ok := opSchemas[t]
			if !ok {
				return nil, fmt.Errorf("generate JSON Schema: no operation schema for %s", t)
			}
			then = map[string]any{
				"properties": map[string]any{"operation": op},
				"required":   []any{"operation"},
				"not":        map[string]any{"required": []any{"steps"}},
			}
		}
		body = append(body, map[string]any{"if": cond, "then": then})
	}
	defs["Body"] = map[string]any{
		"description": "Body chooses, by action_type, the shape of operation " +
			"(every type but MULTI_STEP_COMPOSITE) or requires steps " +
			"(MULTI_STEP_COMPOSITE); the other field is forbidden. Every field " +
			"but intent_summary, action_type and operation or steps may be left " +
			"out: act fills it in from the operation and the host policy.",
		"allOf": body,
	}
	for _, m := range []map[string]any{descriptor, step} {
		props, ok := m["properties"].(map[string]any)
		if !ok {
			return nil, fmt.Errorf("generate JSON Schema: %v has no properties", m)
		}
		props["operation"] = map[string]any{
			"type":        "object",
			"description": "What to do; its shape depends on action_type (see $defs/Body).",
		}
		props["steps"] = map[string]any{
			"type":        "array",
			"description": "The child actions of a MULTI_STEP_COMPOSITE.",
			"minItems":    1,
			"items":       map[string]any{"$ref": "#/$defs/Step"},
		}
		if _, ok := m["$ref"]; ok {
			return nil, fmt.Errorf("generate JSON Schema: unexpected $ref in %v", m)
		}
		m["$ref"] = "#/$defs/Body"
		if m["additionalProperties"] != false {
			return nil, fmt.Errorf("generate JSON Schema: descriptor is not closed")
		}
	}
	step["description"] = "A child action of a MULTI_STEP_COMPOSITE; it inherits scope, " +
		"resources, sandbox and rollback from its parent."
	defs["Step"] = step

	descriptor["$schema"] = jsonschema.VersionDraft2020_12.String()
	descriptor["title"] = "act Action Descriptor"
	descriptor["description"] = "An action proposed by an AI agent, validated by act " +
		"before anything runs (act schema prints the CUE source this is generated from)."
	descriptor["$defs"] = defs
	return json.MarshalIndent(descriptor, "", "  ")
}
