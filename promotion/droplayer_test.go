package promotion

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/act-project/act/internal/state"
	"github.com/act-project/act/sandbox/isolate"
)

// TestLargeLayerRemovedAfter: the layer of an applied plan of many files
// is gone from the plan when act apply returns (renamed out of it), and
// removed by the process act started for it (act __remove-layer), not by
// act apply itself (docs/promotion.md, "After"); a small one act removes
// itself. Either way nothing of it is left.
func TestLargeLayerRemovedAfter(t *testing.T) {
	t.Parallel()
	if err := isolate.Available(); err != nil {
		t.Skipf("commands need isolation, unavailable here: %v", err)
	}
	for _, c := range []struct {
		name  string
		files int
	}{{"large", 100}, {"small", 3}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			id := map[string]string{"large": "77777777-6666-4777-8888-999999999999", "small": "77777777-6666-4777-8888-999999999998"}[c.name]
			w := newWorld(t, "", id, map[string]string{"keep.txt": "k\n"}, `action_type: COMMAND_EXECUTION
effects: {filesystem: {create: [$P/**], modify: [], delete: []}, network: false, system_state_change: false}
operation: {argv: [sh, -c, "i=0; while [ $i -lt `+itoa(c.files)+` ]; do i=$((i+1)); echo $i > f$i; done"], workdir: $P}
`)
			r := w.ok(0, "apply", "--confirm", "--timings", w.descriptor)
			handed, removed := strings.Contains(r.stderr, "the layer handed to another process for removal"), strings.Contains(r.stderr, "the layer removed")
			if handed != (c.name == "large") || removed == (c.name == "large") {
				t.Fatalf("the layer of %d files: handed to another process %v, removed by act apply %v\n%s", c.files, handed, removed, r)
			}
			m := regexp.MustCompile(`Plan id: ([0-9a-f]{16})`).FindStringSubmatch(r.stdout)
			if m == nil {
				t.Fatalf("no plan id\n%s", r)
			}
			home := state.Dir{Root: w.home}
			if _, err := os.Lstat(home.Layer(m[1])); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("the applied plan still has its layer: %v", err)
			}
			if _, err := os.Stat(filepath.Join(w.root, "f"+itoa(c.files))); err != nil {
				t.Fatal(err)
			}
			// A hang guard, not a bound on speed: the removal ends.
			for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(10 * time.Millisecond) {
				if _, err := os.Lstat(home.GCLayer(m[1])); errors.Is(err, fs.ErrNotExist) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s is still there", home.GCLayer(m[1]))
				}
			}
		})
	}
}

func itoa(n int) string { return fmt.Sprint(n) }

// TestLargeLayerRemovedAfterNobody runs TestLargeLayerRemovedAfter as an
// ordinary user: the process act starts removes the layer it owns.
func TestLargeLayerRemovedAfterNobody(t *testing.T) { asNobody(t, "TestLargeLayerRemovedAfter") }
