package diff_test

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/act-project/act/diff"
)

var update = flag.Bool("update", false, "rewrite testdata/*.diff.golden")

func lines(n int, f func(i int) string) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		b.WriteString(f(i))
		b.WriteByte('\n')
	}
	return b.String()
}

func numbered(i int) string { return fmt.Sprintf("line %d", i) }

// unifiedCases have goldens testdata/<name>.diff.golden. A nil side is
// absent.
var unifiedCases = []struct {
	name          string
	before, after *string
	max           int
	cut           bool
}{
	{name: "modify-middle", before: ptr(lines(20, numbered)), after: ptr(lines(20, func(i int) string {
		if i == 10 {
			return "line ten"
		}
		return numbered(i)
	}))},
	{name: "two-hunks", before: ptr(lines(30, numbered)), after: ptr(lines(30, func(i int) string {
		switch i {
		case 3:
			return "three"
		case 25:
			return "twenty-five"
		}
		return numbered(i)
	}))},
	{name: "close-edits-share-a-hunk", before: ptr(lines(20, numbered)), after: ptr(lines(20, func(i int) string {
		if i == 5 || i == 11 {
			return "changed"
		}
		return numbered(i)
	}))},
	{name: "insert-and-delete", before: ptr("a\nb\nc\nd\n"), after: ptr("a\nc\nd\ne\nf\n")},
	{name: "create", before: nil, after: ptr("one\ntwo\nthree\n")},
	{name: "delete", before: ptr("one\ntwo\n"), after: nil},
	{name: "from-empty", before: ptr(""), after: ptr("x\n")},
	{name: "to-empty", before: ptr("x\ny\n"), after: ptr("")},
	{name: "no-newline-at-eof", before: ptr("a\nb"), after: ptr("a\nc")},
	{name: "add-newline-at-eof", before: ptr("a\nb"), after: ptr("a\nb\n")},
	{name: "utf8", before: ptr("grüße\n日本\n"), after: ptr("grüße\n日本語\n")},
	{name: "cut", before: ptr(lines(50, numbered)), after: ptr(lines(50, func(i int) string { return "new " + numbered(i) })), max: 200, cut: true},
}

func reader(s *string) io.Reader {
	if s == nil {
		return nil
	}
	return strings.NewReader(*s)
}

// TestUnified compares unified diffs with testdata/*.diff.golden and,
// where GNU diff is installed and the text is whole, with diff -u.
func TestUnified(t *testing.T) {
	gnu, _ := exec.LookPath("diff")
	for _, tt := range unifiedCases {
		t.Run(tt.name, func(t *testing.T) {
			text, cut, binary, err := diff.Unified("/s/f.txt", reader(tt.before), reader(tt.after), tt.max)
			if err != nil || binary || cut != tt.cut {
				t.Fatalf("Unified() = cut %v, binary %v, %v; want cut %v", cut, binary, err, tt.cut)
			}
			if tt.max > 0 && len(text) > tt.max {
				t.Errorf("Unified() gave %d bytes, more than max %d", len(text), tt.max)
			}
			golden := filepath.Join("testdata", tt.name+".diff.golden")
			if *update {
				if err := os.WriteFile(golden, []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if d := cmp.Diff(string(want), text); d != "" {
				t.Errorf("Unified() mismatch with %s (-want +got):\n%s", golden, d)
			}
			if gnu != "" && !tt.cut {
				if d := cmp.Diff(gnuDiff(t, gnu, tt.before, tt.after), text); d != "" {
					t.Errorf("Unified() differs from diff -u (-gnu +got):\n%s", d)
				}
			}
		})
	}
}

// gnuDiff runs diff -u with the labels Unified uses.
func gnuDiff(t *testing.T, gnu string, before, after *string) string {
	t.Helper()
	dir := t.TempDir()
	args := []string{"-u"}
	var files []string
	for i, s := range []*string{before, after} {
		name := filepath.Join(dir, fmt.Sprint(i))
		label := "/s/f.txt"
		if s == nil {
			label = "/dev/null"
			s = ptr("")
		}
		if err := os.WriteFile(name, []byte(*s), 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, "--label", label)
		files = append(files, name)
	}
	out, err := exec.Command(gnu, append(args, files...)...).Output()
	if err != nil && len(out) == 0 {
		t.Fatalf("diff -u: %v", err)
	}
	return string(out)
}

func TestUnifiedNotText(t *testing.T) {
	boundary := strings.Repeat("a", diff.SniffSize-1) + "é" + "\n" // é straddles the sniffed bytes
	for _, tt := range []struct {
		name          string
		before, after string
		binary        bool
	}{
		{"nul", "text\n", "te\x00xt\n", true},
		{"invalid utf-8", "\xff\xfe\n", "text\n", true},
		{"nul after the sniffed bytes is text", strings.Repeat("a", diff.SniffSize) + "\x00", "b", false},
		{"a character cut by the sniff limit is text", boundary, boundary + "x\n", false},
		{"too large", strings.Repeat("a\n", diff.MaxTextSize/2+1), "a\n", true},
		{"equal", "same\n", "same\n", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			text, cut, binary, err := diff.Unified("/f", strings.NewReader(tt.before), strings.NewReader(tt.after), 0)
			if err != nil || binary != tt.binary || cut {
				t.Fatalf("Unified() = binary %v, cut %v, %v; want binary %v", binary, cut, err, tt.binary)
			}
			if binary && text != "" {
				t.Errorf("binary but text %q", text)
			}
			if tt.before == tt.after && text != "" {
				t.Errorf("equal content, text %q", text)
			}
		})
	}
}

// TestUnifiedPatch checks, on random edits, that patch(1) turns before
// into after with the diff Unified gives.
func TestUnifiedPatch(t *testing.T) {
	patch, err := exec.LookPath("patch")
	if err != nil {
		t.Skip("patch is not installed")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	words := []string{"alpha", "beta", "gamma", "delta", "", "x"}
	gen := func(n int) string {
		var b strings.Builder
		for range n {
			b.WriteString(words[rng.IntN(len(words))])
			b.WriteByte('\n')
		}
		s := b.String()
		if rng.IntN(4) == 0 && len(s) > 0 {
			s = s[:len(s)-1] // no newline at the end
		}
		return s
	}
	n := 100
	if testing.Short() {
		n = 10
	}
	dir := t.TempDir()
	for i := range n {
		before := gen(rng.IntN(40))
		after := []byte(before)
		for range rng.IntN(6) { // a few random line edits
			ls := strings.SplitAfter(string(after), "\n")
			j := rng.IntN(len(ls))
			ls[j] = gen(rng.IntN(3))
			after = []byte(strings.Join(ls, ""))
		}
		text, _, _, err := diff.Unified("/f", strings.NewReader(before), bytes.NewReader(after), 0)
		if err != nil {
			t.Fatal(err)
		}
		if text == "" {
			if before != string(after) {
				t.Fatalf("case %d: no diff for different content", i)
			}
			continue
		}
		name := filepath.Join(dir, "f")
		if err := os.WriteFile(name, []byte(before), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(patch, "-s", "--no-backup-if-mismatch", name)
		cmd.Stdin = strings.NewReader(text)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("case %d: patch: %v\n%s\ndiff:\n%s", i, err, out, text)
		}
		got, _ := os.ReadFile(name)
		if !bytes.Equal(got, after) {
			t.Fatalf("case %d: patched %q, want %q\ndiff:\n%s", i, got, after, text)
		}
	}
}
