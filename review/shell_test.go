package review

import (
	"os/exec"
	"testing"
)

// TestShellQuote: an argument is shown as a shell would need it typed; a
// real newline or tab and a backslash followed by n or t are never shown
// alike, and no character that could drive a terminal is in the result.
func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"":                    "''",
		"go":                  "go",
		"./a/b_c-d.e:f@g%h+i": "./a/b_c-d.e:f@g%h+i",
		"echo ok":             "'echo ok'",
		"it's":                `'it'\''s'`,
		`echo safe\nrm -f v`:  `'echo safe\nrm -f v'`,
		"echo safe\nrm -f v":  `$'echo safe\nrm -f v'`,
		"a\tb":                `$'a\tb'`,
		`a\tb`:                `'a\tb'`,
		"a\\\nb'c":            `$'a\\\nb\'c'`,
		"\x1b[8mx\r\x7f":      `$'\x1b[8mx\r\x7f'`,
		"r\u202el \U000E0041": `$'r\u202el \U000e0041'`,
		"\xff":                `$'\xff'`,
		"héllo wörld":         "'héllo wörld'",
	} {
		if got := ShellQuote(in); got != want {
			t.Errorf("ShellQuote(%+q) = %s, want %s", in, got, want)
		}
		if Line(ShellQuote(in)) != ShellQuote(in) {
			t.Errorf("ShellQuote(%+q) holds a character Line escapes", in)
		}
	}
}

// TestShellQuoteRuns: what ShellJoin shows is what a shell runs: bash
// reads each argument back exactly.
func TestShellQuoteRuns(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	args := []string{"plain", "two words", "it's", "a\nb", `a\nb`, "a\\\nb'c\t", "\x1b[8m\x01", "r\u202el\U000E0041", "é"}
	line := ShellJoin(args)
	out, err := exec.Command(bash, "-c", `for a in `+line+`; do printf '%s\0' "$a"; done`).Output()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for len(out) > 0 {
		i := 0
		for out[i] != 0 {
			i++
		}
		got = append(got, string(out[:i]))
		out = out[i+1:]
	}
	if len(got) != len(args) {
		t.Fatalf("bash read %q from %s", got, line)
	}
	for i := range args {
		if got[i] != args[i] {
			t.Errorf("bash read %+q, want %+q (from %s)", got[i], args[i], ShellQuote(args[i]))
		}
	}
}
