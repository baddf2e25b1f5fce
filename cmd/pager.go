package cmd

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/act-project/act/review"
)

// defaultPager pages when PAGER is unset.
const defaultPager = "less -R"

// pageOut writes what render writes to standard output, through the
// user's pager when standard output is a terminal and the text is longer
// than it: $PAGER, else less -R. Not with --json, not when PAGER is empty
// or cat, and not when the pager cannot start (the text is written as it
// is then). What the pager gets is escaped like all act prints
// (termWriter), with act's colours as SGR sequences, which less -R shows.
func (env *Env) pageOut(render func(w io.Writer)) {
	var buf bytes.Buffer
	render(&buf)
	pager, ok := env.pager()
	out, isFile := env.rawOut.(*os.File)
	rows := 0
	if ok && isFile && !env.json {
		if ws, err := unix.IoctlGetWinsize(int(out.Fd()), unix.TIOCGWINSZ); err == nil {
			rows = int(ws.Row)
		}
	}
	if rows == 0 || bytes.Count(buf.Bytes(), []byte("\n")) < rows-1 {
		env.Stdio.Out.Write(buf.Bytes())
		return
	}
	var safe bytes.Buffer
	tw := review.NewTermWriter(&safe, env.nonce, styleCodes(out, env.Getenv("NO_COLOR") != ""))
	tw.Write(buf.Bytes())
	tw.Flush()
	c := exec.Command("sh", "-c", pager)
	c.Stdin, c.Stdout, c.Stderr = &safe, out, env.rawErr
	if err := c.Run(); err != nil {
		env.Stdio.Out.Write(buf.Bytes()) // no pager: the plain text, all of it
	}
}

// pager is the pager command, and whether there is one: $PAGER, else
// defaultPager; none when PAGER is set empty or to cat.
func (env *Env) pager() (string, bool) {
	p, set := "", false
	if env.LookupEnv != nil {
		p, set = env.LookupEnv("PAGER")
	} else {
		p = env.Getenv("PAGER")
		set = p != ""
	}
	if !set {
		return defaultPager, true
	}
	p = strings.TrimSpace(p)
	if p == "" || p == "cat" {
		return "", false
	}
	return p, true
}
