package configedit

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode"

	"go.yaml.in/yaml/v3"
)

func editYAML(data []byte, keys []string, set map[string]any, unset []string) (*Result, error) {
	doc, empty, err := parseYAML(data)
	if err != nil {
		return nil, err
	}
	root := doc.Content[0]
	st := detectYAMLStyle(root)
	base, err := st.encode(doc)
	if err != nil {
		return nil, err
	}

	res := new(Result)
	for _, k := range keys {
		n, err := valueNode(set[k])
		if err != nil {
			return nil, fmt.Errorf("encode the value of %q: %w", k, err)
		}
		if err := yamlSet(root, k, n); err != nil {
			return nil, err
		}
	}
	for _, k := range unset {
		found, err := yamlUnset(root, k)
		if err != nil {
			return nil, err
		}
		if !found {
			res.Absent = append(res.Absent, k)
		}
	}
	if empty {
		// Nothing but comments, if anything: keep them and append the
		// map (an empty map has nothing to add).
		if len(root.Content) == 0 {
			res.Data = data
			return res, nil
		}
		out, err := st.encode(doc)
		if err != nil {
			return nil, err
		}
		res.Data = append(withNewline(data), out...)
		if got, err := decodeAny(res.Data); err != nil || !reflect.DeepEqual(got, mustDecode(out)) {
			res.Data = out
		}
		return res, nil
	}

	edited, err := st.encode(doc)
	if err != nil {
		return nil, err
	}
	want, err := decodeAny(edited)
	if err != nil {
		return nil, fmt.Errorf("re-read the edited YAML: %w", err)
	}
	res.Data = rebaseChecked(data, base, edited, func(out []byte) bool {
		got, err := decodeAny(out)
		return err == nil && reflect.DeepEqual(got, want)
	})
	return res, nil
}

func withNewline(b []byte) []byte {
	if len(b) == 0 || bytes.HasSuffix(b, []byte("\n")) {
		return b
	}
	return append(append([]byte(nil), b...), '\n')
}

// parseYAML parses data into a document node whose content is one map.
// empty reports a file with no content but comments; it is given an empty
// map.
func parseYAML(data []byte) (doc *yaml.Node, empty bool, err error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	doc = new(yaml.Node)
	switch err := dec.Decode(doc); {
	case err == io.EOF:
		doc.Kind = 0
	case err != nil:
		return nil, false, yamlError(err)
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case err == nil:
		return nil, false, &Error{Kind: ErrParse, Line: extra.Line, Column: extra.Column,
			Msg: "the file holds more than one YAML document"}
	case err != io.EOF:
		return nil, false, yamlError(err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return &yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{newMap()}}, true, nil
	}
	// Decoding catches what the parser lets through: duplicate keys,
	// excessive aliasing, bad tags.
	var v any
	if err := doc.Decode(&v); err != nil {
		return nil, false, yamlError(err)
	}
	root := doc.Content[0]
	switch {
	case root.Kind == yaml.MappingNode:
	case isNull(root) && root.Value == "":
		doc.Content[0] = newMap()
		return doc, true, nil
	default:
		return nil, false, &Error{Kind: ErrKeyConflict, Line: root.Line, Column: root.Column,
			Msg: fmt.Sprintf("the document's top level is %s, not a map", describeYAML(root))}
	}
	return doc, false, nil
}

var yamlLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`line (\d+): `) })

func yamlError(err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msg = te.Errors[0]
	}
	e := &Error{Kind: ErrParse}
	if m := yamlLine().FindStringSubmatchIndex(msg); m != nil {
		e.Line, _ = strconv.Atoi(msg[m[2]:m[3]])
		msg = msg[:m[0]] + msg[m[1]:]
	}
	e.Msg = strings.Join(strings.Fields(msg), " ")
	return e
}

// mustDecode decodes YAML the encoder wrote.
func mustDecode(b []byte) any {
	v, _ := decodeAny(b)
	return v
}

func decodeAny(b []byte) (any, error) {
	var v any
	err := yaml.Unmarshal(b, &v)
	return v, err
}

func newMap() *yaml.Node { return &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"} }

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" }

func describeYAML(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "a YAML alias"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!str":
			return "a string"
		case "!!int", "!!float":
			return "a number"
		case "!!bool":
			return n.Value
		case "!!null":
			return "null"
		}
		return "a scalar"
	}
	return "a value"
}

// find returns the index in m.Content of the key k, or -1.
func find(m *yaml.Node, k string) int {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if kn := m.Content[i]; kn.Kind == yaml.ScalarNode && kn.Value == k {
			return i
		}
	}
	return -1
}

func yamlSet(root *yaml.Node, key string, val *yaml.Node) error {
	parts := strings.Split(key, ".")
	cur := root
	for i, p := range parts[:len(parts)-1] {
		j := find(cur, p)
		if j < 0 {
			m := newMap()
			appendPair(cur, keyNode(p), m)
			cur = m
			continue
		}
		switch v := cur.Content[j+1]; {
		case v.Kind == yaml.MappingNode:
			cur = v
		case isNull(v):
			m := newMap()
			m.HeadComment, m.LineComment, m.FootComment = v.HeadComment, v.LineComment, v.FootComment
			cur.Content[j+1] = m
			cur = m
		default:
			return conflict(key, i+1, describeYAML(v), v.Line, v.Column)
		}
	}
	last := parts[len(parts)-1]
	if j := find(cur, last); j >= 0 {
		keepStyle(cur.Content[j+1], val)
		cur.Content[j+1] = val
	} else {
		appendPair(cur, keyNode(last), val)
	}
	return nil
}

