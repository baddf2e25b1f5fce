package document

import (
	"bytes"
	"errors"
	"io"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"

	"github.com/act-project/act/internal/problem"
)

var intText = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[-+]?[0-9_]+$`) })

var yamlLineRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^yaml: line (\d+): (.*)$`) })

func parseYAML(d *Document, data []byte, lines *lineIndex) (*Node, problem.List) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var root yaml.Node
	if err := dec.Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, problem.List{d.problem("parse.empty", problem.Pos{Line: 1, Column: 1},
				"the document is empty")}
		}
		return nil, problem.List{yamlError(d, err, lines)}
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case err == nil:
		pos := problem.Pos{Line: next.Line, Column: next.Column}
		if len(next.Content) > 0 {
			pos = problem.Pos{Line: next.Content[0].Line, Column: next.Content[0].Column}
		}
		// A "---" separator is where the second document begins for a reader.
		if sep := findSeparator(data, lines, pos.Line); sep.Line > 0 {
			pos = sep
		}
		return nil, problem.List{d.problem("parse.multiple-documents", pos,
			"the file holds more than one YAML document; a descriptor is exactly one")}
	case !errors.Is(err, io.EOF):
		return nil, problem.List{yamlError(d, err, lines)}
	}
	w := &yamlWalker{doc: d, active: map[*yaml.Node]bool{}}
	n := w.walk(&root, 0)
	if len(w.probs) > 0 {
		return nil, w.probs
	}
	return n, nil
}

// findSeparator returns the position of the last "---" line at or before line.
func findSeparator(data []byte, lines *lineIndex, line int) problem.Pos {
	for l := min(line, len(lines.starts)); l >= 1; l-- {
		off := lines.starts[l-1]
		if bytes.HasPrefix(data[off:], []byte("---")) {
			return problem.Pos{Line: l, Column: 1}
		}
	}
	return problem.Pos{}
}

func yamlError(d *Document, err error, lines *lineIndex) problem.Problem {
	msg := err.Error()
	if strings.Contains(msg, "exceeded max depth") {
		return d.problem("parse.too-deep", problem.Pos{Line: 1, Column: 1},
			"the document nests deeper than %d levels", MaxDepth)
	}
	if m := yamlLineRE().FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		return d.problem("parse.syntax", lines.lineStart(line), "invalid YAML: %s", m[2])
	}
	msg = strings.TrimPrefix(msg, "yaml: ")
	return d.problem("parse.syntax", problem.Pos{Line: 1, Column: 1}, "invalid YAML: %s", msg)
}

type yamlWalker struct {
	doc     *Document
	probs   problem.List
	nodes   int
	stopped bool
	// outer is the outermost alias being expanded, where an expansion
	// problem is reported.
	outer  *yaml.Node
	active map[*yaml.Node]bool
	// path is the field path of the node being walked; outerPath that of
	// outer.
	path, outerPath []string
}

func (w *yamlWalker) fail(rule string, n *yaml.Node, format string, args ...any) {
	p := w.doc.problem(rule, yamlPos(n), format, args...)
	p.Field = problem.FieldPath(w.path...)
	w.probs = append(w.probs, p)
}

// stop records a problem after which the walk cannot usefully go on.
func (w *yamlWalker) stop(rule string, n *yaml.Node, format string, args ...any) {
	if !w.stopped {
		w.fail(rule, n, format, args...)
		w.stopped = true
	}
}

func yamlPos(n *yaml.Node) problem.Pos { return problem.Pos{Line: n.Line, Column: n.Column} }

