// Package claudeedit makes a Claude Code Edit (or MultiEdit) of a file as
// Claude Code's own Edit tool makes it, so that act plans exactly the
// bytes Claude Code would write (docs/agents.md, "Edit as Claude Code
// makes it").
//
// Claude Code 2.1.332's Edit reads a UTF-8 file with every CRLF made LF
// and notes its line endings (CRLF when its first 4096 characters hold
// more CRLF than bare LF); it finds old_string exactly, else with curly
// quotes read as straight ones, else with \uXXXX escapes and the
// characters they stand for swapped; it gives new_string the quote style
// (and escape style) the file uses where old_string was found; deleting a
// text that ends a line takes the line's newline too; and it writes the
// result with the file's line endings back (every LF made CRLF in a CRLF
// file). Uniqueness counts occurrences as JavaScript's indexOf does: a
// second match starts after the first one ends.
//
// All of it works on UTF-16 code units, as JavaScript strings do, so
// that positions and lengths agree with Claude Code's to the unit.
package claudeedit

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// An Edit is one replacement: Claude Code's old_string, new_string and
// replace_all.
type Edit struct {
	Old, New   string
	ReplaceAll bool
}

// An Error is an edit Claude Code's Edit refuses, with Claude Code's own
// message.
type Error struct{ Msg string }

func (e *Error) Error() string { return e.Msg }

func refuse(format string, a ...any) error { return &Error{fmt.Sprintf(format, a...)} }

// Claude Code's messages, as it words them.
const (
	msgNotFound     = "String to replace not found in file."
	msgNoChange     = "No changes to make: old_string and new_string are exactly the same."
	msgExists       = "Cannot create new file - file already exists."
	msgFailed       = "String not found in file. Failed to apply edit."
	msgSame         = "Original and edited file match exactly. Failed to apply edit."
	msgSubstring    = "Cannot edit file: old_string is a substring of a new_string from a previous edit."
	msgDoesNotExist = "File does not exist."
)

// lineEndingsSample is how many UTF-16 units of a file Claude Code looks
// at to tell its line endings.
const lineEndingsSample = 4096

// Apply returns the bytes Claude Code's Edit writes for edits of the file
// that holds data (exists false: there is none, and only an edit with an
// empty old string creates it). One edit is an Edit; more are a
// MultiEdit, each made on the result of the one before. A file that is
// not UTF-8 text (a NUL byte, invalid UTF-8, a UTF-16 byte-order mark) is
// refused: act plans only what it reads exactly as Claude Code does.
func Apply(data []byte, exists bool, edits []Edit) ([]byte, error) {
	if len(edits) == 0 {
		return nil, errors.New("no edits")
	}
	crlf := false
	var content []uint16
	if exists {
		if err := isText(data); err != nil {
			return nil, err
		}
		raw := utf16.Encode([]rune(string(data)))
		crlf = countsCRLF(raw[:min(len(raw), lineEndingsSample)])
		content = replaceAll(raw, u16("\r\n"), u16("\n"))
	}
	for _, e := range edits {
		if e.Old == e.New {
			return nil, refuse(msgNoChange)
		}
	}
	var out []uint16
	if len(edits) == 1 {
		var err error
		if out, err = applyOne(content, exists, edits[0]); err != nil {
			return nil, err
		}
	} else {
		if !exists {
			return nil, refuse(msgDoesNotExist)
		}
		var err error
		if out, err = applyMany(content, edits); err != nil {
			return nil, err
		}
	}
	if crlf {
		out = replaceAll(replaceAll(out, u16("\r\n"), u16("\n")), u16("\n"), u16("\r\n"))
	}
	return []byte(string(utf16.Decode(out))), nil
}

// isText refuses what Claude Code does not read as UTF-8 text, and a
// UTF-16 file, which it reads but act does not.
func isText(data []byte) error {
	switch {
	case bytes.HasPrefix(data, []byte{0xff, 0xfe}), bytes.HasPrefix(data, []byte{0xfe, 0xff}):
		return errors.New("the file is UTF-16 text: act plans edits of UTF-8 text only")
	case bytes.IndexByte(data[:min(len(data), 8192)], 0) >= 0:
		return errors.New("the file has NUL bytes in its first 8 KB: it is not text")
	case !utf8.Valid(data):
		return errors.New("the file is not valid UTF-8")
	}
	return nil
}

