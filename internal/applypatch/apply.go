package applypatch

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// A Change is one path's state after a whole patch.
type Change struct {
	// Path is absolute and clean.
	Path string
	// Delete says the patch removes the file; else it holds Content.
	Delete  bool
	Content string
	// Mode is the permission a moved file brings from its old path;
	// zero when the file keeps its own (or a new one gets the default).
	Mode fs.FileMode
	// Existed says Path held a file before the patch.
	Existed bool
}

// ReadFunc reads the regular file at an absolute path: its content and
// mode, or an error wrapping fs.ErrNotExist when there is none.
type ReadFunc func(path string) (content []byte, mode fs.FileMode, err error)

// Plan works out what hunks do when applied in dir (relative paths are
// resolved against it), reading the files they name with read: each
// touched path's state after the whole patch, in the order the patch
// first names them. check decides which paths the patch may touch: it is
// called on every path the patch names, absolute and clean, before read
// is, and its error refuses the patch. A path check refuses, a delete or
// an update of a file that does not exist, an update whose lines are not
// in the file, or a file that is not UTF-8 text is an *Error.
func Plan(hunks []Hunk, dir string, check func(path string) error, read ReadFunc) ([]Change, error) {
	if !filepath.IsAbs(dir) {
		return nil, fmt.Errorf("applypatch: dir %q must be absolute", dir)
	}
	type file struct {
		content string
		mode    fs.FileMode
		exists  bool
		existed bool
	}
	files := map[string]*file{}
	var order []string
	get := func(p string) (*file, error) {
		if f, ok := files[p]; ok {
			return f, nil
		}
		b, mode, err := read(p)
		f := &file{}
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return nil, err
		default:
			f.content, f.mode, f.exists, f.existed = string(b), mode, true, true
		}
		files[p] = f
		order = append(order, p)
		return f, nil
	}
	resolve := func(h Hunk, p string) (string, error) {
		if strings.IndexByte(p, 0) >= 0 {
			return "", errorf(h.Line, "the path %q holds a NUL byte", p)
		}
		abs := p
		if !filepath.IsAbs(abs) {
			abs = filepath.Join(dir, abs)
		}
		abs = filepath.Clean(abs)
		if err := check(abs); err != nil {
			return "", &Error{Line: h.Line, Msg: err.Error()}
		}
		return abs, nil
	}
	for _, h := range hunks {
		p, err := resolve(h, h.Path)
		if err != nil {
			return nil, err
		}
		f, err := get(p)
		if err != nil {
			return nil, err
		}
		switch h.Kind {
		case Add:
			f.content, f.exists = h.Content, true
		case Delete:
			if !f.exists {
				return nil, errorf(h.Line, "cannot delete %s: there is no such file", p)
			}
			f.content, f.exists = "", false
		case Update:
			if !f.exists {
				return nil, errorf(h.Line, "cannot update %s: there is no such file", p)
			}
			if !utf8.ValidString(f.content) {
				return nil, errorf(h.Line, "cannot update %s: it is not UTF-8 text", p)
			}
			next, err := update(f.content, h.Chunks)
			if err != nil {
				return nil, errorf(h.Line, "cannot update %s: %v", p, err)
			}
			if h.MoveTo == "" {
				f.content = next
				break
			}
			to, err := resolve(h, h.MoveTo)
			if err != nil {
				return nil, err
			}
			t, err := get(to)
			if err != nil {
				return nil, err
			}
			mode := f.mode
			f.content, f.exists = "", false
			t.content, t.exists, t.mode = next, true, mode
		default:
			return nil, errorf(h.Line, "unknown hunk kind %v", h.Kind)
		}
	}
	var out []Change
	for _, p := range order {
		f := files[p]
		switch {
		case f.exists:
			c := Change{Path: p, Content: f.content, Existed: f.existed}
			if !f.existed {
				c.Mode = f.mode.Perm() // a moved file's; zero for an added one
			}
			out = append(out, c)
		case f.existed:
			out = append(out, Change{Path: p, Delete: true, Existed: true})
		}
	}
	return out, nil
}

