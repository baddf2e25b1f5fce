package document

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"

	"github.com/act-project/act/internal/problem"
)

// errStop aborts the JSON walk after a problem that ends parsing.
var errStop = errors.New("stop")

type jsonWalker struct {
	doc   *Document
	data  []byte
	lines *lineIndex
	dec   *json.Decoder
	nodes int
	probs problem.List
	path  []string
}

func (w *jsonWalker) add(rule string, pos problem.Pos, format string, args ...any) {
	p := w.doc.problem(rule, pos, format, args...)
	p.Field = problem.FieldPath(w.path...)
	w.probs = append(w.probs, p)
}

func parseJSON(d *Document, data []byte, lines *lineIndex) (*Node, problem.List) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	w := &jsonWalker{doc: d, data: data, lines: lines, dec: dec}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, problem.List{d.problem("parse.empty", problem.Pos{Line: 1, Column: 1}, "the document is empty")}
	}
	root, err := w.value(0)
	if err == nil {
		start := w.next()
		if _, terr := dec.Token(); !errors.Is(terr, io.EOF) {
			w.probs = append(w.probs, d.problem("parse.trailing-data", lines.pos(start),
				"unexpected data after the JSON value"))
		}
	}
	if len(w.probs) > 0 {
		return nil, w.probs
	}
	return root, nil
}

// next returns the offset of the next token, skipping blanks and the
// separators the decoder consumes lazily.
func (w *jsonWalker) next() int {
	off := int(w.dec.InputOffset())
	for off < len(w.data) {
		switch w.data[off] {
		case ' ', '\t', '\r', '\n', ':', ',':
			off++
			continue
		}
		break
	}
	return off
}

func (w *jsonWalker) syntax(err error) error {
	var se *json.SyntaxError
	off := len(w.data)
	msg := err.Error()
	if errors.As(err, &se) {
		off = int(se.Offset)
	} else if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		msg = "unexpected end of JSON input"
	}
	w.add("parse.syntax", w.lines.pos(off), "invalid JSON: %s", msg)
	return errStop
}

func (w *jsonWalker) value(depth int) (*Node, error) {
	start := w.next()
	pos := w.lines.pos(start)
	if depth > MaxDepth {
		w.add("parse.too-deep", pos,
			"the document nests deeper than %d levels", MaxDepth)
		return nil, errStop
	}
	w.nodes++
	if w.nodes > MaxNodes {
		w.add("parse.too-many-values", pos,
			"the document has more than %d values", MaxNodes)
		return nil, errStop
	}
	tok, err := w.dec.Token()
	if err != nil {
		return nil, w.syntax(err)
	}
	out := &Node{Pos: pos}
	switch t := tok.(type) {
	case nil:
		out.Kind = Null
	case bool:
		out.Kind, out.Scalar = Bool, t
	case string:
		out.Kind, out.Scalar = String, t
	case json.Number:
		s := t.String()
		if !strings.ContainsAny(s, ".eE") {
			i, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				w.add("parse.number", pos, "the integer %s does not fit in 64 bits", s)
				return out, nil
			}
			out.Kind, out.Scalar = Int, i
		} else {
			f, err := strconv.ParseFloat(s, 64)
			if err != nil {
				w.add("parse.number", pos, "%s is not a finite number", s)
				return out, nil
			}
			out.Kind, out.Scalar = Float, f
		}
	case json.Delim:
		if t == '[' {
			out.Kind = List
			for i := 0; w.dec.More(); i++ {
				w.path = append(w.path, strconv.Itoa(i))
				it, err := w.value(depth + 1)
				w.path = w.path[:len(w.path)-1]
				if err != nil {
					return nil, err
				}
				out.Items = append(out.Items, it)
			}
		} else {
			out.Kind = Map
			seen := map[string]problem.Pos{}
			for w.dec.More() {
				kpos := w.lines.pos(w.next())
				ktok, err := w.dec.Token()
				if err != nil {
					return nil, w.syntax(err)
				}
				key, _ := ktok.(string)
				w.path = append(w.path, key)
				v, err := w.value(depth + 1)
				if err != nil {
					return nil, err
				}
				if first, dup := seen[key]; dup {
					w.add("parse.duplicate-key", kpos,
						"the key %q is already defined at line %d, column %d", key, first.Line, first.Column)
					w.path = w.path[:len(w.path)-1]
					continue
				}
				w.path = w.path[:len(w.path)-1]
				seen[key] = kpos
				out.Keys = append(out.Keys, key)
				out.KeyPos = append(out.KeyPos, kpos)
				out.Values = append(out.Values, v)
			}
		}
		if _, err := w.dec.Token(); err != nil { // closing delimiter
			return nil, w.syntax(err)
		}
	}
	return out, nil
}
