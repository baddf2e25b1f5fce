//go:build !urfave_cli_no_docs

package cmd

import (
	"fmt"
	"strings"

	"github.com/cpuguy83/go-md2man/v2/md2man"
	"github.com/urfave/cli/v2"

	"github.com/act-project/act/internal/outcome"
)

// This file renders the manual page from the CLI's help with urfave/cli's
// roff renderer, which a build with the tag urfave_cli_no_docs leaves
// out; act man prints the page rendered here ahead (act.1, man.go).

// ManPage renders the manual page of app, with an EXIT STATUS section
// made from the table and each command's help.
func ManPage(app *cli.App) (string, error) {
	md, err := app.ToMarkdown()
	if err != nil {
		return "", err
	}
	// The help's own words hold <home>, <name>: markdown would take them
	// for HTML tags and drop them. Outside code blocks each "<" is
	// escaped, to stay a "<".
	var esc strings.Builder
	esc.WriteString("% " + app.Name + " 1\n\n")
	code := false
	for _, l := range strings.SplitAfter(md, "\n") {
		if strings.HasPrefix(l, "```") {
			code = !code
		} else if !code {
			l = strings.ReplaceAll(l, "<", `\<`)
		}
		esc.WriteString(l)
	}
	var b strings.Builder
	b.Write(md2man.Render([]byte(esc.String())))
	b.WriteString("\n.SH EXIT STATUS\n")
	for _, o := range outcome.Codes() {
		fmt.Fprintf(&b, ".TP\n\\fB%d\\fP\n%s\n", o.Code, roffLine(o.Meaning))
	}
	for _, o := range outcome.Own() {
		code := fmt.Sprintf("\\fB%d\\fP", o.Code)
		if o.Code == outcome.CommandCode {
			code = "\\fIthe command's\\fP"
		}
		fmt.Fprintf(&b, ".TP\n%s\n%s\n", code, roffLine(o.Meaning))
	}
	b.WriteString(".PP\nEach command ends with:\n")
	for _, c := range app.VisibleCommands() {
		_, sec, ok := strings.Cut(c.Description, "EXIT STATUS:\n")
		if !ok {
			continue
		}
		fmt.Fprintf(&b, ".TP\n\\fB%s\\fP\n%s\n", c.Name, roffLine(strings.Join(strings.Fields(sec), " ")))
	}
	return b.String(), nil
}

// roffLine is text as one line of roff: no request, no escape.
func roffLine(s string) string {
	s = strings.ReplaceAll(s, `\`, `\e`)
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		s = `\&` + s
	}
	return s
}
