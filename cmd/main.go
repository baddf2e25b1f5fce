// Package cmd is act's command line: it turns argv, environment and terminal
// input into calls of the domain packages, renders their results (human or
// --json) and decides the exit code.
//
// It is the only package that imports urfave/cli or lipgloss, reads os.Args
// or the environment, prompts, or chooses exit codes. An error becomes an
// outcome, and so an exit code and a --json status, in exactly one place,
// [outcomeOf], from the one table of internal/outcome (docs/exit-codes.md).
// Each command's EXIT STATUS help is rendered from that table too.
package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/act-project/act/gate"
	"github.com/act-project/act/internal/outcome"
	"github.com/act-project/act/internal/timings"
	"github.com/act-project/act/review"
)

// Version is act's version, printed by --version.
var Version = "0.1.0-dev"

// Stdio are the three standard streams.
type Stdio struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer
}

// OSStdio returns the process's standard streams.
func OSStdio() Stdio { return Stdio{In: os.Stdin, Out: os.Stdout, Err: os.Stderr} }

// Env is everything a command may take from its surroundings. Only tests
// replace its functions; the shipped binary uses [DefaultEnv].
type Env struct {
	Stdio  Stdio
	Now    func() time.Time
	Getenv func(string) string
	// UserHome returns the current user's home directory from the passwd
	// database (not $HOME).
	UserHome func() string
	// TTY opens the controlling terminal, where act asks for a person's
	// confirmation; nil means /dev/tty.
	TTY func() (io.ReadWriteCloser, error)
	// NewID returns a fresh plan id; nil means random.
	NewID func() string
	// LookupEnv tells an unset variable from an empty one (PAGER); nil
	// means a variable is set when Getenv gives it a value.
	LookupEnv func(string) (string, bool)
	// Self is act's own executable, which act may start to finish work
	// after it returns (the removal of a large applied layer: act
	// __remove-layer); "" (tests that run act in their own process) does
	// that work before returning.
	Self string

	// page: the human output goes through the pager on a terminal
	// (plan, show, pending, history; showPaged).
	page bool

	// stat and full say how much of a plan to print (--stat, --full).
	stat, full bool
	// yesFrom is apply's --yes-from.
	yesFrom string
	// signature and signWith are apply's --signature and --sign-with.
	signature, signWith string
	// pinned is the state dir the system policy pins ("" none), once read.
	pinned *string
	// caller is the door act is driven through, for the audit log: "cli",
	// "run", "mcp", "claude-code" or "codex" (gate.Gate.Caller).
	caller string
	// session, in a long-running act (act mcp), keeps a sandbox started
	// ahead for the next plan that runs a command and a plan directory
	// made ahead (gate.Session); nil elsewhere.
	session *gate.Session
	// workspaces are this session's (act mcp --workspace), fixed when a
	// person started it.
	workspaces []string
	// reviewWorkspaces are the workspaces of the policy act last loaded
	// and of this session: a change inside one is shown relative to it
	// (review.go).
	reviewWorkspaces []string
	// auditedRecoveries counts the recoveries already recorded.
	auditedRecoveries int
	// rawOut and rawErr are the streams under Stdio.Out and Stdio.Err,
	// which escape what could drive a terminal (termWriter); nonce marks
	// act's own colours in that text.
	rawOut, rawErr io.Writer
	nonce          []byte

	// Set from the global flags.
	home       string
	policyFile string
	json       bool
	// timings, with --timings, records the phases of this process's
	// decision (docs/timings.md); nil without. timingsInJSON: the --json
	// document carried them (no table then).
	timings       *timings.Recorder
	timingsInJSON bool
	// recovered lists the crashed promotions recovered by this process.
	recovered []gate.Recovery
	// keepPolicy: this process makes one decision (a hook's), which reads
	// the policy once, at its first load (onePolicy), however many of its
	// steps need it (the workspace's check, the decision): one policy for
	// the whole decision, parsed and checked once. A long-running act
	// (act mcp) loads it again for each request.
	keepPolicy bool
	onePolicy  *loadedPolicy
}

// DefaultEnv returns the environment of the real process.
func DefaultEnv(stdio Stdio) *Env {
	return &Env{
		Stdio:     stdio,
		Now:       time.Now,
		Getenv:    os.Getenv,
		UserHome:  passwdHome,
		LookupEnv: os.LookupEnv,
	}
}

