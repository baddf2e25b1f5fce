package descriptors

// Subcommands: the command lines act can see inside one argv, for the
// policy's deny rules (docs/policy.md, "Command rules"). A deny rule on rm
// must also refuse /bin/rm, env rm, nice rm, timeout 5 rm, xargs rm,
// sh -c "rm …", find … -exec rm …, find … -delete. This is a best-effort
// reading, as checkArgv's: a script file, an alias, a variable holding the
// name, or a program that removes files itself escape it; the sandbox and
// the reviewed diff are the defence, a deny rule never the only one.

import (
	"path"
	"strings"
)

// moreWrappers run the command that follows their options, beside
// [wrappers] (which checkArgv also reads): the ones the checks refuse on
// their own (nohup, setsid, sudo, …) still hide the command they run from
// a deny rule unless it looks through them.
var moreWrappers = map[string]struct {
	argOpts     map[string]bool
	positionals int
}{
	"nohup":     {},
	"setsid":    {},
	"sudo":      {argOpts: setOf("-u", "--user", "-g", "--group", "-C", "--close-from", "-D", "--chdir", "-h", "--host", "-p", "--prompt", "-r", "--role", "-t", "--type", "-U", "--other-user", "-T", "--command-timeout")},
	"doas":      {argOpts: setOf("-u", "-C")},
	"chroot":    {positionals: 1},
	"unshare":   {argOpts: setOf("-S", "--setuid", "-G", "--setgid", "-R", "--root", "-w", "--wd", "--propagation")},
	"strace":    {argOpts: setOf("-o", "-e", "-p", "-s", "-u", "-E", "-I", "-P", "-a", "-b", "-O", "-S", "-X")},
	"ltrace":    {argOpts: setOf("-o", "-e", "-p", "-s", "-u", "-n", "-l", "-a")},
	"fakeroot":  {argOpts: setOf("-l", "-s", "-i", "-b")},
	"eatmydata": {},
	"parallel":  {argOpts: setOf("-j", "--jobs", "-S", "--sshlogin", "-a", "--arg-file", "-d", "--delimiter", "-I", "--colsep")},
	"sg":        {positionals: 1},
}

// stringOpts are wrappers' options whose argument is a shell command line:
// su -c "rm x", flock -c "rm x" lock, script -c "rm x".
var stringOpts = map[string]map[string]bool{
	"su":      setOf("-c", "--command"),
	"runuser": setOf("-c", "--command"),
	"flock":   setOf("-c", "--command"),
	"script":  setOf("-c", "--command"),
}

// maxSubDepth bounds how deep Subcommands follows commands inside
// commands, and maxSubcommands how many it returns.
const (
	maxSubDepth    = 8
	maxSubcommands = 1024
)

// Subcommands returns every command line act can see in argv, argv itself
// first: the command a wrapper runs (env, nice, timeout, nohup, command,
// exec, xargs, sudo, busybox's applets, …, past their options), each
// simple command of a `sh -c` (bash, dash, …) script, of `eval` and of
// `$(…)` and backquotes in it, what `find -exec`/`-execdir`/`-ok` run, and
// `find … -delete` as `rm {}`. Each line keeps its program name as
// written (/bin/rm, \rm is rm); arguments are the words as the shell would
// pass them where act can tell (quotes removed).
func Subcommands(argv []string) [][]string {
	var out [][]string
	subcommands(argv, 0, &out)
	return out
}

func subcommands(argv []string, depth int, out *[][]string) {
	if len(argv) == 0 || depth > maxSubDepth || len(*out) >= maxSubcommands {
		return
	}
	*out = append(*out, argv)
	name := path.Base(argv[0])
	rest := argv[1:]
	script := func(s string) {
		for _, cmd := range shellCommands(s, 0) {
			subcommands(cmd, depth+1, out)
		}
	}
	switch {
	case name == "env":
		for j := 0; j < len(rest); j++ {
			a := rest[j]
			switch {
			case a == "-S" || a == "--split-string":
				if j+1 < len(rest) {
					subcommands(append(shellWords(rest[j+1]), rest[j+2:]...), depth+1, out)
				}
				return
			case strings.HasPrefix(a, "--split-string="):
				subcommands(append(shellWords(strings.TrimPrefix(a, "--split-string=")), rest[j+1:]...), depth+1, out)
				return
			case strings.HasPrefix(a, "-S"):
				subcommands(append(shellWords(a[2:]), rest[j+1:]...), depth+1, out)
				return
			case a == "-u" || a == "--unset" || a == "-C" || a == "--chdir":
				j++
			case a == "--":
				subcommands(skipAssignments(rest[j+1:]), depth+1, out)
				return
			case strings.HasPrefix(a, "-") || strings.Contains(a, "="):
			default:
				subcommands(rest[j:], depth+1, out)
				return
			}
		}
	case name == "command" && len(rest) > 0 && (rest[0] == "-v" || rest[0] == "-V"):
		// command -v rm asks where rm is; it runs nothing.
	case name == "busybox" && len(rest) > 0:
		subcommands(rest, depth+1, out)
	case name == "eval":
		script(strings.Join(rest, " "))
	case name == "watch":
		// watch runs its arguments through sh -c, joined by blanks.
		j := 0
		for j < len(rest) && strings.HasPrefix(rest[j], "-") {
			if rest[j] == "-n" || rest[j] == "--interval" {
				j++
			}
			j++
		}
		if j < len(rest) {
			script(strings.Join(rest[j:], " "))
		}
	case name == "find":
		for j := 0; j < len(rest); j++ {
			switch rest[j] {
			case "-exec", "-execdir", "-ok", "-okdir":
				k := j + 1
				for k < len(rest) && rest[k] != ";" && rest[k] != "+" {
					k++
				}
				subcommands(rest[j+1:k], depth+1, out)
				j = k
			case "-delete":
				subcommands([]string{"rm", "{}"}, depth+1, out)
			}
		}
	case shells[name]:
		if s, ok := shellScript(rest); ok {
			script(s)
		}
	case stringOpts[name] != nil:
		for j := 0; j+1 < len(rest); j++ {
			if stringOpts[name][rest[j]] {
				script(rest[j+1])
				return
			}
		}
		if name == "flock" {
			subcommands(wrapped(rest, wrappers[name].argOpts, wrappers[name].positionals), depth+1, out)
		}
	default:
		if w, ok := wrappers[name]; ok {
			subcommands(wrapped(rest, w.argOpts, w.positionals), depth+1, out)
		} else if w, ok := moreWrappers[name]; ok {
			subcommands(wrapped(rest, w.argOpts, w.positionals), depth+1, out)
		}
	}
}

