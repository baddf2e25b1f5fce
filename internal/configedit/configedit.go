// Package configedit edits JSON and YAML configuration files the way a
// careful person would by hand: it sets and unsets dotted keys and keeps
// everything else as the file had it.
//
// # Keys
//
// A dotted key names a path through nested maps: "server.port" is the key
// "port" of the map under "server". Setting a key creates the maps it needs
// on the way (a null value on the way counts as absent); a key whose path
// runs through anything else — a string, a number, a list, a YAML alias — is
// an [ErrKeyConflict]. Unsetting a key that is not there changes nothing and
// is reported in [Result.Absent]. Set keys are applied in sorted order, then
// unset keys in the order given.
//
// # What is kept
//
//   - the order of the keys: a changed value stays where it was, a new key
//     goes at the end of its map;
//   - the indentation, detected from the file (two spaces when it cannot
//     be); for JSON, a file on one line stays on one line;
//   - for YAML, comments, quoting styles and flow or block styles;
//   - everything on the lines the edit does not touch: blank lines, spacing,
//     inline lists, escapes. The edit is computed on a normalised encoding
//     and replayed onto the original text as a line patch; when that patch
//     does not apply cleanly, or the patched text would not mean the edited
//     document, the normalised encoding is returned instead, which means the
//     same.
//
// The file must be UTF-8 and hold exactly one document whose top level is
// a map (an object); an empty YAML file is an empty map. Anything that does not parse
// — including duplicate keys — is an [ErrParse].
package configedit

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"
)

// Format is the syntax of a configuration file.
type Format string

// The formats Edit understands.
const (
	JSON Format = "json"
	YAML Format = "yaml"
)

// Sentinel errors, wrapped by every *Error.
var (
	// ErrParse: the file is not one valid document of its format.
	ErrParse = errors.New("the file does not parse")
	// ErrKeyConflict: a key's path runs through a value that is not a map.
	ErrKeyConflict = errors.New("a key runs through a value that is not a map")
)

// An Error is an edit that cannot be made. Kind is ErrParse or
// ErrKeyConflict; Key is the dotted key at fault (empty for ErrParse); Line
// and Column locate the problem in the file when known (1-based, else 0).
type Error struct {
	Kind   error
	Key    string
	Line   int
	Column int
	Msg    string
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("line %d: %s", e.Line, e.Msg)
	}
	return e.Msg
}

// Unwrap returns Kind.
func (e *Error) Unwrap() error { return e.Kind }

// Result is an edited file.
type Result struct {
	// Data is the edited file.
	Data []byte
	// Absent lists the unset keys that were not in the file.
	Absent []string
}

// Edit returns data with the dotted keys of set set to their values and the
// dotted keys of unset removed. Values are what encoding/json decodes into
// an any (maps, slices, float64, json.Number, string, bool, nil), Go
// integers, or (for JSON) a json.RawMessage, whose objects keep the order
// of their members.
func Edit(format Format, data []byte, set map[string]any, unset []string) (*Result, error) {
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if err := checkKey(k); err != nil {
			return nil, err
		}
	}
	for _, k := range unset {
		if err := checkKey(k); err != nil {
			return nil, err
		}
	}
	if !utf8.Valid(data) {
		return nil, &Error{Kind: ErrParse, Msg: "the file is not valid UTF-8"}
	}
	switch format {
	case JSON:
		return editJSON(data, keys, set, unset)
	case YAML:
		return editYAML(data, keys, set, unset)
	}
	return nil, fmt.Errorf("unknown config format %q", format)
}

func checkKey(k string) error {
	if !utf8.ValidString(k) {
		return &Error{Kind: ErrKeyConflict, Key: k, Msg: fmt.Sprintf("the key %q is not valid UTF-8", k)}
	}
	for _, p := range strings.Split(k, ".") {
		if p == "" {
			return &Error{Kind: ErrKeyConflict, Key: k,
				Msg: fmt.Sprintf("%q is not a dotted key: it has an empty part", k)}
		}
	}
	return nil
}

// conflict reports the key k whose prefix through part i is not a map.
func conflict(k string, i int, what string, line, col int) *Error {
	parts := strings.Split(k, ".")
	at := strings.Join(parts[:i], ".")
	msg := fmt.Sprintf("cannot reach %q: %q is %s, not a map", k, at, what)
	if i == 0 {
		msg = fmt.Sprintf("cannot reach %q: the document's top level is %s, not a map", k, what)
	}
	return &Error{Kind: ErrKeyConflict, Key: k, Line: line, Column: col, Msg: msg}
}

// normalize turns integral floats into integers so that 8080 stays 8080,
// json.Numbers into the number they hold, and nested values likewise.
func normalize(v any) any {
	switch x := v.(type) {
	case float64:
		if x == float64(int64(x)) && x >= -(1<<53) && x <= 1<<53 {
			return int64(x)
		}
		return x
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		if f, err := x.Float64(); err == nil {
			return f
		}
		return string(x)
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = normalize(e)
		}
		return m
	case []any:
		l := make([]any, len(x))
		for i, e := range x {
			l[i] = normalize(e)
		}
		return l
	}
	return v
}

func splitKey(k string) []string { return strings.Split(k, ".") }
