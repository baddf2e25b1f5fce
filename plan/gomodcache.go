package plan

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/mod/module"
	"golang.org/x/mod/sumdb/dirhash"
	"golang.org/x/sys/unix"

	"github.com/act-project/act/sandbox"
)

// act's own Go module cache (docs/sandbox-filesystem.md, "A persistent
// cache of act's own"): what may be there (goModEntryOf, the one layout
// both mergeCache and verifyGoModCache hold it to), and its check each
// time a command is about to see it. The agent may run as the user act
// runs as and write the state dir between runs: what was verified when
// kept proves nothing about what is there now.

// goModKind is what a file of Go's module cache is.
type goModKind int

const (
	// goModSource is a file in a module's extracted directory
	// (example.com/m@v1.2.3/...), which the go command compiles trusting
	// it matches the .ziphash.
	goModSource goModKind = iota
	// goModZip is a module's .zip or .ziphash in cache/download.
	goModZip
	// goModMeta is the rest of cache/download: a module's .mod (go checks
	// it against go.sum), .info and .lock, a module's version list, the
	// checksum database's tiles, cache/lock.
	goModMeta
)

// A goModEntry is where a file lies in Go's module cache.
type goModEntry struct {
	kind goModKind
	// module is the module's escaped path@version
	// ("example.com/!m@v1.2.3") for goModSource and goModZip, and for
	// goModMeta of one version (.mod, .info, .lock); else "".
	module string
	// escPath and escVersion are module's two halves.
	escPath, escVersion string
}

// dir is the module's extracted directory, relative to the cache.
func (e goModEntry) dir() string { return e.escPath + "@" + e.escVersion }

// download is the module's file with extension ext in cache/download,
// relative to the cache.
func (e goModEntry) download(ext string) string {
	return filepath.Join("cache", "download", filepath.FromSlash(e.escPath), "@v", e.escVersion+ext)
}

// goModEntryOf says where the file rel (relative to a Go module cache)
// lies in the layout the go command keeps, and false where that is
// nowhere: only a module's extracted files, its download files
// (cache/download/<path>/@v/<version>.{zip,ziphash,mod,info,lock} and
// list), the checksum database's cache (cache/download/sumdb/...) and
// cache/lock. Not the version control checkouts of GOPROXY=direct
// (cache/vcs: whole git repositories, whose configuration runs commands).
// Paths and versions are those of valid modules, escaped as the go
// command escapes them.
func goModEntryOf(rel string) (goModEntry, bool) {
	parts := strings.Split(filepath.ToSlash(rel), "/")
	if parts[0] != "cache" {
		at := -1
		for i, p := range parts {
			if strings.Contains(p, "@") {
				at = i
				break
			}
		}
		if at < 0 || at == len(parts)-1 {
			return goModEntry{}, false // a file outside any module's directory
		}
		escPath, escVersion, _ := strings.Cut(strings.Join(parts[:at+1], "/"), "@")
		if !validModule(escPath, escVersion) {
			return goModEntry{}, false
		}
		return goModEntry{kind: goModSource, module: escPath + "@" + escVersion, escPath: escPath, escVersion: escVersion}, true
	}
	switch {
	case rel == filepath.Join("cache", "lock"):
		return goModEntry{kind: goModMeta}, true
	case len(parts) < 4 || parts[1] != "download":
		return goModEntry{}, false
	case parts[2] == "sumdb":
		return goModEntry{kind: goModMeta}, true
	case len(parts) < 5 || parts[len(parts)-2] != "@v":
		return goModEntry{}, false
	}
	escPath, name := strings.Join(parts[2:len(parts)-2], "/"), parts[len(parts)-1]
	if name == "list" {
		if _, err := module.UnescapePath(escPath); err != nil {
			return goModEntry{}, false
		}
		return goModEntry{kind: goModMeta}, true
	}
	ext := filepath.Ext(name)
	escVersion := strings.TrimSuffix(name, ext)
	if !validModule(escPath, escVersion) {
		return goModEntry{}, false
	}
	e := goModEntry{module: escPath + "@" + escVersion, escPath: escPath, escVersion: escVersion}
	switch ext {
	case ".zip", ".ziphash":
		e.kind = goModZip
	case ".mod", ".info", ".lock":
		e.kind = goModMeta
	default:
		return goModEntry{}, false // a download's .partial or .tmp, say
	}
	return e, true
}