// Main runs act with args (args[0] is the program name) and returns the exit
// code.
func Main(args []string, stdio Stdio) int {
	env := DefaultEnv(stdio)
	env.Self = "/proc/self/exe"
	return MainEnv(args, env)
}

// MainEnv is [Main] with an explicit environment.
func MainEnv(args []string, env *Env) (code int) {
	// Last, after the output: the sandboxes a plan ran end on their own
	// (their init reaped, their cgroups removed) before act exits.
	defer gate.Settle()
	env.wrapOutput()
	defer env.flushOutput()
	defer func() {
		// act never shows a Go panic: an internal error is exit 1 with one line.
		if r := recover(); r != nil {
			fmt.Fprintf(env.Stdio.Err, "act: error: internal error: %s\n", escapeLine(fmt.Sprint(r)))
			code = outcome.Fail.Code
		}
	}()
	ctx := context.Background()
	if wantsTimings(args) {
		env.timings = timings.New(timings.ProcessStart())
		ctx = timings.With(ctx, env.timings)
		timings.Span(ctx, "start-up (exec, runtime, package init)", env.timings.Origin(), time.Now())
		defer env.printTimings()
	}
	endCLI := timings.Start(ctx, "command line")
	app := newApp(env)
	argv, err := normalizeArgs(app, args)
	endCLI()
	if err != nil {
		env.json = wantsJSON(args)
		return env.fail(err)
	}
	switch {
	case len(argv) == 1:
		// act alone: the command list, on stderr, as a usage error.
		app.Setup()
		cli.HelpPrinter(env.Stdio.Err, appHelpTemplate, app)
		return outcome.Usage.Code
	case argv[1] == "version" && len(argv) == 2:
		fmt.Fprintf(env.Stdio.Out, "act %s\n", Version)
		return outcome.OK.Code
	case argv[1] == "help":
		// act help [COMMAND]: the same as act [COMMAND] --help.
		if len(argv) > 3 {
			return env.fail(usagef("help takes at most one command, got %d", len(argv)-2))
		}
		if len(argv) == 3 {
			if findCommand(app.Commands, argv[2]) == nil {
				return env.fail(usagef("unknown command %q; run 'act --help' for the list", argv[2]))
			}
			argv = []string{argv[0], argv[2], "--help"}
		} else {
			argv = []string{argv[0], "--help"}
		}
	}
	if err := app.RunContext(ctx, argv); err != nil {
		return env.fail(err)
	}
	return outcome.OK.Code
}

func newApp(env *Env) *cli.App {
	app := &cli.App{
		Name:    "act",
		Usage:   "validate, dry-run, apply and roll back the actions an AI agent proposes",
		Version: Version,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "home", Usage: "state directory (default $ACT_HOME, else $XDG_STATE_HOME/act)"},
			&cli.StringFlag{Name: "policy", Usage: "host policy file (default $ACT_POLICY, else <home>/policy.yaml, else built in)"},
			&cli.BoolFlag{Name: "json", Usage: "print one JSON document on stdout"},
			&cli.BoolFlag{Name: "timings", Usage: "time each phase: a table on stderr, or timings in --json (docs/timings.md)"},
		},
		Commands: []*cli.Command{
			newNewCommand(env),
			newValidateCommand(env),
			newPlanCommand(env),
			newShowCommand(env),
			newApplyCommand(env),
			newRunCommand(env),
			newHookCommand(env),
			newRollbackCommand(env),
			newPendingCommand(env),
			newDenyCommand(env),
			newHistoryCommand(env),
			newRecoverCommand(env),
			newSchemaCommand(env),
			newPolicyCommand(env),
			newAuditCommand(env),
			newGCCommand(env),
			newCompletionCommand(env),
			newManCommand(env),
			newIDsCommand(env),
			newRemoveLayerCommand(env),
			newMCPCommand(env),
		},
		Reader:                env.Stdio.In,
		Writer:                env.Stdio.Out,
		ErrWriter:             env.Stdio.Err,
		HideHelpCommand:       true,
		EnableBashCompletion:  false,
		CustomAppHelpTemplate: appHelpTemplate,
		OnUsageError: func(_ *cli.Context, err error, _ bool) error {
			return usageError{err}
		},
		ExitErrHandler: func(*cli.Context, error) {},
		Before: func(c *cli.Context) error {
			env.home = c.String("home")
			env.policyFile = c.String("policy")
			env.json = c.Bool("json")
			defer timings.Start(c.Context, "state dir: recovery check")()
			env.recoverFirst()
			return nil
		},
	}
	for _, c := range app.Commands {
		c.OnUsageError = app.OnUsageError
		if c.CustomHelpTemplate == "" {
			c.CustomHelpTemplate = commandHelpTemplate
		}
	}
	return app
}

