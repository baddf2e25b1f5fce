package gate

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/act-project/act/descriptors"
	"github.com/act-project/act/diff"
)

// What a command writes to ignored paths is discarded, by the ignore
// rules before the plan, unless a pattern names it.
func TestByProducts(t *testing.T) {
	repo, upper, changes := commitChanges(t, func(dir string) {
		os.MkdirAll(filepath.Join(dir, "build/sub"), 0o755)
		os.WriteFile(filepath.Join(dir, "build/sub/out.o"), []byte("o"), 0o644)
		os.WriteFile(filepath.Join(dir, "src.txt"), []byte("s"), 0o644)
		// A .gitignore the command writes neither is a by-product nor
		// makes one.
		os.WriteFile(filepath.Join(dir, ".gitignore"), []byte("build/\n*.log\n"), 0o644)
		os.WriteFile(filepath.Join(dir, "a.log"), []byte("l"), 0o644)
	})
	rules := RiskRules{UID: uint32(os.Geteuid()), Upper: upper}
	paths := func(cs []diff.Change) (out []string) {
		for _, c := range cs {
			rel, _ := filepath.Rel(repo, c.Path)
			out = append(out, rel)
		}
		slices.Sort(out)
		return out
	}
	rels := func(ps []string) (out []string) {
		for _, p := range ps {
			rel, _ := filepath.Rel(repo, p)
			out = append(out, rel)
		}
		slices.Sort(out)
		return out
	}
	all := []string{filepath.Join(repo, "**")}
	d := &descriptors.Descriptor{ActionType: descriptors.CommandExecution,
		Effects: descriptors.Effects{Filesystem: descriptors.FilesystemEffects{Create: all, Modify: all, Delete: all}}}
	kept, gone := ByProducts(d, changes, rules)
	if got, want := paths(kept), []string{".gitignore", "a.log", "src.txt"}; !slices.Equal(got, want) {
		t.Errorf("kept %q, want %q", got, want)
	}
	if got, want := rels(gone), []string{"build", "build/sub", "build/sub/out.o"}; !slices.Equal(got, want) {
		t.Errorf("discarded %q, want %q", got, want)
	}

	// A pattern that names build/sub/out.o keeps it and the directories
	// that hold it.
	d.Effects.Filesystem.Create = append(d.Effects.Filesystem.Create, filepath.Join(repo, "build/sub/*.o"))
	kept, gone = ByProducts(d, changes, rules)
	if len(gone) != 0 || len(kept) != len(changes) {
		t.Errorf("declared: kept %q, discarded %q", paths(kept), rels(gone))
	}
	if r := Assess(d, kept, rules); r.Assessed.Rank() < descriptors.RiskMedium.Rank() {
		t.Errorf("declared ignored output assessed %s, want at least MEDIUM", r.Assessed)
	}
}
