package hook

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/act-project/act/diff"
	"github.com/act-project/act/gate"
)

// The directory a command ended in comes from the sandbox, where the
// command prints what it likes: the replacement's cd takes only a clean,
// printable directory inside the workspace that exists or that the plan
// creates, single-quoted; one outside resets to the workspace.
func TestCdAfter(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	sub := filepath.Join(ws, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	quoted := filepath.Join(ws, "it's")
	if err := os.Mkdir(quoted, 0o755); err != nil {
		t.Fatal(err)
	}
	made := filepath.Join(ws, "made")
	plan := func(cwd string) *gate.Plan {
		p := &gate.Plan{}
		p.Commands = []gate.CommandResult{{Field: "operation", Cwd: cwd}}
		p.Changes = []diff.Change{{Path: made, Kind: diff.Create, Type: diff.TypeDir}}
		return p
	}
	for _, c := range []struct {
		name, cwd, workdir, want string
	}{
		{"none", "", ws, ""},
		{"stayed", ws, ws, ""},
		{"sub", sub, ws, ` && \builtin cd -- '` + sub + `'`},
		{"made by the plan", made, ws, ` && \builtin cd -- '` + made + `'`},
		{"back to the workspace", ws, sub, ` && \builtin cd -- '` + ws + `'`},
		{"quote", quoted, ws, ` && \builtin cd -- '` + filepath.Join(ws, `it'\''s`) + `'`},
		{"missing", filepath.Join(ws, "nope"), ws, ""},
		{"outside resets", "/tmp", sub, ` && \builtin cd -- '` + ws + `'`},
		{"outside from the workspace", "/etc", ws, ""},
		{"relative", "sub", ws, ""},
		{"unclean", ws + "/sub/../sub", ws, ""},
		{"dot-dot out", ws + "/../x", ws, ""},
		{"newline", sub + "\n; rm -rf ~", ws, ""},
		{"escape", sub + "\x1b[2J", ws, ""},
		{"injection", sub + "'; rm -rf ~; '", ws, ""},
	} {
		if got := cdAfter(plan(c.cwd), ws, c.workdir); got != c.want {
			t.Errorf("%s: cdAfter(%q) = %q, want %q", c.name, c.cwd, got, c.want)
		}
	}
}
