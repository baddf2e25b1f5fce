package review

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/act-project/act/descriptors"
	"github.com/act-project/act/diff"
	"github.com/act-project/act/internal/lifecycle"
	"github.com/act-project/act/plan"
)

// What plan, apply and show print at most of a plan, unless Full.
const (
	MaxShownChanges   = 1000
	MaxShownDiffLines = 2000
)

// What a review read in one piece (a hook's reason) shows at most of a
// plan: the rest is counted, and act show PLAN_ID --full prints it.
const (
	briefChanges   = 50
	briefDiffLines = 200
)

// Options say how a plan is shown.
type Options struct {
	// StateDir is act's state directory, where the plan's layer is read
	// for the diffs.
	StateDir string
	// Workspaces are the workspaces a change inside is shown relative to.
	Workspaces []string
	// Stat leaves the diffs out; Full shows every change, every line of
	// every diff and every line of output whole.
	Stat, Full bool
	// Brief bounds the plan for a text read in one piece (a hook's
	// reason): fewer changes, diff lines and output (Brief).
	Brief bool
	// ActLine is the command line of act with args, as a review hands it
	// out (with --home where the environment chose the state dir); nil:
	// "act" and args.
	ActLine func(args ...string) string
}

// actLine is o.ActLine, or "act" and args.
func (o Options) actLine(args ...string) string {
	if o.ActLine != nil {
		return o.ActLine(args...)
	}
	return "act " + strings.Join(args, " ")
}

