package configedit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// A JSON document is held as a tree that keeps the order of object members
// and the text of numbers: *object, []any, json.Number, string, bool, nil.

type object struct {
	members []member
}

type member struct {
	key string
	val any
}

func (o *object) find(k string) int {
	for i, m := range o.members {
		if m.key == k {
			return i
		}
	}
	return -1
}

// maxJSONDepth bounds the nesting of a JSON file.
const maxJSONDepth = 1000

func editJSON(data []byte, keys []string, set map[string]any, unset []string) (*Result, error) {
	root, err := parseJSON(data)
	if err != nil {
		return nil, err
	}
	st := detectJSONStyle(data)
	base := st.encode(root)

	res := new(Result)
	for _, k := range keys {
		if err := jsonSet(root, k, toJSON(set[k])); err != nil {
			return nil, err
		}
	}
	for _, k := range unset {
		found, err := jsonUnset(root, k)
		if err != nil {
			return nil, err
		}
		if !found {
			res.Absent = append(res.Absent, k)
		}
	}
	edited := st.encode(root)
	res.Data = rebaseChecked(data, base, edited, func(out []byte) bool {
		t, err := parseJSON(out)
		return err == nil && bytes.Equal(st.encode(t), edited)
	})
	return res, nil
}

func parseJSON(data []byte) (*object, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	p := &jsonParser{dec: dec, data: data}
	tok, err := dec.Token()
	if err == io.EOF {
		return nil, &Error{Kind: ErrParse, Msg: "the file is empty"}
	}
	if err != nil {
		return nil, p.syntax(err)
	}
	v, err := p.value(tok, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		line, col := position(data, dec.InputOffset())
		return nil, &Error{Kind: ErrParse, Line: line, Column: col, Msg: "data follows the JSON value"}
	}
	o, ok := v.(*object)
	if !ok {
		return nil, &Error{Kind: ErrKeyConflict, Line: 1, Column: 1,
			Msg: fmt.Sprintf("the document's top level is %s, not an object", describeJSON(v))}
	}
	return o, nil
}

type jsonParser struct {
	dec  *json.Decoder
	data []byte
}

func (p *jsonParser) syntax(err error) error {
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		line, col := position(p.data, se.Offset)
		return &Error{Kind: ErrParse, Line: line, Column: col, Msg: se.Error()}
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return &Error{Kind: ErrParse, Msg: "the file ends in the middle of a JSON value"}
	}
	return &Error{Kind: ErrParse, Msg: err.Error()}
}

func (p *jsonParser) value(tok json.Token, depth int) (any, error) {
	if depth > maxJSONDepth {
		line, col := position(p.data, p.dec.InputOffset())
		return nil, &Error{Kind: ErrParse, Line: line, Column: col,
			Msg: fmt.Sprintf("the document nests deeper than %d levels", maxJSONDepth)}
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return tok, nil // string, json.Number, bool or nil
	}
	switch d {
	case '{':
		o := new(object)
		seen := map[string]bool{}
		for p.dec.More() {
			kt, err := p.dec.Token()
			if err != nil {
				return nil, p.syntax(err)
			}
			k := kt.(string)
			if seen[k] {
				line, col := position(p.data, p.dec.InputOffset())
				return nil, &Error{Kind: ErrParse, Line: line, Column: col,
					Msg: fmt.Sprintf("the key %q appears twice in the same object", k)}
			}
			seen[k] = true
			vt, err := p.dec.Token()
			if err != nil {
				return nil, p.syntax(err)
			}
			v, err := p.value(vt, depth+1)
			if err != nil {
				return nil, err
			}
			o.members = append(o.members, member{k, v})
		}
		if _, err := p.dec.Token(); err != nil {
			return nil, p.syntax(err)
		}
		return o, nil
	case '[':
		l := []any{}
		for p.dec.More() {
			vt, err := p.dec.Token()
			if err != nil {
				return nil, p.syntax(err)
			}
			v, err := p.value(vt, depth+1)
			if err != nil {
				return nil, err
			}
			l = append(l, v)
		}
		if _, err := p.dec.Token(); err != nil {
			return nil, p.syntax(err)
		}
		return l, nil
	}
	return nil, &Error{Kind: ErrParse, Msg: fmt.Sprintf("unexpected %q", d)}
}

// position converts a byte offset into a 1-based line and column.
func position(data []byte, off int64) (line, col int) {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	before := data[:off]
	line = bytes.Count(before, []byte("\n")) + 1
	col = int(off) - (bytes.LastIndexByte(before, '\n') + 1) + 1
	return line, col
}

func describeJSON(v any) string {
	switch x := v.(type) {
	case []any:
		return "a list"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return strconv.FormatBool(x)
	case nil:
		return "null"
	}
	return "a value"
}