// wrapped is the command line a wrapper runs: args past its options (and
// the arguments of those in argOpts), option values and assignments, and
// positionals more arguments.
func wrapped(args []string, argOpts map[string]bool, positionals int) []string {
	j := 0
	for j < len(args) {
		a := args[j]
		switch {
		case a == "--":
			return args[j+1:]
		case argOpts[a]:
			j += 2
			continue
		case wrapperArg(a):
			j++
			continue
		case positionals > 0:
			positionals--
			j++
			continue
		}
		break
	}
	if j > len(args) {
		return nil
	}
	return args[j:]
}

// skipAssignments drops the NAME=value words before a command.
func skipAssignments(args []string) []string {
	for len(args) > 0 && isAssignment(args[0]) {
		args = args[1:]
	}
	return args
}

// isAssignment reports whether w is NAME=value with NAME a shell name.
func isAssignment(w string) bool {
	name, _, ok := strings.Cut(w, "=")
	if !ok || name == "" {
		return false
	}
	for i, r := range name {
		if r != '_' && (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') && (i == 0 || r < '0' || r > '9') {
			return false
		}
	}
	return true
}

// shellScript returns the script of a shell's argv (after its name): the
// argument -c (alone or in a cluster such as -ec, -lc) makes a command
// line, the first one that is not an option.
func shellScript(args []string) (string, bool) {
	c := false
	for j := 0; j < len(args); j++ {
		a := args[j]
		switch {
		case a == "--" || a == "-":
			if c && j+1 < len(args) {
				return args[j+1], true
			}
			return "", false
		case a == "-o" || a == "+o" || a == "-O" || a == "+O" || a == "--rcfile" || a == "--init-file":
			j++
		case strings.HasPrefix(a, "--"):
		case strings.HasPrefix(a, "-") || strings.HasPrefix(a, "+"):
			if strings.Contains(a[1:], "c") && a[0] == '-' {
				c = true
			}
		case c:
			return a, true
		default:
			return "", false // sh script.sh: a file act does not read
		}
	}
	return "", false
}

// shellWords splits s into words as a shell would (quotes and backslashes
// removed, no expansion), for env -S.
func shellWords(s string) []string {
	cmds := shellCommands(s, 0)
	var out []string
	for _, c := range cmds {
		out = append(out, c...)
	}
	return out
}