var appHelpTemplate = `NAME:
   {{.Name}} - {{.Usage}}

USAGE:
   act [--home DIR] [--policy FILE] [--json] COMMAND [ARGS...]

COMMANDS:{{range .VisibleCommands}}
   {{join .Names ", "}}{{"\t"}}{{.Usage}}{{end}}
   help [COMMAND]{{"\t"}}how to use act or one command
   version{{"\t"}}print act's version

GLOBAL OPTIONS:{{range .VisibleFlags}}
   {{.}}{{end}}

` + endsWith("success", 1, 2, 3, 4, 5, 6, 7, 8, 9).help() + "\n"

const commandHelpTemplate = `NAME:
   {{.HelpName}} - {{.Usage}}

USAGE:
   {{.UsageText}}
{{if .Description}}
DESCRIPTION:
   {{.Description}}
{{end}}{{if .VisibleFlags}}
OPTIONS:{{range .VisibleFlags}}
   {{.}}{{end}}
{{end}}`

// usageError marks bad flags, arguments or commands (exit 2).
type usageError struct{ err error }

func (e usageError) Error() string            { return e.err.Error() }
func (e usageError) Unwrap() error            { return e.err }
func (e usageError) Outcome() outcome.Outcome { return outcome.Usage }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// normalizeArgs lets flags stand before or after arguments: the global flags
// anywhere move before the command word, a command's own flags move before
// its arguments. It rejects an unknown command word.
func normalizeArgs(app *cli.App, args []string) ([]string, error) {
	if len(args) == 0 {
		args = []string{"act"}
	}
	globals := flagTable(app.Flags)
	globals["help"], globals["h"], globals["version"], globals["v"] = false, false, false, false

	var front, rest []string
	i := 1
	for ; i < len(args); i++ {
		a := args[i]
		if a == "--" || !isFlag(a) {
			break
		}
		n, takesValue := flagName(a, globals)
		front = append(front, a)
		if takesValue && !strings.Contains(a, "=") && i+1 < len(args) && n != "" {
			i++
			front = append(front, args[i])
		}
	}
	if i >= len(args) {
		return append([]string{args[0]}, front...), nil
	}
	word := args[i]
	if word == "--" {
		return nil, usagef("no command given")
	}
	cmd := findCommand(app.Commands, word)
	if cmd == nil && word != "help" && word != "version" {
		return nil, usagef("unknown command %q; run 'act --help' for the list", word)
	}
	chain := []string{word}
	i++
	// Descend into subcommands named right after the command word.
	for cmd != nil && len(cmd.Subcommands) > 0 && i < len(args) {
		sub := findCommand(cmd.Subcommands, args[i])
		if sub == nil {
			break
		}
		chain = append(chain, args[i])
		cmd = sub
		i++
	}
	own := map[string]bool{}
	if cmd != nil {
		own = flagTable(cmd.Flags)
	}
	var flags, pos []string
	for ; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		if !isFlag(a) {
			pos = append(pos, a)
			if takesArgv[word] { // the rest is the command line's (act run)
				pos = append(pos, args[i+1:]...)
				break
			}
			continue
		}
		name, takesValue := flagName(a, own)
		dst := &flags
		if name == "" {
			if gname, gv := flagName(a, globals); gname != "" && gname != "help" && gname != "h" {
				name, takesValue, dst = gname, gv, &front
			}
		}
		*dst = append(*dst, a)
		if name != "" && takesValue && !strings.Contains(a, "=") && i+1 < len(args) {
			i++
			*dst = append(*dst, args[i])
		}
	}
	rest = append(rest, chain...)
	rest = append(rest, flags...)
	for _, p := range pos {
		if p != "-" && strings.HasPrefix(p, "-") {
			rest = append(rest, "--")
			break
		}
	}
	rest = append(rest, pos...)
	out := append([]string{args[0]}, front...)
	return append(out, rest...), nil
}

