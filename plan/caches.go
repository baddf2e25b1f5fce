package plan

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"golang.org/x/mod/module"
	"golang.org/x/mod/sumdb/dirhash"

	"github.com/act-project/act/internal/pathglob"
	"github.com/act-project/act/internal/state"
	"github.com/act-project/act/sandbox"
	"github.com/act-project/act/sandbox/isolate"
)

// A persistent cache of act's own (docs/sandbox-filesystem.md, "A
// persistent cache of act's own"): for each of the policy's
// sandbox.persistent_caches, act keeps a directory in its state dir that
// the sandbox shows read-only over the user's own cache. After a command
// that keeps its changes (never a verification), the sandbox copies what
// the command wrote there out, and mergeCache keeps of it only what may
// stay: new regular files, no setuid or setgid bit, within the bound, and
// in Go's module cache only modules whose files hash to their .ziphash.
// Go's module cache is verified again each time a command is to see it
// (verifyGoModCache): the agent may write the state dir between runs.

// persistentCache is one of the policy's persistent caches in a plan: the
// sandbox's Cache (Own set) and whether it is Go's module cache.
type persistentCache struct {
	index     int // in sandboxCommander.caches
	goModules bool
}

// withOwnCaches gives each cache of caches that the policy's persistent
// lists (and all, its caches) a directory of act's own (Own), made if
// missing and checked to be act's (CachesDir, ownDir), and returns which
// they are, and binds without those that hold or lie in one. A persistent
// cache the user does not have is shown from act's own alone.
func withOwnCaches(stateDir, realHome string, caches []isolate.Cache, all, persistent, hide, binds []string) ([]isolate.Cache, []persistentCache, []string, error) {
	if len(persistent) == 0 || !isHomeDir(realHome) || !filepath.IsAbs(stateDir) {
		return caches, nil, binds, nil
	}
	realHome = filepath.Clean(realHome)
	var out []persistentCache
next:
	for _, p := range persistent {
		p = filepath.Clean(p)
		if !slices.Contains(all, p) || !pathglob.Within(p, realHome) || p == realHome || IsCredentialStore(p, []string{realHome}) {
			continue
		}
		for _, h := range hide {
			if pathglob.Within(p, h) || pathglob.Within(h, p) {
				continue next
			}
		}
		rel, err := filepath.Rel(realHome, p)
		if err != nil {
			continue
		}
		if _, err := CachesDir(stateDir); err != nil {
			return nil, nil, nil, err
		}
		own := state.Dir{Root: stateDir}.Cache(rel)
		if err := ownDir(own); err != nil {
			return nil, nil, nil, fmt.Errorf("act's own cache for %s: %w", p, err)
		}
		i := slices.IndexFunc(caches, func(c isolate.Cache) bool { return c.Path == p })
		if i < 0 {
			caches = append(caches, isolate.Cache{Path: p})
			i = len(caches) - 1
		}
		caches[i].Own = own
		out = append(out, persistentCache{index: i, goModules: filepath.Base(p) == "mod" && filepath.Base(filepath.Dir(p)) == "pkg"})
		binds = slices.DeleteFunc(binds, func(b string) bool { return pathglob.Within(b, p) || pathglob.Within(p, b) })
	}
	return caches, out, binds, nil
}

// goVerifiedEnv is envl, the environment of a command that sees a
// persistent Go module cache, with the go command made to check go.sum on
// every use (docs/sandbox-filesystem.md): -mod=readonly last in GOFLAGS
// (a module missing from go.sum is an error, never added from the cache),
// none of the settings that skip or replace the checksum database for a
// module go get or go mod tidy adds (GONOSUMDB, GONOSUMCHECK, GOPRIVATE,
// GOINSECURE, GOSUMDB), and no go env file to set them again (GOENV=off).
// A command may still set them itself: what it leaves in act's cache is
// verified all the same (mergeCache), and go checks go.sum whatever they
// say.
func goVerifiedEnv(envl []string) []string {
	flags := ""
	out := slices.DeleteFunc(slices.Clone(envl), func(kv string) bool {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "GOFLAGS":
			flags = v
			return true
		case "GONOSUMDB", "GONOSUMCHECK", "GOPRIVATE", "GOINSECURE", "GOSUMDB", "GOENV":
			return true
		}
		return false
	})
	return append(out, "GOFLAGS="+strings.TrimSpace(flags+" -mod=readonly"), "GOENV=off")
}

