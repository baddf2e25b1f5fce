// Package applypatch reads the patch format of Codex CLI's apply_patch
// tool and works out what a patch does to a tree, without writing it.
//
// The format, as Codex's reference parser (openai/codex,
// codex-rs/apply-patch/src/parser.rs) reads it:
//
//	*** Begin Patch
//	*** Add File: PATH        followed by its lines, each prefixed "+"
//	*** Delete File: PATH
//	*** Update File: PATH     optionally followed by "*** Move to: PATH",
//	@@ [CONTEXT]              then chunks: an optional "@@" line naming a
//	 context line             line that comes before the chunk, and lines
//	-removed line             prefixed " " (kept), "-" (removed) or "+"
//	+added line               (added); "*** End of File" ends a chunk
//	*** End Patch             that must match at the end of the file
//
// As Codex does, the parser is lenient: markers may carry surrounding
// white space, the first chunk of an update may leave out its "@@", and
// a patch wrapped in a here-document (<<'EOF' … EOF) is unwrapped. Lines
// may end in CRLF. Applying follows the reference too
// (codex-rs/apply-patch/src/lib.rs, seek_sequence.rs): each chunk's
// removed and kept lines are found in order, first exactly, then
// ignoring trailing white space, then surrounding white space, then
// typographic punctuation; an Add File over a file that exists replaces
// it; an updated file ends with a newline. Unlike Codex, nothing is
// written: Plan returns each path's content after the whole patch.
package applypatch

import (
	"fmt"
	"strings"
)

// Markers of the format.
const (
	beginPatch  = "*** Begin Patch"
	endPatch    = "*** End Patch"
	addFile     = "*** Add File: "
	deleteFile  = "*** Delete File: "
	updateFile  = "*** Update File: "
	moveTo      = "*** Move to: "
	endOfFile   = "*** End of File"
	contextMark = "@@ "
	emptyMark   = "@@"
)

// Kind is what a hunk does to its file.
type Kind int

const (
	Add Kind = iota + 1
	Delete
	Update
)

func (k Kind) String() string {
	switch k {
	case Add:
		return "add"
	case Delete:
		return "delete"
	case Update:
		return "update"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// A Hunk is one file's part of a patch.
type Hunk struct {
	Kind Kind
	// Path is the file as the patch names it: relative to the
	// directory the patch is applied in, or absolute.
	Path string
	// MoveTo is where an Update moves the file, if anywhere.
	MoveTo string
	// Content is an Add's file content.
	Content string
	// Chunks are an Update's changes, in file order.
	Chunks []Chunk
	// Line is the patch line of the hunk's header (1-based).
	Line int
}

// A Chunk replaces Old lines of a file by New lines.
type Chunk struct {
	// Context, when HasContext, is a line that comes before Old in the
	// file (the text after "@@ ").
	Context    string
	HasContext bool
	Old, New   []string
	// EOF says Old must match at the end of the file.
	EOF bool
}

// An Error is a patch the format does not allow, or one that does not
// fit the files it names.
type Error struct {
	Line int // the patch line, 0 when none
	Msg  string
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("invalid patch, line %d: %s", e.Line, e.Msg)
	}
	return "invalid patch: " + e.Msg
}

func errorf(line int, format string, args ...any) error {
	return &Error{Line: line, Msg: fmt.Sprintf(format, args...)}
}

// Parse reads patch text into its hunks. A patch with no hunk is an
// error: it would change nothing.
func Parse(text string) ([]Hunk, error) {
	if strings.IndexByte(text, 0) >= 0 {
		return nil, errorf(0, "the patch holds a NUL byte")
	}
	lines := splitLines(strings.TrimSpace(text))
	body, first, err := boundaries(lines)
	if err != nil {
		return nil, err
	}
	var hunks []Hunk
	for i := 0; i < len(body); {
		h, n, err := parseHunk(body[i:], first+i)
		if err != nil {
			return nil, err
		}
		hunks = append(hunks, h)
		i += n
	}
	if len(hunks) == 0 {
		return nil, errorf(0, "the patch names no file to add, delete or update")
	}
	return hunks, nil
}

// splitLines splits s at "\n", dropping a "\r" before each (a patch
// written with CRLF reads as one written with LF).
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	return lines
}

