package gate

import (
	"os"
	"path/filepath"
	"testing"
)

// TestRemoveDroppedLayer: act __remove-layer removes only a layer renamed
// out of its plan (plans/.gc-<plan id>.layer), whatever modes a command
// left in it, and never what a link or another name points at.
func TestRemoveDroppedLayer(t *testing.T) {
	t.Parallel()
	plans := filepath.Join(t.TempDir(), "plans")
	layer := filepath.Join(plans, ".gc-0123456789abcdef.layer")
	locked := filepath.Join(layer, "upper", "locked")
	if err := os.MkdirAll(locked, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(locked, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(locked, 0); err != nil {
		t.Fatal(err)
	}
	// What must stay: a directory a link so named points at, one not
	// so named, one so named outside a plans directory.
	target := filepath.Join(t.TempDir(), "target")
	other := filepath.Join(plans, "0123456789abcdef")
	outside := filepath.Join(t.TempDir(), ".gc-0123456789abcdee.layer")
	for _, d := range []string{target, other, outside} {
		if err := os.MkdirAll(filepath.Join(d, "keep"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(plans, ".gc-0123456789abcdea.layer")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	noPrefix := filepath.Join(plans, "0123456789abcdef.layer")
	if err := os.MkdirAll(filepath.Join(noPrefix, "keep"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{link, other, outside, noPrefix, plans + "/../plans/.gc-0123456789abcdeb.layer", "plans/.gc-0123456789abcdef.layer", filepath.Join(plans, ".gc-0123456789abcdef.layer.x")} {
		RemoveDroppedLayer(dir)
	}
	for _, d := range []string{target, other, outside, noPrefix} {
		if _, err := os.Stat(filepath.Join(d, "keep")); err != nil {
			t.Errorf("%s: %v", d, err)
		}
	}
	if _, err := os.Lstat(link); err != nil {
		t.Errorf("the link: %v", err)
	}
	RemoveDroppedLayer(layer)
	if _, err := os.Lstat(layer); !os.IsNotExist(err) {
		t.Fatalf("the dropped layer is still there: %v", err)
	}
}
