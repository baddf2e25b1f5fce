package diff

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/aymanbagabas/go-udiff/lcs"
)

// Limits of [Unified].
const (
	// MaxTextSize is the largest file Unified diffs as text; a larger one
	// is shown by size and hash only.
	MaxTextSize = 1 << 20
	// SniffSize is how much of a file Unified inspects to tell text (UTF-8,
	// no NUL byte) from binary.
	SniffSize = 8 << 10
	// contextLines is the number of unchanged lines around each hunk.
	contextLines = 3
)

// Unified returns the unified diff of a text file at path, from before to
// after. A nil reader is an absent side, labelled /dev/null. Equal content
// gives "".
//
// When either side is binary — it has a NUL byte or invalid UTF-8 in its
// first [SniffSize] bytes, or is larger than [MaxTextSize] — Unified
// returns binary true and no text: show such a change by size and hash.
//
// The text is capped at max bytes (no cap when max <= 0), cut at a line
// end; cut reports that it was.
func Unified(path string, before, after io.Reader, max int) (text string, cut, binary bool, err error) {
	a, abin, err := readText(before)
	if err != nil {
		return "", false, false, fmt.Errorf("diff %s: %w", path, err)
	}
	b, bbin, err := readText(after)
	if err != nil {
		return "", false, false, fmt.Errorf("diff %s: %w", path, err)
	}
	if abin || bbin {
		return "", false, true, nil
	}
	if a == b {
		return "", false, false, nil
	}
	from, to := path, path
	if before == nil {
		from = "/dev/null"
	}
	if after == nil {
		to = "/dev/null"
	}
	text = unified(from, to, a, b)
	if max > 0 && len(text) > max {
		i := strings.LastIndexByte(text[:max], '\n')
		text, cut = text[:i+1], true
	}
	return text, cut, false, nil
}

// readText reads r whole, unless it turns out binary.
func readText(r io.Reader) (string, bool, error) {
	if r == nil {
		return "", false, nil
	}
	data, err := io.ReadAll(io.LimitReader(r, MaxTextSize+1))
	if err != nil {
		return "", false, err
	}
	if len(data) > MaxTextSize {
		return "", true, nil
	}
	head := data[:min(len(data), SniffSize)]
	if len(head) == SniffSize && len(data) > SniffSize {
		// Do not count a character cut at the end of the sniffed bytes.
		for i := 1; i < utf8.UTFMax && i <= len(head); i++ {
			if utf8.RuneStart(head[len(head)-i]) {
				if !utf8.FullRune(head[len(head)-i:]) {
					head = head[:len(head)-i]
				}
				break
			}
		}
	}
	if bytes.IndexByte(head, 0) >= 0 || !utf8.Valid(head) {
		return "", true, nil
	}
	return string(data), false, nil
}

// splitLines splits s after each newline; a last line without one is kept.
func splitLines(s string) []string {
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// unified formats the line diff of a and b as GNU diff -u does.
func unified(from, to, a, b string) string {
	al, bl := splitLines(a), splitLines(b)
	diffs := lcs.DiffLines(al, bl)
	slices.SortFunc(diffs, func(x, y lcs.Diff) int { return x.Start - y.Start })
	if len(diffs) == 0 {
		return ""
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "--- %s\n+++ %s\n", from, to)
	// Group the edits into hunks: edits closer than 2*contextLines
	// unchanged lines share one.
	for i := 0; i < len(diffs); {
		j := i + 1
		for j < len(diffs) && diffs[j].Start-diffs[j-1].End <= 2*contextLines {
			j++
		}
		first, last := diffs[i], diffs[j-1]
		aStart := max(first.Start-contextLines, 0)
		aEnd := min(last.End+contextLines, len(al))
		bStart := first.ReplStart - (first.Start - aStart)
		bEnd := last.ReplEnd + (aEnd - last.End)
		fmt.Fprintf(&sb, "@@ -%s +%s @@\n", hunkRange(aStart, aEnd-aStart), hunkRange(bStart, bEnd-bStart))
		ai := aStart
		for _, d := range diffs[i:j] {
			for ; ai < d.Start; ai++ {
				writeLine(&sb, ' ', al[ai])
			}
			for ; ai < d.End; ai++ {
				writeLine(&sb, '-', al[ai])
			}
			for k := d.ReplStart; k < d.ReplEnd; k++ {
				writeLine(&sb, '+', bl[k])
			}
		}
		for ; ai < aEnd; ai++ {
			writeLine(&sb, ' ', al[ai])
		}
		i = j
	}
	return sb.String()
}

// hunkRange formats the start and length of a hunk side (start 0-based).
func hunkRange(start, n int) string {
	switch n {
	case 0:
		return fmt.Sprintf("%d,0", start)
	case 1:
		return fmt.Sprintf("%d", start+1)
	}
	return fmt.Sprintf("%d,%d", start+1, n)
}

func writeLine(sb *strings.Builder, prefix byte, line string) {
	sb.WriteByte(prefix)
	sb.WriteString(line)
	if !strings.HasSuffix(line, "\n") {
		sb.WriteString("\n\\ No newline at end of file\n")
	}
}
