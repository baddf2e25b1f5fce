package cmd

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/charmbracelet/lipgloss"
)

// Everything act prints passes through a termWriter: the one place where
// text — file names, symlink targets, diff lines, a command's output, the
// descriptor's own strings, act's messages — reaches a terminal. It
// escapes what could drive the terminal, or hide or reorder what is
// shown, instead of being read (docs/sandbox-output.md):
//
//   - C0 control characters but newline and tab, DEL, and C1 control
//     characters, as \xHH or \uHHHH (an ESC starts a sequence that can move
//     the cursor, repaint the plan, set the window title or the clipboard);
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
// A newline is kept: it ends act's own lines. A field that is one line by
// nature (a path, a reason, the intent) shows its newlines as \n
// (escapeLine), and lines of text a command or a file chose (output, a
// diff's body) are indented under act's own, so neither can begin a line
// where act's begin.
//
// act's own colours are not written as escape sequences by the code that
// formats text: a style wraps its text in markers that carry a random
// per-process nonce, and the termWriter turns exactly those into the
// style's SGR sequence (or nothing, without colour). Text that forges a
// marker without the nonce is escaped like any other private-use
// character.
type termWriter struct {
	w     io.Writer
	nonce []byte
	codes map[byte]string // style id → SGR sequence; empty without colour
	carry []byte          // an incomplete rune or marker at the end of a write
}

// The marker runes (Unicode private use) and a marker's length in bytes.
const (
	markOpen  = '\uE000'
	markClose = '\uE001'
)

func newTermWriter(w io.Writer, nonce []byte, codes map[byte]string) *termWriter {
	return &termWriter{w: w, nonce: nonce, codes: codes}
}

func newNonce() []byte {
	b := make([]byte, 8)
	rand.Read(b)
	return []byte(hex.EncodeToString(b))
}

func (t *termWriter) markerLen() int {
	return utf8.RuneLen(markOpen) + len(t.nonce) + 1 + utf8.RuneLen(markClose)
}

// Write escapes p and writes it. An incomplete rune or marker at the end
// is kept for the next write (Flush writes it escaped).
func (t *termWriter) Write(p []byte) (int, error) {
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
		if r == markOpen {
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
		out = appendSafe(out, r, buf[i:i+size])
		i += size
	}
	_, err := t.w.Write(out)
	return len(p), err
}

// Flush writes what Write kept back, escaped.
func (t *termWriter) Flush() error {
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

// appendSafe appends rune r (encoded as raw) to out, escaped if it could
// drive a terminal or would not be seen.
func appendSafe(out []byte, r rune, raw []byte) []byte {
	switch {
	case r == '\n' || r == '\t':
		return append(out, byte(r))
	case r < 0x20 || r == 0x7f:
		return fmt.Appendf(out, `\x%02x`, r)
	case invisible(r):
		if r > 0xffff {
			return fmt.Appendf(out, `\U%08x`, r)
		}
		return fmt.Appendf(out, `\u%04x`, r)
	}
	return append(out, raw...)
}

// invisible reports whether r is not shown as itself: not graphic (control,
// format, separator other than space, private use, unassigned), or
// ignorable by default though a letter or a mark (Hangul fillers,
// variation selectors, the combining grapheme joiner).
func invisible(r rune) bool {
	return !unicode.IsGraphic(r) ||
		unicode.In(r, unicode.Other_Default_Ignorable_Code_Point, unicode.Variation_Selector)
}

// escapeLine is the form of s a single-line field shows (a file name, a
// link target): a newline in it is escaped too, so one entry stays on one
// line.
func escapeLine(s string) string {
	if !strings.ContainsAny(s, "\n\t") {
		return s
	}
	return strings.NewReplacer("\n", `\n`, "\t", `\t`).Replace(s)
}

// A style wraps text in the markers of one of act's colours.
type style struct {
	id    byte
	nonce []byte
}

// Render returns s between the markers of the style; the termWriter turns
// them into the colour, or drops them.
func (s style) Render(text string) string {
	if text == "" {
		return ""
	}
	return string(markOpen) + string(s.nonce) + string(rune(s.id)) + string(markClose) + text +
		string(markOpen) + string(s.nonce) + "0" + string(markClose)
}

// The style ids; '0' ends a style.
const (
	styleCreate = 'c' + iota
	styleModify
	styleRemove
	styleErr
	styleWarn
	styleBold
	styleFaint
)

// styleCodes returns the SGR sequences of act's styles as lipgloss renders
// them for out, or nothing when out gets no colour.
func styleCodes(out io.Writer, noColor bool) map[byte]string {
	codes := map[byte]string{}
	if noColor {
		return codes
	}
	r := lipgloss.NewRenderer(out)
	for id, st := range map[byte]lipgloss.Style{
		styleCreate: r.NewStyle().Foreground(lipgloss.Color("2")),
		styleModify: r.NewStyle().Foreground(lipgloss.Color("3")),
		styleRemove: r.NewStyle().Foreground(lipgloss.Color("1")),
		styleErr:    r.NewStyle().Foreground(lipgloss.Color("1")).Bold(true),
		styleWarn:   r.NewStyle().Foreground(lipgloss.Color("3")).Bold(true),
		styleBold:   r.NewStyle().Bold(true),
		styleFaint:  r.NewStyle().Faint(true),
	} {
		s := st.Render("\x00")
		on, off, ok := strings.Cut(s, "\x00")
		if !ok || on == "" {
			return map[byte]string{} // no colour on this output
		}
		codes[id] = on
		codes['0'] = off
	}
	return codes
}
