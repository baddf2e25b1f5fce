package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "f")
	for _, content := range []string{"first", "second, longer"} {
		if err := WriteFile(name, []byte(content), 0o640); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(name)
		if err != nil || string(got) != content {
			t.Fatalf("ReadFile = %q, %v; want %q", got, err, content)
		}
		fi, _ := os.Stat(name)
		if fi.Mode().Perm() != 0o640 {
			t.Errorf("mode = %v, want 0640", fi.Mode().Perm())
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries, want only the file (no temporary left)", len(entries))
	}
}

func TestWriteFileErrorLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	// The target is a non-empty directory: rename fails after the temporary
	// file was written; it must be removed.
	target := filepath.Join(dir, "d")
	os.MkdirAll(filepath.Join(target, "x"), 0o755)
	if err := WriteFile(target, []byte("x"), 0o644); err == nil {
		t.Fatal("WriteFile over a non-empty directory succeeded")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries after a failed write, want 1", len(entries))
	}
}