// A cacheMerge is what mergeCache kept of a run's writes to act's own
// cache, and what it refused and why.
type cacheMerge struct {
	Kept, Refused int
	// Why names the first maxRefusedNamed refusals: "path: reason".
	Why []string
}

// maxRefusedNamed is how many refusals a cacheMerge names.
const maxRefusedNamed = 5

func (m *cacheMerge) refuse(rel, why string) {
	m.Refused++
	if len(m.Why) < maxRefusedNamed {
		m.Why = append(m.Why, rel+": "+why)
	}
}

// mergeCache keeps in own (act's cache, a directory of act's) what out
// (the cache's upper, copied out of the sandbox: hostile) adds that may
// stay, and refuses the rest:
//   - only a new regular file is kept: one whose path neither own nor user
//     (the user's cache, "" for none) has. What exists is never changed: a
//     command cannot alter what a later run reads under a name it had. A
//     removal (a whiteout) reaches neither;
//   - a file with the setuid or setgid bit, a symbolic link, a device, a
//     FIFO or a socket is refused;
//   - with goModules (Go's module cache), a file is kept only where the
//     go command keeps one (goModEntryOf), a new module directory only if
//     its files hash (dirhash h1, as go mod verify does) to the module's
//     .ziphash, and a new .zip or .ziphash only if the zip hashes to the
//     .ziphash: the go command checks the .ziphash against go.sum on
//     every use, and trusts the extracted directory (verifiedModules);
//   - what would take own past bound bytes is refused, a module's
//     directory, .zip and .ziphash together.
//
// What it keeps of Go's module cache thus passes verifyGoModCache, which
// checks own again before each command that sees it.
//
// Files are kept with their permission bits, read-only ones included;
// directories are act's (0755). A file is written under a temporary name
// and linked into place, never over an existing one.
func mergeCache(out, own, user string, bound int64, goModules bool) (cacheMerge, error) {
	var m cacheMerge
	exists := func(rel string) bool {
		for _, root := range []string{own, user} {
			if root == "" {
				continue
			}
			if _, err := os.Lstat(filepath.Join(root, rel)); err == nil {
				return true
			}
		}
		return false
	}
	var files []string // new regular files, in walk order
	err := filepath.WalkDir(out, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(out, p)
		if err != nil || rel == "." {
			return err
		}
		fi, err := e.Info()
		if err != nil {
			return err
		}
		switch mode := fi.Mode(); {
		case mode.IsDir():
			return nil
		case mode&fs.ModeCharDevice != 0 && isWhiteout(fi):
			return nil // a removal: act's cache keeps what it has
		case !mode.IsRegular():
			m.refuse(rel, fmt.Sprintf("a %s, not a regular file", typeName(mode)))
		case exists(rel):
			// A copy-up of what the cache had (its time marked used, its
			// mode changed) or a rewrite: never kept.
		case mode&(fs.ModeSetuid|fs.ModeSetgid) != 0:
			m.refuse(rel, "setuid or setgid")
		default:
			files = append(files, rel)
		}
		return nil
	})
	if err != nil {
		return m, fmt.Errorf("read what the command wrote in the cache: %w", err)
	}
	if goModules {
		files = verifiedModules(out, own, user, files, &m)
	}
	// The bound is on act's caches together: caches/, own's parent.
	size, err := treeSize(filepath.Dir(own))
	if err != nil {
		return m, fmt.Errorf("act's own caches %s: %w", filepath.Dir(own), err)
	}
	// A module's directory, .zip and .ziphash are within the bound
	// together or not at all (verifiedModules); any other file alone.
	unit := func(rel string) string {
		if e, ok := goModEntryOf(rel); goModules && ok && e.kind != goModMeta {
			return e.module
		}
		return "\x00" + rel
	}
	sizes := map[string]int64{}
	for _, rel := range files {
		fi, err := os.Lstat(filepath.Join(out, rel))
		if err != nil {
			return m, err
		}
		sizes[unit(rel)] += fi.Size()
	}
	within := map[string]bool{}
	// A module's directory is kept last, after its .zip and .ziphash, and
	// whole: made aside and renamed into place (keepModuleDirs). A check
	// of the cache by another plan meanwhile never sees a directory
	// without its .ziphash, nor a part of one (verifyGoModCache).
	modDirs := map[string][]string{} // a module's directory → its files
	var dirOrder []string
	for _, rel := range files {
		u := unit(rel)
		in, seen := within[u]
		if !seen {
			in = size+sizes[u] <= bound
			within[u] = in
			if in {
				size += sizes[u]
			}
		}
		if !in {
			m.refuse(rel, fmt.Sprintf("act's own caches would pass sandbox.persistent_caches_mb (%d MiB)", bound>>20))
			continue
		}
		if e, ok := goModEntryOf(rel); goModules && ok && e.kind == goModSource {
			if modDirs[e.dir()] == nil {
				dirOrder = append(dirOrder, e.dir())
			}
			modDirs[e.dir()] = append(modDirs[e.dir()], rel)
			continue
		}
		fi, err := os.Lstat(filepath.Join(out, rel))
		if err != nil {
			return m, err
		}
		ok, err := keepFile(filepath.Join(out, rel), own, rel, fi.Mode().Perm())
		if err != nil {
			return m, err
		}
		if ok {
			m.Kept++
		}
	}
	for _, dir := range dirOrder {
		n, err := keepModuleDir(out, own, dir, modDirs[dir])
		if err != nil {
			return m, err
		}
		m.Kept += n
	}
	return m, nil
}

