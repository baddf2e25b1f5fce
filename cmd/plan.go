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

	"github.com/act-project/act/descriptors"
	"github.com/act-project/act/diff"
	"github.com/act-project/act/gate"
	"github.com/act-project/act/internal/lifecycle"
	"github.com/act-project/act/internal/outcome"
	"github.com/act-project/act/internal/problem"
	"github.com/act-project/act/plan"
)

func newPlanCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:      "plan",
		Usage:     "dry-run a descriptor into a layer, show the diff and save a plan",
		UsageText: "act plan [--json] [--stat|--full] DESCRIPTOR|-",
		Description: `Validates the descriptor (as validate does), checks its preconditions on
   the real filesystem, carries out its operation into a copy-on-write layer,
   diffs the layer against the real tree and refuses any change the descriptor
   did not declare. The real tree is never touched. The plan is saved under
   the state directory; apply promotes it.

EXAMPLES:
   act plan d.yaml
   act new FILE_WRITE --path ~/proj/NOTES.md | act plan -
   act --json plan d.yaml | jq .changes

` + endsWith("planned", 1, 2, 3, 4, 5, 6, 8).
			note(8, "conflict (action id already applied with other content, or rolled back)").with(outcome.Interrupted).help(),
		Flags: diffFlags(),
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usagef("plan takes exactly one descriptor (a file or -), got %d arguments", c.NArg())
			}
			env.stat, env.full = c.Bool("stat"), c.Bool("full")
			env.page = true
			ctx, stop := interruptible(c.Context)
			res, p, err := runPlan(ctx, env, c.Args().First())
			if stop() {
				res, err = &result{File: res.File, ActionID: res.ActionID}, errInterrupted
			}
			return env.finish(res, outcome.Planned.Status, err, func(w io.Writer, st styles) {
				renderPlan(w, st, env, p, p.State)
			})
		},
	}
}

func runPlan(ctx context.Context, env *Env, arg string) (*result, *plan.Plan, error) {
	res := &result{}
	ck, err := env.check(ctx, res, arg)
	if err != nil {
		return res, nil, err
	}
	defer ck.release()
	p, err := planChecked(ctx, env, res, ck)
	return res, p, err
}

// planChecked is plan after the checks: the gate's sequence (gate.Plan,
// its check overlapping the dry run), and the warnings a later apply will
// answer for. The CLI and the MCP server both plan through it.
func planChecked(ctx context.Context, env *Env, res *result, ck *checked) (*plan.Plan, error) {
	p, pre, err := planWith(ctx, env, res, ck, false)
	if err != nil {
		return nil, err
	}
	if pre.Reuse != nil {
		res.Warnings = append(res.Warnings, jsonProblem{Rule: "plan.reused", Message: fmt.Sprintf(
			"the sandbox already ran this action's commands sandbox.max_runs times; this is plan %s, made of this same descriptor at %s",
			p.ID, p.CreatedAt.UTC().Format(time.RFC3339))})
	}
	for _, why := range pre.Refusals {
		res.Warnings = append(res.Warnings, jsonProblem{Rule: gate.RuleConfirmationRequired, Field: "action_id", Message: "apply will need a person's confirmation: " + why})
	}
	return p, nil
}

// planWith runs the gate's plan sequence for a checked descriptor, with
// what this process made ahead (a sandbox, a plan directory) as its
// overlap; reuse is gate.Plan's. Its problems are placed in the
// descriptor.
func planWith(ctx context.Context, env *Env, res *result, ck *checked, reuse bool) (*plan.Plan, *gate.PrePlan, error) {
	p, pre, err := env.gate(ck.pol).PlanChecked(ctx, ck.Checked, gate.PlanOptions{File: res.File, Reuse: reuse, Progress: ck.streamer(env)})
	if err != nil {
		return nil, pre, err
	}
	if p != nil {
		fillPlan(res, p)
		res.Warnings = ck.Locate(res.Warnings)
	}
	return p, pre, nil
}

// withPositions gives the problems of a failed plan their place in the
// descriptor file.
func withPositions(ck *checked, err error) error {
	var probs problem.List
	if errors.As(err, &probs) {
		return ck.Locate(probs)
	}
	return err
}

func fillPlan(res *result, p *plan.Plan) {
	res.PlanID = p.ID
	res.ActionID, res.ActionType, res.RiskLevel = p.ActionID, p.ActionType, p.RiskLevel
	res.Mode, res.ModeSource, res.Reason = p.Mode, p.ModeSource, p.Reason
	res.Changes = p.Changes
	res.Commands = p.Commands
	if p.RiskAssessed != "" {
		res.Risk = &gate.Risk{Declared: descriptors.RiskLevel(p.RiskLevel), Assessed: descriptors.RiskLevel(p.RiskAssessed), Reasons: p.RiskReasons}
	}
	res.Warnings = append(res.Warnings, p.Warnings...)
	c, m, d := diff.Summary(p.Changes)
	res.Summary = &summary{Create: c, Modify: m, Delete: d}
}

