package agentsetup

import (
	"bytes"
	"fmt"
	"io/fs"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
)

// act edits a config.toml by its text: it cuts act's own tables out and
// writes its new ones in, and leaves every other byte as it was — the
// person's comments, order and layout included. go-toml's parser gives
// where each table and key starts; go-toml decodes the file before and
// after, and an edit whose result does not mean exactly the intended
// document (a form act does not cut, such as an inline array of hooks)
// is refused rather than written.

// A tomlFile is a config.toml: its text, what it means, and where its
// tables and keys are.
type tomlFile struct {
	path     string
	exists   bool
	mode     fs.FileMode
	data     []byte
	doc      map[string]any
	sections []tomlSection
	err      error // it exists and does not parse
}

// A tomlSection is a table header and what follows it up to the next
// one; the first section (header nil) is what precedes every header.
type tomlSection struct {
	header     []string
	array      bool
	start, end int
	keys       []tomlKey
}

// A tomlKey is a key = value line (or lines), with the key's full path
// (the section's header, then the key).
type tomlKey struct {
	path       []string
	start, end int
}

// A span is a range of bytes of a file.
type span struct{ start, end int }

// parseTOML reads data as TOML: what it means and where its parts are.
func parseTOML(data []byte) (doc map[string]any, sections []tomlSection, err error) {
	if err := toml.Unmarshal(data, &doc); err != nil {
		return nil, nil, err
	}
	if doc == nil {
		doc = map[string]any{}
	}
	sections = []tomlSection{{start: 0}}
	var p unstable.Parser
	p.Reset(data)
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			key, off := keyPath(e)
			start := lineStart(data, off)
			sections[len(sections)-1].end = start
			sections = append(sections, tomlSection{header: key, array: e.Kind == unstable.ArrayTable, start: start})
		case unstable.KeyValue:
			key, _ := keyPath(e)
			s := &sections[len(sections)-1]
			path := append(slices.Clone(s.header), key...)
			end := int(e.Raw.Offset + e.Raw.Length)
			s.keys = append(s.keys, tomlKey{path: path, start: lineStart(data, int(e.Raw.Offset)), end: lineEnd(data, end)})
		}
	}
	if err := p.Error(); err != nil {
		return nil, nil, err
	}
	sections[len(sections)-1].end = len(data)
	return doc, sections, nil
}

// keyPath is the key of a table header or key-value expression, and the
// offset of its first part.
func keyPath(e *unstable.Node) ([]string, int) {
	var key []string
	off := -1
	for it := e.Key(); it.Next(); {
		n := it.Node()
		if off < 0 {
			off = int(n.Raw.Offset)
		}
		key = append(key, string(n.Data))
	}
	return key, off
}

func lineStart(data []byte, off int) int {
	return bytes.LastIndexByte(data[:off], '\n') + 1
}

func lineEnd(data []byte, off int) int {
	if i := bytes.IndexByte(data[off:], '\n'); i >= 0 {
		return off + i + 1
	}
	return len(data)
}

func hasPrefix(path, prefix []string) bool {
	return len(path) >= len(prefix) && slices.Equal(path[:len(prefix)], prefix)
}

// groupSpans are where the [[hooks.EVENT]] tables of f are, one span per
// matcher group (its header through its [[hooks.EVENT.hooks]] tables),
// and each group's handler tables.
func (f *tomlFile) groupSpans(event string) (groups []span, handlers [][]span) {
	prefix := []string{"hooks", event}
	for _, s := range f.sections {
		switch {
		case s.array && slices.Equal(s.header, prefix):
			groups = append(groups, span{s.start, s.end})
			handlers = append(handlers, nil)
		case len(groups) > 0 && len(s.header) > 2 && hasPrefix(s.header, prefix) && groups[len(groups)-1].end == s.start:
			groups[len(groups)-1].end = s.end
			if s.array && len(s.header) == 3 && s.header[2] == "hooks" {
				handlers[len(handlers)-1] = append(handlers[len(handlers)-1], span{s.start, s.end})
			}
		}
	}
	return groups, handlers
}