// validModule says whether escPath@escVersion names a module version as
// the go command escapes it in its cache.
func validModule(escPath, escVersion string) bool {
	path, err := module.UnescapePath(escPath)
	if err != nil {
		return false
	}
	version, err := module.UnescapeVersion(escVersion)
	return err == nil && module.Check(path, version) == nil
}

// verifyGoModCache checks own, act's own Go module cache, shown over user
// (the user's own, "" for none), before a command sees it, and returns
// the first thing that fails, "path: why", or "" when all holds:
//   - only directories and regular files, none with the setuid or setgid
//     bit, none with an overlayfs attribute (user.overlay.* or
//     trusted.overlay.*: a lower layer's opaque directory or whiteout
//     would hide the user's files);
//   - each file where goModEntryOf places it;
//   - each module directory's files hash (dirhash h1, as go mod verify
//     does) to the module's .ziphash as the command sees it (own's, else
//     the user's);
//   - each module whose .ziphash own holds has its zip in view, and each
//     zip own holds or whose .ziphash it holds hashes to the .ziphash in
//     view, if there is one (of a zip alone, the go command checks the
//     hash against go.sum itself before it writes the .ziphash).
//
// The cost is proportional to the cache's size: every file is read,
// but for what this process verified before and nothing has changed
// since (verifiedMemo: in memory, never in the state dir, which would be
// the agent's to forge).
func verifyGoModCache(own, user string) (string, error) {
	start := time.Now()
	fi, err := os.Lstat(own)
	if err != nil {
		return "", err
	}
	if !fi.IsDir() {
		return ".: not a directory", nil
	}
	find := func(rel string) string {
		for _, root := range []string{own, user} {
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
		p := find(e.download(".ziphash"))
		if p == "" {
			return "", false
		}
		b, err := os.ReadFile(p)
		return strings.TrimSpace(string(b)), err == nil
	}
	var dirs, zips []goModEntry
	seen := map[string]bool{}
	sigs := map[string]*strings.Builder{} // a module directory's files as stat saw them
	racy := map[string]bool{}             // a module directory with a file changed within racyWindow
	why := ""
	err = filepath.WalkDir(own, func(p string, d fs.DirEntry, err error) error {
		rel, _ := filepath.Rel(own, p)
		if err != nil {
			why = rel + ": cannot be read: " + err.Error()
			return filepath.SkipAll
		}
		fi, err := d.Info()
		if err != nil {
			why = rel + ": cannot be read: " + err.Error()
			return filepath.SkipAll
		}
		mode := fi.Mode()
		switch {
		case overlayAttr(p):
			why = rel + ": carries an overlayfs attribute"
		case mode&(fs.ModeSetuid|fs.ModeSetgid) != 0:
			why = rel + ": setuid or setgid"
		case mode.IsDir():
			why = goModDir(rel, &dirs)
		case !mode.IsRegular():
			why = rel + ": a " + typeName(mode) + ", not a regular file"
		default:
			e, ok := goModEntryOf(rel)
			switch {
			case !ok:
				why = rel + ": not where Go's module cache keeps anything"
			case e.kind == goModZip && !seen[e.module]:
				seen[e.module] = true
				zips = append(zips, e)
			case e.kind == goModSource:
				b := sigs[e.dir()]
				if b == nil {
					b = &strings.Builder{}
					sigs[e.dir()] = b
				}
				line, fresh := statLine(rel, fi, start)
				b.WriteString(line)
				racy[e.dir()] = racy[e.dir()] || fresh
			}
		}
		if why != "" {
			return filepath.SkipAll
		}
		return nil
	})
	if err != nil || why != "" {
		return why, err
	}
	verifiedMemo.Lock()
	before := verifiedMemo.m[own]
	verifiedMemo.Unlock()
	var mu sync.Mutex
	now := map[string]bool{} // what this check verified, for the next
	verified := func(key string, fresh bool, hash func() bool, after func() string) bool {
		if before[key] {
			mu.Lock()
			now[key] = true
			mu.Unlock()
			return true
		}
		if !hash() {
			return false
		}
		if !fresh && after() == key {
			mu.Lock()
			now[key] = true
			mu.Unlock()
		}
		return true
	}
	var checks []func() string
	for _, e := range dirs {
		checks = append(checks, func() string {
			path, _ := module.UnescapePath(e.escPath)
			version, _ := module.UnescapeVersion(e.escVersion)
			want, ok := ziphash(e)
			if !ok {
				return e.dir() + ": no .ziphash to check the module's files against"
			}
			dir := filepath.Join(own, filepath.FromSlash(e.dir()))
			key := func(sig string) string { return "dir\x00" + e.dir() + "\x00" + want + "\x00" + sig }
			sig := ""
			if b := sigs[e.dir()]; b != nil {
				sig = b.String()
			}
			if !verified(key(sig), racy[e.dir()], func() bool {
				got, err := hashDir(dir, path+"@"+version, dirhash.Hash1)
				return err == nil && got == want
			}, func() string {
				sig, fresh := dirSig(own, dir, start)
				if fresh {
					return ""
				}
				return key(sig)
			}) {
				return e.dir() + ": the module's files do not hash to its .ziphash (go.sum's h1)"
			}
			return ""
		})
	}
	for _, e := range zips {
		checks = append(checks, func() string {
			want, ok := ziphash(e)
			zip := find(e.download(".zip"))
			switch {
			case !ok && zip != "":
				// A zip whose .ziphash is missing (mergeCache keeps the zip
				// first): the go command hashes it and checks go.sum
				// before it writes one, and before it extracts the zip.
				return ""
			case zip == "":
				return filepath.ToSlash(e.download(".ziphash")) + ": no zip to check the .ziphash against"
			}
			stat := func() (string, bool) {
				fi, err := os.Lstat(zip)
				if err != nil {
					return "", true
				}
				line, fresh := statLine(zip, fi, start)
				return "zip\x00" + want + "\x00" + line, fresh
			}
			key, fresh := stat()
			if !verified(key, fresh, func() bool {
				got, err := hashZip(zip, dirhash.Hash1)
				return err == nil && got == want
			}, func() string {
				key, _ := stat()
				return key
			}) {
				return filepath.ToSlash(e.download(".zip")) + ": the zip does not hash to its .ziphash"
			}
			return ""
		})
	}
	why = firstFailure(checks)
	verifiedMemo.Lock()
	defer verifiedMemo.Unlock()
	if why != "" {
		delete(verifiedMemo.m, own)
	} else {
		verifiedMemo.m[own] = now
	}
	return why, nil
}

// verifiedMemo is, for each of act's own Go module caches, what this
// process's last check of it (verifyGoModCache) found to hash to its
// .ziphash: a module directory or a zip, keyed by the .ziphash and by
// each of its files' device, inode, size, mtime and ctime. A later check
// hashes again whatever differs. An agent of the user act runs as can set
// an mtime, not a ctime: the kernel sets that to the present on every
// change (content, name, mode, mtime), and the agent cannot set the
// clock back. A file changed within racyWindow of a check is never
// remembered (a change within the clock's coarse tick would keep the
// ctime), nor one whose stat changed while it was hashed. The memo lives
// in memory alone: in the state dir it would be the agent's to forge. It
// spares the later commands of one plan, and act mcp's later plans.
var verifiedMemo = struct {
	sync.Mutex
	m map[string]map[string]bool
}{m: map[string]map[string]bool{}}

// racyWindow: how recent a change keeps a file out of verifiedMemo.
var racyWindow = 2 * time.Second

// hashDir and hashZip are dirhash's, which only tests replace (to count
// what a check hashes).
var (
	hashDir = dirhash.HashDir
	hashZip = dirhash.HashZip
)

// statLine is name's line in a memo key: fi's device, inode, size, mtime
// and ctime; fresh when its ctime lies within racyWindow of start (or
// after it).
func statLine(name string, fi fs.FileInfo, start time.Time) (line string, fresh bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return "", true
	}
	ctime := time.Unix(st.Ctim.Sec, st.Ctim.Nsec)
	return fmt.Sprintf("%s\x00%d %d %d %d %d\n", name, st.Dev, st.Ino, st.Size, fi.ModTime().UnixNano(), ctime.UnixNano()),
		!ctime.Before(start.Add(-racyWindow))
}

