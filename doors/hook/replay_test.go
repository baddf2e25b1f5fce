package hook

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/act-project/act/gate"
	"github.com/act-project/act/internal/state"
)

// TestReplay: what replaces a Bash call that changed nothing prints, run
// by a shell, what act apply --as-command prints of it — stdout, stderr
// ended by a newline, a note per cut stream — and nothing else.
func TestReplay(t *testing.T) {
	home := state.Dir{Root: t.TempDir()}
	for i, c := range []struct {
		name             string
		cmd              gate.CommandResult
		wantOut, wantErr string
		wantLine         string
	}{
		{name: "none", wantLine: ":"},
		{name: "both", cmd: gate.CommandResult{Stdout: "out\n'quoted' $HOME `x`\n", Stderr: "err"},
			wantOut: "out\n'quoted' $HOME `x`\n", wantErr: "err\n"},
		// What could drive a terminal or hide text (concealed SGR, a
		// window title, a carriage return, a bidi override, NUL) is
		// escaped, as act apply --as-command's terminal writer does: cat
		// writes the files as they are.
		{name: "escapes", cmd: gate.CommandResult{Stdout: "a\x1b[8mhidden\x1b[0m\r\u202eRTL\x00z\n", Stderr: "e\x1b]0;t\x07"},
			wantOut: `a\x1b[8mhidden\x1b[0m\x0d\u202eRTL\x00z` + "\n", wantErr: `e\x1b]0;t\x07` + "\n"},
		{name: "cut", cmd: gate.CommandResult{Stdout: "a", StdoutCut: true},
			wantOut: "a", wantErr: "act: cut: the command's output went on past the 65,536 bytes act keeps\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.cmd.Field = "operation"
			p := &gate.Plan{ID: fmt.Sprintf("%016x", i), Commands: []gate.CommandResult{c.cmd}}
			if err := os.MkdirAll(home.Plan(p.ID), 0o700); err != nil {
				t.Fatal(err)
			}
			line, err := replay(home, p)
			if err != nil {
				t.Fatal(err)
			}
			if c.wantLine != "" && line != c.wantLine {
				t.Fatalf("replacement %q, want %q", line, c.wantLine)
			}
			var out, errOut strings.Builder
			sh := exec.Command("sh", "-c", line)
			sh.Stdout, sh.Stderr = &out, &errOut
			if err := sh.Run(); err != nil {
				t.Fatalf("%s: %v\n%s", line, err, errOut.String())
			}
			if out.String() != c.wantOut || errOut.String() != c.wantErr {
				t.Fatalf("%s printed\nstdout %q\nstderr %q\nwant\nstdout %q\nstderr %q", line, out.String(), errOut.String(), c.wantOut, c.wantErr)
			}
		})
	}
}

// TestReplayPlanted: a replay directory already there (a link the agent
// planted in the state dir, which it may write) is refused, and nothing is
// written where it points.
func TestReplayPlanted(t *testing.T) {
	home := state.Dir{Root: t.TempDir()}
	p := &gate.Plan{ID: "00000000000000aa", Commands: []gate.CommandResult{{Field: "operation", Stdout: "out\n"}}}
	if err := os.MkdirAll(home.Plan(p.ID), 0o700); err != nil {
		t.Fatal(err)
	}
	elsewhere := t.TempDir()
	if err := os.Symlink(elsewhere, home.Replay(p.ID)); err != nil {
		t.Fatal(err)
	}
	if line, err := replay(home, p); err == nil {
		t.Fatalf("replay through a planted link: %q", line)
	}
	if ents, _ := os.ReadDir(elsewhere); len(ents) != 0 {
		t.Fatalf("written through the link: %v", ents)
	}
	if _, err := os.Stat(filepath.Join(home.Replay(p.ID), "stdout")); err == nil {
		t.Fatal("a stdout file behind the link")
	}
}
