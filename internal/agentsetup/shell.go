package agentsetup

import (
	"strings"
)

// An agent runs a command hook through a shell (sh -c, bash -lc): act
// writes its command line as plain POSIX words, and reads one back only
// when it is plain words, so that what it checks is what the shell runs.

// quote returns s as one POSIX shell word: as it is when it holds only
// characters no shell treats specially, else in single quotes.
func quote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool { return !plainRune(r) }) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func plainRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=@%+,", r)
}

// join is argv as one shell command line.
func join(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = quote(a)
	}
	return strings.Join(q, " ")
}

// split parses a command line made only of words: unquoted characters
// no shell expands, single-quoted strings, double-quoted strings without
// $ or `, and backslash escapes. ok is false for anything else (a
// variable, a glob, a redirection, a pipe, a second command, a comment):
// act cannot tell what such a line runs.
func split(line string) (argv []string, ok bool) {
	var (
		word   strings.Builder
		inWord bool
	)
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == ' ' || c == '\t':
			if inWord {
				argv = append(argv, word.String())
				word.Reset()
				inWord = false
			}
		case c == '\'':
			j := strings.IndexByte(line[i+1:], '\'')
			if j < 0 {
				return nil, false
			}
			word.WriteString(line[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '"':
			i++
			for ; i < len(line) && line[i] != '"'; i++ {
				switch line[i] {
				case '$', '`':
					return nil, false
				case '\\':
					if i+1 < len(line) && strings.IndexByte("\"\\$`", line[i+1]) >= 0 {
						i++
					} else if i+1 < len(line) && line[i+1] == '\n' {
						i++
						continue
					}
				}
				word.WriteByte(line[i])
			}
			if i >= len(line) {
				return nil, false
			}
			inWord = true
		case c == '\\':
			if i+1 >= len(line) {
				return nil, false
			}
			i++
			if line[i] != '\n' {
				word.WriteByte(line[i])
				inWord = true
			}
		case c == '~' && !inWord, c == '#' && !inWord:
			return nil, false // a home directory or a comment
		case strings.IndexByte("$`;&|<>()*?[]{}!\n\r", c) >= 0:
			return nil, false
		default:
			word.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		argv = append(argv, word.String())
	}
	return argv, len(argv) > 0
}
