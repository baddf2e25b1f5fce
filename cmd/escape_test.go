package cmd

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/act-project/act/diff"
	"github.com/act-project/act/gate"
	"github.com/act-project/act/internal/lifecycle"
	"github.com/act-project/act/internal/state"
	"github.com/act-project/act/review"
)

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
	env.nonce = review.NewNonce()
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
		output  = "o\nOUTPUT\u200b\u3164\x1b[8m"
		content = "c\nCONTENT\u200b\u3164\x1b[8m\n"
	)
	home := t.TempDir()
	root := t.TempDir()
	env := DefaultEnv(Stdio{In: &bytes.Buffer{}, Out: &bytes.Buffer{}, Err: &bytes.Buffer{}})
	env.home, env.pinned, env.nonce, env.full = home, new(string), review.NewNonce(), true
	p := &gate.Plan{ID: "0123456789abcdef", ActionID: "a", RiskLevel: "LOW", RiskAssessed: "HIGH", RiskReasons: []string{evil}}
	// A created text file named evil: its diff is read from the plan's
	// layer.
	created := filepath.Join(root, evil)
	upper := filepath.Join(state.Dir{Root: home}.Upper(p.ID), created)
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
	p.Commands = []gate.CommandResult{{Argv: []string{"sh", "-c", evil}, Stdout: output, Stderr: output}}

	var out bytes.Buffer
	tw := review.NewTermWriter(&out, env.nonce, nil)
	renderPlan(tw, newStyles(env, tw), env, p, lifecycle.Planned)
	tw.Flush()
	// The same plan as a hook's reason gets it, through no TermWriter:
	// escaped by review itself.
	for sink, shown := range map[string]string{"terminal": out.String(), "reason": planText(env, p)} {
		checkHostilePlan(t, sink, shown, root)
	}
}

func checkHostilePlan(t *testing.T, sink, shown, root string) {
	t.Helper()
	for _, want := range []string{
		"\n    --- /dev/null\n    +++ " + root + `/x\nINJECTED\u200b\u3164\u202e\U000e0041` + "\n",
		"\n    +c\n    +CONTENT\\u200b\\u3164\\x1b[8m\n",
		"\n    o\n    OUTPUT\\u200b\\u3164\\x1b[8m\n",
		"(no diff: open " + root + `/gonex\nINJECTED`,
		`→ x\nINJECTED\u200b`,
		`  - x\nINJECTED\u200b`,
	} {
		if !strings.Contains(shown, want) {
			t.Errorf("%s: the plan does not show %q:\n%s", sink, want, shown)
		}
	}
	for i, line := range strings.Split(shown, "\n") {
		text := strings.TrimLeft(line, " +")
		switch {
		case strings.HasPrefix(text, "INJECTED"):
			t.Errorf("%s: line %d is a one-line field's text on a line of its own: %q", sink, i+1, line)
		case strings.HasPrefix(text, "OUTPUT") || strings.HasPrefix(text, "CONTENT"):
			if !strings.HasPrefix(line, "    ") {
				t.Errorf("%s: line %d, a command's or a file's, is not indented under act's: %q", sink, i+1, line)
			}
		}
		for _, r := range line {
			if r == utf8.RuneError || r < 0x20 && r != '\t' || review.Invisible(r) {
				t.Errorf("%s: line %d shows U+%04X as itself: %q", sink, i+1, r, line)
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
	tw := review.NewTermWriter(&out, review.NewNonce(), nil)
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
		if review.Invisible(r) && r != '\n' {
			t.Fatalf("U+%04X is in the JSON as itself:\n%s", r, out.String())
		}
	}
	if !strings.Contains(out.String(), `\udb40\udc41`) || !strings.Contains(out.String(), "é 🙂") {
		t.Fatalf("not the expected escapes:\n%s", out.String())
	}
}
