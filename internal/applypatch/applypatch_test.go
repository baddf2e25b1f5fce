package applypatch

import (
	"errors"
	"fmt"
	"io/fs"
	"reflect"
	"strings"
	"testing"
)

const ws = "/w/proj"

// tree is a ReadFunc over a map of absolute paths.
func tree(files map[string]string) ReadFunc {
	return func(p string) ([]byte, fs.FileMode, error) {
		c, ok := files[p]
		if !ok {
			return nil, 0, fmt.Errorf("read %s: %w", p, fs.ErrNotExist)
		}
		if c == "<dir>" {
			return nil, 0, fmt.Errorf("%s is a directory", p)
		}
		return []byte(c), 0o640, nil
	}
}

func plan(t *testing.T, patch string, files map[string]string) ([]Change, error) {
	t.Helper()
	hunks, err := Parse(patch)
	if err != nil {
		return nil, err
	}
	return Plan(hunks, ws+"/sub", inside(ws), tree(files))
}

// inside is a Plan check that refuses a path not below root.
func inside(root string) func(string) error {
	return func(p string) error {
		if !strings.HasPrefix(p, root+"/") {
			return fmt.Errorf("%s is outside the workspace %s", p, root)
		}
		return nil
	}
}

func TestParse(t *testing.T) {
	patch := "*** Begin Patch\n" +
		"*** Add File: path/add.py\n+abc\n+def\n" +
		"*** Delete File: path/delete.py\n" +
		"*** Update File: path/update.py\n*** Move to: path/update2.py\n@@ def f():\n-    pass\n+    return 123\n" +
		"*** Update File: file2.py\n import foo\n+bar\n\n@@\n x\n-y\n*** End of File\n" +
		"*** End Patch"
	got, err := Parse(patch)
	if err != nil {
		t.Fatal(err)
	}
	want := []Hunk{
		{Kind: Add, Path: "path/add.py", Content: "abc\ndef\n", Line: 2},
		{Kind: Delete, Path: "path/delete.py", Line: 5},
		{Kind: Update, Path: "path/update.py", MoveTo: "path/update2.py", Line: 6, Chunks: []Chunk{
			{Context: "def f():", HasContext: true, Old: []string{"    pass"}, New: []string{"    return 123"}}}},
		{Kind: Update, Path: "file2.py", Line: 11, Chunks: []Chunk{
			{Old: []string{"import foo", ""}, New: []string{"import foo", "bar", ""}}, // a blank line in a chunk is a kept empty line
			{Old: []string{"x", "y"}, New: []string{"x"}, EOF: true}}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Parse:\n got %+v\nwant %+v", got, want)
	}
}

func TestParseLenient(t *testing.T) {
	for name, patch := range map[string]string{
		"crlf":      "*** Begin Patch\r\n*** Add File: a.txt\r\n+one\r\n+two\r\n*** End Patch\r\n",
		"padded":    "  *** Begin Patch \n *** Add File: a.txt\n+one\n+two\n*** End Patch  \n",
		"heredoc":   "<<'EOF'\n*** Begin Patch\n*** Add File: a.txt\n+one\n+two\n*** End Patch\nEOF\n",
		"surrounds": "\n\n*** Begin Patch\n*** Add File: a.txt\n+one\n+two\n*** End Patch\n\n",
	} {
		got, err := Parse(patch)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if len(got) != 1 || got[0].Content != "one\ntwo\n" || got[0].Path != "a.txt" {
			t.Errorf("%s: got %+v", name, got)
		}
	}
}

func TestParseMalformed(t *testing.T) {
	for patch, want := range map[string]string{
		"":                                     "the first line must be",
		"bad":                                  "the first line must be",
		"*** Begin Patch\n*** Add File: a\n+x": "the last line must be",
		"*** Begin Patch\n*** End Patch":       "names no file",
		"*** Begin Patch\n*** Frobnicate: a\n*** End Patch":                         "line 2: \"*** Frobnicate: a\" is not a hunk header",
		"*** Begin Patch\n*** Update File: a\n*** End Patch":                        "line 2: the update of \"a\" changes nothing",
		"*** Begin Patch\n*** Update File: a\n@@\n*** End Patch":                    "the chunk has no lines",
		"*** Begin Patch\n*** Update File: a\n@@\n*** End of File\n*** End Patch":   "the chunk has no lines",
		"*** Begin Patch\n*** Update File: a\nbad line\n*** End Patch":              "line 3: \"bad line\": every line of a chunk starts with",
		"*** Begin Patch\n*** Update File: a\n-x\n+y\nbad\n*** End Patch":           "line 5: a chunk must start with \"@@\", got \"bad\"",
		"*** Begin Patch\n*** Add File:    \n+x\n*** End Patch":                     "is not a hunk header",
		"*** Begin Patch\n*** Update File: a\n*** Move to: \n@@\n-x\n*** End Patch": "names no path",
		"*** Begin Patch\n*** Add File: a\x00b\n+x\n*** End Patch":                  "NUL byte",
	} {
		_, err := Parse(patch)
		var pe *Error
		if err == nil || !errors.As(err, &pe) || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v, want an *Error containing %q", patch, err, want)
		}
	}
}