// shellCommands returns the simple commands of a shell script, each from
// its command name on (assignments, redirections and reserved words
// before it left out, redirections after it too), with the commands of
// every `$(…)`, backquoted and `<(…)` text in it. It is a rough reading
// of POSIX sh, for deny rules: quotes and backslashes are removed as the
// shell removes them, a command substitution stands for nothing in the
// word around it (r$(true)m reads rm), variables are left as written,
// here-documents are skipped.
func shellCommands(s string, depth int) [][]string {
	if depth > maxSubDepth {
		return nil
	}
	var (
		cmds     [][]string
		words    []string
		word     strings.Builder
		inWord   bool
		redirect bool     // the next word is a redirection's target
		heredocs []string // delimiters of here-documents begun on this line
	)
	endWord := func() {
		if !inWord {
			return
		}
		w := word.String()
		word.Reset()
		inWord = false
		if redirect {
			redirect = false
			return
		}
		words = append(words, w)
	}
	endCmd := func() {
		endWord()
		redirect = false
		if c := simpleCommand(words); len(c) > 0 {
			cmds = append(cmds, c)
		}
		words = nil
	}
	// sub reads the command substitution that starts at s[i] (just past
	// "$(" or "`") and returns the index past its end.
	sub := func(i int, close byte) int {
		end := matchingClose(s, i, close)
		cmds = append(cmds, shellCommands(s[i:end], depth+1)...)
		if end < len(s) {
			end++
		}
		inWord = true
		return end
	}
	for i := 0; i < len(s); {
		ch := s[i]
		switch {
		case ch == '\\':
			if i+1 < len(s) {
				if s[i+1] != '\n' {
					word.WriteByte(s[i+1])
					inWord = true
				}
				i += 2
				continue
			}
			i++
		case ch == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				j = len(s) - i - 1
			}
			word.WriteString(s[i+1 : i+1+j])
			inWord = true
			i += j + 2
		case ch == '$' && i+1 < len(s) && s[i+1] == '\'':
			// $'…': ANSI-C quoting, read as plain single quotes.
			i++
		case ch == '"':
			inWord = true
			i++
			for i < len(s) && s[i] != '"' {
				switch {
				case s[i] == '\\' && i+1 < len(s) && strings.IndexByte("$`\"\\\n", s[i+1]) >= 0:
					if s[i+1] != '\n' {
						word.WriteByte(s[i+1])
					}
					i += 2
				case s[i] == '$' && i+1 < len(s) && s[i+1] == '(':
					i = sub(i+2, ')')
				case s[i] == '`':
					i = sub(i+1, '`')
				default:
					word.WriteByte(s[i])
					i++
				}
			}
			i++
		case ch == '$' && i+1 < len(s) && s[i+1] == '(':
			i = sub(i+2, ')')
		case ch == '`':
			i = sub(i+1, '`')
		case (ch == '<' || ch == '>') && i+1 < len(s) && s[i+1] == '(':
			// <(…) and >(…): process substitution.
			endWord()
			i = sub(i+2, ')')
			inWord = false
			word.Reset()
		case ch == '<' || ch == '>':
			// A redirection: a file descriptor number before it is part
			// of it, and the word after it is its target.
			if inWord && isDigits(word.String()) {
				word.Reset()
				inWord = false
			}
			endWord()
			j := i + 1
			for j < len(s) && strings.IndexByte("<>&|-", s[j]) >= 0 {
				j++
			}
			op := s[i:j]
			if strings.HasPrefix(op, "<<") && op != "<<<" {
				// A here-document: its delimiter, then its body after
				// the end of the line, skipped.
				k := j
				for k < len(s) && (s[k] == ' ' || s[k] == '\t') {
					k++
				}
				e := k
				for e < len(s) && strings.IndexByte(" \t\n;&|<>()", s[e]) < 0 {
					e++
				}
				heredocs = append(heredocs, strings.Trim(s[k:e], `'"\`))
				i = e
				continue
			}
			if strings.HasSuffix(op, "&") && j < len(s) && (isDigits(string(s[j])) || s[j] == '-') {
				j++ // >&2, <&-
				i = j
				continue
			}
			redirect = true
			i = j
		case ch == '#' && !inWord:
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case ch == '\n':
			endCmd()
			i++
			for _, delim := range heredocs {
				for i < len(s) {
					e := strings.IndexByte(s[i:], '\n')
					line := s[i:]
					if e >= 0 {
						line = s[i : i+e]
					}
					if e < 0 {
						i = len(s)
					} else {
						i += e + 1
					}
					if strings.TrimLeft(line, "\t") == delim {
						break
					}
				}
			}
			heredocs = nil
		case ch == ';' || ch == '&' || ch == '|' || ch == '(' || ch == ')':
			endCmd()
			i++
		case ch == ' ' || ch == '\t':
			endWord()
			i++
		default:
			word.WriteByte(ch)
			inWord = true
			i++
		}
	}
	endCmd()
	return cmds
}

// simpleCommand is words from the command name on: leading assignments,
// reserved words, "{", "}" and "function NAME" dropped; nil for a for,
// select or case header, or nothing.
func simpleCommand(words []string) []string {
	for len(words) > 0 {
		switch w := words[0]; {
		case w == "!" || w == "{" || w == "}" || w == "if" || w == "then" || w == "else" || w == "elif" ||
			w == "do" || w == "while" || w == "until" || w == "fi" || w == "done" || w == "esac":
			words = words[1:]
		case w == "function":
			words = words[min(2, len(words)):]
		case w == "for" || w == "case" || w == "select":
			return nil
		case isAssignment(w):
			words = words[1:]
		default:
			return words
		}
	}
	return nil
}

// matchingClose returns the index of the close that ends the text starting
// at s[i] ("`" or the ")" of "$(" counting nested parentheses and skipping
// quoted text), or len(s).
func matchingClose(s string, i int, close byte) int {
	depth := 0
	for ; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			i++
		case c == '\'' && close == ')':
			if j := strings.IndexByte(s[i+1:], '\''); j >= 0 {
				i += j + 1
			} else {
				return len(s)
			}
		case c == close && depth == 0:
			return i
		case c == '(' && close == ')':
			depth++
		case c == ')' && close == ')':
			depth--
		}
	}
	return len(s)
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}