// appendPair appends k: v to the map m. A comment below m's last pair (the
// parser gives it to the last key) stays below the map's last pair.
func appendPair(m, k, v *yaml.Node) {
	if n := len(m.Content); n >= 2 {
		prev := m.Content[n-2]
		k.FootComment, prev.FootComment = prev.FootComment, ""
	}
	m.Content = append(m.Content, k, v)
}

func yamlUnset(root *yaml.Node, key string) (bool, error) {
	parts := strings.Split(key, ".")
	cur := root
	for i, p := range parts[:len(parts)-1] {
		j := find(cur, p)
		if j < 0 {
			return false, nil
		}
		switch v := cur.Content[j+1]; {
		case v.Kind == yaml.MappingNode:
			cur = v
		case isNull(v):
			return false, nil
		default:
			return false, conflict(key, i+1, describeYAML(v), v.Line, v.Column)
		}
	}
	j := find(cur, parts[len(parts)-1])
	if j < 0 {
		return false, nil
	}
	if j == len(cur.Content)-2 && j >= 2 {
		// Keep the comment below the map's last pair.
		cur.Content[j-2].FootComment = cur.Content[j].FootComment
	}
	cur.Content = append(cur.Content[:j], cur.Content[j+2:]...)
	return true, nil
}

// keyNode is the node of a new key, quoted when it would otherwise read as
// something other than a string.
func keyNode(k string) *yaml.Node {
	n := new(yaml.Node)
	if err := n.Encode(k); err != nil {
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: k, Style: yaml.DoubleQuotedStyle}
	}
	quotePlain(n)
	return n
}

func valueNode(v any) (*yaml.Node, error) {
	n := new(yaml.Node)
	if err := n.Encode(normalize(v)); err != nil {
		return nil, err
	}
	quotePlain(n)
	return n, nil
}

// quotePlain double-quotes every plain string below n that would not read
// back as the same string (the encoder leaves "00" plain, which reads as a
// number).
func quotePlain(n *yaml.Node) {
	if n.Kind == yaml.ScalarNode && n.Style == 0 && n.ShortTag() == "!!str" {
		var v any
		err := yaml.Unmarshal([]byte(n.Value), &v)
		if s, ok := v.(string); err != nil || !ok || s != n.Value {
			n.Style = yaml.DoubleQuotedStyle
		}
	}
	for _, c := range n.Content {
		quotePlain(c)
	}
}

// keepStyle carries what belongs to the place of a value over to the value
// replacing it: comments, and the quoting of a string replacing a string.
func keepStyle(old, n *yaml.Node) {
	if old.Kind != yaml.ScalarNode || n.Kind != yaml.ScalarNode {
		n.HeadComment = old.HeadComment
		if old.Kind == n.Kind && old.Style&yaml.FlowStyle != 0 {
			n.Style |= yaml.FlowStyle
		}
		return
	}
	n.HeadComment, n.LineComment, n.FootComment = old.HeadComment, old.LineComment, old.FootComment
	const quoted = yaml.SingleQuotedStyle | yaml.DoubleQuotedStyle
	if n.ShortTag() == "!!str" && old.ShortTag() == "!!str" && old.Style&quoted != 0 &&
		n.Style&^quoted == 0 && plainText(n.Value) {
		n.Style = old.Style & quoted
	}
}

// plainText reports whether s is printable on one line, so that any
// quoting style can hold it.
func plainText(s string) bool {
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

// yamlStyle is the indentation of a YAML file.
type yamlStyle struct {
	indent     int
	compactSeq bool // "- " counts as indentation: lists under a key are not indented
}

// detectYAMLStyle reads the indentation of the first nested block map, and
// whether block lists under a key are indented, from the positions the
// parser recorded. Two spaces and indented lists when nothing tells.
func detectYAMLStyle(root *yaml.Node) yamlStyle {
	st := yamlStyle{indent: 2}
	var gotIndent, gotSeq bool
	seqD := 0
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		if gotIndent && gotSeq {
			return
		}
		switch n.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				if v.Style&yaml.FlowStyle == 0 && len(v.Content) > 0 && v.Content[0].Line > k.Line {
					d := v.Content[0].Column - k.Column
					switch {
					case v.Kind == yaml.MappingNode && !gotIndent && d >= 2 && d <= 9:
						st.indent, gotIndent = d, true
					case v.Kind == yaml.SequenceNode && !gotSeq:
						// An item's column is its content's, after "- ".
						seqD, gotSeq = d, true
					}
				}
				walk(v)
			}
		case yaml.SequenceNode:
			for _, c := range n.Content {
				walk(c)
			}
		}
	}
	walk(root)
	// With indent n, an indented list has its items' content at n+2, a
	// compact one at n.
	st.compactSeq = gotSeq && seqD < st.indent+2
	return st
}

func (st yamlStyle) encode(doc *yaml.Node) ([]byte, error) {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(st.indent)
	if st.compactSeq {
		enc.CompactSeqIndent()
	}
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
