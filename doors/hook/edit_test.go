package hook

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/act-project/act/descriptors"
	"github.com/act-project/act/policy"
)

// An Edit in the workspace is planned as Claude Code's Edit makes it,
// from the file the hook read (its digest a precondition); the hook reads
// nothing outside the workspace or through a link, where the exact-match
// edits go to the policy and the plan as before.
func TestHookEditDescriptor(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	outside := filepath.Join(dir, "outside")
	for _, d := range []string{ws, outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	crlf := "say \u201chi\u201d\r\nbye\r\n"
	write := func(name, data string) {
		if err := os.WriteFile(name, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(ws, "a.txt"), crlf)
	write(filepath.Join(outside, "secret.txt"), crlf)
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(ws, "link.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(ws, "out")); err != nil {
		t.Fatal(err)
	}
	edits := []descriptors.Edit{{Old: "say \"hi\"\nbye", New: "say \"yo\"\nbye"}}
	var caps policy.ResourceCaps

	d, err := hookEditDescriptor("Edit", filepath.Join(ws, "a.txt"), edits, ws, caps, nil)
	if err != nil {
		t.Fatal(err)
	}
	op := d.Op.(descriptors.FileWriteOp)
	sum := sha256.Sum256([]byte(crlf))
	if op.Content == nil || *op.Content != "say \u201cyo\u201d\r\nbye\r\n" || op.Edits != nil ||
		d.Preconditions.SHA256[filepath.Join(ws, "a.txt")] != hex.EncodeToString(sum[:]) {
		t.Errorf("in the workspace: %+v, preconditions %v", op, d.Preconditions.SHA256)
	}
	for _, p := range []string{filepath.Join(outside, "secret.txt"), filepath.Join(ws, "link.txt"), filepath.Join(ws, "out", "secret.txt")} {
		d, err := hookEditDescriptor("Edit", p, edits, ws, caps, nil)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if op := d.Op.(descriptors.FileWriteOp); op.Content != nil || len(op.Edits) != 1 || d.Preconditions.SHA256 != nil {
			t.Errorf("%s: the hook planned %+v, want the exact-match edits", p, op)
		}
	}
	// What Claude Code's Edit refuses, the hook refuses with its message.
	_, err = hookEditDescriptor("Edit", filepath.Join(ws, "a.txt"), []descriptors.Edit{{Old: "nope", New: "x"}}, ws, caps, nil)
	var r *hookRefusal
	if !errors.As(err, &r) {
		t.Errorf("an old string not in the file: %v, want a refusal", err)
	}
}

// A Write or Edit of a file directly in a home is scoped to the file
// itself, and one that makes directories in a home to the outermost it
// makes: no scope may be a home (descriptors.FileScope).
func TestHookHomeFileScope(t *testing.T) {
	home := t.TempDir()
	homes := descriptors.HomeRoots(home)
	rc := filepath.Join(home, ".bashrc")
	d := hookWriteDescriptor("Write", rc, "x\n", policy.ResourceCaps{}, homes)
	if got := d.Scope.Filesystem.Paths; len(got) != 1 || got[0] != rc {
		t.Errorf("Write %s: scope %q", rc, got)
	}
	d, err := hookEditDescriptor("Edit", rc, []descriptors.Edit{{Old: "a", New: "b"}}, "", policy.ResourceCaps{}, homes)
	if err != nil {
		t.Fatal(err)
	}
	if got := d.Scope.Filesystem.Paths; len(got) != 1 || got[0] != rc {
		t.Errorf("Edit %s: scope %q", rc, got)
	}
	d = hookWriteDescriptor("Write", filepath.Join(home, "notes", "a", "b.md"), "x\n", policy.ResourceCaps{}, homes)
	if got := d.Scope.Filesystem.Paths; len(got) != 1 || got[0] != filepath.Join(home, "notes") || !d.Scope.Filesystem.Recursive {
		t.Errorf("Write into new directories of the home: scope %q, recursive %t", got, d.Scope.Filesystem.Recursive)
	}
}