// keepModuleDir keeps the module directory dir (relative to out and own)
// with files, those of it to keep: copied into a directory made aside in
// own's parent (act's caches/), then renamed into place whole. It returns
// how many files it kept: none when own has dir by then.
func keepModuleDir(out, own, dir string, files []string) (int, error) {
	stage, err := os.MkdirTemp(filepath.Dir(own), ".act-keep-")
	if err != nil {
		return 0, err
	}
	defer sandbox.RemoveAll(stage)
	for _, rel := range files {
		fi, err := os.Lstat(filepath.Join(out, rel))
		if err != nil {
			return 0, err
		}
		if _, err := keepFile(filepath.Join(out, rel), stage, rel, fi.Mode().Perm()); err != nil {
			return 0, err
		}
	}
	if ok, err := mkdirs(own, filepath.Dir(filepath.FromSlash(dir))); err != nil || !ok {
		return 0, err
	}
	if err := os.Rename(filepath.Join(stage, filepath.FromSlash(dir)), filepath.Join(own, filepath.FromSlash(dir))); err != nil {
		if errors.Is(err, fs.ErrExist) || errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, syscall.ENOTDIR) {
			return 0, nil // made meanwhile
		}
		return 0, err
	}
	return len(files), nil
}

// verifiedModules returns files but those of Go's module cache that may
// not stay, which it refuses in m: a file where Go's module cache keeps
// nothing (goModEntryOf); a file added to a module directory own or user
// has; a new module directory whose files do not hash to its .ziphash; a
// new .zip or .ziphash that does not match the other. The .ziphash is
// read from own or user before out: what the cache had is not replaced. A
// module's directory, .zip and .ziphash stay together or not at all: one
// refused refuses the others (verifyGoModCache, on use, would drop the
// whole cache for a module directory without its .ziphash).
func verifiedModules(out, own, user string, files []string, m *cacheMerge) []string {
	read := func(rel string) ([]byte, bool) {
		for _, root := range []string{own, user, out} {
			if root == "" {
				continue
			}
			if b, err := os.ReadFile(filepath.Join(root, rel)); err == nil {
				return b, true
			}
		}
		return nil, false
	}
	where := func(rel string) string {
		for _, root := range []string{own, user, out} {
			if root == "" {
				continue
			}
			if fi, err := os.Lstat(filepath.Join(root, rel)); err == nil && fi.Mode().IsRegular() {
				return filepath.Join(root, rel)
			}
		}
		return ""
	}
	ziphash := func(e goModEntry) (string, bool) {
		b, ok := read(e.download(".ziphash"))
		return strings.TrimSpace(string(b)), ok
	}
	checked := map[string]bool{} // a module's directory or download, checked
	why := map[string]string{}   // a module → why refused, the first reason
	fail := func(mod, w string) {
		if w != "" && why[mod] == "" {
			why[mod] = w
		}
	}
	units := make([]string, len(files)) // each file's module, if refused with it
	for i, rel := range files {
		e, ok := goModEntryOf(rel)
		if !ok {
			units[i] = "\x00" + rel // refused alone
			fail(units[i], "not where Go's module cache keeps anything")
			continue
		}
		if e.kind != goModMeta {
			units[i] = e.module
		}
		switch e.kind {
		case goModZip:
			if checked["download:"+e.module] {
				continue
			}
			checked["download:"+e.module] = true
			want, ok := ziphash(e)
			zip := where(e.download(".zip"))
			switch {
			case !ok:
				fail(e.module, "no .ziphash to check the module's zip against")
			case zip == "":
				fail(e.module, "no zip to check the .ziphash against")
			default:
				if got, err := dirhash.HashZip(zip, dirhash.Hash1); err != nil || got != want {
					fail(e.module, "the zip does not hash to its .ziphash")
				}
			}
		case goModSource:
			if checked["dir:"+e.module] {
				continue
			}
			checked["dir:"+e.module] = true
			path, _ := module.UnescapePath(e.escPath)
			version, _ := module.UnescapeVersion(e.escVersion)
			want, ok := ziphash(e)
			switch {
			case isDirIn(own, e.dir()) || isDirIn(user, e.dir()):
				fail(e.module, "adds to a module directory the cache has")
			case !ok:
				fail(e.module, "no .ziphash to check the module's files against")
			default:
				if got, err := dirhash.HashDir(filepath.Join(out, filepath.FromSlash(e.dir())), path+"@"+version, dirhash.Hash1); err != nil || got != want {
					fail(e.module, "the module's files do not hash to its .ziphash (go.sum's h1)")
				}
			}
		}
	}
	var kept []string
	for i, rel := range files {
		if w := why[units[i]]; units[i] != "" && w != "" {
			m.refuse(rel, w)
			continue
		}
		kept = append(kept, rel)
	}
	return kept
}

