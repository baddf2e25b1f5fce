package review

import (
	"bytes"
	"strings"
	"testing"
	"unicode"

	"github.com/act-project/act/diff"
)

// escaped is what a termWriter without colour makes of s.
func escaped(s string) string {
	var b bytes.Buffer
	tw := NewTermWriter(&b, NewNonce(), nil)
	tw.Write([]byte(s))
	tw.Flush()
	return b.String()
}

// TestTermWriterInvisible: every character that would not be seen as
// itself — format characters, fillers, variation selectors, tags, line
// separators — is shown by its code; what a person reads as text is kept.
func TestTermWriterInvisible(t *testing.T) {
	for in, want := range map[string]string{
		"a\u200bb":                 `a\u200bb`,       // zero-width space
		"a\u200c\u200db":           `a\u200c\u200db`, // zero-width non-joiner, joiner
		"a\u2060b":                 `a\u2060b`,       // word joiner
		"\ufeffstart":              `\ufeffstart`,    // BOM
		"soft\u00adhyphen":         `soft\u00adhyphen`,
		"hangul\u3164filler":       `hangul\u3164filler`,
		"\u115f\u1160\uffa0":       `\u115f\u1160\uffa0`,
		"right\u202eleft":          `right\u202eleft`,
		"\u202a\u202b\u202c":       `\u202a\u202b\u202c`,
		"\u2066\u2067\u2068\u2069": `\u2066\u2067\u2068\u2069`,
		"\u200e\u200f\u061c":       `\u200e\u200f\u061c`,
		"tag\U000E0041\U000E007F":  `tag\U000e0041\U000e007f`,
		"\U000E0001":               `\U000e0001`,
		"vs\ufe0f\ufe00":           `vs\ufe0f\ufe00`,
		"\U000E0100":               `\U000e0100`, // variation selector 17
		"\u034f":                   `\u034f`,     // combining grapheme joiner
		"line\u2028para\u2029":     `line\u2028para\u2029`,
		"\u180e":                   `\u180e`,
		"\ufff9\ufffb":             `\ufff9\ufffb`,
		"\ue123":                   `\ue123`,     // private use
		"\U0010fffd":               `\U0010fffd`, // private use
		"\u0378":                   `\u0378`,     // unassigned
		"\u0085":                   `\u0085`,     // NEL
		"esc\x1b[2J":               `esc\x1b[2J`,
		"cr\rbs\bdel\x7f":          `cr\x0dbs\x08del\x7f`,
		"\xff\xfe":                 `\xff\xfe`,
		// Kept: text, tabs and newlines (act's own lines).
		"héllo wörld\tñ\n":   "héllo wörld\tñ\n",
		"日本語 한국어 ㅎ":          "日本語 한국어 ㅎ",
		"e\u0301 a\u0308":    "e\u0301 a\u0308",
		"emoji 🙂 \u00a0nbsp": "emoji 🙂 \u00a0nbsp",
		`back\slash \n`:      `back\slash \n`,
	} {
		if got := escaped(in); got != want {
			t.Errorf("%+q is shown as %q, want %q", in, got, want)
		}
		// Text, for a sink that is no terminal, escapes the same.
		if got := Text(in); got != want {
			t.Errorf("Text(%+q) = %q, want %q", in, got, want)
		}
		// The same, one byte per write: a character cut by a write is
		// still one character.
		var b bytes.Buffer
		tw := NewTermWriter(&b, NewNonce(), nil)
		for i := range len(in) {
			tw.Write([]byte{in[i]})
		}
		tw.Flush()
		if b.String() != want {
			t.Errorf("%+q written byte by byte is shown as %q, want %q", in, b.String(), want)
		}
	}
}

// TestTermWriterEveryCodePoint: no code point of the classes
// docs/sandbox-output.md lists reaches the terminal as itself.
func TestTermWriterEveryCodePoint(t *testing.T) {
	hidden := func(r rune) bool {
		switch {
		case r == '\n' || r == '\t':
			return false
		case unicode.In(r, unicode.Cc, unicode.Cf, unicode.Co, unicode.Zl, unicode.Zp,
			unicode.Other_Default_Ignorable_Code_Point, unicode.Variation_Selector):
			return true
		}
		return !unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S, unicode.Zs) // unassigned
	}
	var in bytes.Buffer
	var want []rune
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if r >= 0xd800 && r <= 0xdfff || !hidden(r) {
			continue
		}
		in.WriteRune(r)
		want = append(want, r)
	}
	out := escaped(in.String())
	for _, r := range out {
		if r >= 0x80 {
			t.Fatalf("U+%04X reached the terminal as itself", r)
		}
	}
	if n := strings.Count(out, `\`); n != len(want) {
		t.Fatalf("%d escapes for %d hidden code points", n, len(want))
	}
}

// TestDiffHeaderRedacted: when redaction changed the header of a diff (a
// secret-shaped file name), act still prints its own header, on one line,
// and the body from the first hunk: the file name's newline never reaches
// the screen as a line of its own.
func TestDiffHeaderRedacted(t *testing.T) {
	c := diff.Change{Path: "/p/token=s3cr3t\nINJECTED", Kind: diff.Modify, Type: diff.TypeFile}
	text := "--- /p/token=[REDACTED]\nINJECTED\n+++ /p/token=[REDACTED]\nINJECTED\n@@ -1 +1 @@\n-a\n+b\n"
	header, body := diffHeader(c, c.Path, text)
	if want := "    --- /p/token=s3cr3t\\nINJECTED\n    +++ /p/token=s3cr3t\\nINJECTED\n"; header != want {
		t.Errorf("header %q, want %q", header, want)
	}
	if want := "@@ -1 +1 @@\n-a\n+b\n"; body != want {
		t.Errorf("body %q, want %q", body, want)
	}
}