// update is content with chunks applied, as Codex's apply_patch makes
// it (derive_new_contents_from_chunks): an updated file ends with a
// newline. A file whose every line ends in CRLF keeps CRLF.
func update(content string, chunks []Chunk) (string, error) {
	crlf := usesCRLF(content)
	if crlf {
		content = strings.ReplaceAll(content, "\r\n", "\n")
	}
	lines := strings.Split(content, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	type repl struct {
		at, n int
		new   []string
	}
	var repls []repl
	at := 0
	for _, c := range chunks {
		if c.HasContext {
			i := seek(lines, []string{c.Context}, at, false)
			if i < 0 {
				return "", fmt.Errorf("the context line %q is not in the file", c.Context)
			}
			at = i + 1
		}
		if len(c.Old) == 0 {
			// Only added lines: at the end of the file, as Codex does.
			end := len(lines)
			if end > 0 && lines[end-1] == "" {
				end--
			}
			repls = append(repls, repl{end, 0, c.New})
			continue
		}
		old, new := c.Old, c.New
		i := seek(lines, old, at, c.EOF)
		if i < 0 && old[len(old)-1] == "" {
			// The last line may stand for the file's final newline.
			old = old[:len(old)-1]
			if len(new) > 0 && new[len(new)-1] == "" {
				new = new[:len(new)-1]
			}
			i = seek(lines, old, at, c.EOF)
		}
		if i < 0 {
			return "", fmt.Errorf("these lines are not in the file (after line %d):\n%s", at, strings.Join(c.Old, "\n"))
		}
		repls = append(repls, repl{i, len(old), new})
		at = i + len(old)
	}
	slices.SortStableFunc(repls, func(a, b repl) int { return a.at - b.at })
	for i := len(repls) - 1; i >= 0; i-- {
		r := repls[i]
		lines = slices.Replace(lines, r.at, r.at+r.n, r.new...)
	}
	if len(lines) == 0 || lines[len(lines)-1] != "" {
		lines = append(lines, "")
	}
	nl := "\n"
	if crlf {
		nl = "\r\n"
	}
	return strings.Join(lines, nl), nil
}

// usesCRLF says every newline of s ends a CRLF, and there is one.
func usesCRLF(s string) bool {
	n := strings.Count(s, "\n")
	return n > 0 && strings.Count(s, "\r\n") == n
}

// seek finds pattern in lines at or after start (at the end only, with
// eof): the index of its first line, or -1. Lines match exactly, else
// ignoring trailing white space, else surrounding white space, else
// with typographic dashes, quotes and spaces read as ASCII (Codex's
// seek_sequence).
func seek(lines, pattern []string, start int, eof bool) int {
	if len(pattern) == 0 {
		return start
	}
	if len(pattern) > len(lines) {
		return -1
	}
	from := start
	if eof {
		from = len(lines) - len(pattern)
	}
	for _, eq := range []func(a, b string) bool{
		func(a, b string) bool { return a == b },
		func(a, b string) bool {
			return strings.TrimRightFunc(a, unicode.IsSpace) == strings.TrimRightFunc(b, unicode.IsSpace)
		},
		func(a, b string) bool { return strings.TrimSpace(a) == strings.TrimSpace(b) },
		func(a, b string) bool { return normalize(a) == normalize(b) },
	} {
	next:
		for i := from; i <= len(lines)-len(pattern); i++ {
			for j, p := range pattern {
				if !eq(lines[i+j], p) {
					continue next
				}
			}
			return i
		}
	}
	return -1
}

// normalize trims s and reads typographic dashes, quotes and spaces as
// their ASCII forms.
func normalize(s string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case '\u2010', '\u2011', '\u2012', '\u2013', '\u2014', '\u2015', '\u2212':
			return '-'
		case '\u2018', '\u2019', '\u201A', '\u201B':
			return '\''
		case '\u201C', '\u201D', '\u201E', '\u201F':
			return '"'
		case '\u00A0', '\u2002', '\u2003', '\u2004', '\u2005', '\u2006', '\u2007', '\u2008', '\u2009', '\u200A', '\u202F', '\u205F', '\u3000':
			return ' '
		}
		return r
	}, strings.TrimSpace(s))
}
