package gate

import (
	"bufio"
	"bytes"
	"strings"
)

// What git's ignore rules hide from `git status` (gitignore(5)), read as
// git reads them: per-directory .gitignore files (deeper first), then
// $GIT_DIR/info/exclude, then core.excludesFile; within a file the last
// matching line wins; a path under an ignored directory is ignored, and
// no "!" line brings it back. Patterns are matched with git's wildmatch
// semantics (wildmatch below); gitignore_test.go checks both against the
// git binary itself where it is installed.

// An ignorePattern is one line of an ignore file.
type ignorePattern struct {
	pattern  string // without "!", the trailing "/" and a leading "/"
	negative bool
	dirOnly  bool // the line ended with "/"
	basename bool // no "/" in it: matched against the last component
	base     string
}

// parseIgnore reads the lines of an ignore file in directory base (a
// path relative to the work tree, "" for its root; "" too for
// info/exclude and core.excludesFile, which are relative to the root).
func parseIgnore(data []byte, base string) []ignorePattern {
	var out []ignorePattern
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for first := true; sc.Scan(); first = false {
		line := strings.TrimSuffix(sc.Text(), "\r")
		if first {
			line = strings.TrimPrefix(line, "\ufeff") // a byte order mark
		}
		if line == "" || line[0] == '#' {
			continue
		}
		line = trimTrailingSpaces(line)
		if line == "" {
			continue
		}
		p := ignorePattern{base: base}
		if line[0] == '!' {
			p.negative = true
			line = line[1:]
		}
		if strings.HasSuffix(line, "/") {
			p.dirOnly = true
			line = strings.TrimSuffix(line, "/")
		}
		if line == "" {
			continue
		}
		if !strings.Contains(line, "/") {
			p.basename = true
		} else {
			line = strings.TrimPrefix(line, "/")
		}
		p.pattern = line
		out = append(out, p)
	}
	return out
}

// trimTrailingSpaces drops the spaces at the end of line that no
// backslash quotes, as git does.
func trimTrailingSpaces(line string) string {
	end := len(line)
	for i := 0; i < len(line); i++ {
		switch line[i] {
		case ' ':
			continue
		case '\\':
			i++
			end = min(i+1, len(line))
			continue
		}
		end = i + 1
	}
	return line[:end]
}

// match reports whether p matches path (relative to the work tree root),
// a directory when isDir.
func (p ignorePattern) match(path string, isDir bool) bool {
	if p.dirOnly && !isDir {
		return false
	}
	if p.basename {
		name := path[strings.LastIndexByte(path, '/')+1:]
		return wildmatch(p.pattern, name, false)
	}
	rest := path
	if p.base != "" {
		var ok bool
		if rest, ok = strings.CutPrefix(path, p.base+"/"); !ok {
			return false
		}
	}
	return wildmatch(p.pattern, rest, true)
}

// ignoreRules is every ignore file that applies to a work tree: the
// per-directory .gitignore files (read through load, by directory
// relative to the root) and the repository's and the user's exclude
// files.
type ignoreRules struct {
	load    func(dir string) []ignorePattern
	exclude []ignorePattern // info/exclude
	global  []ignorePattern // core.excludesFile
	cache   map[string][]ignorePattern
}

// decide is the last pattern that matches path among lists, the list of
// highest precedence first: whether path is ignored, and whether any
// pattern matched.
func decide(lists [][]ignorePattern, path string, isDir bool) (ignored, matched bool) {
	for _, l := range lists {
		for i := len(l) - 1; i >= 0; i-- {
			if l[i].match(path, isDir) {
				return !l[i].negative, true
			}
		}
	}
	return false, false
}

func (r *ignoreRules) dir(d string) []ignorePattern {
	if r.cache == nil {
		r.cache = map[string][]ignorePattern{}
	}
	ps, ok := r.cache[d]
	if !ok {
		ps = r.load(d)
		r.cache[d] = ps
	}
	return ps
}

// ignored reports whether path (relative to the work tree root; a
// directory when isDir) is ignored: a leading directory that is ignored
// ignores everything below it.
func (r *ignoreRules) ignored(path string, isDir bool) bool {
	parts := strings.Split(path, "/")
	// lists holds the .gitignore files read so far, deepest first, then
	// info/exclude and core.excludesFile.
	lists := [][]ignorePattern{r.exclude, r.global}
	for i := range parts {
		dir := strings.Join(parts[:i], "/")
		lists = append([][]ignorePattern{r.dir(dir)}, lists...)
		sub := strings.Join(parts[:i+1], "/")
		last := i == len(parts)-1
		if ign, _ := decide(lists, sub, isDir || !last); ign {
			return true
		}
	}
	return false
}

// Glob results, as git's wildmatch has them: a mismatch may abort the
// whole match, or only back to the last "**".
const (
	wmMatch = iota
	wmNoMatch
	wmAbortAll
	wmAbortToStarStar
)

// wildmatch matches text against pattern with git's glob rules: "?" and
// "*" match no "/" when pathname is set (a "**" between slashes or at an
// end matches any number of directories), "[...]" classes with "!" or
// "^", ranges and "[:alpha:]" names, "\" quotes the next character.
func wildmatch(pattern, text string, pathname bool) bool {
	return dowild(pattern, text, pathname) == wmMatch
}

func isGlobSpecial(c byte) bool { return c == '*' || c == '?' || c == '[' || c == '\\' }

