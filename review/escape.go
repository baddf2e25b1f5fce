package review

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// What act writes escapes whatever could drive a terminal, or hide or
// reorder what is shown, instead of being read (docs/sandbox-output.md):
//
//   - C0 control characters but newline and tab, DEL, and C1 control
//     characters, as \xHH or \uHHHH (an ESC starts a sequence that can move
//     the cursor, repaint the plan, set the window title or the clipboard,
//     or conceal a line: SGR 8);
//   - carriage return (it lets a line overwrite itself);
//   - every character that is not graphic (Unicode's format characters,
//     category Cf: the bidirectional overrides and isolates, zero-width
//     spaces and joiners, the BOM, the soft hyphen, tag characters; the
//     line and paragraph separators; private-use and unassigned code
//     points), and the default-ignorable ones that are letters or marks
//     (the Hangul fillers U+115F, U+1160, U+3164, U+FFA0; variation
//     selectors): as \uHHHH, or \UHHHHHHHH beyond U+FFFF;
//   - invalid UTF-8, byte by byte.
//
// A newline is kept by Text: it ends lines. A field that is one line by
// nature (a path, a reason, the intent) shows its newlines and tabs as \n
// and \t (Line), and lines of text a command or a file chose (output, a
// diff's body) are indented under act's own, so neither can begin a line
// where act's begin.
//
// The escapes are ASCII and a backslash is kept as it is, so escaping is
// idempotent: text escaped here and written again through a TermWriter,
// or escaped twice, is the same.

// AppendSafe appends rune r (encoded as raw) to out, escaped if it could
// drive a terminal or would not be seen. Newline and tab are kept.
func AppendSafe(out []byte, r rune, raw []byte) []byte {
	switch {
	case r == '\n' || r == '\t':
		return append(out, byte(r))
	case r < 0x20 || r == 0x7f:
		return fmt.Appendf(out, `\x%02x`, r)
	case Invisible(r):
		if r > 0xffff {
			return fmt.Appendf(out, `\U%08x`, r)
		}
		return fmt.Appendf(out, `\u%04x`, r)
	}
	return append(out, raw...)
}

// Invisible reports whether r is not shown as itself: not graphic
// (control, format, separator other than space, private use, unassigned),
// or ignorable by default though a letter or a mark (Hangul fillers,
// variation selectors, the combining grapheme joiner).
func Invisible(r rune) bool {
	return !unicode.IsGraphic(r) ||
		unicode.In(r, unicode.Other_Default_Ignorable_Code_Point, unicode.Variation_Selector)
}

// Text is s as a person or a model may read it anywhere — a hook's
// reason, an MCP text, a terminal: every character AppendSafe escapes is
// escaped, invalid UTF-8 byte by byte as \xHH; newlines and tabs are kept.
func Text(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 && c != '\n' && c != '\t' || c >= 0x7f {
			return string(appendText(make([]byte, 0, len(s)+16), s, false))
		}
	}
	return s // ASCII text with nothing to escape, as most is
}

// Line is s as a one-line field shows it: Text, and its newlines and tabs
// as \n and \t, so that one entry stays one line and cannot fake another.
func Line(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f {
			return string(appendText(make([]byte, 0, len(s)+16), s, true))
		}
	}
	return s
}

func appendText(out []byte, s string, oneLine bool) []byte {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			out = fmt.Appendf(out, `\x%02x`, s[i])
		case oneLine && r == '\n':
			out = append(out, `\n`...)
		case oneLine && r == '\t':
			out = append(out, `\t`...)
		default:
			out = AppendSafe(out, r, []byte(s[i:i+size]))
		}
		i += size
	}
	return out
}

// JSONVisible writes the characters of JSON text b that Text would
// escape as JSON's own \uXXXX escapes, a pair of them beyond U+FFFF: the
// text decodes to the same values, and none of them reaches a terminal or
// a reader as itself. Such characters are only ever inside JSON strings;
// the encoding has escaped control characters already.
func JSONVisible(b []byte) []byte {
	var out []byte
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r < utf8.RuneSelf || !Invisible(r) {
			if out != nil {
				out = append(out, b[i:i+size]...)
			}
			i += size
			continue
		}
		if out == nil {
			out = append(make([]byte, 0, len(b)+64), b[:i]...)
		}
		if r1, r2 := utf16.EncodeRune(r); r1 != utf8.RuneError {
			out = fmt.Appendf(out, `\u%04x\u%04x`, r1, r2)
		} else {
			out = fmt.Appendf(out, `\u%04x`, r)
		}
		i += size
	}
	if out == nil {
		return b
	}
	return out
}

