package cmd

import (
	"io"
	"strings"

	"github.com/charmbracelet/lipgloss"

	"github.com/act-project/act/review"
)

// Everything act prints passes through a review.TermWriter over standard
// output and error (wrapOutput), the terminal prompt and the pager's
// input; what a person or a model reads anywhere else (a hook's reason,
// MCP text) is made by package review, which escapes it itself
// (docs/sandbox-output.md). act's colours are review's style ids, each
// given its SGR sequence here, by lipgloss.

// escapeLine is a one-line field as act shows it (review.Line): its
// newlines and tabs as \n and \t, and every character that could drive a
// terminal or hide escaped.
func escapeLine(s string) string { return review.Line(s) }

// styleCodes returns the SGR sequences of act's styles as lipgloss renders
// them for out, or nothing when out gets no colour.
func styleCodes(out io.Writer, noColor bool) map[byte]string {
	codes := map[byte]string{}
	if noColor {
		return codes
	}
	r := lipgloss.NewRenderer(out)
	for id, st := range map[byte]lipgloss.Style{
		review.StyleCreate: r.NewStyle().Foreground(lipgloss.Color("2")),
		review.StyleModify: r.NewStyle().Foreground(lipgloss.Color("3")),
		review.StyleRemove: r.NewStyle().Foreground(lipgloss.Color("1")),
		review.StyleErr:    r.NewStyle().Foreground(lipgloss.Color("1")).Bold(true),
		review.StyleWarn:   r.NewStyle().Foreground(lipgloss.Color("3")).Bold(true),
		review.StyleBold:   r.NewStyle().Bold(true),
		review.StyleFaint:  r.NewStyle().Faint(true),
	} {
		s := st.Render("\x00")
		on, off, ok := strings.Cut(s, "\x00")
		if !ok || on == "" {
			return map[byte]string{} // no colour on this output
		}
		codes[id] = on
		codes[review.StyleEnd] = off
	}
	return codes
}
