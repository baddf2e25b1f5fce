package gate

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/act-project/act/diff"
	"github.com/act-project/act/internal/digest"
	"github.com/act-project/act/internal/pathglob"
)

// Git repositories found by content, as git finds them (setup.c): a
// directory is a git directory when its HEAD is valid (a symbolic link
// into refs/, "ref: refs/…", or an object id) and its objects and refs
// directories exist — in the directory a "commondir" file names, if it
// has one (a linked worktree's). A work tree is a directory whose ".git"
// is such a directory, or a file "gitdir: PATH" naming one. Nothing here
// runs git: its configuration can name programs (core.fsmonitor) that
// any git command would run.

// A gitView is the tree before the plan (the real tree) or after it (the
// real tree under the plan's changes, their content in the layer).
type gitView struct {
	after   bool
	changes map[string]*diff.Change
	upper   string // the layer's upper directory; "" unknown
	cache   map[string]bool
}

// kind is what p is in the view, symbolic links followed (git's
// access(X_OK)): absent, a directory, or another entry. A link made by
// the plan counts as a directory: what it points at is not known here.
func (v *gitView) kind(p string) (exists, dir bool) {
	if v.after {
		if c, ok := v.changes[p]; ok {
			switch {
			case c.Kind == diff.Delete:
				return false, false
			case c.Type == diff.TypeFile:
				return true, false
			}
			return true, true
		}
	}
	fi, err := os.Stat(p)
	if err != nil {
		return false, false
	}
	return true, fi.IsDir()
}

// read is up to max bytes of the file p in the view; ok is false when p
// is no regular file or its content is unknown. A file the plan writes is
// read from the layer and must hold what the plan says it holds.
func (v *gitView) read(p string, max int64) (data []byte, ok, known bool) {
	if v.after {
		if c, changed := v.changes[p]; changed {
			if c.Kind == diff.Delete || c.Type != diff.TypeFile {
				return nil, false, true
			}
			data, ok := readLayer(v.upper, c, max)
			return data, ok, ok
		}
	}
	f, err := digest.OpenRaw(p, syscall.O_NOFOLLOW|syscall.O_NONBLOCK)
	if err != nil {
		return nil, false, true
	}
	defer f.Close()
	if !regular(f) {
		return nil, false, true
	}
	data, err = io.ReadAll(io.LimitReader(f, max))
	return data, err == nil, true
}

// readLayer is the content c writes, from the layer's upper directory,
// when it is at most max bytes and its sha256 is the plan's.
func readLayer(upper string, c *diff.Change, max int64) ([]byte, bool) {
	if upper == "" || c.SHA256After == nil || (c.SizeAfter != nil && *c.SizeAfter > max) {
		return nil, false
	}
	f, err := digest.OpenRaw(filepath.Join(upper, c.Path), syscall.O_NOFOLLOW|syscall.O_NONBLOCK)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil || int64(len(data)) > max {
		return nil, false
	}
	sum := sha256.Sum256(data)
	if hex.EncodeToString(sum[:]) != *c.SHA256After {
		return nil, false
	}
	return data, true
}

// headValid is git's validate_headref on the view.
func (v *gitView) headValid(p string) bool {
	if v.after {
		if c, ok := v.changes[p]; ok && c.Kind != diff.Delete && c.Type == diff.TypeSymlink {
			return true // wherever it points: not known here
		}
	}
	if !v.after || v.changes[p] == nil {
		fi, err := os.Lstat(p)
		switch {
		case err != nil:
			return false
		case fi.Mode()&os.ModeSymlink != 0:
			target, err := os.Readlink(p)
			return err == nil && strings.HasPrefix(target, "refs/")
		}
	}
	data, ok, known := v.read(p, 256)
	if !known {
		exists, dir := v.kind(p)
		return exists && !dir // written by the plan, content unknown: as if valid
	}
	if !ok {
		return false
	}
	s := string(data)
	if rest, ok := strings.CutPrefix(s, "ref:"); ok {
		return strings.HasPrefix(strings.TrimLeft(rest, " \t\n\r\v\f"), "refs/")
	}
	if len(s) < 40 {
		return false
	}
	for _, ch := range s[:40] {
		if !strings.ContainsRune("0123456789abcdefABCDEF", ch) {
			return false
		}
	}
	return true
}

// isGitDir is git's is_git_directory on the view, cached.
func (v *gitView) isGitDir(d string) bool {
	if r, ok := v.cache[d]; ok {
		return r
	}
	r := v.gitDir(d)
	if v.cache == nil {
		v.cache = map[string]bool{}
	}
	v.cache[d] = r
	return r
}

func (v *gitView) gitDir(d string) bool {
	if !v.headValid(filepath.Join(d, "HEAD")) {
		return false
	}
	common := d
	if data, ok, known := v.read(filepath.Join(d, "commondir"), 4096); !known {
		return true // a commondir the plan writes: as if it named a repository
	} else if ok {
		c := strings.TrimSpace(string(data))
		if !filepath.IsAbs(c) {
			c = filepath.Join(d, c)
		}
		common = c
	}
	for _, sub := range []string{"objects", "refs"} {
		if exists, _ := v.kind(filepath.Join(common, sub)); !exists {
			return false
		}
	}
	return true
}