// Plan writes plan p as a person reviews it: the intent, the commands the
// dry run ran with their output, the changes with a unified diff for text
// files, the summary line of docs/lifecycle.md and act's own risk
// assessment when it is above the declared one. state is where p stands:
// once applied or rolled back, its layer was promoted and no longer holds
// its content to diff.
//
// Every text p holds is escaped here (Line for a field, Text for the
// lines of an output or a file), whatever w is; act's colours are st's
// markers, which a TermWriter turns into colours (the zero Styles: plain
// text). What is left out is counted and said.
func Plan(w io.Writer, st Styles, p *plan.Plan, state lifecycle.State, o Options) {
	id := Line(p.ID)
	if intent := IntentOf(p); intent != "" {
		fmt.Fprintf(w, "%s %s\n\n", st.Bold.Render("Intent:"), Line(intent))
	}
	// Commands run in the sandbox: what ran and what it said (capped and
	// redacted when it was captured).
	bounds := Bounds{LineBytes: MaxLineBytes, All: o.actLine("show", id, "--full") + " shows it"}
	switch {
	case o.Full:
		bounds = Bounds{}
	case o.Brief:
		bounds = Brief(bounds.All)
	}
	for _, c := range p.Commands {
		fmt.Fprintf(w, "%s %s\n", st.Bold.Render("$ "+ShellJoin(c.Argv)),
			st.Faint.Render(fmt.Sprintf("(exit %d, %d ms)", c.ExitCode, c.WallMs)))
		for _, out := range []Captured{{Text: c.Stdout, Cut: c.StdoutCut}, {Text: c.Stderr, Cut: c.StderrCut}} {
			if out.Text == "" {
				continue
			}
			for _, line := range strings.SplitAfter(Output(out, bounds), "\n") {
				if line != "" {
					fmt.Fprintf(w, "    %s", line)
				}
			}
		}
		// What act's egress proxy refused it: the tool's own message
		// rarely says (npm's E403).
		for _, r := range c.Refused {
			fmt.Fprintf(w, "    %s\n", st.Warn.Render(fmt.Sprintf("act: the egress proxy refused %s: %s (%s)", Line(r.Target), Line(r.Reason), Line(r.Setting))))
		}
	}
	if len(p.Commands) > 0 {
		fmt.Fprintln(w)
	}
	var diffs []plan.FileDiff
	if !o.Stat && state != lifecycle.Applied && state != lifecycle.RolledBack {
		diffs = plan.TextDiffs(o.StateDir, p) // else the layer was promoted: its content is no longer there to diff
	}
	// The output is bounded unless Full (or paged for a person to
	// confirm): so many change lines, so many lines of diff in all; what
	// is left out is counted and said.
	maxChanges, maxDiffLines, shownDiffLines := MaxShownChanges, MaxShownDiffLines, MaxShownDiffLines
	switch {
	case o.Full:
		maxChanges, maxDiffLines = len(p.Changes), -1
	case o.Brief:
		maxChanges, maxDiffLines, shownDiffLines = briefChanges, briefDiffLines, briefDiffLines
	}
	diffLines, diffsLeft := 0, 0
	entries := reviewEntries(p.Changes, o.Workspaces)
	ws := "\x00" // the workspace of the lines before: none yet
	for i, e := range entries {
		if i == maxChanges {
			fmt.Fprintf(w, "… and %s not shown: %s prints them all, --json lists them\n", Plural(len(entries)-i, "more change"), o.actLine("show", id, "--full"))
			break
		}
		if e.ws != ws && (e.ws != "" || ws != "\x00") {
			fmt.Fprintf(w, "%s\n", st.Bold.Render(workspaceHeader(e.ws)))
		}
		ws = e.ws
		style, line, desc := entryLine(st, p.Changes, e)
		if desc != "" {
			fmt.Fprintf(w, "%s %s\n", style.Render(line), st.Faint.Render(desc))
		} else {
			fmt.Fprintf(w, "%s\n", style.Render(line))
		}
		if diffs == nil || e.kind != reviewChange {
			continue // a rename's content is the same; .git internals and dependencies are counted
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
			fmt.Fprintf(w, "    (no diff: %s)\n", Line(d.Err.Error()))
		case d.Binary:
			fmt.Fprintf(w, "    (binary file: compared by size and sha256)\n")
		case d.Text != "":
			header, body := diffHeader(c, shownPath(c.Path, e.ws), d.Text)
			fmt.Fprint(w, header)
			for _, line := range strings.Split(strings.TrimSuffix(body, "\n"), "\n") {
				line = Text(line)
				switch {
				case strings.HasPrefix(line, "+"):
					line = st.Create.Render(line)
				case strings.HasPrefix(line, "-"):
					line = st.Remove.Render(line)
				}
				fmt.Fprintf(w, "    %s\n", line)
			}
			if d.Cut {
				fmt.Fprintf(w, "    (diff cut at %d bytes)\n", plan.MaxTextDiff)
			}
		}
	}
	if diffsLeft > 0 {
		fmt.Fprintf(w, "(the diffs of %s were left out, beyond %d lines: %s prints them)\n", Plural(diffsLeft, "file"), shownDiffLines, o.actLine("show", id, "--full"))
	}
	c, m, d := diff.Summary(p.Changes)
	if len(p.Changes) > 0 {
		fmt.Fprintln(w)
	}
	sum := fmt.Sprintf("Plan: %d to create, %d to modify, %d to delete.", c, m, d)
	if n := renames(entries); n > 0 {
		sum = fmt.Sprintf("Plan: %d to create, %d to modify, %d to delete (%s: a delete and a create each).", c, m, d, Plural(n, "rename"))
	}
	fmt.Fprintf(w, "%s  Plan id: %s\n", st.Bold.Render(sum), id)
	if dc := p.Discarded; dc != nil && dc.Count > 0 {
		fmt.Fprintln(w, st.Faint.Render(Discarded(dc, o.Workspaces)))
	}
	if hd := p.HomeDiscarded; hd != nil && hd.Count > 0 {
		fmt.Fprintln(w, st.Faint.Render(HomeDiscarded(hd)))
	}
	if descriptors.RiskLevel(p.RiskAssessed).Rank() > descriptors.RiskLevel(p.RiskLevel).Rank() {
		fmt.Fprintf(w, "%s\n", st.Warn.Render(fmt.Sprintf("Risk: declared %s, assessed %s by act:", Line(p.RiskLevel), Line(p.RiskAssessed))))
		for _, r := range p.RiskReasons {
			fmt.Fprintf(w, "  - %s\n", Line(r))
		}
	}
}

// PlanText is Plan for a sink that is no terminal (a hook's reason, a
// model's text): plain text, every character Text escapes escaped.
func PlanText(p *plan.Plan, state lifecycle.State, o Options) string {
	var b bytes.Buffer
	Plan(&b, Styles{}, p, state, o)
	return b.String()
}

