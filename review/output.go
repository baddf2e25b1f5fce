package review

import (
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/act-project/act/plan"
)

// What a command printed reaches a person or a model bounded, and every
// cut says where it was made and how much it left out: a line longer than
// its bound ends "… (cut: 25,904 more bytes of this line)", lines left out
// are counted on a line of their own, and an output act stopped keeping
// says so. One function, Output, makes all of it, for every sink.

// MaxLineBytes is the most bytes of one line of a command's output shown,
// unless all is asked for (act show --full).
const MaxLineBytes = 4096

// Bounds say how much of a command's output a sink shows.
type Bounds struct {
	// LineBytes is the most bytes of one line shown (0: every line whole).
	LineBytes int
	// Bytes is the most bytes of the lines shown in all (0: no bound):
	// the first lines and the last are kept, those between left out.
	Bytes int
	// All says where the whole output can be read, in the note on what
	// was left out ("act show PLAN_ID --full shows it"); "" for nowhere.
	All string
}

// Brief are the bounds of a command's output in a text read in one piece
// (a hook's reason): lines of at most MaxLineBytes, about 4 KiB in all.
func Brief(all string) Bounds {
	return Bounds{LineBytes: MaxLineBytes, Bytes: MaxLineBytes, All: all}
}

// Captured is one stream of a command's output as act kept it.
type Captured struct {
	Text string
	// Cut says act kept only the first plan.MaxCommandOutput bytes; More,
	// when not 0, is how many more there were.
	Cut  bool
	More int64
}

// Output is a command's captured output c as a sink shows it: its lines,
// escaped (Text) and bounded by b, each cut saying so on the line it is
// made, then a line saying the capture was cut, if it was. Each line
// ends in a newline; "" when there is nothing to show.
func Output(c Captured, b Bounds) string {
	text := strings.TrimRight(c.Text, "\n")
	var lines []string
	if text != "" {
		lines = strings.Split(text, "\n")
	}
	shown := make([]string, len(lines))
	total := 0
	for i, l := range lines {
		shown[i] = cutLine(l, b.LineBytes)
		total += len(shown[i]) + 1
	}
	var out strings.Builder
	if b.Bytes > 0 && total > b.Bytes && len(shown) > 1 {
		// The first lines and the last, half the bound each; at least
		// the first line.
		head, size := 0, 0
		for head < len(shown) && (head == 0 || size+len(shown[head])+1 <= b.Bytes/2) {
			size += len(shown[head]) + 1
			head++
		}
		tail, size := len(shown), 0
		for tail > head && size+len(shown[tail-1])+1 <= b.Bytes/2 {
			tail--
			size += len(shown[tail]) + 1
		}
		for _, l := range shown[:head] {
			out.WriteString(l + "\n")
		}
		if tail > head {
			left := 0
			for _, l := range lines[head:tail] {
				left += len(l) + 1
			}
			out.WriteString(fmt.Sprintf("(cut: %s, %s bytes, not shown%s)\n", Plural(tail-head, "more line"), count(left), allNote(b.All)))
		}
		for _, l := range shown[tail:] {
			out.WriteString(l + "\n")
		}
	} else {
		for _, l := range shown {
			out.WriteString(l + "\n")
		}
	}
	if cut := CaptureCut("this output", c); cut != "" {
		out.WriteString("(" + cut + ")\n")
	}
	return out.String()
}

// CaptureCut says that act stopped keeping the command's output c, named
// name ("the command's output"), where, and how much more there was when
// that was counted; "" when act kept all of it.
func CaptureCut(name string, c Captured) string {
	switch {
	case !c.Cut:
		return ""
	case c.More > 0:
		return fmt.Sprintf("cut: %s went on for at least %s bytes past the %s act keeps", name, count(c.More), count(plan.MaxCommandOutput))
	}
	return fmt.Sprintf("cut: %s went on past the %s bytes act keeps", name, count(plan.MaxCommandOutput))
}

func allNote(all string) string {
	if all == "" {
		return ""
	}
	return "; " + Line(all)
}

// cutLine is line escaped (Text), its first max bytes only when it is
// longer (at a character's start), saying how many more it had.
func cutLine(line string, max int) string {
	if max <= 0 || len(line) <= max {
		return Text(line)
	}
	k := max
	for k > 0 && !utf8.RuneStart(line[k]) {
		k--
	}
	if k == 0 {
		k = max // not UTF-8: bytes
	}
	return Text(line[:k]) + fmt.Sprintf("… (cut: %s more bytes of this line)", count(len(line)-k))
}

// Reason is s as a text a person or a model reads in one piece (a hook's
// reason): Text, at most limit characters; a longer one is cut, saying how
// many characters more it had.
func Reason(s string, limit int) string {
	s = Text(s)
	n := utf8.RuneCountInString(s)
	if limit <= 0 || n <= limit {
		return s
	}
	note := func(more int) string { return fmt.Sprintf("… (cut: %s more characters of this text)", count(more)) }
	keep := limit - utf8.RuneCountInString(note(n))
	for range 3 { // the note's length depends on how much it says was cut
		if k := limit - utf8.RuneCountInString(note(n-keep)); k < keep || k > keep && k+utf8.RuneCountInString(note(n-k)) <= limit {
			keep = k
		}
	}
	keep = min(max(keep, 0), n)
	r := []rune(s)
	return string(r[:keep]) + note(n-keep)
}

// A Collector keeps a command's output as it streams (the lines of
// plan.Options.Progress), as the plan would record it: up to
// plan.MaxCommandOutput bytes a stream, counting what it does not keep.
// What it shows of a command whose failure leaves no plan.
type Collector struct {
	mu   sync.Mutex
	out  [3]strings.Builder
	cut  [3]bool
	more [3]int64
	any  bool
}

// Line keeps a line of stream (1 stdout, 2 stderr).
func (c *Collector) Line(stream int, line string) {
	if stream != 1 && stream != 2 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.any = true
	b := &c.out[stream]
	if c.cut[stream] {
		c.more[stream] += int64(len(line)) + 1
		return
	}
	if room := plan.MaxCommandOutput - b.Len(); len(line)+1 > room {
		k := max(room, 0)
		for k > 0 && k < len(line) && !utf8.RuneStart(line[k]) {
			k--
		}
		b.WriteString(line[:min(k, len(line))])
		c.cut[stream] = true
		c.more[stream] += int64(len(line)+1) - int64(min(k, len(line)))
		return
	}
	b.WriteString(line)
	b.WriteByte('\n')
}

// Captured is what c kept of stream.
func (c *Collector) Captured(stream int) Captured {
	c.mu.Lock()
	defer c.mu.Unlock()
	return Captured{Text: c.out[stream].String(), Cut: c.cut[stream], More: c.more[stream]}
}

// Any reports whether any output came.
func (c *Collector) Any() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.any
}