// touches reports whether the plan changes what isGitDir(d) reads.
func (v *gitView) touches(d string) bool {
	for _, sub := range []string{"HEAD", "objects", "refs", "commondir"} {
		if _, ok := v.changes[filepath.Join(d, sub)]; ok {
			return true
		}
	}
	return false
}

// gitfile reads a ".git" file: the git directory it names, as git reads
// it ("gitdir: PATH", relative to the file's directory).
func gitfile(p string) (string, bool) {
	data, ok, _ := (&gitView{}).read(p, 4096)
	if !ok {
		return "", false
	}
	line, _, _ := strings.Cut(string(data), "\n")
	dir, ok := strings.CutPrefix(strings.TrimRight(line, "\r \t"), "gitdir: ")
	if !ok || dir == "" {
		return "", false
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(filepath.Dir(p), dir)
	}
	return filepath.Clean(dir), true
}

// commitWrite reports whether rel, a path inside a git directory, of
// type typ, is what `git commit` writes there: loose objects, branch and
// tag refs and their logs, HEAD's log, the index and the message. Nothing
// of it is run or obeyed by git as configuration.
func commitWrite(rel, typ string) bool {
	dir, file := typ == diff.TypeDir, typ == diff.TypeFile
	under := func(p string) bool { return rel == p || strings.HasPrefix(rel, p+"/") }
	switch {
	case rel == "index" || rel == "COMMIT_EDITMSG" || rel == "logs/HEAD":
		return file
	case rel == "logs" || rel == "logs/refs":
		return dir
	case under("refs/heads") || under("refs/tags") || under("logs/refs/heads") || under("logs/refs/tags"):
		return dir || file
	}
	if rest, ok := strings.CutPrefix(rel, "objects/"); ok {
		fan, obj, nested := strings.Cut(rest, "/")
		if len(fan) != 2 || !isHex(fan) {
			return false
		}
		if !nested {
			return dir
		}
		return file && (len(obj) == 38 || len(obj) == 62) && isHex(obj)
	}
	return false
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// gitObeyed reports whether rel inside a git directory is a file git
// obeys as configuration or runs: its config (any repository's, a
// worktree's), hooks, info/ (exclude, attributes, sparse-checkout), and
// the pointers that make it another repository's worktree.
func gitObeyed(rel string) bool {
	base := rel[strings.LastIndexByte(rel, '/')+1:]
	top, _, _ := strings.Cut(rel, "/")
	return base == "config" || base == "config.worktree" || top == "hooks" || top == "info" ||
		rel == "commondir" || rel == "gitdir" || base == "sparse-checkout"
}

// gitConfig is the few settings of git's configuration that decide what
// `git status` shows, read without running git.
type gitConfig struct {
	showUntracked string // status.showUntrackedFiles
	excludesFile  string // core.excludesFile
}

// readGitConfig reads path into c, following include.path and every
// includeIf's path (whatever its condition: reading more can only hide
// more), at most depth deep.
func readGitConfig(path, home string, c *gitConfig, depth int) {
	if depth > 10 {
		return
	}
	data, ok, _ := (&gitView{}).read(path, 1<<20)
	if !ok {
		return
	}
	section := ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "[") {
			end := strings.IndexByte(line, ']')
			if end < 0 {
				continue
			}
			head := line[1:end]
			name, sub, hasSub := strings.Cut(head, " ")
			section = strings.ToLower(name)
			if hasSub {
				section += "." + strings.Trim(strings.TrimSpace(sub), `"`)
			}
			line = strings.TrimSpace(line[end+1:])
		}
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		key, val, hasVal := strings.Cut(line, "=")
		key = strings.ToLower(strings.TrimSpace(key))
		val = configValue(val)
		if !hasVal {
			val = "true"
		}
		sec, _, _ := strings.Cut(section, ".")
		switch {
		case section == "status" && key == "showuntrackedfiles":
			c.showUntracked = strings.ToLower(val)
		case section == "core" && key == "excludesfile":
			c.excludesFile = expandHome(val, home, filepath.Dir(path))
		case (section == "include" || sec == "includeif") && key == "path":
			readGitConfig(expandHome(val, home, filepath.Dir(path)), home, c, depth+1)
		}
	}
}

// configValue is a config value without its comment and quotes.
func configValue(v string) string {
	var b strings.Builder
	quoted := false
	for i := 0; i < len(v); i++ {
		switch ch := v[i]; {
		case ch == '"':
			quoted = !quoted
		case ch == '\\' && i+1 < len(v):
			i++
			b.WriteByte(v[i])
		case (ch == '#' || ch == ';') && !quoted:
			return strings.TrimSpace(b.String())
		default:
			b.WriteByte(ch)
		}
	}
	return strings.TrimSpace(b.String())
}

// expandHome makes a config path absolute: "~/" is home, a relative
// path is relative to dir.
func expandHome(p, home, dir string) string {
	if rest, ok := strings.CutPrefix(p, "~/"); ok && home != "" {
		return filepath.Join(home, rest)
	}
	if !filepath.IsAbs(p) {
		return filepath.Join(dir, p)
	}
	return p
}

// within reports whether p is dir or below it.
func within(p, dir string) bool { return pathglob.Within(p, dir) }

// regular reports whether the open file f is a regular file.
func regular(f *digest.RawFile) bool {
	t, err := f.Type()
	return err == nil && t == syscall.S_IFREG
}
