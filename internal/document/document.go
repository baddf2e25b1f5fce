// Package document parses one strict YAML 1.2 or JSON document into a tree
// that keeps the line and column of every key and value, so that every later
// check (schema, rules, policy) can point at the user's file.
//
// The parser is built for untrusted input. Each of these is a clear error
// with a position, found in milliseconds, never a hang, a panic or a silent
// repair:
//
//   - more than [MaxSize] bytes, NUL bytes, invalid UTF-8;
//   - duplicate keys (YAML and JSON), non-scalar keys;
//   - a second YAML document, trailing data after a JSON value;
//   - nesting deeper than [MaxDepth];
//   - alias expansion that would produce more than [MaxNodes] nodes;
//   - explicit tags other than the core schema's.
//
// YAML goes through go.yaml.in/yaml/v3's node API (the decoder behind
// sigs.k8s.io/yaml, which drops positions); JSON goes through encoding/json's
// token stream, so that JSON's stricter grammar (no comments, no trailing
// data) is kept.
package document

import (
	"bytes"
	"fmt"
	"sort"
	"strconv"
	"unicode/utf8"

	"github.com/act-project/act/internal/problem"
)

// Limits on untrusted documents.
const (
	// MaxSize is the largest document accepted, in bytes.
	MaxSize = 1 << 20
	// MaxDepth is the deepest nesting of maps and lists accepted.
	MaxDepth = 64
	// MaxNodes bounds the number of nodes after alias expansion.
	MaxNodes = 100_000
)

// Kind is the kind of a node.
type Kind uint8

// The node kinds.
const (
	Null Kind = iota
	Bool
	Int
	Float
	String
	Map
	List
)

var kindNames = [...]string{"null", "boolean", "integer", "number", "string", "object", "list"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// A Node is one value of the document with its position.
type Node struct {
	Kind Kind
	// Scalar is nil, bool, int64, float64 or string, by Kind.
	Scalar any
	// Keys and Values hold a map's entries in document order; KeyPos the
	// position of each key.
	Keys   []string
	Values []*Node
	KeyPos []problem.Pos
	// Items holds a list's elements.
	Items []*Node
	// Pos is where the value starts.
	Pos problem.Pos
}

// Get returns the value of key in a map node.
func (n *Node) Get(key string) (*Node, problem.Pos, bool) {
	if n == nil || n.Kind != Map {
		return nil, problem.Pos{}, false
	}
	for i, k := range n.Keys {
		if k == key {
			return n.Values[i], n.KeyPos[i], true
		}
	}
	return nil, problem.Pos{}, false
}

// Value converts the node to a plain Go value: map[string]any, []any,
// string, bool, int64, float64 or nil.
func (n *Node) Value() any {
	switch n.Kind {
	case Map:
		m := make(map[string]any, len(n.Keys))
		for i, k := range n.Keys {
			m[k] = n.Values[i].Value()
		}
		return m
	case List:
		l := make([]any, len(n.Items))
		for i, it := range n.Items {
			l[i] = it.Value()
		}
		return l
	}
	return n.Scalar
}

// A Document is a parsed file.
type Document struct {
	// Name is the file name used in positions ("<stdin>" for standard input).
	Name string
	// Format is "yaml" or "json".
	Format string
	// Root is the top-level value.
	Root *Node
}

// Value returns the document as a plain Go value (see [Node.Value]).
func (d *Document) Value() any { return d.Root.Value() }

// Pos returns the position of the field at path: for a map key, where the key
// is written; for a list element, where the element starts. When the path
// does not exist, the position of its deepest existing ancestor is returned.
func (d *Document) Pos(path ...string) problem.Pos {
	n := d.Root
	pos := n.Pos
	for _, e := range path {
		switch n.Kind {
		case Map:
			v, kp, ok := n.Get(e)
			if !ok {
				return pos
			}
			n, pos = v, kp
		case List:
			i, err := strconv.Atoi(e)
			if err != nil || i < 0 || i >= len(n.Items) {
				return pos
			}
			n = n.Items[i]
			pos = n.Pos
		default:
			return pos
		}
	}
	return pos
}

// Problem returns a parse-layer problem at pos in d.
func (d *Document) problem(rule string, pos problem.Pos, format string, args ...any) problem.Problem {
	return newProblem(d.Name, rule, pos, format, args...)
}

func newProblem(name, rule string, pos problem.Pos, format string, args ...any) problem.Problem {
	return problem.Problem{
		Rule:    rule,
		File:    name,
		Line:    pos.Line,
		Column:  pos.Column,
		Message: fmt.Sprintf(format, args...),
		Layer:   problem.Parse,
	}
}

// Options choose the format. The zero value picks JSON for names ending in
// ".json" and for content whose first non-blank byte is '{' or '[' read from
// standard input, YAML otherwise.
type Options struct {
	// Format forces "yaml" or "json".
	Format string
}

// StdinName is the name standard input is given in positions.
const StdinName = "<stdin>"

// Parse parses data as one strict document. name is used in positions.
// On failure the returned list holds every problem found (at least one).
func Parse(name string, data []byte) (*Document, problem.List) {
	return ParseOptions(name, data, Options{})
}

// ParseOptions is [Parse] with options.
func ParseOptions(name string, data []byte, opts Options) (*Document, problem.List) {
	if len(data) > MaxSize {
		return nil, problem.List{newProblem(name, "parse.too-large", problem.Pos{Line: 1, Column: 1},
			"the document is larger than the limit of %d bytes (1 MiB)", MaxSize)}
	}
	lines := newLineIndex(data)
	if i := bytes.IndexByte(data, 0); i >= 0 {
		return nil, problem.List{newProblem(name, "parse.nul-byte", lines.pos(i),
			"the document contains a NUL byte")}
	}
	if !utf8.Valid(data) {
		i := firstInvalidUTF8(data)
		return nil, problem.List{newProblem(name, "parse.invalid-utf8", lines.pos(i),
			"the document is not valid UTF-8")}
	}
	format := opts.Format
	if format == "" {
		format = detectFormat(name, data)
	}
	d := &Document{Name: name, Format: format}
	var probs problem.List
	if format == "json" {
		d.Root, probs = parseJSON(d, data, lines)
	} else {
		d.Root, probs = parseYAML(d, data, lines)
	}
	if len(probs) > 0 {
		sort.SliceStable(probs, func(i, j int) bool {
			if probs[i].Line != probs[j].Line {
				return probs[i].Line < probs[j].Line
			}
			return probs[i].Column < probs[j].Column
		})
		return nil, probs
	}
	return d, nil
}

func detectFormat(name string, data []byte) string {
	if len(name) >= 5 && name[len(name)-5:] == ".json" {
		return "json"
	}
	if name == StdinName || name == "-" {
		t := bytes.TrimLeft(data, " \t\r\n")
		if len(t) > 0 && (t[0] == '{' || t[0] == '[') {
			return "json"
		}
	}
	return "yaml"
}

func firstInvalidUTF8(b []byte) int {
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size <= 1 {
			return i
		}
		i += size
	}
	return len(b)
}

