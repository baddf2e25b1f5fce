package review

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// ShellJoin quotes argv as a shell would need it typed (ShellQuote), one
// line: what is shown is what runs, and no two different argvs are shown
// alike.
func ShellJoin(argv []string) string {
	out := make([]string, len(argv))
	for i, a := range argv {
		out[i] = ShellQuote(a)
	}
	return strings.Join(out, " ")
}

// ShellQuote quotes s for a shell: as it is when it holds only characters
// no shell reads specially; in single quotes when it holds no character
// Text would escape; else in ANSI-C quotes ($'...', bash, zsh, ksh and
// POSIX.1-2024 sh), where every such character is an escape — \n, \t,
// \r, \xHH (a control character or a byte of invalid UTF-8), \uHHHH or
// \UHHHHHHHH — and a backslash is \\ and a single quote \'. So a real
// newline is shown as $'a\nb' and a backslash and an n as 'a\nb': the two
// never look alike, and nothing in the result can drive a terminal.
func ShellQuote(s string) string {
	if s == "" {
		return "''"
	}
	safe, plain := true, true
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("@%+=:,./_-", r)) {
			safe = false
		}
		if r == utf8.RuneError && size <= 1 || r < 0x20 || r == 0x7f || r >= 0x80 && Invisible(r) {
			plain = false
			break
		}
		i += size
	}
	switch {
	case safe:
		return s
	case plain:
		return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
	}
	var b strings.Builder
	b.WriteString("$'")
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\'':
			b.WriteString(`\'`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r >= 0x80 && Invisible(r) && r <= 0xffff:
			fmt.Fprintf(&b, `\u%04x`, r)
		case r >= 0x80 && Invisible(r):
			fmt.Fprintf(&b, `\U%08x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	b.WriteString("'")
	return b.String()
}