// boundaries checks the Begin and End markers (unwrapping a
// here-document as Codex's lenient mode does) and returns the lines
// between them and the patch line number of the first of those.
func boundaries(lines []string) ([]string, int, error) {
	strict := func(ls []string) error {
		switch {
		case len(ls) == 0 || strings.TrimSpace(ls[0]) != beginPatch:
			return errorf(1, "the first line must be %q", beginPatch)
		case len(ls) < 2 || strings.TrimSpace(ls[len(ls)-1]) != endPatch:
			return errorf(len(ls), "the last line must be %q", endPatch)
		}
		return nil
	}
	err := strict(lines)
	if err == nil {
		return lines[1 : len(lines)-1], 2, nil
	}
	if n := len(lines); n >= 4 {
		switch lines[0] {
		case "<<EOF", "<<'EOF'", `<<"EOF"`:
			if strings.HasSuffix(lines[n-1], "EOF") {
				inner := lines[1 : n-1]
				if err := strict(inner); err != nil {
					return nil, 0, err
				}
				return inner[1 : len(inner)-1], 3, nil
			}
		}
	}
	return nil, 0, err
}

// parseHunk reads the hunk at the start of lines (the first on patch
// line no) and returns it with the number of lines it takes.
func parseHunk(lines []string, no int) (Hunk, int, error) {
	header := strings.TrimSpace(lines[0])
	path := func(marker string) (string, error) {
		p := strings.TrimPrefix(header, marker)
		if strings.TrimSpace(p) == "" {
			return "", errorf(no, "%q names no path", strings.TrimSpace(marker))
		}
		return p, nil
	}
	switch {
	case strings.HasPrefix(header, addFile):
		p, err := path(addFile)
		if err != nil {
			return Hunk{}, 0, err
		}
		var b strings.Builder
		n := 1
		for ; n < len(lines); n++ {
			l, ok := strings.CutPrefix(lines[n], "+")
			if !ok {
				break
			}
			b.WriteString(l)
			b.WriteByte('\n')
		}
		return Hunk{Kind: Add, Path: p, Content: b.String(), Line: no}, n, nil
	case strings.HasPrefix(header, deleteFile):
		p, err := path(deleteFile)
		if err != nil {
			return Hunk{}, 0, err
		}
		return Hunk{Kind: Delete, Path: p, Line: no}, 1, nil
	case strings.HasPrefix(header, updateFile):
		p, err := path(updateFile)
		if err != nil {
			return Hunk{}, 0, err
		}
		h := Hunk{Kind: Update, Path: p, Line: no}
		n := 1
		if n < len(lines) {
			if to, ok := strings.CutPrefix(lines[n], moveTo); ok {
				if strings.TrimSpace(to) == "" {
					return Hunk{}, 0, errorf(no+n, "%q names no path", strings.TrimSpace(moveTo))
				}
				h.MoveTo = to
				n++
			}
		}
		for n < len(lines) {
			if strings.TrimSpace(lines[n]) == "" { // blank lines between chunks
				n++
				continue
			}
			if strings.HasPrefix(lines[n], "*") { // the next hunk
				break
			}
			c, m, err := parseChunk(lines[n:], no+n, len(h.Chunks) == 0)
			if err != nil {
				return Hunk{}, 0, err
			}
			h.Chunks = append(h.Chunks, c)
			n += m
		}
		if len(h.Chunks) == 0 {
			return Hunk{}, 0, errorf(no, "the update of %q changes nothing", p)
		}
		return h, n, nil
	}
	return Hunk{}, 0, errorf(no, "%q is not a hunk header: want %q, %q or %q followed by a path",
		header, strings.TrimSpace(addFile), strings.TrimSpace(deleteFile), strings.TrimSpace(updateFile))
}

// parseChunk reads one chunk of an update (the first may leave out its
// "@@" line) and returns it with the number of lines it takes.
func parseChunk(lines []string, no int, first bool) (Chunk, int, error) {
	var c Chunk
	start := 0
	switch {
	case lines[0] == emptyMark:
		start = 1
	case strings.HasPrefix(lines[0], contextMark):
		c.Context, c.HasContext, start = lines[0][len(contextMark):], true, 1
	case !first:
		return c, 0, errorf(no, "a chunk must start with \"@@\", got %q", lines[0])
	}
	if start >= len(lines) {
		return c, 0, errorf(no+start, "the chunk has no lines")
	}
	n := 0
	for _, l := range lines[start:] {
		if l == endOfFile {
			if n == 0 {
				return c, 0, errorf(no+start, "the chunk has no lines")
			}
			c.EOF = true
			n++
			break
		}
		if l == "" { // an empty kept line
			c.Old, c.New = append(c.Old, ""), append(c.New, "")
			n++
			continue
		}
		switch l[0] {
		case ' ':
			c.Old, c.New = append(c.Old, l[1:]), append(c.New, l[1:])
		case '-':
			c.Old = append(c.Old, l[1:])
		case '+':
			c.New = append(c.New, l[1:])
		default:
			if n == 0 {
				return c, 0, errorf(no+start, "%q: every line of a chunk starts with ' ' (kept), '-' (removed) or '+' (added)", l)
			}
			return c, n + start, nil // the next chunk or hunk
		}
		n++
	}
	return c, n + start, nil
}