// countsCRLF is Claude Code's line-ending test of a file's start: more
// CRLF than bare LF.
func countsCRLF(s []uint16) bool {
	crlf, lf := 0, 0
	for i, c := range s {
		if c == '\n' {
			if i > 0 && s[i-1] == '\r' {
				crlf++
			} else {
				lf++
			}
		}
	}
	return crlf > lf
}

// applyOne is Claude Code's Edit of content (LF-normalised).
func applyOne(content []uint16, exists bool, e Edit) ([]uint16, error) {
	old, new := u16(e.Old), u16(e.New)
	if !exists && len(old) > 0 {
		return nil, refuse(msgDoesNotExist)
	}
	if len(old) == 0 {
		if !blank(content) {
			return nil, refuse(msgExists)
		}
		// A new file, or an empty one (white space only), takes
		// new_string whole; a byte-order mark stays.
		if len(new) > 0 && len(content) > 0 && content[0] == 0xfeff && new[0] != 0xfeff {
			new = append([]uint16{0xfeff}, new...)
		}
		return applyEdits(content, []edit{{nil, new, e.ReplaceAll}})
	}
	actual := findActual(content, old)
	if actual == nil {
		return nil, refuse("%s\nString: %s", msgNotFound, e.Old)
	}
	if err := unique(content, actual, e.ReplaceAll, e.Old); err != nil {
		return nil, err
	}
	return applyEdits(content, []edit{{actual, styled(old, actual, new), e.ReplaceAll}})
}

// blank says s is only JavaScript's white space (what its trim()
// removes), or empty.
func blank(s []uint16) bool {
	for _, c := range s {
		switch {
		case c >= 9 && c <= 13, c == ' ', c == 0xa0, c == 0x1680, c >= 0x2000 && c <= 0x200a,
			c == 0x2028, c == 0x2029, c == 0x202f, c == 0x205f, c == 0x3000, c == 0xfeff:
		default:
			return false
		}
	}
	return true
}

// applyMany is a MultiEdit: each edit found as Edit finds it, in the file
// as the edits before it left it.
func applyMany(content []uint16, edits []Edit) ([]uint16, error) {
	cur := content
	var made []edit
	for _, e := range edits {
		old, new := u16(e.Old), u16(e.New)
		if len(old) == 0 {
			return nil, refuse("%s\nString: %s", msgNotFound, e.Old)
		}
		actual := findActual(cur, old)
		if actual == nil {
			return nil, refuse("%s\nString: %s", msgNotFound, e.Old)
		}
		ed := edit{actual, styled(old, actual, new), e.ReplaceAll}
		next, err := applyEdits(cur, []edit{ed})
		if err != nil {
			return nil, err
		}
		made, cur = append(made, ed), next
	}
	return applyEdits(content, made)
}

type edit struct {
	old, new []uint16
	all      bool
}

// applyEdits is Claude Code's application of edits to content, in order.
func applyEdits(content []uint16, edits []edit) ([]uint16, error) {
	r := content
	var news [][]uint16
	for _, e := range edits {
		trimmed := e.old
		for len(trimmed) > 0 && trimmed[len(trimmed)-1] == '\n' {
			trimmed = trimmed[:len(trimmed)-1]
		}
		for _, n := range news {
			if len(trimmed) > 0 && index(n, trimmed, 0) >= 0 {
				return nil, refuse(msgSubstring)
			}
		}
		if err := unique(r, e.old, e.all, string(utf16.Decode(e.old))); err != nil {
			return nil, err
		}
		before := r
		if len(e.old) == 0 {
			r = e.new
		} else {
			r = replaceEdit(r, e.old, e.new, e.all)
		}
		if equal(r, before) {
			return nil, refuse(msgFailed)
		}
		news = append(news, e.new)
	}
	if equal(r, content) {
		return nil, refuse(msgSame)
	}
	return r, nil
}

