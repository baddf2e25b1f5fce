package plan

import (
	"testing"

	"github.com/act-project/act/descriptors"
	"github.com/act-project/act/diff"
)

// TestCheckEffectsCommandClaim: a command's claim on its workdir
// (WORKDIR/**, what the short form derives for it) is no promise, so a
// command that changes nothing there, such as go test, gets no
// effects.not-happened warning, whichever door planned it (act run, act
// apply, act mcp). A claim of the same pattern by a file operation, and
// any other effect a command declares, still warn when they did not
// happen.
func TestCheckEffectsCommandClaim(t *testing.T) {
	all := []string{"/w/**"}
	for _, c := range []struct {
		name  string
		d     descriptors.Descriptor
		warns []string
	}{
		{"command", descriptors.Descriptor{ActionType: descriptors.CommandExecution,
			Op:      descriptors.CommandExecutionOp{Argv: []string{"go", "test", "./..."}, Workdir: "/w"},
			Effects: descriptors.Effects{Filesystem: descriptors.FilesystemEffects{Create: all, Modify: all, Delete: all}}}, nil},
		{"command, a file it says it makes", descriptors.Descriptor{ActionType: descriptors.CommandExecution,
			Op:      descriptors.CommandExecutionOp{Argv: []string{"make"}, Workdir: "/w"},
			Effects: descriptors.Effects{Filesystem: descriptors.FilesystemEffects{Create: []string{"/w/**", "/w/out"}, Modify: all}}},
			[]string{"effects.filesystem.create[1]"}},
		{"a step's command", descriptors.Descriptor{ActionType: descriptors.MultiStepComposite,
			Steps:   []descriptors.Step{{ActionType: descriptors.CommandExecution, Op: descriptors.CommandExecutionOp{Argv: []string{"true"}, Workdir: "/w"}}},
			Effects: descriptors.Effects{Filesystem: descriptors.FilesystemEffects{Create: all, Modify: all, Delete: all}}}, nil},
		{"file write", descriptors.Descriptor{ActionType: descriptors.FileWrite,
			Op:      descriptors.FileWriteOp{Path: "/w/a"},
			Effects: descriptors.Effects{Filesystem: descriptors.FilesystemEffects{Create: all}}},
			[]string{"effects.filesystem.create[0]"}},
	} {
		_, warnings := CheckEffects(&c.d, []diff.Change{})
		var got []string
		for _, w := range warnings {
			if w.Rule != "effects.not-happened" {
				t.Errorf("%s: warning %s", c.name, w.Rule)
			}
			got = append(got, w.Field)
		}
		if len(got) != len(c.warns) || (len(got) > 0 && got[0] != c.warns[0]) {
			t.Errorf("%s: effects.not-happened at %q, want %q", c.name, got, c.warns)
		}
	}
}
