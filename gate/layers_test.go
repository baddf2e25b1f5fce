package gate

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/act-project/act/audit"
	"github.com/act-project/act/internal/lifecycle"
	"github.com/act-project/act/internal/outcome"
	"github.com/act-project/act/plan"
	"github.com/act-project/act/sandbox"
)

// bigWrite is a FILE_WRITE creating proj/name with 600 KiB: two such
// layers pass a max_layers_mb of 1.
func bigWrite(id, name string) spec {
	return spec{id: id, body: writeBody(name, strings.Repeat("x", 600<<10), true)}
}

// TestMaxLayers: with max_layers_mb 1, a plan whose layer would take the
// layers of the plans not yet applied past 1 MiB is refused (exit 4,
// policy.max-layers, recorded as a policy block for its action id) and nothing
// of it is saved; the layers are measured, so a plan.json claiming an
// empty layer changes nothing; once the plan holding the room is denied
// the next one fits; an applied plan's layer, whatever it still holds,
// is not counted.
func TestMaxLayers(t *testing.T) {
	const a, b, c = "5a000000-0000-4000-8000-0000000000e1", "5a000000-0000-4000-8000-0000000000e2", "5a000000-0000-4000-8000-0000000000e3"
	w := newWorld(t, nil)
	w.g.Policy.MaxLayersMB = 1
	idA := w.plan(bigWrite(a, "a.bin")).Plan.ID

	// plan.json says A's layer is empty: the layer is measured.
	pj := filepath.Join(plan.Dir(w.g.Home.Root, idA), "plan.json")
	raw, err := os.ReadFile(pj)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	m["layer_bytes"] = 0
	if raw, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pj, raw, 0o600); err != nil {
		t.Fatal(err)
	}

	before := w.events(b)
	_, err = w.tryPlan(bigWrite(b, "b.bin"))
	probs := wantRule(t, err, RuleMaxLayers, outcome.Blocked)
	for _, want := range []string{"max_layers_mb of 1 MiB", "act deny", "act gc"} {
		if !strings.Contains(probs[0].Message, want) {
			t.Errorf("the refusal %q does not say %q", probs[0].Message, want)
		}
	}
	w.wantNewEvents(b, before, audit.EventValidateBlocked)
	if ids, _ := plan.List(w.g.Home.Root); len(ids) != 1 {
		t.Errorf("plans saved: %v, want only A's", ids)
	}

	if err := w.deny(idA); err != nil {
		t.Fatal(err)
	}
	idB := w.plan(bigWrite(b, "b.bin")).Plan.ID
	w.mustApply(idB)
	// What an applied plan's layer may still hold is not counted (apply
	// removes it, but a crash or a failure leaves it to gc).
	if err := os.MkdirAll(plan.LayerDir(w.g.Home.Root, idB), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(plan.LayerDir(w.g.Home.Root, idB), "left"), make([]byte, 900<<10), 0o600); err != nil {
		t.Fatal(err)
	}
	w.plan(bigWrite(c, "c.bin"))
}