// replaceEdit replaces old by new in content (the first occurrence, or
// every one): deleting a text that does not end a line takes the newline
// after it too, where the file has one there.
func replaceEdit(content, old, new []uint16, all bool) []uint16 {
	if len(new) == 0 && (len(old) == 0 || old[len(old)-1] != '\n') {
		withNL := append(append([]uint16{}, old...), '\n')
		if index(content, withNL, 0) >= 0 {
			old = withNL
		}
	}
	if all {
		return replaceAll(content, old, new)
	}
	i := index(content, old, 0)
	if i < 0 {
		return content
	}
	return concat(content[:i], new, content[i+len(old):])
}

// unique refuses old found more than once (non-overlapping, as
// JavaScript's indexOf from the end of the first) without replace_all.
func unique(content, old []uint16, all bool, shown string) error {
	if all || len(old) == 0 {
		return nil
	}
	i := index(content, old, 0)
	if i < 0 || index(content, old, i+len(old)) < 0 {
		return nil
	}
	return refuse("Found %d matches of the string to replace, but replace_all is false. To replace all occurrences, set replace_all to true. To replace only one occurrence, please provide more context to uniquely identify the instance.\nString: %s", count(content, old), shown)
}

// Curly quotes, as Claude Code names them.
const (
	leftSingle  = 0x2018 // ‘
	rightSingle = 0x2019 // ’
	leftDouble  = 0x201c // “
	rightDouble = 0x201d // ”
)

// straight is s with curly quotes made straight (one unit each, so
// positions stay).
func straight(s []uint16) []uint16 {
	out := make([]uint16, len(s))
	for i, c := range s {
		switch c {
		case leftSingle, rightSingle:
			c = '\''
		case leftDouble, rightDouble:
			c = '"'
		}
		out[i] = c
	}
	return out
}

// findActual is the text of content old stands for: old itself, else
// the same span with quotes read straight, else old with its \uXXXX
// escapes decoded, else old's non-ASCII characters as escapes; nil when
// none is in content.
func findActual(content, old []uint16) []uint16 {
	if index(content, old, 0) >= 0 {
		return old
	}
	if o := index(straight(content), straight(old), 0); o >= 0 {
		return content[o : o+len(old)]
	}
	if hasEscape(old) {
		if d := unescape(old); !equal(d, old) && index(content, d, 0) >= 0 {
			return d
		}
	}
	if hasNonASCII(old) {
		if escapedLen(old) > len(content) || index(content, u16(`\u`), 0) < 0 {
			return nil
		}
		return findEscaped(old, content)
	}
	return nil
}

// styled is new in the style of what old was found as (actual): curly
// quotes where actual has them, and escapes (or characters) as actual
// writes them.
func styled(old, actual, new []uint16) []uint16 {
	return escapeStyled(old, actual, quoteStyled(old, actual, new))
}

// quoteStyled gives new the curly quotes actual has where old has
// straight ones.
func quoteStyled(old, actual, new []uint16) []uint16 {
	if equal(old, actual) {
		return new
	}
	double := contains(actual, leftDouble) || contains(actual, rightDouble)
	single := contains(actual, leftSingle) || contains(actual, rightSingle)
	out := new
	if double {
		out = curlDouble(out)
	}
	if single {
		out = curlSingle(out)
	}
	return out
}

// points splits s into code points as JavaScript's string iterator does:
// a surrogate pair is one, a lone surrogate one by itself.
func points(s []uint16) (starts []int, runes []rune) {
	for i := 0; i < len(s); {
		if utf16.IsSurrogate(rune(s[i])) && i+1 < len(s) {
			if r := utf16.DecodeRune(rune(s[i]), rune(s[i+1])); r != utf8.RuneError {
				starts, runes = append(starts, i), append(runes, r)
				i += 2
				continue
			}
		}
		starts, runes = append(starts, i), append(runes, rune(s[i]))
		i++
	}
	return starts, runes
}

// opens says a quote at code point i of rs opens: at the start, or after
// white space or an opening bracket or dash.
func opens(rs []rune, i int) bool {
	if i == 0 {
		return true
	}
	switch rs[i-1] {
	case ' ', '\t', '\n', '\r', '(', '[', '{', 0x2014, 0x2013:
		return true
	}
	return false
}