// A TermWriter is the one place where text reaches a terminal (standard
// output and error, the prompt, the pager's input): it escapes as Text
// does whatever is written through it, and turns the markers of act's
// own styles into their colours.
//
// act's colours are not written as escape sequences by the code that
// formats text: a Style wraps its text in markers that carry a random
// per-process nonce, and the TermWriter turns exactly those into the
// style's SGR sequence (or nothing, without colour). Text that forges a
// marker without the nonce is escaped like any other private-use
// character.
type TermWriter struct {
	w     io.Writer
	nonce []byte
	codes map[byte]string // style id → SGR sequence; empty without colour
	carry []byte          // an incomplete rune or marker at the end of a write
}

// The marker runes (Unicode private use).
const (
	markOpen  = '\uE000'
	markClose = '\uE001'
)

// NewTermWriter returns the TermWriter over w of the styles marked with
// nonce, codes giving each style id its SGR sequence (none: no colour).
func NewTermWriter(w io.Writer, nonce []byte, codes map[byte]string) *TermWriter {
	return &TermWriter{w: w, nonce: nonce, codes: codes}
}

// NewNonce returns a random nonce for a process's style markers.
func NewNonce() []byte {
	b := make([]byte, 8)
	rand.Read(b)
	return []byte(hex.EncodeToString(b))
}

// Write escapes p and writes it. An incomplete rune or marker at the end
// is kept for the next write (Flush writes it escaped).
func (t *TermWriter) Write(p []byte) (int, error) {
	buf := append(t.carry, p...)
	t.carry = nil
	out := make([]byte, 0, len(buf)+16)
	for i := 0; i < len(buf); {
		r, size := utf8.DecodeRune(buf[i:])
		if r == utf8.RuneError && size <= 1 {
			if !utf8.FullRune(buf[i:]) {
				t.carry = append([]byte(nil), buf[i:]...)
				break
			}
			out = fmt.Appendf(out, `\x%02x`, buf[i])
			i++
			continue
		}
		if r == markOpen && len(t.nonce) > 0 {
			rest := buf[i+size:]
			need := len(t.nonce) + 1 + utf8.RuneLen(markClose)
			if len(rest) < need && bytes.HasPrefix(t.nonce, rest[:min(len(rest), len(t.nonce))]) {
				t.carry = append([]byte(nil), buf[i:]...) // perhaps a marker, cut by the write
				break
			}
			if len(rest) >= need && bytes.HasPrefix(rest, t.nonce) {
				if cr, _ := utf8.DecodeRune(rest[len(t.nonce)+1:]); cr == markClose {
					out = append(out, t.codes[rest[len(t.nonce)]]...)
					i += size + need
					continue
				}
			}
		}
		out = AppendSafe(out, r, buf[i:i+size])
		i += size
	}
	_, err := t.w.Write(out)
	return len(p), err
}

// Flush writes what Write kept back, escaped.
func (t *TermWriter) Flush() error {
	if len(t.carry) == 0 {
		return nil
	}
	out := make([]byte, 0, 4*len(t.carry))
	for _, b := range t.carry {
		out = fmt.Appendf(out, `\x%02x`, b)
	}
	t.carry = nil
	_, err := t.w.Write(out)
	return err
}

// Plural is n and noun, an s added unless n is 1.
func Plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// count is n with its thousands separated by commas: 25,904.
func count[T int | int64](n T) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// JSONText is a JSON text as a model or a person reads it (an MCP tool's
// text content): JSONVisible, so it is still JSON and decodes to the same
// values, with none of the characters Text escapes in it as itself. A
// text that is not JSON is escaped as Text.
func JSONText(s string) string {
	if json.Valid([]byte(s)) {
		return string(JSONVisible([]byte(s)))
	}
	return Text(s)
}
