package gate

import (
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestParseIndex: the index git writes, in each version, reads back with
// its paths, its hiding flags and its object ids.
func TestParseIndex(t *testing.T) {
	needGit(t)
	for _, version := range []string{"2", "3", "4"} {
		t.Run("v"+version, func(t *testing.T) {
			dir := t.TempDir()
			gitCmd(t, dir, "init", "-q")
			names := []string{"Makefile", "src/main.go", "src/util/strings.go", "src/util/strings_test.go", "docs/a-very-long-name-" + strings.Repeat("x", 100) + ".md"}
			for _, n := range names {
				p := filepath.Join(dir, n)
				os.MkdirAll(filepath.Dir(p), 0o755)
				if err := os.WriteFile(p, []byte("content of "+n+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			gitCmd(t, dir, "add", "-A")
			gitCmd(t, dir, "update-index", "--skip-worktree", "Makefile")
			gitCmd(t, dir, "update-index", "--assume-unchanged", "src/main.go")
			gitCmd(t, dir, "update-index", "--index-version", version)
			data, err := os.ReadFile(filepath.Join(dir, ".git/index"))
			if err != nil {
				t.Fatal(err)
			}
			ix, err := parseIndex(data)
			if err != nil {
				t.Fatal(err)
			}
			if len(ix.entries) != len(names) {
				t.Fatalf("%d entries, want %d: %v", len(ix.entries), len(names), ix.entries)
			}
			for _, n := range names {
				e, ok := ix.entries[n]
				if !ok {
					t.Errorf("%s is not in the index", n)
					continue
				}
				want := ""
				switch n {
				case "Makefile":
					want = "skip-worktree"
				case "src/main.go":
					want = "assume-unchanged"
				}
				if e.hidden != want {
					t.Errorf("%s: hidden %q, want %q", n, e.hidden, want)
				}
				oid := strings.TrimSpace(gitCmd(t, dir, "hash-object", n))
				if got := hex.EncodeToString(e.oid); got != oid {
					t.Errorf("%s: oid %s, git says %s", n, got, oid)
				}
				if got := hex.EncodeToString(blobID([]byte("content of "+n+"\n"), ix.hashLen)); got != oid {
					t.Errorf("%s: blobID %s, git says %s", n, got, oid)
				}
			}
			// A byte changed: git would not read it.
			data[len(data)/2] ^= 1
			if _, err := parseIndex(data); err == nil {
				t.Error("a corrupt index parsed")
			}
		})
	}
}
