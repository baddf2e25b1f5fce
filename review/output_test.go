package review

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/act-project/act/plan"
)

// TestOutputLineCut: a line longer than the bound is cut at a character's
// start, escaped, and says how many bytes more it had; shorter lines are
// whole.
func TestOutputLineCut(t *testing.T) {
	long := strings.Repeat("x", 30000)
	got := Output(Captured{Text: "before\n" + long + "\nafter\n"}, Bounds{LineBytes: MaxLineBytes})
	want := "before\n" + strings.Repeat("x", 4096) + "… (cut: 25,904 more bytes of this line)\nafter\n"
	if got != want {
		t.Errorf("Output = %.80q…, want %.80q…", got, want)
	}
	// Not in the middle of a character: é is two bytes.
	got = Output(Captured{Text: "a" + strings.Repeat("é", 10)}, Bounds{LineBytes: 4})
	if want := "aé… (cut: 18 more bytes of this line)\n"; got != want {
		t.Errorf("Output = %q, want %q", got, want)
	}
	// No bound: every line whole.
	if got := Output(Captured{Text: long}, Bounds{}); got != long+"\n" {
		t.Errorf("Output without bounds cut the line: %d bytes", len(got))
	}
}

// TestOutputLinesCut: beyond the bound in bytes, the first lines and the
// last are shown and those between counted, with where to read them all.
func TestOutputLinesCut(t *testing.T) {
	var in strings.Builder
	for i := range 1000 {
		fmt.Fprintf(&in, "line %d\n", i)
	}
	got := Output(Captured{Text: in.String()}, Brief("act show 0123456789abcdef --full shows it"))
	if !strings.HasPrefix(got, "line 0\nline 1\n") || !strings.HasSuffix(got, "line 998\nline 999\n") {
		t.Errorf("not the first lines and the last:\n%s", got)
	}
	if len(got) > MaxLineBytes+200 {
		t.Errorf("%d bytes shown, bound %d", len(got), MaxLineBytes)
	}
	var shown, cut int
	for _, l := range strings.Split(strings.TrimSuffix(got, "\n"), "\n") {
		if strings.HasPrefix(l, "line ") {
			shown++
			continue
		}
		var n int
		var bytes string
		if _, err := fmt.Sscanf(l, "(cut: %d more lines, %s bytes, not shown; act show 0123456789abcdef --full shows it)", &n, &bytes); err != nil {
			t.Fatalf("not a note: %q: %v", l, err)
		}
		cut += n
	}
	if shown+cut != 1000 {
		t.Errorf("%d lines shown and %d counted, of 1000", shown, cut)
	}
}

// TestOutputEscaped: what a command printed is escaped, a line each, and
// a capture act stopped keeping says so.
func TestOutputEscaped(t *testing.T) {
	got := Output(Captured{Text: "a\x1b[8mb\x00c\u202ed\xff\tt\n", Cut: true, More: 12345}, Bounds{LineBytes: MaxLineBytes})
	want := `a\x1b[8mb\x00c\u202ed\xff` + "\tt\n" +
		fmt.Sprintf("(cut: this output went on for at least 12,345 bytes past the %s act keeps)\n", count(plan.MaxCommandOutput))
	if got != want {
		t.Errorf("Output = %q, want %q", got, want)
	}
	if got := Output(Captured{}, Bounds{}); got != "" {
		t.Errorf("Output of nothing = %q", got)
	}
}

// TestReason: a reason is escaped, and one too long is cut to the bound,
// saying how much was cut.
func TestReason(t *testing.T) {
	if got := Reason("ok\x1b[2J\u202e\nnext", 100); got != `ok\x1b[2J\u202e`+"\nnext" {
		t.Errorf("Reason = %q", got)
	}
	got := Reason(strings.Repeat("y", 20000), 12000)
	if n := utf8.RuneCountInString(got); n != 12000 || !strings.HasSuffix(got, "… (cut: 8,043 more characters of this text)") {
		t.Errorf("Reason of 20000 characters: %d, ends %q", n, got[len(got)-60:])
	}
}

// TestCollector: a stream is kept up to the capture's bound, the line
// that crosses it kept in part, and what is not kept counted.
func TestCollector(t *testing.T) {
	var c Collector
	c.Line(1, "first")
	c.Line(1, strings.Repeat("z", plan.MaxCommandOutput))
	c.Line(1, "later")
	c.Line(3, "not a stream")
	got := c.Captured(1)
	if !c.Any() || !got.Cut || len(got.Text) != plan.MaxCommandOutput || !strings.HasPrefix(got.Text, "first\nzz") {
		t.Fatalf("captured %d bytes, cut %v", len(got.Text), got.Cut)
	}
	if want := int64(len("first\n") + 1 + len("later\n")); got.More != want {
		t.Errorf("more = %d, want %d", got.More, want)
	}
	if c.Captured(2) != (Captured{}) {
		t.Errorf("stderr: %+v", c.Captured(2))
	}
}

// TestJSONText: an MCP text that is JSON stays JSON, with JSON's own
// escapes for what Text escapes; any other text is Text.
func TestJSONText(t *testing.T) {
	if got := JSONText(`{"p":"a` + "\u202e\U000E0041" + `b"}`); got != `{"p":"a\u202e\udb40\udc41b"}` {
		t.Errorf("JSONText = %q", got)
	}
	if got := JSONText("not json \x1b[8m"); got != `not json \x1b[8m` {
		t.Errorf("JSONText = %q", got)
	}
}