// TestMaxLayersExpired: an expired plan's layer counts until act gc
// removes it: an expired planned plan can no longer be applied, so gc
// removes its layer at once, whatever the retention, and keeps its record;
// then the next plan fits. A pending plan's layer stays, expired or not,
// until a person decides (act deny).
func TestMaxLayersExpired(t *testing.T) {
	const a, b, q = "5a000000-0000-4000-8000-0000000000f1", "5a000000-0000-4000-8000-0000000000f2", "5a000000-0000-4000-8000-0000000000f3"
	w := newWorld(t, map[string]string{"proj/q.txt": "q\n"})
	w.g.Policy.MaxLayersMB = 1
	idA := w.plan(bigWrite(a, "a.bin")).Plan.ID
	idQ := w.plan(spec{id: q, body: deleteBody("q.txt")}).Plan.ID
	_, err := w.apply(idQ, Approval{})
	wantConfirmation(t, err, RuleConfirmationRequired, "")
	w.advance(w.g.Policy.PlanExpiry + time.Minute)
	w.wantState(idA, lifecycle.Expired)
	w.wantState(idQ, lifecycle.Expired)
	_, err = w.tryPlan(bigWrite(b, "b.bin"))
	wantRule(t, err, RuleMaxLayers, outcome.Blocked)

	c, err := w.g.GC(context.Background(), w.now.Add(-90*24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(c.Layers, " ") != idA || len(c.Plans) != 0 {
		t.Errorf("gc removed the layers of %v and the plans %v, want the layer of %s alone", c.Layers, c.Plans, idA)
	}
	if _, err := os.Stat(plan.LayerDir(w.g.Home.Root, idA)); !os.IsNotExist(err) {
		t.Errorf("the expired plan's layer: %v, want it gone", err)
	}
	if _, err := os.Stat(plan.LayerDir(w.g.Home.Root, idQ)); err != nil {
		t.Errorf("the pending plan's layer: %v, want it kept", err)
	}
	w.wantState(idA, lifecycle.Expired) // its record stays
	w.plan(bigWrite(b, "b.bin"))
	// A second gc finds nothing more to do.
	if c, err := w.g.GC(context.Background(), w.now.Add(-90*24*time.Hour)); err != nil || len(c.Layers) != 0 {
		t.Errorf("a second gc removed the layers of %v (%v), want none", c.Layers, err)
	}
}

// TestGCExpiredLayerModes: gc removes an expired plan's layer whatever
// modes were left on its directories (000, 555), keeping its record. As
// root no mode stops a removal; TestGCExpiredLayerModesNobody runs it as
// an ordinary user, whom they do stop.
func TestGCExpiredLayerModes(t *testing.T) {
	const a = "5a000000-0000-4000-8000-0000000000f4"
	w := newWorld(t, nil)
	id := w.plan(bigWrite(a, "a.bin")).Plan.ID
	upper := filepath.Join(plan.LayerDir(w.g.Home.Root, id), "upper")
	for _, d := range []string{"locked/inner", "readonly"} {
		if err := os.MkdirAll(filepath.Join(upper, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(upper, "readonly", "f"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for d, m := range map[string]os.FileMode{"locked": 0, "readonly": 0o555} {
		if err := os.Chmod(filepath.Join(upper, d), m); err != nil {
			t.Fatal(err)
		}
	}
	w.advance(w.g.Policy.PlanExpiry + time.Minute)
	c, err := w.g.GC(context.Background(), w.now.Add(-90*24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(c.Layers, " ") != id {
		t.Errorf("gc removed the layers of %v, want %s's", c.Layers, id)
	}
	ents, err := os.ReadDir(w.g.Home.Plans())
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 1 || ents[0].Name() != id {
		t.Errorf("plans/ holds %v after gc, want only %s", ents, id)
	}
	if _, err := os.Stat(plan.LayerDir(w.g.Home.Root, id)); !os.IsNotExist(err) {
		t.Errorf("the expired plan's layer: %v, want it gone", err)
	}
	w.wantState(id, lifecycle.Expired)
}

// TestGCExpiredLayerModesNobody runs TestGCExpiredLayerModes as uid and
// gid 65534, in a directory of its own (its TMPDIR and HOME).
func TestGCExpiredLayerModesNobody(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("not root: TestGCExpiredLayerModes runs as this user already")
	}
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skip("setpriv (util-linux) is not installed: cannot switch to an ordinary user")
	}
	dir, err := os.MkdirTemp("", "act-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sandbox.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "gate.test") // the test binary's own directory may be closed to nobody
	if err := sandbox.CopyTree(exe, bin); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--",
		bin, "-test.run=^TestGCExpiredLayerModes$", "-test.count=1", "-test.v")
	cmd.Dir = dir
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); name != "TMPDIR" && name != "HOME" && name != "GOCOVERDIR" {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "TMPDIR="+dir, "HOME="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestGCExpiredLayerModes") {
		t.Fatalf("TestGCExpiredLayerModes as nobody: %v\n%s", err, out)
	}
}
