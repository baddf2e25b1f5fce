package descriptors

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"github.com/act-project/act/internal/document"
	"github.com/act-project/act/internal/problem"
	"github.com/act-project/act/internal/timings"
	"github.com/act-project/act/schema"
)

// Load parses data as a descriptor and checks it against the CUE schema.
// name is the file name used in positions. On success it returns the typed
// descriptor and the document it came from (for positions in later checks);
// otherwise the problems of the first layer that failed (parse or schema).
//
// Load does not apply the static rules: see [Check].
//
// A short descriptor is expanded first ([Expand], with a fresh stamp: the
// time now and a new action id), and the document returned is the
// expanded one: the fields act filled in have no position.
func Load(name string, data []byte) (*Descriptor, *document.Document, problem.List) {
	return LoadStamped(name, data, Stamp{})
}

// LoadStamped is [Load] with the stamp a short descriptor is expanded
// with.
func LoadStamped(name string, data []byte, st Stamp) (*Descriptor, *document.Document, problem.List) {
	return LoadStampedContext(context.Background(), name, data, st)
}

// LoadStampedContext is LoadStamped, timing its parse, schema and decode
// where ctx carries a recorder (docs/timings.md).
func LoadStampedContext(ctx context.Context, name string, data []byte, st Stamp) (*Descriptor, *document.Document, problem.List) {
	end := timings.Start(ctx, "parse")
	doc, probs := document.Parse(name, data)
	end()
	if probs != nil {
		return nil, nil, probs
	}
	end = timings.Start(ctx, "short form expanded")
	Expand(doc, st)
	end()
	end = timings.Start(ctx, "schema (CUE)")
	vs := schema.ValidateDescriptor(doc.Value())
	end()
	if probs := SchemaProblems(doc, vs); probs != nil {
		return nil, doc, probs
	}
	defer timings.Start(ctx, "decode")()
	if probs := unexpanded(doc); probs != nil {
		return nil, doc, probs
	}
	d, err := decode(doc)
	if err != nil {
		// The schema accepted what the Go types cannot hold: a bug, but
		// still reported as a problem rather than a crash.
		return nil, doc, problem.List{{
			Rule: "schema.invalid", File: doc.Name, Line: 1, Column: 1,
			Message: err.Error(), Layer: problem.Schema,
		}}
	}
	return d, doc, nil
}

// expandedFields are what every expanded descriptor holds, though the
// schema lets a short one leave them out.
var expandedFields = [][]string{{"risk_level"}, {"scope", "filesystem"}, {"scope", "network"}, {"scope", "ui"},
	{"resources"}, {"preconditions"}, {"effects"}, {"sandbox"}, {"rollback"}, {"confirmation"}, {"audit"}}

// unexpanded reports a field the schema accepted as left out but
// expansion did not fill in: a second line behind Expand, so that no
// check ever sees a zero value act did not choose.
func unexpanded(doc *document.Document) problem.List {
	var probs problem.List
	for _, f := range expandedFields {
		if get(doc.Root, f...) == nil {
			probs = append(probs, At(doc, problem.Schema, "schema.missing-field", f,
				"act could not derive %s from the operation; write it out", problem.FieldPath(f...)))
		}
	}
	var steps func(n *document.Node, path []string)
	steps = func(n *document.Node, path []string) {
		l, _, _ := n.Get("steps")
		if l == nil {
			return
		}
		for i, s := range l.Items {
			p := append(slices.Clone(path), "steps", strconv.Itoa(i))
			if get(s, "effects") == nil {
				probs = append(probs, At(doc, problem.Schema, "schema.missing-field", append(p, "effects"),
					"act could not derive the step's effects from its operation; write them out"))
			}
			steps(s, p)
		}
	}
	steps(doc.Root, nil)
	return probs
}

// SchemaProblems turns schema violations into problems positioned in doc.
// It returns nil when vs is empty.
func SchemaProblems(doc *document.Document, vs []schema.Violation) problem.List {
	if len(vs) == 0 {
		return nil
	}
	probs := make(problem.List, 0, len(vs))
	for _, v := range vs {
		probs = append(probs, At(doc, problem.Schema, v.Rule, v.Path, "%s", v.Message))
	}
	probs.Sort()
	return probs
}

// At builds a problem of layer l for the field at path in doc.
func At(doc *document.Document, l problem.Layer, rule string, path []string, format string, args ...any) problem.Problem {
	pos := doc.Pos(path...)
	return problem.Problem{
		Rule:    rule,
		Field:   problem.FieldPath(path...),
		File:    doc.Name,
		Line:    pos.Line,
		Column:  pos.Column,
		Message: fmt.Sprintf(format, args...),
		Layer:   l,
	}
}

// LoadSaved decodes a descriptor that act validated and saved itself — the
// canonical JSON a plan keeps — without the CUE schema, whose compilation
// alone costs more than all the rest of an apply's checks, and without
// positions (parse data with document.Parse where a problem needs one).
// digest is the sha256 (hex) recorded with data when it was validated;
// data that does not match it is refused rather than trusted.
func LoadSaved(data []byte, digest string) (*Descriptor, error) {
	if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != digest {
		return nil, fmt.Errorf("the saved descriptor does not match its digest %s", digest)
	}
	return decodeJSON(data)
}

func decode(doc *document.Document) (*Descriptor, error) {
	b, err := json.Marshal(doc.Value())
	if err != nil {
		return nil, err
	}
	return decodeJSON(b)
}

// decodeJSON decodes a descriptor's JSON, operations included.
func decodeJSON(b []byte) (*Descriptor, error) {
	var err error
	d := new(Descriptor)
	if err := json.Unmarshal(b, d); err != nil {
		return nil, fmt.Errorf("decode descriptor: %w", err)
	}
	if d.ActionType != MultiStepComposite {
		if d.Op, err = DecodeOperation(d.ActionType, d.Operation); err != nil {
			return nil, err
		}
	}
	if err := decodeSteps(d.Steps); err != nil {
		return nil, err
	}
	return d, nil
}

func decodeSteps(steps []Step) error {
	for i := range steps {
		s := &steps[i]
		if s.ActionType != MultiStepComposite {
			op, err := DecodeOperation(s.ActionType, s.Operation)
			if err != nil {
				return fmt.Errorf("steps[%s]: %w", strconv.Itoa(i), err)
			}
			s.Op = op
		}
		if err := decodeSteps(s.Steps); err != nil {
			return err
		}
	}
	return nil
}