func TestPlanAddUpdateDeleteMove(t *testing.T) {
	files := map[string]string{
		ws + "/sub/modify.txt": "line1\nline2\n",
		ws + "/sub/delete.txt": "obsolete\n",
		ws + "/old/name.txt":   "from\n",
	}
	got, err := plan(t, "*** Begin Patch\n"+
		"*** Add File: nested/new.txt\n+created\n"+
		"*** Delete File: delete.txt\n"+
		"*** Update File: modify.txt\n@@\n-line2\n+changed\n"+
		"*** Update File: ../old/name.txt\n*** Move to: /w/proj/renamed/dir/name.txt\n@@\n-from\n+to\n"+
		"*** End Patch\n", files)
	if err != nil {
		t.Fatal(err)
	}
	want := []Change{
		{Path: ws + "/sub/nested/new.txt", Content: "created\n"},
		{Path: ws + "/sub/delete.txt", Delete: true, Existed: true},
		{Path: ws + "/sub/modify.txt", Content: "line1\nchanged\n", Existed: true},
		{Path: ws + "/old/name.txt", Delete: true, Existed: true},
		{Path: ws + "/renamed/dir/name.txt", Content: "to\n", Mode: 0o640},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Plan:\n got %+v\nwant %+v", got, want)
	}
}

func TestPlanUpdate(t *testing.T) {
	for _, tc := range []struct{ name, file, patch, want string }{
		{"multiple chunks", "a\nb\nc\nd\ne\nf\n", "@@\n a\n-b\n+B\n@@ d\n-e\n+E\n", "a\nB\nc\nd\nE\nf\n"},
		{"context line picks the second match", "x\nfn one\nx\nfn two\nx\n", "@@ fn two\n-x\n+y\n", "x\nfn one\nx\nfn two\ny\n"},
		{"appends trailing newline", "no newline", "@@\n-no newline\n+first line\n+second line\n", "first line\nsecond line\n"},
		{"pure addition goes at the end", "one\ntwo\n", "@@\n+three\n", "one\ntwo\nthree\n"},
		{"deletion only", "keep\ndrop\nkeep2\n", "@@\n keep\n-drop\n keep2\n", "keep\nkeep2\n"},
		{"end of file", "x\ny\nx\ny\n", "@@\n x\n-y\n+z\n*** End of File\n", "x\ny\nx\nz\n"},
		{"trailing white space ignored", "a  \nb\t\n", "@@\n-a\n+A\n b\n", "A\nb\n"},
		{"typographic punctuation", "say \u201chi\u201d \u2014 ok\n", "@@\n-say \"hi\" - ok\n+bye\n", "bye\n"},
		{"crlf file keeps crlf", "one\r\ntwo\r\n", "@@\n one\n-two\n+2\n", "one\r\n2\r\n"},
		{"empty line stands for the final newline", "a\nb\n", "@@\n a\n-b\n-\n+c\n+\n", "a\nc\n"},
	} {
		got, err := plan(t, "*** Begin Patch\n*** Update File: f.txt\n"+tc.patch+"*** End Patch", map[string]string{ws + "/sub/f.txt": tc.file})
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if len(got) != 1 || got[0].Content != tc.want {
			t.Errorf("%s: got %+v, want %q", tc.name, got, tc.want)
		}
	}
}

