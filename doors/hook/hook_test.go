package hook

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/act-project/act/descriptors"
	"github.com/act-project/act/policy"
)

// TestNewFileMode: a Write of a new file is planned with act's 0644 less
// what the umask the hook shares with the agent takes away, which is the
// mode the agent's own tool gives it where the umask narrows it (0600
// under 077), and no wider (0644 under 002, where the tool makes 0664);
// its new directories 0755 so narrowed; a file that exists keeps its own
// mode (none is planned).
func TestNewFileMode(t *testing.T) {
	dir := t.TempDir()
	existing := filepath.Join(dir, "old.txt")
	if err := os.WriteFile(existing, []byte("x"), 0o640); err != nil {
		t.Fatal(err)
	}
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	for _, mask := range []int{0o077, 0o022, 0o002} {
		syscall.Umask(mask)
		d := hookWriteDescriptor("Write", filepath.Join(dir, "new.txt"), "x", policy.ResourceCaps{}, nil)
		want := fmt.Sprintf("%04o", 0o644&^mask)
		if got := opMode(t, d); got != want {
			t.Errorf("umask %04o: a new file planned with mode %q, want %q", mask, got, want)
		}
		d = hookWriteDescriptor("Write", existing, "x", policy.ResourceCaps{}, nil)
		if got := opMode(t, d); got != "" {
			t.Errorf("umask %04o: an existing file planned with mode %q, want its own kept", mask, got)
		}
		// Into directories that do not exist: each made with 0755 less
		// what the umask takes away, then the file.
		d = hookWriteDescriptor("Write", filepath.Join(dir, "a", "b", "new.txt"), "x", policy.ResourceCaps{}, nil)
		wantDir := fmt.Sprintf("%04o", 0o755&^mask)
		if len(d.Steps) != 3 {
			t.Fatalf("umask %04o: %d steps, want a DIRECTORY_CREATE for each of 2 directories and the FILE_WRITE", mask, len(d.Steps))
		}
		for i, want := range []string{filepath.Join(dir, "a"), filepath.Join(dir, "a", "b")} {
			op, ok := d.Steps[i].Op.(descriptors.DirectoryCreateOp)
			if !ok || op.Path != want || op.Mode != wantDir {
				t.Errorf("umask %04o: step %d is %#v, want DIRECTORY_CREATE %s with mode %s", mask, i, d.Steps[i].Op, want, wantDir)
			}
		}
		if op, ok := d.Steps[2].Op.(descriptors.FileWriteOp); !ok || op.Mode != want {
			t.Errorf("umask %04o: the last step is %#v, want the FILE_WRITE with mode %s", mask, d.Steps[2].Op, want)
		}
	}
}

// opMode is the mode of d's FILE_WRITE operation.
func opMode(t *testing.T, d *descriptors.Descriptor) string {
	t.Helper()
	op, ok := d.Op.(descriptors.FileWriteOp)
	if !ok {
		t.Fatalf("the operation is a %T, not a FILE_WRITE", d.Op)
	}
	return op.Mode
}
