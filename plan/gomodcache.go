package plan

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

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
//   - each module whose .zip or .ziphash own holds has both in view, and
//     the zip hashes to the .ziphash.
//
// Every file is read each time: the cost is proportional to the cache's
// size. No memo of an earlier check is kept; one in the state dir would
// be the agent's to forge, and mtimes are its to set.
func verifyGoModCache(own, user string) (string, error) {
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
	for _, e := range dirs {
		path, _ := module.UnescapePath(e.escPath)
		version, _ := module.UnescapeVersion(e.escVersion)
		want, ok := ziphash(e)
		if !ok {
			return e.dir() + ": no .ziphash to check the module's files against", nil
		}
		if got, err := dirhash.HashDir(filepath.Join(own, filepath.FromSlash(e.dir())), path+"@"+version, dirhash.Hash1); err != nil || got != want {
			return e.dir() + ": the module's files do not hash to its .ziphash (go.sum's h1)", nil
		}
	}
	for _, e := range zips {
		want, ok := ziphash(e)
		zip := find(e.download(".zip"))
		switch {
		case !ok:
			return filepath.ToSlash(e.download(".zip")) + ": no .ziphash to check the module's zip against", nil
		case zip == "":
			return filepath.ToSlash(e.download(".ziphash")) + ": no zip to check the .ziphash against", nil
		}
		if got, err := dirhash.HashZip(zip, dirhash.Hash1); err != nil || got != want {
			return filepath.ToSlash(e.download(".zip")) + ": the zip does not hash to its .ziphash", nil
		}
	}
	return "", nil
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