func jsonSet(root *object, key string, val any) error {
	parts := strings.Split(key, ".")
	cur := root
	for i, p := range parts[:len(parts)-1] {
		j := cur.find(p)
		if j < 0 {
			o := new(object)
			cur.members = append(cur.members, member{p, o})
			cur = o
			continue
		}
		switch x := cur.members[j].val.(type) {
		case *object:
			cur = x
		case nil:
			o := new(object)
			cur.members[j].val = o
			cur = o
		default:
			return conflict(key, i+1, describeJSON(x), 0, 0)
		}
	}
	last := parts[len(parts)-1]
	if j := cur.find(last); j >= 0 {
		cur.members[j].val = val
	} else {
		cur.members = append(cur.members, member{last, val})
	}
	return nil
}

func jsonUnset(root *object, key string) (bool, error) {
	parts := strings.Split(key, ".")
	cur := root
	for i, p := range parts[:len(parts)-1] {
		j := cur.find(p)
		if j < 0 {
			return false, nil
		}
		switch x := cur.members[j].val.(type) {
		case *object:
			cur = x
		case nil:
			return false, nil
		default:
			return false, conflict(key, i+1, describeJSON(x), 0, 0)
		}
	}
	j := cur.find(parts[len(parts)-1])
	if j < 0 {
		return false, nil
	}
	cur.members = append(cur.members[:j], cur.members[j+1:]...)
	return true, nil
}

// toJSON converts a value decoded by encoding/json (or a Go integer) into
// the tree form. Map keys are sorted, as encoding/json does; a
// json.RawMessage keeps the order it has (nil when it is not JSON).
func toJSON(v any) any {
	switch x := v.(type) {
	case nil, string, bool, json.Number:
		return x
	case float64:
		b, err := json.Marshal(x)
		if err != nil { // NaN or an infinity: not JSON
			return nil
		}
		return json.Number(b)
	case int:
		return json.Number(strconv.Itoa(x))
	case int64:
		return json.Number(strconv.FormatInt(x, 10))
	case json.RawMessage:
		// As written: the order of an object's members too.
		dec := json.NewDecoder(bytes.NewReader(x))
		dec.UseNumber()
		p := &jsonParser{dec: dec, data: x}
		tok, err := dec.Token()
		if err != nil {
			return nil
		}
		v, err := p.value(tok, 0)
		if err != nil {
			return nil
		}
		return v
	case []any:
		l := make([]any, len(x))
		for i, e := range x {
			l[i] = toJSON(e)
		}
		return l
	case map[string]any:
		o := new(object)
		for _, k := range sortedKeys(x) {
			o.members = append(o.members, member{k, toJSON(x[k])})
		}
		return o
	}
	// Anything else goes through encoding/json.
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var w any
	if dec.Decode(&w) != nil {
		return nil
	}
	return toJSON(w)
}

// jsonStyle is how a JSON file is laid out: one line, or an indent unit.
type jsonStyle struct {
	compact bool
	indent  string
}

// detectJSONStyle reads the layout of data: a document on one line stays on
// one line; otherwise the indent unit is the leading white space of the
// first indented line, two spaces when there is none.
func detectJSONStyle(data []byte) jsonStyle {
	t := bytes.TrimSpace(data)
	if !bytes.Contains(t, []byte("\n")) {
		return jsonStyle{compact: true}
	}
	for _, l := range strings.Split(string(t), "\n")[1:] {
		l = strings.TrimSuffix(l, "\r")
		ind := l[:len(l)-len(strings.TrimLeft(l, " \t"))]
		if ind != "" && len(ind) < len(l) {
			return jsonStyle{indent: ind}
		}
	}
	return jsonStyle{indent: "  "}
}

func (s jsonStyle) encode(root *object) []byte {
	var b bytes.Buffer
	s.write(&b, root, 0)
	return b.Bytes()
}

func (s jsonStyle) write(b *bytes.Buffer, v any, depth int) {
	switch x := v.(type) {
	case *object:
		if len(x.members) == 0 {
			b.WriteString("{}")
			return
		}
		b.WriteByte('{')
		for i, m := range x.members {
			if i > 0 {
				b.WriteByte(',')
			}
			s.newline(b, depth+1)
			writeJSONString(b, m.key)
			b.WriteByte(':')
			if !s.compact {
				b.WriteByte(' ')
			}
			s.write(b, m.val, depth+1)
		}
		s.newline(b, depth)
		b.WriteByte('}')
	case []any:
		if len(x) == 0 {
			b.WriteString("[]")
			return
		}
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			s.newline(b, depth+1)
			s.write(b, e, depth+1)
		}
		s.newline(b, depth)
		b.WriteByte(']')
	case string:
		writeJSONString(b, x)
	case json.Number:
		b.WriteString(string(x))
	case bool:
		b.WriteString(strconv.FormatBool(x))
	default:
		b.WriteString("null")
	}
}

func (s jsonStyle) newline(b *bytes.Buffer, depth int) {
	if s.compact {
		return
	}
	b.WriteByte('\n')
	for range depth {
		b.WriteString(s.indent)
	}
}

func writeJSONString(b *bytes.Buffer, s string) {
	var sb bytes.Buffer
	enc := json.NewEncoder(&sb)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	b.Write(bytes.TrimSuffix(sb.Bytes(), []byte("\n")))
}
