package cmd

import (
	_ "embed"
	"io"

	"github.com/urfave/cli/v2"
)

// manPage is the manual page, act.1 (docs/act.1 links to it), which
// ManPage renders from the CLI's help (TestManPage keeps it in step). It
// is printed as it is, so that a binary built with the tag
// urfave_cli_no_docs — without urfave/cli's Markdown and roff renderers,
// whose package initialisation every act process would otherwise pay
// (docs/timings.md) — prints it too.
//
//go:embed act.1
var manPage string

func newManCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:      "man",
		Usage:     "print act's manual page (roff)",
		UsageText: "act man",
		Description: `Prints the manual page, made from the same help as --help; docs/act.1 in
   act's repository is this output.

EXAMPLES:
   act man | man -l -
   act man > ~/.local/share/man/man1/act.1

` + endsWith("success", 1, 2).help(),
		Action: func(c *cli.Context) error {
			_, err := io.WriteString(env.Stdio.Out, manPage)
			return err
		},
	}
}

// NewApp returns act's command tree, for documentation made from it.
func NewApp() *cli.App {
	app := newApp(DefaultEnv(OSStdio()))
	app.Setup()
	return app
}