// lineIndex maps byte offsets to 1-based line and rune column. It
// remembers the last offset it mapped, so that the mostly increasing offsets
// of a parse cost time in proportion to the distance between them, not to
// the length of the line (a 1 MiB one-line JSON document stays linear).
type lineIndex struct {
	data   []byte
	starts []int

	lastOff, lastLine, lastCol int
}

func newLineIndex(data []byte) *lineIndex {
	starts := []int{0}
	for i, c := range data {
		if c == '\n' {
			starts = append(starts, i+1)
		}
	}
	return &lineIndex{data: data, starts: starts}
}

func (l *lineIndex) pos(off int) problem.Pos {
	if off > len(l.data) {
		off = len(l.data)
	}
	line := sort.Search(len(l.starts), func(i int) bool { return l.starts[i] > off }) - 1
	var col int
	if l.lastCol > 0 && line == l.lastLine && off >= l.lastOff {
		col = l.lastCol + utf8.RuneCount(l.data[l.lastOff:off])
	} else {
		col = utf8.RuneCount(l.data[l.starts[line]:off]) + 1
	}
	l.lastOff, l.lastLine, l.lastCol = off, line, col
	return problem.Pos{Line: line + 1, Column: col}
}

// lineStart returns the position of the first non-blank character of a
// 1-based line, for errors that only know their line.
func (l *lineIndex) lineStart(line int) problem.Pos {
	if line < 1 {
		line = 1
	}
	if line > len(l.starts) {
		line = len(l.starts)
	}
	off := l.starts[line-1]
	for off < len(l.data) && (l.data[off] == ' ' || l.data[off] == '\t') {
		off++
	}
	return l.pos(off)
}
