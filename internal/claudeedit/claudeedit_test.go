package claudeedit

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// A Case is one edit of a file and what Claude Code's Edit makes of it:
// the file's bytes (none: Absent), or the start of its refusal. The root
// package's TestClaudeCodeEditCases makes each with the real Claude Code
// and checks it agrees.
type Case struct {
	Name   string `json:"name"`
	File   string `json:"file"`
	Absent bool   `json:"absent"`
	Edits  []struct {
		Old        string `json:"old"`
		New        string `json:"new"`
		ReplaceAll bool   `json:"replace_all"`
	} `json:"edits"`
	Want  string `json:"want"`
	Error string `json:"error"`
}

func loadCases(t *testing.T) []Case {
	t.Helper()
	data, err := os.ReadFile("testdata/cases.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []Case
	if err := json.Unmarshal(data, &cases); err != nil {
		t.Fatal(err)
	}
	return cases
}

func (c *Case) edits() []Edit {
	var es []Edit
	for _, e := range c.Edits {
		es = append(es, Edit{Old: e.Old, New: e.New, ReplaceAll: e.ReplaceAll})
	}
	return es
}

func TestCases(t *testing.T) {
	t.Parallel()
	for _, c := range loadCases(t) {
		t.Run(c.Name, func(t *testing.T) {
			got, err := Apply([]byte(c.File), !c.Absent, c.edits())
			switch {
			case c.Error != "" && err == nil:
				t.Fatalf("Apply = %q, want an error starting %q", got, c.Error)
			case c.Error != "" && !strings.HasPrefix(err.Error(), c.Error):
				t.Fatalf("Apply: %v, want an error starting %q", err, c.Error)
			case c.Error == "" && err != nil:
				t.Fatalf("Apply: %v, want %q", err, c.Want)
			case c.Error == "" && string(got) != c.Want:
				t.Fatalf("Apply = %q, want %q", got, c.Want)
			}
		})
	}
}

// A file's line endings are told from its first 4096 characters only,
// as Claude Code does: CRLF further on is made LF.
func TestLineEndingsSample(t *testing.T) {
	t.Parallel()
	head := strings.Repeat("a\n", 2048) // 4096 units, all LF
	got, err := Apply([]byte(head+"b\r\nc\r\nd\r\n"), true, []Edit{{Old: "b", New: "B"}})
	if err != nil {
		t.Fatal(err)
	}
	if want := head + "B\nc\nd\n"; string(got) != want {
		t.Fatalf("got …%q, want …%q", got[4000:], want[4000:])
	}
	// The same tail after a CRLF head keeps CRLF, and the head's bare LF
	// become CRLF.
	head = strings.Repeat("a\r\n", 1365) + "x\n"
	got, err = Apply([]byte(head+"b\r\n"), true, []Edit{{Old: "b", New: "B"}})
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.Repeat("a\r\n", 1365) + "x\r\nB\r\n"; string(got) != want {
		t.Fatalf("got …%q, want …%q", got[len(got)-12:], want[len(want)-12:])
	}
}

func TestMultiEdit(t *testing.T) {
	t.Parallel()
	got, err := Apply([]byte("say \u201chi\u201d\r\nTODO\r\n"), true, []Edit{
		{Old: `say "hi"`, New: `say "bye"`},
		{Old: "TODO", New: "done"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := "say \u201cbye\u201d\r\ndone\r\n"; string(got) != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	// An edit whose old text an earlier edit's new text holds is refused.
	if _, err := Apply([]byte("a b\n"), true, []Edit{{Old: "a", New: "b c"}, {Old: "b c", New: "d"}}); err == nil || !strings.Contains(err.Error(), "substring of a new_string") {
		t.Fatalf("got %v, want the substring refusal", err)
	}
}

func TestNotText(t *testing.T) {
	t.Parallel()
	for name, data := range map[string]string{
		"utf16":   "\xff\xfea\x00",
		"nul":     "a\x00b",
		"invalid": "a\xffb",
	} {
		if _, err := Apply([]byte(data), true, []Edit{{Old: "a", New: "b"}}); err == nil {
			t.Errorf("%s: Apply accepted it", name)
		}
	}
}