// stateSpans are where hooks.state.KEY is defined in f: its tables and
// its key-value lines.
func (f *tomlFile) stateSpans(key string) []span {
	prefix := []string{"hooks", "state", key}
	var out []span
	for _, s := range f.sections {
		if hasPrefix(s.header, prefix) {
			out = append(out, span{s.start, s.end})
			continue
		}
		for _, k := range s.keys {
			if hasPrefix(k.path, prefix) {
				out = append(out, span{k.start, k.end})
			}
		}
	}
	return out
}

// trimTrailing moves the end of a span cut out of data back to the
// comment lines it ends with: they lead into what follows, and stay. It
// reports whether a blank line was cut from the end (what followed was
// set off by one).
func trimTrailing(data []byte, sp span) (span, bool) {
	end, keep, blank := sp.end, sp.end, false
	for end > sp.start {
		ls := lineStart(data, end-1)
		if ls < sp.start {
			break
		}
		line := strings.TrimSpace(string(data[ls:end]))
		if line != "" && !strings.HasPrefix(line, "#") {
			break
		}
		if line == "" {
			blank = true
		} else {
			keep = ls
		}
		end = ls
	}
	if keep == sp.start {
		return sp, false
	}
	if keep == sp.end {
		return sp, blank
	}
	return span{sp.start, keep}, blank
}

// A textEdit replaces the bytes of a span with text.
type textEdit struct {
	span
	text string
}

// applyEdits applies edits, which may not overlap, to data.
func applyEdits(data []byte, edits []textEdit) []byte {
	sort.SliceStable(edits, func(i, j int) bool { return edits[i].start < edits[j].start })
	var b bytes.Buffer
	at := 0
	for _, e := range edits {
		b.Write(data[at:e.start])
		b.WriteString(e.text)
		at = e.end
	}
	b.Write(data[at:])
	return b.Bytes()
}

// appendBlock is data with block after it, set off by one blank line
// unless data is empty.
func appendBlock(data []byte, block string) []byte {
	data = bytes.TrimRight(data, "\n")
	if len(data) == 0 {
		return []byte(block)
	}
	return append(append(data, "\n\n"...), block...)
}

// tomlString is s as a TOML basic string.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// tomlKeyPart is a key part as TOML writes it: bare when it can be.
func tomlKeyPart(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_')
	}) < 0 {
		return s
	}
	return tomlString(s)
}

// pruned is v with the empty tables and lists under "hooks" dropped: an
// empty [hooks.state] and none mean the same to Codex, and cutting act's
// last table leaves one or the other.
func pruned(doc map[string]any) map[string]any {
	out := make(map[string]any, len(doc))
	for k, v := range doc {
		out[k] = v
	}
	if h, ok := doc["hooks"]; ok {
		if p := prune(h); p == nil {
			delete(out, "hooks")
		} else {
			out["hooks"] = p
		}
	}
	return out
}

func prune(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := map[string]any{}
		for k, e := range x {
			if p := prune(e); p != nil {
				m[k] = p
			}
		}
		if len(m) == 0 {
			return nil
		}
		return m
	case []any:
		if len(x) == 0 {
			return nil
		}
		l := make([]any, len(x))
		for i, e := range x {
			l[i] = prune(e)
			if l[i] == nil {
				l[i] = map[string]any{}
			}
		}
		return l
	}
	return v
}

// sameTOML reports whether data means want (up to empty hooks tables).
func sameTOML(data []byte, want map[string]any) bool {
	var got map[string]any
	if err := toml.Unmarshal(data, &got); err != nil {
		return false
	}
	if got == nil {
		got = map[string]any{}
	}
	return reflect.DeepEqual(pruned(got), pruned(want))
}

// deepCopy copies a decoded TOML or JSON value.
func deepCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = deepCopy(e)
		}
		return m
	case []any:
		l := make([]any, len(x))
		for i, e := range x {
			l[i] = deepCopy(e)
		}
		return l
	}
	return v
}