func (w *yamlWalker) walk(n *yaml.Node, depth int) *Node {
	if w.stopped {
		return nil
	}
	if n.Kind == yaml.DocumentNode {
		if len(n.Content) == 0 {
			w.stop("parse.empty", n, "the document is empty")
			return nil
		}
		return w.walk(n.Content[0], depth)
	}
	if depth > MaxDepth {
		w.stop("parse.too-deep", n, "the document nests deeper than %d levels", MaxDepth)
		return nil
	}
	w.nodes++
	if w.nodes > MaxNodes {
		if w.outer != nil {
			w.stop("parse.alias-expansion", w.outer,
				"expanding YAML aliases would produce more than %d values", MaxNodes)
			w.probs[len(w.probs)-1].Field = problem.FieldPath(w.outerPath...)
		} else {
			w.stop("parse.too-many-values", n, "the document has more than %d values", MaxNodes)
		}
		return nil
	}
	out := &Node{Pos: yamlPos(n)}
	switch n.Kind {
	case yaml.AliasNode:
		if n.Alias == nil || w.active[n.Alias] {
			w.stop("parse.alias-expansion", n, "the YAML alias %q refers to itself", n.Value)
			return nil
		}
		if w.outer == nil {
			w.outer, w.outerPath = n, slices.Clone(w.path)
			defer func() { w.outer = nil }()
		}
		w.active[n.Alias] = true
		v := w.walk(n.Alias, depth)
		delete(w.active, n.Alias)
		if v == nil {
			return nil
		}
		c := *v
		c.Pos = out.Pos
		return &c
	case yaml.ScalarNode:
		w.scalar(n, out)
	case yaml.MappingNode:
		out.Kind = Map
		seen := map[string]problem.Pos{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind == yaml.AliasNode && k.Alias != nil {
				k = k.Alias
			}
			if k.Kind != yaml.ScalarNode {
				w.fail("parse.key-not-string", n.Content[i], "a key must be a plain string, not a %s", yamlKindName(k))
				continue
			}
			if k.Tag == "!!merge" {
				w.fail("parse.merge-key", k, "YAML merge keys (<<) are not supported: write the fields out")
				continue
			}
			w.path = append(w.path, k.Value)
			if first, dup := seen[k.Value]; dup {
				w.fail("parse.duplicate-key", k, "the key %q is already defined at line %d, column %d",
					k.Value, first.Line, first.Column)
				w.path = w.path[:len(w.path)-1]
				continue
			}
			seen[k.Value] = yamlPos(k)
			child := w.walk(v, depth+1)
			w.path = w.path[:len(w.path)-1]
			if child == nil {
				continue
			}
			out.Keys = append(out.Keys, k.Value)
			out.KeyPos = append(out.KeyPos, yamlPos(k))
			out.Values = append(out.Values, child)
		}
	case yaml.SequenceNode:
		out.Kind = List
		out.Items = make([]*Node, 0, len(n.Content))
		for i, it := range n.Content {
			w.path = append(w.path, strconv.Itoa(i))
			child := w.walk(it, depth+1)
			w.path = w.path[:len(w.path)-1]
			if child == nil {
				child = &Node{Pos: yamlPos(it)}
			}
			out.Items = append(out.Items, child)
		}
	}
	return out
}

func yamlKindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "sequence"
	}
	return "value"
}

func (w *yamlWalker) scalar(n *yaml.Node, out *Node) {
	switch tag := n.ShortTag(); tag {
	case "!!null":
		out.Kind = Null
	case "!!bool":
		var b bool
		if err := n.Decode(&b); err != nil {
			w.fail("parse.syntax", n, "%q is not a boolean", n.Value)
			return
		}
		out.Kind, out.Scalar = Bool, b
	case "!!int":
		var i int64
		if err := n.Decode(&i); err != nil {
			w.fail("parse.number", n, "the integer %s does not fit in 64 bits", n.Value)
			return
		}
		out.Kind, out.Scalar = Int, i
	case "!!float":
		if intText().MatchString(n.Value) {
			// yaml.v3 reads an integer too big for 64 bits as a float.
			w.fail("parse.number", n, "the integer %s does not fit in 64 bits", n.Value)
			return
		}
		var f float64
		if err := n.Decode(&f); err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			w.fail("parse.number", n, "%s is not a finite number", n.Value)
			return
		}
		out.Kind, out.Scalar = Float, f
	case "!!str", "!!timestamp":
		out.Kind, out.Scalar = String, n.Value
	default:
		w.fail("parse.tag", n, "the YAML tag %s is not supported", tag)
	}
}
