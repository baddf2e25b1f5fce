package plan

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/act-project/act/internal/digest"
	"github.com/act-project/act/sandbox/isolate"
)

// TestCommandSumsBesideCopy: a COMMAND_EXECUTION's files are summed in the
// sandbox's tmpfs upper beside init's copy into the layer, and each
// digest the plan records is the layer file's own (the copy's, read
// again here).
func TestCommandSumsBesideCopy(t *testing.T) {
	if err := isolate.Available(); err != nil {
		t.Skipf("no isolation here: %v", err)
	}
	base := t.TempDir()
	script := `set -e
echo text > new.txt
mkdir d && head -c 2000000 /dev/zero | tr '\0' 'y' > d/big
printf 'a\0b' > d/bin
: > empty`
	d, pol := scriptDescriptor(t, base, "5c6d7e8f-9a0b-4c1d-8e2f-3a4b5c6d7e77", script, "**")
	d.Resources.MaxDiskMB = 16
	dr, err := DryRun(t.Context(), d, Options{StateDir: filepath.Join(base, "state"), Policy: pol, Decision: pol.Decide(d, buildNow),
		File: "d.yaml", Now: func() time.Time { return buildNow }})
	if err != nil {
		t.Fatal(err)
	}
	if dr.sums == nil {
		t.Fatal("a COMMAND_EXECUTION's draft was not summed beside the copy")
	}
	summed := 0
	for _, c := range dr.Changes {
		if c.SHA256After == nil {
			continue
		}
		if _, ok := dr.sums.sums[c.Path]; ok {
			summed++
		}
		got, err := digest.File(filepath.Join(dr.UpperDir(), c.Path))
		if err != nil {
			t.Fatal(err)
		}
		if got != *c.SHA256After {
			t.Errorf("%s: the plan records %s, the layer holds %s", c.Path, *c.SHA256After, got)
		}
	}
	// new.txt, d/big, d/bin and empty: every file the command wrote.
	if summed != 4 {
		t.Errorf("%d of the plan's files were summed, want 4: %+v", summed, dr.sums.sums)
	}
}