// renderPlan prints a plan's changes, a unified diff for text files, and the
// summary line of docs/lifecycle.md.
// state is where p stands: once applied or rolled back, its layer was
// promoted and no longer holds its content to diff.
func renderPlan(w io.Writer, st styles, env *Env, p *plan.Plan, state lifecycle.State) {
	stateDir, _ := env.stateDir()
	if intent := intentOf(p); intent != "" {
		fmt.Fprintf(w, "%s %s\n\n", st.bold.Render("Intent:"), escapeLine(intent))
	}
	// Commands run in the sandbox: what ran and what it said (capped and
	// redacted when it was captured).
	for _, c := range p.Commands {
		fmt.Fprintf(w, "%s %s\n", st.bold.Render("$ "+shellJoin(c.Argv)),
			st.faint.Render(fmt.Sprintf("(exit %d, %d ms)", c.ExitCode, c.WallMs)))
		for _, out := range []struct {
			text string
			cut  bool
		}{{c.Stdout, c.StdoutCut}, {c.Stderr, c.StderrCut}} {
			if out.text == "" {
				continue
			}
			for _, line := range strings.Split(strings.TrimRight(out.text, "\n"), "\n") {
				fmt.Fprintf(w, "    %s\n", line)
			}
			if out.cut {
				fmt.Fprintf(w, "    (output cut at %d bytes)\n", plan.MaxCommandOutput)
			}
		}
	}
	if len(p.Commands) > 0 {
		fmt.Fprintln(w)
	}
	var diffs []plan.FileDiff
	if !env.stat && state != lifecycle.Applied && state != lifecycle.RolledBack {
		diffs = plan.TextDiffs(stateDir, p) // else the layer was promoted: its content is no longer there to diff
	}
	// The output is bounded unless --full (or paged for a person to
	// confirm): so many change lines, so many lines of diff in all; what
	// is left out is counted and said.
	maxChanges, maxDiffLines := maxShownChanges, maxShownDiffLines
	if env.full {
		maxChanges, maxDiffLines = len(p.Changes), -1
	}
	diffLines, diffsLeft := 0, 0
	entries := reviewEntries(p.Changes, env.reviewWorkspaces)
	ws := "\x00" // the workspace of the lines before: none yet
	for i, e := range entries {
		if i == maxChanges {
			fmt.Fprintf(w, "… and %s not shown: %s prints them all, --json lists them\n", plural(len(entries)-i, "more change"), env.actLine("show", p.ID, "--full"))
			break
		}
		if e.ws != ws && (e.ws != "" || ws != "\x00") {
			fmt.Fprintf(w, "%s\n", st.bold.Render(workspaceHeader(e.ws)))
		}
		ws = e.ws
		style, line, desc := entryLine(st, p.Changes, e)
		if desc != "" {
			fmt.Fprintf(w, "%s %s\n", style.Render(line), st.faint.Render(desc))
		} else {
			fmt.Fprintf(w, "%s\n", style.Render(line))
		}
		if diffs == nil || e.kind != reviewChange {
			continue // a rename's content is the same; .git internals are counted
		}
		c, d := p.Changes[e.index], diffs[e.index]
		if n := strings.Count(d.Text, "\n"); d.Text != "" && maxDiffLines >= 0 && diffLines+n > maxDiffLines {
			diffsLeft++
			continue
		} else {
			diffLines += n
		}
		switch {
		case d.Err != nil:
			fmt.Fprintf(w, "    (no diff: %s)\n", escapeLine(d.Err.Error()))
		case d.Binary:
			fmt.Fprintf(w, "    (binary file: compared by size and sha256)\n")
		case d.Text != "":
			header, body := diffHeader(c, shownPath(c.Path, e.ws), d.Text)
			fmt.Fprint(w, header)
			for _, line := range strings.Split(strings.TrimSuffix(body, "\n"), "\n") {
				switch {
				case strings.HasPrefix(line, "+"):
					line = st.create.Render(line)
				case strings.HasPrefix(line, "-"):
					line = st.remove.Render(line)
				}
				fmt.Fprintf(w, "    %s\n", line)
			}
			if d.Cut {
				fmt.Fprintf(w, "    (diff cut at %d bytes)\n", plan.MaxTextDiff)
			}
		}
	}
	if diffsLeft > 0 {
		fmt.Fprintf(w, "(the diffs of %s were left out, beyond %d lines: %s prints them)\n", plural(diffsLeft, "file"), maxShownDiffLines, env.actLine("show", p.ID, "--full"))
	}
	c, m, d := diff.Summary(p.Changes)
	if len(p.Changes) > 0 {
		fmt.Fprintln(w)
	}
	sum := fmt.Sprintf("Plan: %d to create, %d to modify, %d to delete.", c, m, d)
	if n := renames(entries); n > 0 {
		sum = fmt.Sprintf("Plan: %d to create, %d to modify, %d to delete (%s: a delete and a create each).", c, m, d, plural(n, "rename"))
	}
	fmt.Fprintf(w, "%s  Plan id: %s\n", st.bold.Render(sum), p.ID)
	if descriptors.RiskLevel(p.RiskAssessed).Rank() > descriptors.RiskLevel(p.RiskLevel).Rank() {
		fmt.Fprintf(w, "%s\n", st.warn.Render(fmt.Sprintf("Risk: declared %s, assessed %s by act:", escapeLine(p.RiskLevel), escapeLine(p.RiskAssessed))))
		for _, r := range p.RiskReasons {
			fmt.Fprintf(w, "  - %s\n", escapeLine(r))
		}
	}
}