func curlDouble(s []uint16) []uint16 {
	starts, rs := points(s)
	out := append([]uint16{}, s...)
	for i, r := range rs {
		if r == '"' {
			out[starts[i]] = rightDouble
			if opens(rs, i) {
				out[starts[i]] = leftDouble
			}
		}
	}
	return out
}

func curlSingle(s []uint16) []uint16 {
	starts, rs := points(s)
	out := append([]uint16{}, s...)
	for i, r := range rs {
		if r != '\'' {
			continue
		}
		prevLetter := i > 0 && unicode.IsLetter(rs[i-1])
		nextLetter := i+1 < len(rs) && unicode.IsLetter(rs[i+1])
		switch {
		case prevLetter && nextLetter: // an apostrophe
			out[starts[i]] = rightSingle
		case opens(rs, i):
			out[starts[i]] = leftSingle
		default:
			out[starts[i]] = rightSingle
		}
	}
	return out
}

func isHex(c uint16) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// escapeAt says s holds \uXXXX at i.
func escapeAt(s []uint16, i int) bool {
	if i+6 > len(s) || s[i] != '\\' || s[i+1] != 'u' {
		return false
	}
	for _, c := range s[i+2 : i+6] {
		if !isHex(c) {
			return false
		}
	}
	return true
}

func hasEscape(s []uint16) bool {
	for i := range s {
		if escapeAt(s, i) {
			return true
		}
	}
	return false
}

func hasNonASCII(s []uint16) bool {
	for _, c := range s {
		if c >= 0x80 {
			return true
		}
	}
	return false
}

// unescape decodes s's \uXXXX escapes, leaving an escaped backslash (\\)
// as it is, each escape one UTF-16 unit.
func unescape(s []uint16) []uint16 {
	var out []uint16
	for i := 0; i < len(s); {
		switch {
		case i+1 < len(s) && s[i] == '\\' && s[i+1] == '\\':
			out = append(out, '\\', '\\')
			i += 2
		case escapeAt(s, i):
			out = append(out, uint16(hexValue(s[i+2:i+6])))
			i += 6
		default:
			out = append(out, s[i])
			i++
		}
	}
	return out
}

func hexValue(h []uint16) int {
	v := 0
	for _, c := range h {
		v <<= 4
		switch {
		case c >= '0' && c <= '9':
			v |= int(c - '0')
		case c >= 'a' && c <= 'f':
			v |= int(c-'a') + 10
		default:
			v |= int(c-'A') + 10
		}
	}
	return v
}

// escapedLen is the length of s with each non-ASCII unit written as a
// six-unit escape.
func escapedLen(s []uint16) int {
	n := len(s)
	for _, c := range s {
		if c >= 0x80 {
			n += 5
		}
	}
	return n
}

// backslashesBefore counts the backslashes just before position n of s.
func backslashesBefore(s []uint16, n int) int {
	r := 0
	for n-1-r >= 0 && s[n-1-r] == '\\' {
		r++
	}
	return r
}

// escapedMatch says content at c holds old with each non-ASCII unit as a
// \uXXXX escape of it (its hex digits in either case).
func escapedMatch(old, content []uint16, c int) bool {
	if c+escapedLen(old) > len(content) {
		return false
	}
	j := c
	for _, u := range old {
		if u < 0x80 {
			if content[j] != u {
				return false
			}
			j++
			continue
		}
		if content[j] != '\\' || content[j+1] != 'u' {
			return false
		}
		hex := fmt.Sprintf("%04x", u)
		for k := range 4 {
			d := content[j+2+k]
			if d != uint16(hex[k]) && !(hex[k] >= 'a' && d == uint16(hex[k]-'a'+'A')) {
				return false
			}
		}
		j += 6
	}
	return true
}

