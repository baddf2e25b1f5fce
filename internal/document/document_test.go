package document

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/act-project/act/internal/problem"
)

func TestParseValue(t *testing.T) {
	tests := []struct {
		name, file, src string
		want            any
	}{
		{"yaml scalars", "a.yaml", "a: 1\nb: true\nc: ~\nd: x\ne: 1.5\nf: 2026-11-22T00:00:00Z\ng: yes\nh: '3'\n",
			map[string]any{"a": int64(1), "b": true, "c": nil, "d": "x", "e": 1.5, "f": "2026-11-22T00:00:00Z", "g": "yes", "h": "3"}},
		{"yaml lists", "a.yaml", "a: [1, [2]]\nb:\n  - x\n", map[string]any{"a": []any{int64(1), []any{int64(2)}}, "b": []any{"x"}}},
		{"yaml alias", "a.yaml", "a: &x {k: 1}\nb: *x\n", map[string]any{"a": map[string]any{"k": int64(1)}, "b": map[string]any{"k": int64(1)}}},
		{"json", "a.json", `{"a": 1, "b": [true, null, "s", 2.5]}`, map[string]any{"a": int64(1), "b": []any{true, nil, "s", 2.5}}},
		{"stdin json", StdinName, ` {"a": {}}`, map[string]any{"a": map[string]any{}}},
		{"stdin yaml", StdinName, "a: b\n", map[string]any{"a": "b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, probs := Parse(tt.file, []byte(tt.src))
			if probs != nil {
				t.Fatalf("Parse: %v", probs)
			}
			if diff := cmp.Diff(tt.want, d.Value()); diff != "" {
				t.Errorf("Value() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseProblems(t *testing.T) {
	deep := strings.Repeat("[", 200) + strings.Repeat("]", 200)
	bomb := "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
	for i, p := range []string{"b", "c", "d", "e", "f", "g"} {
		prev := string("abcdefg"[i])
		bomb += p + ": &" + p + " [" + strings.Repeat("*"+prev+", ", 9) + "*" + prev + "]\n"
	}
	tests := []struct {
		name, file, src string
		want            []string // "rule line:col"
	}{
		{"duplicate yaml", "a.yaml", "a: 1\nb: 2\na: 3\n", []string{"parse.duplicate-key 3:1"}},
		{"duplicate json", "a.json", "{\"a\": 1,\n \"a\": 2}", []string{"parse.duplicate-key 2:2"}},
		{"two duplicates", "a.yaml", "a: 1\na: 2\nb:\n  c: 1\n  c: 2\n", []string{"parse.duplicate-key 2:1", "parse.duplicate-key 5:3"}},
		{"nul", "a.yaml", "a: 1\nb: \x00\n", []string{"parse.nul-byte 2:4"}},
		{"utf8", "a.yaml", "a: \xff\n", []string{"parse.invalid-utf8 1:4"}},
		{"too large", "a.yaml", "a: " + strings.Repeat("x", MaxSize), []string{"parse.too-large 1:1"}},
		{"two docs", "a.yaml", "a: 1\n---\nb: 2\n", []string{"parse.multiple-documents 2:1"}},
		{"trailing json", "a.json", "{\"a\": 1}\n{}", []string{"parse.trailing-data 2:1"}},
		{"trailing garbage json", "a.json", "{\"a\": 1}}", []string{"parse.trailing-data 1:9"}},
		{"deep json", "a.json", deep, []string{"parse.too-deep 1:66"}},
		{"deep yaml", "a.yaml", deep, []string{"parse.too-deep 1:66"}},
		{"alias bomb", "a.yaml", bomb, []string{"parse.alias-expansion 5:36"}},
		{"empty", "a.yaml", "# nothing\n", []string{"parse.empty 1:1"}},
		{"empty json", "a.json", "  ", []string{"parse.empty 1:1"}},
		{"syntax yaml", "a.yaml", "a: 1\n b: 2\n", []string{"parse.syntax 2:2"}},
		{"syntax json", "a.json", "{\"a\" 1}", []string{"parse.syntax 1:6"}},
		{"unterminated json", "a.json", "{\"a\": ", []string{"parse.syntax 1:7"}},
		{"tag", "a.yaml", "a: !foo 1\n", []string{"parse.tag 1:4"}},
		{"merge", "a.yaml", "a: &x {k: 1}\nb:\n  <<: *x\n", []string{"parse.merge-key 3:3"}},
		{"complex key", "a.yaml", "? [a]\n: 1\n", []string{"parse.key-not-string 1:3"}},
		{"big int", "a.json", `{"a": 99999999999999999999}`, []string{"parse.number 1:7"}},
		{"inf", "a.yaml", "a: .inf\n", []string{"parse.number 1:4"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, probs := Parse(tt.file, []byte(tt.src))
			var got []string
			for _, p := range probs {
				got = append(got, p.Rule+" "+itoa(p.Line)+":"+itoa(p.Column))
				if p.File != tt.file || p.Message == "" || p.Layer != problem.Parse {
					t.Errorf("problem %+v: want file %q, a message and the parse layer", p, tt.file)
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("problems mismatch (-want +got):\n%s\n%v", diff, probs)
			}
		})
	}
}

var numbersByValue = cmp.FilterValues(func(a, b any) bool {
	_, ai := a.(int64)
	_, af := a.(float64)
	_, bi := b.(int64)
	_, bf := b.(float64)
	return (ai || af) && (bi || bf)
}, cmp.Comparer(func(a, b any) bool { return toFloat(a) == toFloat(b) }))

func toFloat(v any) float64 {
	if i, ok := v.(int64); ok {
		return float64(i)
	}
	return v.(float64)
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

func TestPos(t *testing.T) {
	d, probs := Parse("a.yaml", []byte("scope:\n  paths:\n    - /a\n    - /b\n"))
	if probs != nil {
		t.Fatal(probs)
	}
	for _, tt := range []struct {
		path []string
		want problem.Pos
	}{
		{[]string{"scope"}, problem.Pos{Line: 1, Column: 1}},
		{[]string{"scope", "paths"}, problem.Pos{Line: 2, Column: 3}},
		{[]string{"scope", "paths", "1"}, problem.Pos{Line: 4, Column: 7}},
		{[]string{"scope", "missing"}, problem.Pos{Line: 1, Column: 1}},
		{[]string{"scope", "paths", "9"}, problem.Pos{Line: 2, Column: 3}},
	} {
		if got := d.Pos(tt.path...); got != tt.want {
			t.Errorf("Pos(%v) = %v, want %v", tt.path, got, tt.want)
		}
	}
}

// FuzzParse checks that Parse never panics and that what it accepts survives
// a round trip: its value, written as JSON and parsed again, is the same.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"a: 1\n", `{"a": [1, 2.5, "x", null, true]}`, "a: &x [1]\nb: *x\n", "- a\n- b: {c: d}\n",
		"a: 1\na: 2\n", "---\na: 1\n---\n", "{\"a\":1}}", "a: !!binary aGVsbG8=\n", "? a\n: b\n",
	} {
		f.Add("a.yaml", []byte(s))
		f.Add("a.json", []byte(s))
	}
	f.Fuzz(func(t *testing.T, name string, data []byte) {
		d, probs := Parse(name, data)
		if probs != nil {
			if d != nil {
				t.Fatal("Parse returned both a document and problems")
			}
			for _, p := range probs {
				if p.Rule == "" || p.Message == "" || p.Line < 1 || p.Column < 1 {
					t.Fatalf("incomplete problem %+v", p)
				}
			}
			return
		}
		v := d.Value()
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("marshal %#v: %v", v, err)
		}
		d2, probs := Parse("x.json", b)
		if probs != nil {
			t.Fatalf("re-parse of %s: %v", b, probs)
		}
		// JSON writes an integral float like 8.0 as 8, which reads back as
		// an integer: compare numbers by value.
		if diff := cmp.Diff(v, d2.Value(), numbersByValue); diff != "" {
			t.Fatalf("round trip mismatch (-first +second):\n%s", diff)
		}
	})
}

// TestLongLine parses a one-line JSON document close to the size limit: the
// column of every value must not be recounted from the line's start.
func TestLongLine(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"a": [`)
	for i := 0; b.Len() < MaxSize-64; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"xxxxxxxxxxxxxxxxxxxxxxxx"`)
	}
	b.WriteString(`]}`)
	d, probs := Parse("long.json", []byte(b.String()))
	if probs != nil {
		t.Fatal(probs)
	}
	items := d.Root.Values[0].Items
	last := items[len(items)-1]
	if want := b.Len() - 27; last.Pos.Column != want {
		t.Errorf("last item at column %d, want %d", last.Pos.Column, want)
	}
}