func isDirIn(root, rel string) bool {
	if root == "" {
		return false
	}
	fi, err := os.Lstat(filepath.Join(root, rel))
	return err == nil && fi.IsDir()
}

// keepFile copies the regular file src into own at rel with mode perm:
// every directory on the way made (0755) and checked to be a directory,
// not a link; the file written under a temporary name and linked into
// place, so that an existing one is never replaced (false: it was there).
func keepFile(src, own, rel string, perm fs.FileMode) (bool, error) {
	if ok, err := mkdirs(own, filepath.Dir(rel)); err != nil || !ok {
		return false, err
	}
	dir := filepath.Join(own, filepath.Dir(rel))
	in, err := os.Open(src)
	if err != nil {
		return false, err
	}
	defer in.Close()
	tmp, err := os.CreateTemp(dir, ".act-keep-")
	if err != nil {
		return false, err
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, in); err != nil {
		tmp.Close()
		return false, err
	}
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		return false, err
	}
	if err := tmp.Close(); err != nil {
		return false, err
	}
	if err := os.Link(tmp.Name(), filepath.Join(dir, filepath.Base(rel))); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return false, nil
		}
		return false, err
	}
	return true, nil
}

// mkdirs makes each directory of rel (relative to own) that is missing
// (0755), and checks each is a directory, not a link: false when one is
// not (a file of the cache where a directory would go).
func mkdirs(own, rel string) (bool, error) {
	dir := own
	for _, part := range strings.Split(rel, string(filepath.Separator)) {
		if part == "." || part == "" {
			continue
		}
		dir = filepath.Join(dir, part)
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return false, err
		}
		fi, err := os.Lstat(dir)
		if err != nil {
			return false, err
		}
		if !fi.IsDir() {
			return false, nil
		}
	}
	return true, nil
}

// treeSize is the size of the regular files below dir.
func treeSize(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, e fs.DirEntry, err error) error {
		if err != nil || !e.Type().IsRegular() {
			return err
		}
		fi, err := e.Info()
		if err == nil {
			n += fi.Size()
		}
		return err
	})
	return n, err
}

// isWhiteout says whether fi, a character device, is overlayfs's
// whiteout (0/0).
func isWhiteout(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && st.Rdev == 0
}

func typeName(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "FIFO"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeDevice != 0:
		return "device"
	}
	return "special file"
}
