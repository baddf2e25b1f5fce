package configedit

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rogpeppe/go-internal/txtar"
)

var update = flag.Bool("update", false, "rewrite the expected output in testdata")

// edit is the comment of a golden case: the edit to make.
type edit struct {
	Format Format         `json:"format"`
	Set    map[string]any `json:"set"`
	Unset  []string       `json:"unset"`
}

// TestGolden runs each testdata/*.txtar: its comment is the edit (a JSON
// object: format, set, unset), its file "in" the original, and "out" (the
// edited file), "absent" (the unset keys that were not there) and "error"
// (the error, "kind: message") what Edit returns. Run with -update to
// rewrite them. Every successful edit is also checked to be idempotent.
func TestGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txtar")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			ar, err := txtar.ParseFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var e edit
			dec := json.NewDecoder(bytes.NewReader(ar.Comment))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&e); err != nil {
				t.Fatalf("comment: %v", err)
			}
			in := section(ar, "in")
			if in == nil {
				t.Fatal("no section in")
			}
			got := map[string]string{}
			res, err := Edit(e.Format, in, e.Set, e.Unset)
			if err != nil {
				got["error"] = errText(err) + "\n"
			} else {
				got["out"] = string(res.Data)
				if len(res.Absent) > 0 {
					got["absent"] = strings.Join(res.Absent, "\n") + "\n"
				}
				again, err := Edit(e.Format, res.Data, e.Set, e.Unset)
				if err != nil {
					t.Errorf("second edit: %v", err)
				} else if d := cmp.Diff(string(res.Data), string(again.Data)); d != "" {
					t.Errorf("the edit is not idempotent (-first +second):\n%s", d)
				}
			}
			if *update {
				out := &txtar.Archive{Comment: ar.Comment, Files: []txtar.File{{Name: "in", Data: in}}}
				for _, name := range []string{"out", "absent", "error"} {
					if s, ok := got[name]; ok {
						out.Files = append(out.Files, txtar.File{Name: name, Data: []byte(s)})
					}
				}
				if err := os.WriteFile(file, txtar.Format(out), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want := map[string]string{}
			for _, f := range ar.Files {
				if f.Name != "in" {
					want[f.Name] = string(f.Data)
				}
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("Edit() mismatch (-want +got):\n%s", d)
			}
		})
	}
}

func section(ar *txtar.Archive, name string) []byte {
	for _, f := range ar.Files {
		if f.Name == name {
			return f.Data
		}
	}
	return nil
}

func errText(err error) string {
	var e *Error
	if !errors.As(err, &e) {
		return "other: " + err.Error()
	}
	kind := "other"
	switch {
	case errors.Is(err, ErrParse):
		kind = "parse"
	case errors.Is(err, ErrKeyConflict):
		kind = "key-conflict"
	}
	return fmt.Sprintf("%s: %s", kind, err)
}

// TestLineEndings checks that a CRLF file stays CRLF and that a file
// without a final newline gets none, on both formats.
func TestLineEndings(t *testing.T) {
	tests := []struct {
		name   string
		format Format
		in     string
		want   string
	}{
		{"json-crlf", JSON, "{\r\n  \"a\": 1,\r\n\r\n  \"b\": 2\r\n}\r\n", "{\r\n  \"a\": 1,\r\n\r\n  \"b\": 3\r\n}\r\n"},
		{"json-no-final-newline", JSON, "{\n  \"a\": 1,\n  \"b\": 2\n}", "{\n  \"a\": 1,\n  \"b\": 3\n}"},
		{"yaml-crlf", YAML, "a: 1 # one\r\n\r\nb: 2\r\n", "a: 1 # one\r\n\r\nb: 3\r\n"},
		{"yaml-no-final-newline", YAML, "a: 1\n\nb: 2", "a: 1\n\nb: 3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Edit(tt.format, []byte(tt.in), map[string]any{"b": float64(3)}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, string(res.Data)); d != "" {
				t.Errorf("Edit() mismatch (-want +got):\n%s", d)
			}
		})
	}
}

// TestRebaseFallback checks that when the original and its encoding are
// too far apart to patch, the result is still the edited document.
func TestRebaseFallback(t *testing.T) {
	var b strings.Builder
	b.WriteString("{")
	for i := range 3000 {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, "\n\n  \"k%d\":   %d", i, i)
	}
	b.WriteString("\n}\n")
	res, err := Edit(JSON, []byte(b.String()), map[string]any{"k1": "x"}, []string{"k2"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := parseJSON(res.Data)
	if err != nil {
		t.Fatalf("the result does not parse: %v", err)
	}
	if n := len(got.members); n != 2999 {
		t.Errorf("the result has %d keys, want 2999", n)
	}
	if v := got.members[1].val; v != "x" {
		t.Errorf("k1 = %v, want x", v)
	}
}

func TestUnknownFormat(t *testing.T) {
	if _, err := Edit("toml", []byte("a = 1\n"), map[string]any{"a": 2.0}, nil); err == nil {
		t.Error("Edit(toml) succeeded, want an error")
	}
}

func TestDiffPairs(t *testing.T) {
	tests := []struct {
		a, b string
		want [][2]int
	}{
		{"", "", nil},
		{"a b c", "a b c", [][2]int{{0, 0}, {1, 1}, {2, 2}}},
		{"a b c", "a x c", [][2]int{{0, 0}, {2, 2}}},
		{"a b c d", "b d", [][2]int{{1, 0}, {3, 1}}},
		{"x a y b z", "a b", [][2]int{{1, 0}, {3, 1}}},
		{"a b", "q a r b s", [][2]int{{0, 1}, {1, 3}}},
	}
	for _, tt := range tests {
		got, ok := diffPairs(strings.Fields(tt.a), strings.Fields(tt.b))
		if !ok {
			t.Errorf("diffPairs(%q, %q) failed", tt.a, tt.b)
			continue
		}
		if d := cmp.Diff(tt.want, got); d != "" {
			t.Errorf("diffPairs(%q, %q) mismatch (-want +got):\n%s", tt.a, tt.b, d)
		}
	}
}

// TestRawMessage: a json.RawMessage value is written with its objects'
// members in the order it has them, not sorted.
func TestRawMessage(t *testing.T) {
	res, err := Edit(JSON, []byte("{\n  \"a\": 1\n}\n"), map[string]any{
		"b": []any{json.RawMessage(`{"z": 1, "a": {"y": true, "b": null}}`), map[string]any{"z": 1, "a": 2}},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := "{\n  \"a\": 1,\n  \"b\": [\n    {\n      \"z\": 1,\n      \"a\": {\n        \"y\": true,\n        \"b\": null\n      }\n    },\n    {\n      \"a\": 2,\n      \"z\": 1\n    }\n  ]\n}\n"
	if string(res.Data) != want {
		t.Errorf("got\n%s\nwant\n%s", res.Data, want)
	}
}