// ActionChanges writes the change list of an applied action, as act show
// ACTION_ID prints it: each change on a line of its own, indented, under
// the workspace it is shown relative to.
func ActionChanges(w io.Writer, st Styles, changes []diff.Change, workspaces []string) {
	ws := "\x00"
	for _, e := range reviewEntries(changes, workspaces) {
		if e.ws != ws && (e.ws != "" || ws != "\x00") {
			fmt.Fprintf(w, "%s\n", workspaceHeader(e.ws))
		}
		ws = e.ws
		_, line, _ := entryLine(st, changes, e)
		fmt.Fprintf(w, "  %s\n", line)
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
	header = "    --- " + Line(sfrom) + "\n    +++ " + Line(sto) + "\n"
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
		return Line(*p)
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
			parts = append(parts, "→ "+Line(*c.LinkAfter))
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
			parts = append(parts, "→ "+Line(*c.LinkAfter))
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

// IntentOf is the intent summary of the descriptor p saved, "" if it
// cannot be read. As the descriptor holds it: not escaped.
func IntentOf(p *plan.Plan) string {
	if p == nil {
		return ""
	}
	d, err := p.Decode()
	if err != nil {
		return ""
	}
	return d.IntentSummary
}

// IntentLine is the line that names what p is for, before the question
// of apply's prompt ("" without an intent).
func IntentLine(p *plan.Plan) string {
	if intent := IntentOf(p); intent != "" {
		return "Intent: " + Line(intent) + "\n"
	}
	return ""
}

// maxListIntent is how much of an intent a list (pending, history) shows.
const maxListIntent = 60

// ShortIntent is intent as a list shows it: on one line, cut below
// maxListIntent characters (at a word's end) with an ellipsis.
func ShortIntent(intent string) string {
	intent = strings.Join(strings.Fields(intent), " ")
	if utf8.RuneCountInString(intent) > maxListIntent {
		cut := string([]rune(intent)[:maxListIntent-1])
		if i := strings.LastIndexByte(cut, ' '); i > len(cut)/2 {
			cut = cut[:i] // at a word's end
		}
		intent = strings.TrimRight(cut, " ") + "…"
	}
	return Line(intent)
}

// MaxIntent is the most characters of an intent summary act writes
// itself (act run's, the hooks').
const MaxIntent = 200

// Intent is s as an intent summary act writes itself (act run's, the
// hooks'): one line (Line), at most MaxIntent characters, cut with an
// ellipsis.
func Intent(s string) string {
	out := Line(s)
	if utf8.RuneCountInString(out) > MaxIntent {
		out = string([]rune(out)[:MaxIntent-1]) + "…"
	}
	return out
}

// HomeDiscarded is the line that says what a plan's commands made in the
// masked home: written through a throwaway layer, gone with the sandbox,
// never promoted (docs/sandbox-filesystem.md, "The masked home").
func HomeDiscarded(hd *plan.Discarded) string {
	var shown []string
	for _, p := range hd.Paths {
		shown = append(shown, Line(p))
	}
	list := strings.Join(shown, ", ")
	if n := hd.Count - len(shown); n > 0 {
		list += fmt.Sprintf(" and %d more", n)
	}
	return fmt.Sprintf("act discarded %s the commands made in the masked home (a throwaway layer: not promoted, not graded): %s",
		Plural(hd.Count, "path"), list)
}

// Discarded is the line that says what by-products a plan discarded:
// what its commands wrote to paths git ignores, neither graded nor
// promoted (docs/risk.md). Paths are shown relative to their workspace.
func Discarded(dc *plan.Discarded, workspaces []string) string {
	var shown []string
	for _, p := range dc.Paths {
		shown = append(shown, Line(shownPath(p, workspaceOf(p, workspaces))))
	}
	list := strings.Join(shown, ", ")
	if n := dc.Count - len(shown); n > 0 {
		list += fmt.Sprintf(" and %d more", n)
	}
	return fmt.Sprintf("act discarded %s the command wrote to paths git ignores (not promoted, not graded): %s",
		Plural(dc.Count, "by-product"), list)
}
