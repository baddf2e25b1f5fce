package cmd

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"
)

// While a sandboxed command of act plan or act apply runs, a person at a
// terminal sees its output as it comes, on stderr: each line after the
// time since the dry run began ("act: [12s] compiling…"), escaped like
// all act prints and cut at the terminal's width, at most streamLines
// lines a second (the rest is counted, and the count said with the next
// line shown). The whole (capped, redacted) output is shown with the
// plan once the command ends, as before. Not with --json, not piped.

// streamLines is the most lines a second the stream shows.
const streamLines = 4

// outputStream prints a command's output lines as they come.
type outputStream struct {
	mu      sync.Mutex
	w       io.Writer
	start   time.Time
	now     func() time.Time
	width   int
	second  int // the second of the lines counted in shown
	shown   int
	skipped int
}

// streamer returns the Options.Progress of a dry run: nil unless a person
// watches stderr.
func (env *Env) streamer() func(stream int, line string) {
	if env.json || !isTerminal(env.rawErr) {
		return nil
	}
	width := 80
	if f, ok := env.rawErr.(*os.File); ok {
		if ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ); err == nil && ws.Col > 0 {
			width = int(ws.Col)
		}
	}
	s := &outputStream{w: env.Stdio.Err, start: time.Now(), now: time.Now, width: width}
	return s.line
}

func (s *outputStream) line(_ int, line string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	elapsed := s.now().Sub(s.start)
	sec := int(elapsed / time.Second)
	if sec != s.second {
		s.second, s.shown = sec, 0
	}
	if s.shown >= streamLines {
		s.skipped++
		return
	}
	s.shown++
	prefix := fmt.Sprintf("act: [%ds] ", sec)
	if s.skipped > 0 {
		prefix = fmt.Sprintf("act: [%ds] (%s not shown) ", sec, plural(s.skipped, "line"))
		s.skipped = 0
	}
	text := escapeLine(strings.TrimRight(line, "\r"))
	text = cutWidth(text, s.width-utf8.RuneCountInString(prefix))
	fmt.Fprintf(s.w, "%s%s\n", prefix, text)
}

// cutWidth cuts s to at most n characters, ending in … when cut. The
// characters the termWriter escapes take more room than one: the cut is
// a bound, not a fit.
func cutWidth(s string, n int) string {
	if n < 2 {
		n = 2
	}
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

// streamer is ck's progress, else env's.
func (ck *checked) streamer(env *Env) func(stream int, line string) {
	if ck.progress != nil {
		return ck.progress
	}
	return env.streamer()
}