// diffHeader splits the unified diff text of change c into its header,
// the --- and +++ lines naming the file, and its body, the hunks. The
// header is returned as act prints it: the path on one line however it is
// named (a newline in a file name is \n there, as in the change line
// above it). The body's lines are the file's, printed indented.
// shown is the path as the change line shows it (relative to its
// workspace, or absolute).
func diffHeader(c diff.Change, shown, text string) (header, body string) {
	from, to := c.Path, c.Path
	switch c.Kind {
	case diff.Create:
		from = "/dev/null"
	case diff.Delete:
		to = "/dev/null"
	}
	sfrom, sto := shown, shown
	switch c.Kind {
	case diff.Create:
		sfrom = "/dev/null"
	case diff.Delete:
		sto = "/dev/null"
	}
	header = "    --- " + escapeLine(sfrom) + "\n    +++ " + escapeLine(sto) + "\n"
	if raw := "--- " + from + "\n+++ " + to + "\n"; strings.HasPrefix(text, raw) {
		return header, text[len(raw):]
	}
	// The header was redacted (a secret-shaped file name): the hunks
	// start at the first @@ line.
	if i := strings.Index(text, "\n@@ "); i >= 0 {
		return header, text[i+1:]
	}
	return header, text
}

// describe sums up a change's metadata: mode, size and hash before → after.
func describe(c diff.Change) string {
	var parts []string
	str := func(p *string) string {
		if p == nil {
			return "-"
		}
		return escapeLine(*p)
	}
	num := func(p *int64) string {
		if p == nil {
			return "-"
		}
		return fmt.Sprint(*p)
	}
	switch c.Kind {
	case diff.Create:
		parts = append(parts, "mode "+str(c.ModeAfter))
		if c.SizeAfter != nil {
			parts = append(parts, num(c.SizeAfter)+" bytes")
		}
		if c.LinkAfter != nil {
			parts = append(parts, "→ "+escapeLine(*c.LinkAfter))
		}
	case diff.Delete:
		parts = append(parts, "mode "+str(c.ModeBefore))
		if c.SizeBefore != nil {
			parts = append(parts, num(c.SizeBefore)+" bytes")
		}
	default:
		if str(c.ModeBefore) != str(c.ModeAfter) {
			parts = append(parts, "mode "+str(c.ModeBefore)+" → "+str(c.ModeAfter))
		}
		if c.SizeAfter != nil && num(c.SizeBefore) != num(c.SizeAfter) {
			parts = append(parts, num(c.SizeBefore)+" → "+num(c.SizeAfter)+" bytes")
		}
		if c.LinkAfter != nil {
			parts = append(parts, "→ "+escapeLine(*c.LinkAfter))
		}
	}
	// Promoted, a modified entry keeps its owner and a new one takes its
	// directory's (docs/sandbox-promotion.md): shown where that is not the
	// user act runs as.
	if o := c.OwnerAfter; o != nil && *o != uint32(os.Geteuid()) {
		how := "kept"
		if c.Kind == diff.Create {
			how = "its directory's"
		}
		parts = append(parts, fmt.Sprintf("owner uid %d (%s)", *o, how))
	} else if o := c.OwnerBefore; o != nil && c.OwnerAfter != nil && *o != *c.OwnerAfter {
		parts = append(parts, fmt.Sprintf("owner uid %d → uid %d", *o, *c.OwnerAfter))
	}
	if len(parts) == 0 {
		return ""
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// What plan, apply and show print at most, unless --full.
const (
	maxShownChanges   = 1000
	maxShownDiffLines = 2000
)

// shellJoin quotes argv as a POSIX shell would need it typed.
func shellJoin(argv []string) string {
	out := make([]string, len(argv))
	for i, a := range argv {
		out[i] = shellQuote(a)
	}
	return escapeLine(strings.Join(out, " "))
}

func shellQuote(s string) string {
	if s == "" {
		return "''"
	}
	safe := true
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("@%+=:,./_-", r)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// diffFlags are the flags of the commands that print a plan.
func diffFlags() []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: "stat", Usage: "the changes without their diffs"},
		&cli.BoolFlag{Name: "full", Usage: "every change and every diff, however many"},
	}
}