// findEscaped is the first span of content that is old with its
// non-ASCII characters escaped, each escape's backslash not itself
// escaped; nil when there is none, or when that text occurs earlier in
// content unescaped-checked (Claude Code then finds nothing).
func findEscaped(old, content []uint16) []uint16 {
	if backslashesBefore(old, len(old))%2 == 1 {
		return nil
	}
	var starts []int
	if len(old) > 0 && old[0] == '\\' {
		starts = append(starts, 0)
	}
	pos := 0
	for _, u := range old {
		if u >= 0x80 {
			starts = append(starts, pos)
			pos += 6
		} else {
			pos++
		}
	}
	n := escapedLen(old)
	for c := 0; c+n <= len(content); c++ {
		if !escapedMatch(old, content, c) {
			continue
		}
		ok := true
		for _, f := range starts {
			if backslashesBefore(content, c+f)%2 != 0 {
				ok = false
				break
			}
		}
		if !ok {
			continue
		}
		m := content[c : c+n]
		if index(content, m, 0) == c {
			return m
		}
		return nil
	}
	return nil
}

// escapeStyled writes new's characters as escapes where old's were
// found escaped in actual (in the hex case actual uses most), or decodes
// new's escapes where old's escapes were found as characters.
func escapeStyled(old, actual, new []uint16) []uint16 {
	if equal(old, actual) {
		return new
	}
	if hasNonASCII(old) && escapedLen(old) == len(actual) && findEscaped(old, actual) != nil {
		seen := map[uint16][]uint16{}
		upper, lower := 0, 0
		for u, c := 0, 0; u < len(old); u++ {
			if old[u] >= 0x80 {
				p := actual[c+2 : c+6]
				seen[old[u]] = p
				for _, d := range p {
					switch {
					case d >= 'a' && d <= 'f':
						lower++
					case d >= 'A' && d <= 'F':
						upper++
					}
				}
				c += 6
			} else {
				c++
			}
		}
		var out []uint16
		for _, c := range new {
			if c < 0x80 {
				out = append(out, c)
				continue
			}
			out = append(out, '\\', 'u')
			if p, ok := seen[c]; ok {
				out = append(out, p...)
				continue
			}
			h := fmt.Sprintf("%04x", c)
			if upper > lower {
				h = strings.ToUpper(h)
			}
			out = append(out, u16(h)...)
		}
		return out
	}
	if hasEscape(old) && equal(unescape(old), actual) {
		return unescape(new)
	}
	return new
}

// u16 is s as JavaScript holds it.
func u16(s string) []uint16 { return utf16.Encode([]rune(s)) }

func equal(a, b []uint16) bool { return wide(a) == wide(b) }

func contains(s []uint16, c uint16) bool { return slices.Contains(s, c) }

// wide is s two bytes a unit, so that the standard library's fast
// substring search finds units (at even offsets).
func wide(s []uint16) string {
	b := make([]byte, 2*len(s))
	for i, c := range s {
		b[2*i], b[2*i+1] = byte(c>>8), byte(c)
	}
	return string(b)
}

// indexWide is index of wide strings: the first unit-aligned match of
// sub in s at or after unit from.
func indexWide(s, sub string, from int) int {
	for off := 2 * from; off <= len(s); {
		j := strings.Index(s[off:], sub)
		if j < 0 {
			return -1
		}
		if (off+j)%2 == 0 {
			return (off + j) / 2
		}
		off += j + 1
	}
	return -1
}

// index is JavaScript's s.indexOf(sub, from).
func index(s, sub []uint16, from int) int {
	return indexWide(wide(s), wide(sub), min(from, len(s)))
}

// count is how many times sub occurs in s without overlapping, left to
// right (JavaScript's s.split(sub).length-1).
func count(s, sub []uint16) int {
	ws, wsub := wide(s), wide(sub)
	n := 0
	for i := indexWide(ws, wsub, 0); i >= 0; i = indexWide(ws, wsub, i+len(sub)) {
		n++
	}
	return n
}

// replaceAll is JavaScript's s.replaceAll(old, new) of a non-empty old.
func replaceAll(s, old, new []uint16) []uint16 {
	ws, wold := wide(s), wide(old)
	var out []uint16
	last := 0
	for i := indexWide(ws, wold, 0); i >= 0; i = indexWide(ws, wold, i+len(old)) {
		out = append(append(out, s[last:i]...), new...)
		last = i + len(old)
	}
	return append(out, s[last:]...)
}

func concat(parts ...[]uint16) []uint16 {
	var out []uint16
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}