func dowild(p, t string, pathname bool) int {
	pi, ti := 0, 0
	for ; pi < len(p); pi, ti = pi+1, ti+1 {
		pc := p[pi]
		if ti >= len(t) && pc != '*' {
			return wmAbortAll
		}
		var tc byte
		if ti < len(t) {
			tc = t[ti]
		}
		switch pc {
		case '\\':
			pi++
			if pi >= len(p) || tc != p[pi] {
				return wmNoMatch
			}
		default:
			if tc != pc {
				return wmNoMatch
			}
		case '?':
			if pathname && tc == '/' {
				return wmNoMatch
			}
		case '*':
			if r, done := starMatch(p, t, &pi, &ti, pathname); done {
				return r
			}
		case '[':
			if r := classMatch(p, &pi, tc, pathname); r != wmMatch {
				return r
			}
		}
	}
	if ti < len(t) {
		return wmNoMatch
	}
	return wmMatch
}

// starMatch matches the "*" or "**" at p[*pi] against t from *ti. done
// says the whole match is decided (its result); otherwise the pattern
// goes on from *pi with the text at *ti (both at a "/" matched).
func starMatch(p, t string, pi, ti *int, pathname bool) (int, bool) {
	matchSlash := !pathname
	i := *pi + 1
	if i < len(p) && p[i] == '*' {
		prev := *pi - 1
		for i < len(p) && p[i] == '*' {
			i++
		}
		switch {
		case !pathname:
			matchSlash = true
		case (prev < 0 || p[prev] == '/') && (i == len(p) || p[i] == '/' || (p[i] == '\\' && i+1 < len(p) && p[i+1] == '/')):
			// "**/" may match no directory at all.
			if i < len(p) && p[i] == '/' && dowild(p[i+1:], t[*ti:], pathname) == wmMatch {
				return wmMatch, true
			}
			matchSlash = true
		default:
			matchSlash = false
		}
	}
	rest := t[*ti:]
	if i == len(p) {
		if !matchSlash && strings.IndexByte(rest, '/') >= 0 {
			return wmNoMatch, true
		}
		return wmMatch, true
	}
	if !matchSlash && p[i] == '/' {
		slash := strings.IndexByte(rest, '/')
		if slash < 0 {
			return wmNoMatch, true
		}
		*pi, *ti = i, *ti+slash
		return 0, false
	}
	for j := *ti; j < len(t); j++ {
		if c := p[i]; !isGlobSpecial(c) {
			// The text before the next literal belongs to the star.
			for j < len(t) && (matchSlash || t[j] != '/') && t[j] != c {
				j++
			}
			if j >= len(t) || t[j] != c {
				return wmNoMatch, true
			}
		}
		m := dowild(p[i:], t[j:], pathname)
		if m != wmNoMatch {
			if !matchSlash || m != wmAbortToStarStar {
				return m, true
			}
		} else if !matchSlash && t[j] == '/' {
			return wmAbortToStarStar, true
		}
	}
	return wmAbortAll, true
}

// classMatch matches the class "[...]" at p[*pi] against tc, leaving *pi
// at its "]".
func classMatch(p string, pi *int, tc byte, pathname bool) int {
	at := func(i int) byte {
		if i < len(p) {
			return p[i]
		}
		return 0
	}
	i := *pi + 1
	pc := at(i)
	if pc == '^' {
		pc = '!'
	}
	negated := pc == '!'
	if negated {
		i++
		pc = at(i)
	}
	var prev byte
	matched := false
	for {
		if pc == 0 {
			return wmAbortAll
		}
		switch {
		case pc == '\\':
			i++
			if pc = at(i); pc == 0 {
				return wmAbortAll
			}
			if tc == pc {
				matched = true
			}
		case pc == '-' && prev != 0 && at(i+1) != 0 && at(i+1) != ']':
			i++
			pc = at(i)
			if pc == '\\' {
				i++
				if pc = at(i); pc == 0 {
					return wmAbortAll
				}
			}
			if tc <= pc && tc >= prev {
				matched = true
			}
			pc = 0
		case pc == '[' && at(i+1) == ':':
			s := i + 2
			j := s
			for at(j) != 0 && at(j) != ']' {
				j++
			}
			if at(j) == 0 {
				return wmAbortAll
			}
			if j-s-1 < 0 || p[j-1] != ':' {
				// No ":]": an ordinary "[".
				if tc == '[' {
					matched = true
				}
				break
			}
			ok, known := charClass(p[s:j-1], tc)
			if !known {
				return wmAbortAll
			}
			matched = matched || ok
			i, pc = j, 0
		default:
			if tc == pc {
				matched = true
			}
		}
		prev = pc
		i++
		if pc = at(i); pc == ']' {
			break
		}
	}
	*pi = i
	if matched == negated || (pathname && tc == '/') {
		return wmNoMatch
	}
	return wmMatch
}

// charClass reports whether c is in the named POSIX class (ASCII only).
func charClass(name string, c byte) (in, known bool) {
	lower, upper, digit := c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9'
	switch name {
	case "alnum":
		return lower || upper || digit, true
	case "alpha":
		return lower || upper, true
	case "blank":
		return c == ' ' || c == '\t', true
	case "cntrl":
		return c < 0x20 || c == 0x7f, true
	case "digit":
		return digit, true
	case "graph":
		return c > 0x20 && c < 0x7f, true
	case "lower":
		return lower, true
	case "print":
		return c >= 0x20 && c < 0x7f, true
	case "punct":
		return c > 0x20 && c < 0x7f && !lower && !upper && !digit, true
	case "space":
		return c == ' ' || (c >= '\t' && c <= '\r'), true
	case "upper":
		return upper, true
	case "xdigit":
		return digit || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'), true
	}
	return false, false
}
