package cmd

import (
	"io"

	"github.com/urfave/cli/v2"
)

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
			page, err := ManPage(c.App)
			if err != nil {
				return err
			}
			_, err = io.WriteString(env.Stdio.Out, page)
			return err
		},
	}
}

// ManPage renders the manual page of app.
func ManPage(app *cli.App) (string, error) { return app.ToManWithSection(1) }

// NewApp returns act's command tree, for documentation made from it.
func NewApp() *cli.App {
	app := newApp(DefaultEnv(OSStdio()))
	app.Setup()
	return app
}
