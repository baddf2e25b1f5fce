package isolate

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFiles: a generated file is shown read-only at its path, over the
// real file inside a directory Binds shows (the real one's content is
// nowhere), in a new file under a masked home where nothing was, and in
// /dev; Landlock's read allow-list lets it be read. Run as root and, by
// TestFilesAsNobody, as uid 65534.
func TestFiles(t *testing.T) {
	requireIsolation(t)
	base, err := os.MkdirTemp("/var/tmp", "act-files-")
	if err != nil {
		t.Skipf("no writable /var/tmp: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	mustChmod(t, base, 0o755)
	home := filepath.Join(base, "home")
	u := filepath.Join(home, "u")
	tool := filepath.Join(u, ".tool")
	if err := os.MkdirAll(filepath.Join(tool, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	real := filepath.Join(tool, "etc", "npmrc")
	if err := os.WriteFile(real, []byte("//r.example/:_authToken=REAL-SECRET\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tool, "bin"), []byte("tool\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := newScope(t, base, nil)
	npmrc := filepath.Join(u, ".npmrc")
	files := []File{
		{Path: real, Data: []byte("//r.example/:_authToken=PLACEHOLDER\n")},
		{Path: npmrc, Data: []byte("save-exact=true\n")},
		{Path: "/dev/act-test-ca.pem", Data: []byte("CA\n")},
	}
	script := `cat "$1" "$2" /dev/act-test-ca.pem "$3/bin"; grep -r REAL-SECRET "$3" /dev 2>/dev/null; ` +
		`for f in "$1" "$2" /dev/act-test-ca.pem; do (echo x > "$f") 2>/dev/null && echo "wrote $f"; done; true`
	res, err := Run(context.Background(), Spec{Argv: []string{"/bin/sh", "-c", script, "sh", real, npmrc, tool}, Env: pathEnv,
		Scopes: []Scope{s}, Mask: []string{home}, Binds: []string{tool}, Files: files,
		Reads: []string{"/usr", "/bin", "/lib", "/lib64", "/etc"}, Limits: Limits{WallMs: 20_000, DiskMB: 1}})
	if err != nil {
		t.Fatal(err)
	}
	mustExit(t, res, 0)
	want := "//r.example/:_authToken=PLACEHOLDER\nsave-exact=true\nCA\ntool\n"
	if string(res.Stdout) != want {
		t.Errorf("stdout %q, want %q (stderr %q)", res.Stdout, want, res.Stderr)
	}
	if got := readFile(t, real); !strings.Contains(got, "REAL-SECRET") {
		t.Errorf("the real file changed: %q", got)
	}
	if _, err := os.Lstat(npmrc); err == nil {
		t.Error("the new file was made on the host")
	}

	// A symbolic link where a copy goes fails the run: whatever it points
	// at stays unshown rather than be shown as it is.
	link := filepath.Join(tool, "link")
	if err := os.Symlink("etc/npmrc", link); err != nil {
		t.Fatal(err)
	}
	_, err = Run(context.Background(), Spec{Argv: []string{"/bin/true"}, Env: pathEnv, Scopes: []Scope{s},
		Mask: []string{home}, Binds: []string{tool}, Files: []File{{Path: link, Data: []byte("x\n")}}, Limits: Limits{WallMs: 20_000, DiskMB: 1}})
	var se *SetupError
	if !errors.As(err, &se) || !strings.Contains(se.Msg, "not a regular file") {
		t.Errorf("a copy over a symbolic link: %v, want a set-up error naming it", err)
	}
	// Nowhere else: a path outside the masked homes and /dev is refused.
	_, err = Run(context.Background(), Spec{Argv: []string{"/bin/true"}, Env: pathEnv, Mask: []string{home},
		Files: []File{{Path: "/etc/passwd", Data: []byte("x\n")}}, Limits: Limits{WallMs: 20_000}})
	if err == nil || !strings.Contains(err.Error(), "generated file") {
		t.Errorf("a copy over /etc/passwd: %v", err)
	}
}

func TestFilesAsNobody(t *testing.T) {
	t.Parallel()
	if os.Getenv("ACT_ISOLATE_TEST_NOBODY") != "" {
		t.Skip("already nobody")
	}
	if out := asNobody(t, nil, "ACT_ISOLATE_TEST_NOBODY=1", "^TestFiles$"); strings.Contains(string(out), "--- SKIP") {
		t.Error("skipped as uid 65534")
	}
}
