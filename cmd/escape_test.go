package cmd

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/act-project/act/diff"
	"github.com/act-project/act/internal/lifecycle"
	"github.com/act-project/act/plan"
)

// escaped is what a termWriter without colour makes of s.
func escaped(s string) string {
	var b bytes.Buffer
	tw := newTermWriter(&b, newNonce(), nil)
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
		// The same, one byte per write: a character cut by a write is
		// still one character.
		var b bytes.Buffer
		tw := newTermWriter(&b, newNonce(), nil)
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

// fakeTTY is a controlling terminal: what act writes, and a typed answer.
type fakeTTY struct {
	io.Reader
	out *bytes.Buffer
}

func (f fakeTTY) Write(p []byte) (int, error) { return f.out.Write(p) }
func (f fakeTTY) Close() error                { return nil }

// TestAskOneQuestion: the reasons a plan waits for a person are one line on
// the terminal; a reason holding a newline and a question of its own, or
// invisible characters, cannot put a line above the real question.
func TestAskOneQuestion(t *testing.T) {
	var screen bytes.Buffer
	env := DefaultEnv(Stdio{In: &bytes.Buffer{}, Out: &bytes.Buffer{}, Err: &bytes.Buffer{}})
	env.nonce = newNonce()
	env.TTY = func() (io.ReadWriteCloser, error) {
		return fakeTTY{Reader: strings.NewReader("n\n"), out: &screen}, nil
	}
	why := []string{
		"the descriptor requires confirmation: deploy\nApply plan 0123456789abcdef? [y/N] y\u200b",
		"risk\r\x1b[1Ahidden\u202e\U000E0041",
	}
	if ask(env, confirmQuestion(why, "fedcba9876543210")) {
		t.Fatal("n was taken for yes")
	}
	lines := strings.Split(screen.String(), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "Confirmation needed: ") || lines[1] != "Apply plan fedcba9876543210? [y/N] " {
		t.Fatalf("the terminal shows %d lines, not the reasons then the question:\n%s", len(lines), screen.String())
	}
	for _, want := range []string{`deploy\nApply plan 0123456789abcdef? [y/N] y\u200b`, `risk\x0d\x1b[1Ahidden\u202e\U000e0041`} {
		if !strings.Contains(lines[0], want) {
			t.Errorf("the reasons line %q does not show %q", lines[0], want)
		}
	}
}

// TestRenderPlanHostileFields: every field of a plan a person reads — a
// path in a change line and in its diff header, a link target, a
// command's argv, the risk reasons, an error — keeps its newlines from
// starting a line and its invisible characters from hiding. The texts
// that are many lines by nature, a command's output and a file's lines,
// keep their lines, indented under act's own.
func TestRenderPlanHostileFields(t *testing.T) {
	const (
		evil    = "x\nINJECTED\u200b\u3164\u202e\U000E0041"
		output  = "o\nOUTPUT\u200b\u3164"
		content = "c\nCONTENT\u200b\u3164\n"
	)
	home := t.TempDir()
	root := t.TempDir()
	env := DefaultEnv(Stdio{In: &bytes.Buffer{}, Out: &bytes.Buffer{}, Err: &bytes.Buffer{}})
	env.home, env.pinned, env.nonce, env.full = home, new(string), newNonce(), true
	p := &plan.Plan{ID: "0123456789abcdef", ActionID: "a", RiskLevel: "LOW", RiskAssessed: "HIGH", RiskReasons: []string{evil}}
	// A created text file named evil: its diff is read from the plan's
	// layer.
	created := filepath.Join(root, evil)
	upper := filepath.Join(plan.UpperDir(home, p.ID), created)
	if err := os.MkdirAll(filepath.Dir(upper), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(upper, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	mode, size, target := "0644", int64(len(content)), evil
	p.Changes = []diff.Change{
		{Path: created, Kind: diff.Create, Type: diff.TypeFile, ModeAfter: &mode, SizeAfter: &size},
		{Path: filepath.Join(root, "link"+evil), Kind: diff.Create, Type: diff.TypeSymlink, LinkAfter: &target},
		// Not on disk: its diff is an error naming it.
		{Path: filepath.Join(root, "gone"+evil), Kind: diff.Modify, Type: diff.TypeFile, ModeBefore: &mode, ModeAfter: &mode},
	}
	p.Commands = []plan.CommandResult{{Argv: []string{"sh", "-c", evil}, Stdout: output, Stderr: output}}

	var out bytes.Buffer
	tw := newTermWriter(&out, env.nonce, nil)
	renderPlan(tw, newStyles(env, tw), env, p, lifecycle.Planned)
	tw.Flush()
	shown := out.String()
	for _, want := range []string{
		"\n    --- /dev/null\n    +++ " + root + `/x\nINJECTED\u200b\u3164\u202e\U000e0041` + "\n",
		"\n    +c\n    +CONTENT\\u200b\\u3164\n",
		"\n    o\n    OUTPUT\\u200b\\u3164\n",
		"(no diff: open " + root + `/gonex\nINJECTED`,
		`→ x\nINJECTED\u200b`,
		`  - x\nINJECTED\u200b`,
	} {
		if !strings.Contains(shown, want) {
			t.Errorf("the plan does not show %q:\n%s", want, shown)
		}
	}
	for i, line := range strings.Split(shown, "\n") {
		text := strings.TrimLeft(line, " +")
		switch {
		case strings.HasPrefix(text, "INJECTED"):
			t.Errorf("line %d is a one-line field's text on a line of its own: %q", i+1, line)
		case strings.HasPrefix(text, "OUTPUT") || strings.HasPrefix(text, "CONTENT"):
			if !strings.HasPrefix(line, "    ") {
				t.Errorf("line %d, a command's or a file's, is not indented under act's: %q", i+1, line)
			}
		}
		for _, r := range line {
			if r == utf8.RuneError || invisible(r) {
				t.Errorf("line %d shows U+%04X as itself: %q", i+1, r, line)
			}
		}
	}
}

// TestJSONVisible: --json output decodes to the exact values, and none of
// the characters a termWriter escapes is in it as itself (so the
// termWriter leaves it as it is: still JSON).
func TestJSONVisible(t *testing.T) {
	in := map[string]string{"path": "a\nb\u200b\u3164\u202e\U000E0041\ufeff\u0085\x1b é 🙂"}
	var out bytes.Buffer
	tw := newTermWriter(&out, newNonce(), nil)
	writeJSON(tw, in)
	tw.Flush()
	var back map[string]string
	if err := json.Unmarshal(out.Bytes(), &back); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out.String())
	}
	if back["path"] != in["path"] {
		t.Fatalf("decoded %+q, want %+q", back["path"], in["path"])
	}
	for _, r := range out.String() {
		if invisible(r) && r != '\n' {
			t.Fatalf("U+%04X is in the JSON as itself:\n%s", r, out.String())
		}
	}
	if !strings.Contains(out.String(), `\udb40\udc41`) || !strings.Contains(out.String(), "é 🙂") {
		t.Fatalf("not the expected escapes:\n%s", out.String())
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
