package plan

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// TestTextDiffsKnownBinary: the diffs of a plan Build just made, which
// skip the files its diff found binary, are those of the same plan loaded
// from disk, which reads every file.
func TestTextDiffsKnownBinary(t *testing.T) {
	e := newBuildEnv(t)
	d := buildDescriptor(t, e.s, e.stateDir, `action_type: MULTI_STEP_COMPOSITE
scope:
  filesystem: {paths: [$S], recursive: true}
  network: {required: false}
  ui: {required: false}
resources: {max_cpu_ms: 1000, max_memory_mb: 64, max_disk_mb: 4, max_duration_ms: 2000}
preconditions: {paths_exist: [$S], network_available: false, user_idle: false}
effects:
  filesystem: {create: [$S/bin, $S/text], modify: [$S/config.json], delete: []}
  network: false
  system_state_change: false
steps:
  - action_type: FILE_WRITE
    effects: {filesystem: {create: [$S/bin], modify: [], delete: []}, network: false, system_state_change: false}
    operation: {path: $S/bin, content: "a\0b\n"}
  - action_type: FILE_WRITE
    effects: {filesystem: {create: [$S/text], modify: [], delete: []}, network: false, system_state_change: false}
    operation: {path: $S/text, content: "one\ntwo\n"}
  - action_type: FILE_WRITE
    effects: {filesystem: {create: [], modify: [$S/config.json], delete: []}, network: false, system_state_change: false}
    operation: {path: $S/config.json, content: "{}\n"}
`)
	p, err := e.build(t, d)
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := Load(e.stateDir, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	bin, none := extraOf(p), extraOf(loaded)
	var known, text int
	for _, c := range p.Changes {
		if bin.Binary(c) {
			known++
		}
		if none.Binary(c) {
			t.Errorf("%s: a loaded plan knows it binary", c.Path)
		}
	}
	got, want := TextDiffs(e.stateDir, p), TextDiffs(e.stateDir, loaded)
	for _, fd := range want {
		if fd.Text != "" {
			text++
		}
	}
	if known != 1 || text != 2 {
		t.Fatalf("%d changes known binary, %d text diffs; want 1 and 2 (changes %+v)", known, text, p.Changes)
	}
	if d := cmp.Diff(want, got, cmpopts.EquateErrors()); d != "" {
		t.Errorf("TextDiffs of the built plan differ from the loaded one's (-loaded +built):\n%s", d)
	}
}