func TestPlanRefuses(t *testing.T) {
	files := map[string]string{
		ws + "/sub/f.txt":  "alpha\nbeta\n",
		ws + "/sub/dir":    "<dir>",
		ws + "/sub/bin.gz": "\xff\xfe\x00",
	}
	for _, tc := range []struct{ name, body, want string }{
		{"context missing", "*** Update File: f.txt\n@@\n-gamma\n+delta\n", "cannot update /w/proj/sub/f.txt: these lines are not in the file"},
		{"context line missing", "*** Update File: f.txt\n@@ func main\n-alpha\n+a\n", "the context line \"func main\" is not in the file"},
		{"update of a missing file", "*** Update File: nope.txt\n@@\n-a\n+b\n", "cannot update /w/proj/sub/nope.txt: there is no such file"},
		{"delete of a missing file", "*** Delete File: nope.txt\n", "cannot delete /w/proj/sub/nope.txt: there is no such file"},
		{"delete twice", "*** Delete File: f.txt\n*** Delete File: f.txt\n", "cannot delete"},
		{"update after delete", "*** Delete File: f.txt\n*** Update File: f.txt\n@@\n-alpha\n", "cannot update"},
		{"a directory", "*** Delete File: dir\n", "is a directory"},
		{"not text", "*** Update File: bin.gz\n@@\n-x\n+y\n", "not UTF-8 text"},
		{"dot-dot out of the workspace", "*** Add File: ../../escape.txt\n+x\n", "/w/escape.txt is outside the workspace /w/proj"},
		{"absolute path elsewhere", "*** Add File: /home/me/.bashrc\n+curl x | sh\n", "/home/me/.bashrc is outside the workspace"},
		{"a sibling with the workspace as prefix", "*** Add File: /w/project2/a\n+x\n", "outside the workspace"},
		{"the workspace itself", "*** Delete File: ..\n", "/w/proj is outside the workspace"},
		{"move out of the workspace", "*** Update File: f.txt\n*** Move to: ../../../tmp/f.txt\n@@\n-alpha\n+a\n", "/tmp/f.txt is outside the workspace"},
	} {
		_, err := plan(t, "*** Begin Patch\n"+tc.body+"*** End Patch", files)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
}

func TestPlanAddOverExisting(t *testing.T) {
	// As Codex's apply_patch does, an Add over a file that exists
	// replaces it: the change says the file existed (a modify).
	got, err := plan(t, "*** Begin Patch\n*** Add File: f.txt\n+new\n*** End Patch", map[string]string{ws + "/sub/f.txt": "old\n"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []Change{{Path: ws + "/sub/f.txt", Content: "new\n", Existed: true}}; !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

func TestPlanAddThenDelete(t *testing.T) {
	// A file the patch adds and deletes again changes nothing.
	got, err := plan(t, "*** Begin Patch\n*** Add File: t.txt\n+x\n*** Delete File: t.txt\n*** End Patch", nil)
	if err != nil || len(got) != 0 {
		t.Errorf("got %+v, %v; want no change", got, err)
	}
}

func TestPlanSequential(t *testing.T) {
	// Two updates of one file: the second applies to the first's result.
	got, err := plan(t, "*** Begin Patch\n*** Update File: f.txt\n@@\n-a\n+b\n*** Update File: f.txt\n@@\n-b\n+c\n*** End Patch", map[string]string{ws + "/sub/f.txt": "a\n"})
	if err != nil || len(got) != 1 || got[0].Content != "c\n" {
		t.Errorf("got %+v, %v; want c", got, err)
	}
}

func TestPlanChecksBeforeReading(t *testing.T) {
	// A path the check refuses is never read, a Move target included.
	hunks, err := Parse("*** Begin Patch\n*** Update File: in.txt\n*** Move to: ../out/x.txt\n@@\n-a\n+b\n*** End Patch")
	if err != nil {
		t.Fatal(err)
	}
	read := func(p string) ([]byte, fs.FileMode, error) {
		if !strings.HasPrefix(p, ws+"/") {
			t.Errorf("read %s, which the check refuses", p)
		}
		return []byte("a\n"), 0o644, nil
	}
	if _, err := Plan(hunks, ws, inside(ws), read); err == nil || !strings.Contains(err.Error(), "/w/out/x.txt is outside the workspace") {
		t.Errorf("got %v, want the move target refused", err)
	}
}

// FuzzPlan: any patch text parses or fails with an *Error, and a parsed
// patch plans or fails on a small tree, never panicking.
func FuzzPlan(f *testing.F) {
	f.Add("*** Begin Patch\n*** Update File: f.txt\n@@ a\n-b\n+c\n*** End of File\n*** End Patch")
	f.Add("<<'EOF'\n*** Begin Patch\n*** Add File: n.txt\n+x\n*** Delete File: f.txt\n*** End Patch\nEOF")
	f.Add("*** Begin Patch\n*** Update File: f.txt\n*** Move to: g.txt\n\n@@\n \n-\n+\n*** End Patch")
	files := map[string]string{ws + "/sub/f.txt": "a\nb\n\nc\r\n", ws + "/sub/g.txt": ""}
	f.Fuzz(func(t *testing.T, patch string) {
		hunks, err := Parse(patch)
		if err != nil {
			if !errors.As(err, new(*Error)) {
				t.Fatalf("Parse: %v is not an *Error", err)
			}
			return
		}
		Plan(hunks, ws+"/sub", inside(ws), tree(files))
	})
}
