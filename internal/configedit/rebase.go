package configedit

import (
	"bytes"
	"sort"
	"strings"
)

// An edit is computed on a normalised encoding of the file: base is the
// file as parsed and re-encoded, edited the same after the edit. The lines
// that differ between base and edited are the edit; the lines that differ
// between the original and base are only the encoder's formatting. rebase
// replays the first difference onto the original, so the lines the edit
// does not touch keep their formatting.

// maxDiff bounds the number of differing lines a diff looks for; beyond it
// the original and its encoding are too far apart to patch, and the edited
// encoding is used as it is.
const maxDiff = 1000

// rebaseChecked returns the original with the change from base to edited
// replayed on it, if that patch applies and check accepts the result, else
// edited. The original's line endings (LF or CRLF) and its final newline
// are kept either way.
func rebaseChecked(orig, base, edited []byte, check func([]byte) bool) []byte {
	crlf := bytes.Contains(orig, []byte("\r\n")) &&
		bytes.Count(orig, []byte("\r\n")) == bytes.Count(orig, []byte("\n"))
	finalNL := len(orig) == 0 || bytes.HasSuffix(orig, []byte("\n"))
	text := string(orig)
	if crlf {
		text = strings.ReplaceAll(text, "\r\n", "\n")
	}
	o, b, e := lines(text), lines(string(base)), lines(string(edited))
	join := func(l []string) []byte {
		nl := "\n"
		if crlf {
			nl = "\r\n"
		}
		s := strings.Join(l, nl)
		if finalNL && len(l) > 0 {
			s += nl
		}
		return []byte(s)
	}
	if equalLines(o, b) {
		return join(e)
	}
	if out, ok := rebase(o, b, e); ok {
		if res := join(out); check(res) {
			return res
		}
	}
	return join(e)
}

// lines splits s into lines without their newlines; a final newline ends
// the last line rather than starting an empty one.
func lines(s string) []string {
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

func equalLines(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// rebase replays the change from b to e onto o, where b is o reformatted.
// It fails when a line the change removes, or the line a change is
// anchored to, has no twin in o.
func rebase(o, b, e []string) ([]string, bool) {
	ob, ok := diffPairs(o, b)
	if !ok {
		return nil, false
	}
	inO := make([]int, len(b)) // inO[j]: the line of o twin to b[j], or -1
	for j := range inO {
		inO[j] = -1
	}
	for _, p := range ob {
		inO[p[1]] = p[0]
	}
	be, ok := diffPairs(b, e)
	if !ok {
		return nil, false
	}
	var out []string
	next := 0 // the next line of o to copy
	for _, h := range hunks(b, e, be) {
		b0, b1, e0, e1 := h[0], h[1], h[2], h[3]
		var start, end int // o[start:end] is replaced by e[e0:e1]
		switch {
		case b1 > b0:
			for j := b0; j < b1; j++ {
				if inO[j] < 0 {
					return nil, false
				}
			}
			start, end = inO[b0], inO[b1-1]+1
		case b0 > 0:
			if inO[b0-1] < 0 {
				return nil, false
			}
			start = inO[b0-1] + 1
			end = start
		case len(b) > 0 && inO[0] >= 0:
			start, end = inO[0], inO[0]
		default:
			return nil, false
		}
		if start < next {
			return nil, false
		}
		out = append(out, o[next:start]...)
		out = append(out, e[e0:e1]...)
		// A deletion between two blank lines, or at the top, leaves one
		// blank line, not two.
		if e0 == e1 && end < len(o) && strings.TrimSpace(o[end]) == "" &&
			(len(out) == 0 || strings.TrimSpace(out[len(out)-1]) == "") {
			end++
		}
		next = end
	}
	out = append(out, o[next:]...)
	return out, true
}

// hunks returns the changes from b to e given their common lines: each is
// b[h[0]:h[1]] replaced by e[h[2]:h[3]]. A change of several lines is cut
// where lines of b and e hold the same key (the text before the first
// colon), so that a replaced line stays in its place and lines of the
// original between the changed ones (blank lines) stay too.
func hunks(b, e []string, common [][2]int) [][4]int {
	var out [][4]int
	pb, pe := -1, -1
	for _, p := range append(common, [2]int{len(b), len(e)}) {
		b0, b1, e0, e1 := pb+1, p[0], pe+1, p[1]
		pb, pe = p[0], p[1]
		if b0 == b1 && e0 == e1 {
			continue
		}
		keys, ok := diffPairs(lineKeys(b[b0:b1]), lineKeys(e[e0:e1]))
		if !ok {
			out = append(out, [4]int{b0, b1, e0, e1})
			continue
		}
		qb, qe := b0, e0
		for _, k := range keys {
			kb, ke := b0+k[0], e0+k[1]
			if qb < kb || qe < ke {
				out = append(out, [4]int{qb, kb, qe, ke})
			}
			out = append(out, [4]int{kb, kb + 1, ke, ke + 1})
			qb, qe = kb+1, ke+1
		}
		if qb < b1 || qe < e1 {
			out = append(out, [4]int{qb, b1, qe, e1})
		}
	}
	return out
}

func lineKeys(l []string) []string {
	keys := make([]string, len(l))
	for i, s := range l {
		k, _, _ := strings.Cut(s, ":")
		keys[i] = k
	}
	return keys
}

// diffPairs returns the pairs (i, j) of lines a[i] == b[j] of a longest
// common subsequence of a and b, in order, found with Myers' algorithm. It
// fails when a and b differ in more than maxDiff lines.
func diffPairs(a, b []string) ([][2]int, bool) {
	// Trim the common prefix and suffix: most of a file, usually.
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	var pairs [][2]int
	for i := range pre {
		pairs = append(pairs, [2]int{i, i})
	}
	mid, ok := myers(a[pre:len(a)-suf], b[pre:len(b)-suf])
	if !ok {
		return nil, false
	}
	for _, p := range mid {
		pairs = append(pairs, [2]int{p[0] + pre, p[1] + pre})
	}
	for k := suf; k > 0; k-- {
		pairs = append(pairs, [2]int{len(a) - k, len(b) - k})
	}
	return pairs, true
}

func myers(a, b []string) ([][2]int, bool) {
	n, m := len(a), len(b)
	maxD := min(n+m, maxDiff)
	off := maxD + 1
	v := make([]int, 2*maxD+3)
	var trace [][]int // trace[d]: v[-d-1 .. d+1] before step d
	for d := 0; d <= maxD; d++ {
		trace = append(trace, append([]int(nil), v[off-d-1:off+d+2]...))
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				x = v[off+k+1]
			} else {
				x = v[off+k-1] + 1
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x++
				y++
			}
			v[off+k] = x
			if x >= n && y >= m {
				return backtrack(trace, n, m), true
			}
		}
	}
	return nil, false
}

func backtrack(trace [][]int, x, y int) [][2]int {
	var pairs [][2]int
	for d := len(trace) - 1; d >= 0; d-- {
		vd := trace[d]
		at := func(k int) int { return vd[k+d+1] }
		k := x - y
		var pk int
		if k == -d || (k != d && at(k-1) < at(k+1)) {
			pk = k + 1
		} else {
			pk = k - 1
		}
		px := at(pk)
		py := px - pk
		for x > px && y > py {
			x--
			y--
			pairs = append(pairs, [2]int{x, y})
		}
		x, y = px, py
	}
	sort.Slice(pairs, func(i, j int) bool { return pairs[i][0] < pairs[j][0] })
	return pairs
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