// dirSig is the signature of the module directory dir below own, as
// verifyGoModCache's walk makes it: each file's statLine, by its path
// relative to own, in lexical order; fresh if a file is.
func dirSig(own, dir string, start time.Time) (string, bool) {
	var b strings.Builder
	fresh := false
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(own, p)
		if err != nil {
			return err
		}
		line, f := statLine(rel, fi, start)
		b.WriteString(line)
		fresh = fresh || f
		return nil
	})
	return b.String(), fresh || err != nil
}

// firstFailure runs checks, as many at once as GOMAXPROCS, and returns
// what the first of them (in order) that failed says, "" when none did.
// Once one has failed, those not yet started are not.
func firstFailure(checks []func() string) string {
	whys := make([]string, len(checks))
	var next atomic.Int64
	var failed atomic.Bool
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(checks)) {
		wg.Go(func() {
			for !failed.Load() {
				i := int(next.Add(1)) - 1
				if i >= len(checks) {
					return
				}
				if whys[i] = checks[i](); whys[i] != "" {
					failed.Store(true)
				}
			}
		})
	}
	wg.Wait()
	for _, w := range whys {
		if w != "" {
			return w
		}
	}
	return ""
}

// goModDir checks the directory rel of a Go module cache: "cache" and
// cache/download and what lies below it, a module path's elements, a
// module's directory (added to dirs) and what lies below it. It returns
// "path: why" for anything else.
func goModDir(rel string, dirs *[]goModEntry) string {
	if rel == "." {
		return ""
	}
	parts := strings.Split(filepath.ToSlash(rel), "/")
	if parts[0] == "cache" {
		if len(parts) > 1 && parts[1] != "download" {
			return rel + ": not where Go's module cache keeps anything"
		}
		return ""
	}
	at := slices.IndexFunc(parts, func(p string) bool { return strings.Contains(p, "@") })
	if at != len(parts)-1 {
		return "" // a module path's element (none), or below a module's directory
	}
	escPath, escVersion, _ := strings.Cut(filepath.ToSlash(rel), "@")
	if !validModule(escPath, escVersion) {
		return rel + ": not a module directory's name"
	}
	*dirs = append(*dirs, goModEntry{kind: goModSource, module: escPath + "@" + escVersion, escPath: escPath, escVersion: escVersion})
	return ""
}

// overlayAttr says whether p carries an extended attribute overlayfs reads
// on a lower layer (user.overlay.* on a userxattr mount, trusted.overlay.*
// otherwise).
func overlayAttr(p string) bool {
	sz, err := unix.Llistxattr(p, nil)
	if err != nil || sz <= 0 {
		return false
	}
	buf := make([]byte, sz)
	sz, err = unix.Llistxattr(p, buf)
	if err != nil {
		return true // changed under us: not to be trusted
	}
	for name := range strings.SplitSeq(string(buf[:sz]), "\x00") {
		if strings.HasPrefix(name, "user.overlay.") || strings.HasPrefix(name, "trusted.overlay.") {
			return true
		}
	}
	return false
}

// dropCache empties own, act's own cache: renamed aside whole (rename
// moves a symbolic link planted there, never follows it), removed, and
// made again as act's (ownDir).
func dropCache(own string) error {
	trash := filepath.Join(filepath.Dir(own), ".dropped-"+rand.Text())
	if err := os.Rename(own, trash); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := sandbox.RemoveAll(trash); err != nil {
		return fmt.Errorf("remove %s: %w", trash, err)
	}
	return ownDir(own)
}
