package plan

import (
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/mod/module"
	"golang.org/x/mod/sumdb/dirhash"
	modzip "golang.org/x/mod/zip"
	"golang.org/x/sys/unix"
)

// modCacheWorld makes act's own Go module cache (own) and the user's
// (user): own holds example.com/good v1.0.0 whole (directory, zip,
// .ziphash, .mod) and the directory of example.com/split v1.0.0, whose
// zip and .ziphash are the user's.
func modCacheWorld(t *testing.T) (own, user string) {
	t.Helper()
	base := t.TempDir()
	own, user = filepath.Join(base, "caches", "own"), filepath.Join(base, "user")
	fixtureModule(t, own, "example.com/good", "package good // genuine\n", "")
	fixtureModule(t, user, "example.com/split", "package split // genuine\n", "")
	mustDo(t, os.MkdirAll(filepath.Join(own, "example.com"), 0o755))
	mustDo(t, os.Rename(filepath.Join(user, "example.com", "split@v1.0.0"), filepath.Join(own, "example.com", "split@v1.0.0")))
	return own, user
}

// TestVerifyGoModCache: act's own Go module cache is checked before a
// command sees it, for what an agent of the same user may have written
// there since act kept it: every edit to a module's files, its zip, or
// its .ziphash with its files (the zip then no longer matches); a link,
// a special file, a setuid bit, an overlayfs attribute (an opaque
// directory hides the user's files below it); a file where Go keeps
// nothing. A module whose directory, zip and .ziphash were all replaced
// consistently passes here: go.sum catches that (TestPersistentCacheGoSum).
func TestVerifyGoModCache(t *testing.T) {
	goodDir := filepath.Join("example.com", "good@v1.0.0")
	at := filepath.Join("cache", "download", "example.com", "good", "@v")
	for _, tc := range []struct {
		name   string
		tamper func(t *testing.T, own, user string)
		want   string // in the failure; "" for none
	}{
		{"verified", func(*testing.T, string, string) {}, ""},
		{"trojan edit", func(t *testing.T, own, _ string) {
			mustDo(t, os.WriteFile(filepath.Join(own, goodDir, "good.go"), []byte("package good // TROJAN\n"), 0o644))
		}, "example.com/good@v1.0.0: the module's files do not hash to its .ziphash"},
		{"file added", func(t *testing.T, own, _ string) {
			mustDo(t, os.WriteFile(filepath.Join(own, goodDir, "init.go"), []byte("package good\n"), 0o644))
		}, "good@v1.0.0: the module's files do not hash"},
		{"file removed", func(t *testing.T, own, _ string) {
			mustDo(t, os.Remove(filepath.Join(own, goodDir, "go.mod")))
		}, "good@v1.0.0: the module's files do not hash"},
		{"split module edited", func(t *testing.T, own, _ string) {
			mustDo(t, os.WriteFile(filepath.Join(own, "example.com", "split@v1.0.0", "split.go"), []byte("package split // TROJAN\n"), 0o644))
		}, "split@v1.0.0: the module's files do not hash"},
		{"ziphash and directory together", func(t *testing.T, own, _ string) {
			mustDo(t, os.WriteFile(filepath.Join(own, goodDir, "good.go"), []byte("package good // TROJAN\n"), 0o644))
			h, err := dirhash.HashDir(filepath.Join(own, goodDir), "example.com/good@v1.0.0", dirhash.Hash1)
			mustDo(t, err)
			mustDo(t, os.WriteFile(filepath.Join(own, at, "v1.0.0.ziphash"), []byte(h), 0o644))
		}, "v1.0.0.zip: the zip does not hash to its .ziphash"},
		{"zip replaced", func(t *testing.T, own, _ string) {
			src := t.TempDir()
			mustDo(t, os.WriteFile(filepath.Join(src, "go.mod"), []byte("module example.com/good\n\ngo 1.21\n"), 0o644))
			mustDo(t, os.WriteFile(filepath.Join(src, "good.go"), []byte("package good // TROJAN\n"), 0o644))
			f, err := os.Create(filepath.Join(own, at, "v1.0.0.zip"))
			mustDo(t, err)
			mustDo(t, modzip.CreateFromDir(f, module.Version{Path: "example.com/good", Version: "v1.0.0"}, src))
			mustDo(t, f.Close())
		}, "the zip does not hash to its .ziphash"},
		{"ziphash gone", func(t *testing.T, own, _ string) {
			mustDo(t, os.Remove(filepath.Join(own, at, "v1.0.0.ziphash")))
		}, "no .ziphash to check the module's files against"},
		{"a zip without its ziphash", func(t *testing.T, own, _ string) {
			mustDo(t, os.RemoveAll(filepath.Join(own, goodDir)))
			mustDo(t, os.Remove(filepath.Join(own, at, "v1.0.0.ziphash")))
		}, ""},
		{"a ziphash without its zip", func(t *testing.T, own, _ string) {
			mustDo(t, os.Remove(filepath.Join(own, at, "v1.0.0.zip")))
		}, "v1.0.0.ziphash: no zip to check the .ziphash against"},
		{"user's ziphash gone", func(t *testing.T, _, user string) {
			mustDo(t, os.Remove(filepath.Join(user, "cache", "download", "example.com", "split", "@v", "v1.0.0.ziphash")))
		}, "split@v1.0.0: no .ziphash"},
		{"link in a module", func(t *testing.T, own, _ string) {
			mustDo(t, os.Symlink("/etc/passwd", filepath.Join(own, goodDir, "link.go")))
		}, "link.go: a symbolic link"},
		{"link for a directory", func(t *testing.T, own, _ string) {
			mustDo(t, os.Symlink(t.TempDir(), filepath.Join(own, "example.org")))
		}, "example.org: a symbolic link"},
		{"own a link", func(t *testing.T, own, _ string) {
			mustDo(t, os.Rename(own, own+".real"))
			mustDo(t, os.Symlink(own+".real", own))
		}, ".: not a directory"},
		{"setuid", func(t *testing.T, own, _ string) {
			mustDo(t, os.Chmod(filepath.Join(own, goodDir, "good.go"), os.ModeSetuid|0o755))
		}, "good.go: setuid or setgid"},
		{"fifo", func(t *testing.T, own, _ string) {
			mustDo(t, syscall.Mkfifo(filepath.Join(own, at, "v1.0.0.info"), 0o644))
		}, "v1.0.0.info: a FIFO"},
		{"whiteout", func(t *testing.T, own, _ string) {
			if err := unix.Mknod(filepath.Join(own, "example.com", "dep@v1.0.0"), unix.S_IFCHR, 0); err != nil {
				t.Skipf("no whiteout made here: %v", err)
			}
		}, "dep@v1.0.0: a device"},
		{"opaque directory", func(t *testing.T, own, _ string) {
			if err := unix.Lsetxattr(filepath.Join(own, "example.com"), "user.overlay.opaque", []byte("y"), 0); err != nil {
				t.Skipf("no user xattrs here: %v", err)
			}
		}, "example.com: carries an overlayfs attribute"},
		{"version control checkout", func(t *testing.T, own, _ string) {
			mustDo(t, os.MkdirAll(filepath.Join(own, "cache", "vcs", "0123"), 0o755))
			mustDo(t, os.WriteFile(filepath.Join(own, "cache", "vcs", "0123", "config"), []byte("[core]\n\tfsmonitor = sh -c evil\n"), 0o644))
		}, "cache/vcs: not where Go's module cache keeps anything"},
		{"file outside a module", func(t *testing.T, own, _ string) {
			mustDo(t, os.WriteFile(filepath.Join(own, "example.com", "README"), nil, 0o644))
		}, "example.com/README: not where"},
		{"download's leftover", func(t *testing.T, own, _ string) {
			mustDo(t, os.WriteFile(filepath.Join(own, at, "v1.0.0.partial"), nil, 0o644))
		}, "v1.0.0.partial: not where"},
		{"not a module's name", func(t *testing.T, own, _ string) {
			mustDo(t, os.MkdirAll(filepath.Join(own, "example.com", "Evil@v1.0.0"), 0o755))
		}, "Evil@v1.0.0: not a module directory's name"},
		{"all three replaced consistently", func(t *testing.T, own, _ string) {
			mustDo(t, os.RemoveAll(filepath.Join(own, goodDir)))
			fixtureModule(t, own, "example.com/good", "package good // TROJAN\n", "")
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			own, user := modCacheWorld(t)
			tc.tamper(t, own, user)
			got, err := verifyGoModCache(own, user)
			if err != nil {
				t.Fatalf("verifyGoModCache: %v", err)
			}
			if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
				t.Errorf("verifyGoModCache = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestDropCacheNoFollow: act's own cache replaced by a link to a project
// is dropped as the link: the project keeps its files, and act's cache is
// a directory of its own again, empty.
func TestDropCacheNoFollow(t *testing.T) {
	own, _ := modCacheWorld(t)
	proj := t.TempDir()
	mustDo(t, os.WriteFile(filepath.Join(proj, "main.go"), []byte("package main\n"), 0o644))
	mustDo(t, os.RemoveAll(own))
	mustDo(t, os.Symlink(proj, own))
	mustDo(t, dropCache(own))
	if _, err := os.Stat(filepath.Join(proj, "main.go")); err != nil {
		t.Errorf("the project's file after the drop: %v", err)
	}
	fi, err := os.Lstat(own)
	if err != nil || !fi.IsDir() {
		t.Fatalf("act's cache after the drop: %v, %v; want a directory", fi, err)
	}
	if ents, _ := os.ReadDir(own); len(ents) != 0 {
		t.Errorf("act's cache after the drop holds %d entries, want none", len(ents))
	}
	ents, _ := os.ReadDir(filepath.Dir(own))
	if len(ents) != 1 {
		t.Errorf("caches/ holds %d entries after the drop, want act's cache alone", len(ents))
	}
}

// TestMergeCacheGoLayout: what mergeCache keeps of a command's writes to
// Go's module cache is what verifyGoModCache passes on the next use: a
// file where Go keeps nothing is refused at merge (not kept, to drop the
// whole cache later), and a module that would pass the bound is refused
// whole, its directory, zip and .ziphash together, never in part.
func TestMergeCacheGoLayout(t *testing.T) {
	base := t.TempDir()
	out, own := filepath.Join(base, "out"), filepath.Join(base, "caches", "own")
	mustDo(t, os.MkdirAll(own, 0o755))
	fixtureModule(t, out, "example.com/good", "package good // genuine\n"+strings.Repeat("// padding\n", 400), "")
	mustDo(t, os.MkdirAll(filepath.Join(out, "cache", "vcs", "0123"), 0o755))
	mustDo(t, os.WriteFile(filepath.Join(out, "cache", "vcs", "0123", "config"), []byte("[core]\n"), 0o644))
	mustDo(t, os.WriteFile(filepath.Join(out, "example.com", "README"), nil, 0o644))
	mustDo(t, os.WriteFile(filepath.Join(out, "cache", "download", "example.com", "good", "@v", "v1.0.0.partial"), nil, 0o644))

	// A bound the .mod (merged first) fits in and the module's directory,
	// zip and .ziphash together then do not (the directory alone would).
	size := func(rel string) int64 {
		fi, err := os.Stat(filepath.Join(out, rel))
		mustDo(t, err)
		return fi.Size()
	}
	at := filepath.Join("cache", "download", "example.com", "good", "@v")
	dir := filepath.Join("example.com", "good@v1.0.0")
	mod := size(filepath.Join(at, "v1.0.0.mod"))
	unit := size(filepath.Join(at, "v1.0.0.zip")) + size(filepath.Join(at, "v1.0.0.ziphash")) + size(filepath.Join(dir, "go.mod")) + size(filepath.Join(dir, "good.go"))
	m, err := mergeCache(out, own, "", mod+unit-1, true)
	mustDo(t, err)
	all := strings.Join(m.Why, "\n")
	for _, want := range []string{"cache/vcs/0123/config: not where", "example.com/README: not where", "v1.0.0.partial: not where", "persistent_caches_mb"} {
		if !strings.Contains(all, want) {
			t.Errorf("the refusals %q do not say %q", m.Why, want)
		}
	}
	if m.Kept != 1 {
		t.Errorf("kept %d files, want the .mod alone", m.Kept)
	}
	if why, err := verifyGoModCache(own, ""); why != "" || err != nil {
		t.Errorf("act's cache after a merge at the bound fails verification: %q, %v", why, err)
	}

	// Within the bound, the module is kept whole and verifies.
	own2 := filepath.Join(base, "caches", "own2")
	mustDo(t, os.MkdirAll(own2, 0o755))
	m, err = mergeCache(out, own2, "", 1<<20, true)
	mustDo(t, err)
	if m.Kept != 5 || m.Refused != 3 {
		t.Errorf("kept %d and refused %d (%q), want 5 (go.mod, good.go, zip, .ziphash, .mod) and 3", m.Kept, m.Refused, m.Why)
	}
	if why, err := verifyGoModCache(own2, ""); why != "" || err != nil {
		t.Errorf("act's cache after a merge fails verification: %q, %v", why, err)
	}
	if ents, _ := os.ReadDir(filepath.Join(base, "caches")); len(ents) != 2 {
		t.Errorf("caches/ holds %d entries after the merges, want own and own2 alone (no directory made aside left)", len(ents))
	}

	// A module directory made meanwhile (by another plan's merge) is not
	// added to: the merge keeps none of its files.
	own3 := filepath.Join(base, "caches", "own3")
	mustDo(t, os.MkdirAll(filepath.Join(own3, "example.com", "good@v1.0.0"), 0o755))
	mustDo(t, os.WriteFile(filepath.Join(own3, "example.com", "good@v1.0.0", "go.mod"), []byte("module example.com/good\n"), 0o444))
	n, err := keepModuleDir(out, own3, "example.com/good@v1.0.0", []string{filepath.Join("example.com", "good@v1.0.0", "good.go")})
	if err != nil || n != 0 {
		t.Errorf("keepModuleDir into a directory there = %d, %v; want none kept", n, err)
	}
	if _, err := os.Stat(filepath.Join(own3, "example.com", "good@v1.0.0", "good.go")); err == nil {
		t.Error("keepModuleDir added a file to a module directory that was there")
	}
}

// TestVerifyGoModCacheMemo: a later check in the same process hashes only
// what changed since the last one (verifiedMemo), and an edit that keeps
// the file's size and sets its mtime back is still seen: the ctime, which
// the agent cannot set, changed.
func TestVerifyGoModCacheMemo(t *testing.T) {
	defer func(w time.Duration, d func(string, string, dirhash.Hash) (string, error), z func(string, dirhash.Hash) (string, error)) {
		racyWindow, hashDir, hashZip = w, d, z
	}(racyWindow, hashDir, hashZip)
	racyWindow = 0          // the files are new; nothing changes them within the test's coarse ticks but the edit, after a pause
	var hashed atomic.Int64 // the hashes run at once
	hashDir = func(dir, prefix string, h dirhash.Hash) (string, error) {
		hashed.Add(1)
		return dirhash.HashDir(dir, prefix, h)
	}
	hashZip = func(zip string, h dirhash.Hash) (string, error) { hashed.Add(1); return dirhash.HashZip(zip, h) }

	own, user := modCacheWorld(t)
	time.Sleep(50 * time.Millisecond)
	for i, want := range []int64{3, 0} {
		hashed.Store(0)
		if why, err := verifyGoModCache(own, user); why != "" || err != nil {
			t.Fatalf("check %d: %q, %v; want it passed", i, why, err)
		}
		if got := hashed.Load(); got != want {
			t.Errorf("check %d hashed %d modules' directories and zips, want %d", i, got, want)
		}
	}

	good := filepath.Join(own, "example.com", "good@v1.0.0", "good.go")
	fi, err := os.Stat(good)
	mustDo(t, err)
	time.Sleep(50 * time.Millisecond)
	mustDo(t, os.WriteFile(good, []byte("package good // TROJAN!\n"), 0o644)) // the genuine's size
	mustDo(t, os.Chtimes(good, fi.ModTime(), fi.ModTime()))
	if fi2, err := os.Stat(good); err != nil || fi2.Size() != fi.Size() || !fi2.ModTime().Equal(fi.ModTime()) {
		t.Fatalf("the edit changed the size or mtime: %v, %v", fi2, err)
	}
	hashed.Store(0)
	if why, _ := verifyGoModCache(own, user); !strings.Contains(why, "good@v1.0.0: the module's files do not hash") {
		t.Errorf("the check after an edit with its mtime set back = %q, want the module's files do not hash", why)
	}
	if got := hashed.Load(); got != 1 {
		t.Errorf("the check after the edit hashed %d, want the edited module alone", got)
	}
	if verifiedMemo.m[own] != nil {
		t.Errorf("a failed check left %d entries in the memo, want none", len(verifiedMemo.m[own]))
	}
}