// wantsTimings reports whether args ask for --timings: among the flags
// before the command word or after it, not past "--" nor in a command
// line act run takes.
func wantsTimings(args []string) bool {
	argv := false // past act run's word: its command line starts at the first argument
	for i, a := range args {
		switch {
		case i == 0:
		case a == "--" || (argv && !isFlag(a)):
			return false
		case a == "--timings" || a == "-timings" || a == "--timings=true":
			return true
		case takesArgv[a]:
			argv = true
		}
	}
	return false
}

// ctx is a context carrying this process's recorder, for what times
// itself outside a command's context (rendering).
func (env *Env) ctx() context.Context {
	if env.timings == nil {
		return context.Background()
	}
	return timings.With(context.Background(), env.timings)
}

// printTimings prints the phases recorded, as a table on standard error,
// unless the --json document carried them (a hook's answer, say, does
// not).
func (env *Env) printTimings() {
	if env.timings != nil && !env.timingsInJSON {
		timings.WriteTable(env.Stdio.Err, env.timings.Phases(), time.Since(env.timings.Origin()))
	}
}

// wantsJSON reports whether args ask for --json, for errors found before the
// flags are parsed.
func wantsJSON(args []string) bool {
	for _, a := range args {
		if a == "--" {
			break
		}
		if a == "--json" || a == "-json" || a == "--json=true" {
			return true
		}
	}
	return false
}

func isFlag(a string) bool { return len(a) > 1 && a[0] == '-' }

// flagName returns the name of flag argument a if it is in table, and
// whether it takes a value; "" when it is not.
func flagName(a string, table map[string]bool) (string, bool) {
	n := strings.TrimLeft(a, "-")
	if k := strings.IndexByte(n, '='); k >= 0 {
		n = n[:k]
	}
	v, ok := table[n]
	if !ok {
		return "", false
	}
	return n, v
}

func flagTable(flags []cli.Flag) map[string]bool {
	t := map[string]bool{}
	for _, f := range flags {
		_, isBool := f.(*cli.BoolFlag)
		for _, n := range f.Names() {
			t[n] = !isBool
		}
	}
	return t
}

func findCommand(cmds []*cli.Command, name string) *cli.Command {
	for _, c := range cmds {
		if c.HasName(name) {
			return c
		}
	}
	return nil
}

// fail reports an error that no command rendered and returns its exit code.
func (env *Env) fail(err error) int {
	o := outcomeOf(err)
	var r *rendered
	if errors.As(err, &r) {
		return o.Code
	}
	if env.json {
		writeJSON(env.Stdio.Out, &result{Status: statusOf(o, ""), ExitCode: o.Code,
			Errors: []jsonProblem{{Rule: ruleOf(o), Message: err.Error()}}, Warnings: []jsonProblem{}})
	}
	prefix := "act: error: "
	fmt.Fprintf(env.Stdio.Err, "%s%s\n", prefix, escapeLine(err.Error()))
	for _, h := range env.hintsFor(err) {
		fmt.Fprintf(env.Stdio.Err, "act: hint: %s\n", escapeLine(h))
	}
	return o.Code
}

// wrapOutput puts a termWriter over standard output and error: the one
// place text reaches a terminal.
func (env *Env) wrapOutput() {
	if env.rawOut != nil {
		return
	}
	env.nonce = review.NewNonce()
	env.rawOut, env.rawErr = env.Stdio.Out, env.Stdio.Err
	noColor := env.Getenv("NO_COLOR") != ""
	env.Stdio.Out = review.NewTermWriter(env.rawOut, env.nonce, styleCodes(env.rawOut, noColor))
	env.Stdio.Err = review.NewTermWriter(env.rawErr, env.nonce, styleCodes(env.rawErr, noColor))
}

func (env *Env) flushOutput() {
	for _, w := range []io.Writer{env.Stdio.Out, env.Stdio.Err} {
		if tw, ok := w.(*review.TermWriter); ok {
			tw.Flush()
		}
	}
}
