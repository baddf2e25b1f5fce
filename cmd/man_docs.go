//go:build !urfave_cli_no_docs

package cmd

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/act-project/act/internal/outcome"
)

// This file renders the manual page from the CLI's help with urfave/cli's
// roff renderer, which a build with the tag urfave_cli_no_docs leaves
// out; act man prints the page rendered here ahead (act.1, man.go).

// ManPage renders the manual page of app, with an EXIT STATUS section
// made from the table and each command's help.
func ManPage(app *cli.App) (string, error) {
	page, err := app.ToManWithSection(1)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString(page)
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
