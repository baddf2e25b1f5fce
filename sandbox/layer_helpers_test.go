package sandbox_test

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/act-project/act/diff"
	"github.com/act-project/act/sandbox"
)

// spec describes one entry of a test tree, relative to its root: a
// directory ends in "/", a symlink has a Link, anything else is a file.
type spec struct {
	Path string
	Mode fs.FileMode
	Data string
	Link string
}

// tempDir is t.TempDir, made removable at the end even when a test left
// read-only directories in it (which only root could remove).
func tempDir(t testing.TB) string {
	d := t.TempDir()
	t.Cleanup(func() {
		filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
			if err == nil && e.IsDir() {
				os.Chmod(p, 0o700)
			}
			return nil
		})
	})
	return d
}

// build creates the tree specs under root, parents before children, with
// exact modes (directories get theirs last, so read-only ones can be
// filled).
func build(t testing.TB, root string, specs []spec) {
	t.Helper()
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	var dirs []spec
	for _, s := range specs {
		p := filepath.Join(root, s.Path)
		var err error
		switch {
		case strings.HasSuffix(s.Path, "/"):
			err = os.Mkdir(p, 0o700)
			dirs = append(dirs, s)
		case s.Link != "":
			err = os.Symlink(s.Link, p)
		default:
			err = os.WriteFile(p, []byte(s.Data), 0o600)
			if err == nil {
				err = os.Chmod(p, s.Mode)
			}
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range slices.Backward(dirs) {
		if err := os.Chmod(filepath.Join(root, s.Path), s.Mode); err != nil {
			t.Fatal(err)
		}
	}
}

// entry is one path of a tree snapshot.
type entry struct {
	Type  string
	Mode  string
	Data  string
	Link  string
	MTime int64 // strict snapshots only
	CTime int64 // strict snapshots only
}

// snapshot reads the tree at root through sys. A strict snapshot also
// records modification and change times, so that it shows any write, even
// of the same bytes, and any chmod.
func snapshot(t testing.TB, sys sandbox.System, root string, strict bool) map[string]entry {
	t.Helper()
	m := map[string]entry{}
	var walk func(p string)
	walk = func(p string) {
		fi, err := sys.Lstat(p)
		if err != nil {
			t.Fatalf("snapshot: %v", err)
		}
		e := entry{Mode: diff.FormatMode(fi.Mode())}
		switch {
		case fi.Mode().IsRegular():
			e.Type = "file"
			r, err := sys.Open(p)
			if err != nil {
				t.Fatalf("snapshot: %v", err)
			}
			data, err := io.ReadAll(r)
			r.Close()
			if err != nil {
				t.Fatalf("snapshot: %v", err)
			}
			e.Data = string(data)
		case fi.IsDir():
			e.Type = "dir"
		case fi.Mode()&fs.ModeSymlink != 0:
			e.Type, e.Mode = "symlink", ""
			if e.Link, err = sys.Readlink(p); err != nil {
				t.Fatalf("snapshot: %v", err)
			}
		default:
			e.Type = fi.Mode().Type().String()
		}
		if strict {
			st := fi.Sys().(*syscall.Stat_t)
			e.MTime, e.CTime = st.Mtim.Nano(), st.Ctim.Nano()
		}
		rel, _ := filepath.Rel(root, p)
		m[rel] = e
		if e.Type == "dir" {
			ents, err := sys.ReadDir(p)
			if err != nil {
				t.Fatalf("snapshot: %v", err)
			}
			for _, de := range ents {
				walk(filepath.Join(p, de.Name()))
			}
		}
	}
	walk(root)
	return m
}

// oracle computes the changes from the tree before to the tree after by
// comparing them whole: the slow, obvious algorithm that diff.Compare must
// agree with.
func oracle(root string, before, after map[string]entry) []diff.Change {
	kids := func(m map[string]entry, dir string) []string {
		var out []string
		for rel := range m {
			if rel != "." && filepath.Dir(rel) == dir {
				out = append(out, filepath.Base(rel))
			}
		}
		return out
	}
	side := func(e entry) (mode *string, size *int64, sum *string, link *string) {
		switch e.Type {
		case "file":
			n, h := int64(len(e.Data)), sha256.Sum256([]byte(e.Data))
			return ptr(e.Mode), &n, ptr(hex.EncodeToString(h[:])), nil
		case "dir":
			return ptr(e.Mode), nil, nil, nil
		}
		return nil, nil, nil, ptr(e.Link)
	}
	var out []diff.Change
	add := func(rel string, k diff.Kind, b, a *entry) {
		c := diff.Change{Path: filepath.Join(root, rel), Kind: k}
		if b != nil {
			c.Type = b.Type
			c.ModeBefore, c.SizeBefore, c.SHA256Before, c.LinkBefore = side(*b)
		}
		if a != nil {
			c.Type = a.Type
			c.ModeAfter, c.SizeAfter, c.SHA256After, c.LinkAfter = side(*a)
		}
		out = append(out, c)
	}
	var visit func(rel string)
	visit = func(rel string) {
		b, inB := before[rel]
		a, inA := after[rel]
		switch {
		case inB && !inA:
			add(rel, diff.Delete, &b, nil)
			return
		case !inB && inA:
			add(rel, diff.Create, nil, &a)
		case b.Type != a.Type:
			add(rel, diff.Delete, &b, nil)
			add(rel, diff.Create, nil, &a)
			inB = false
		case b != a:
			add(rel, diff.Modify, &b, &a)
		}
		if a.Type != "dir" {
			return
		}
		names := kids(after, rel)
		if inB {
			names = append(names, kids(before, rel)...)
		}
		slices.Sort(names)
		for _, n := range slices.Compact(names) {
			visit(filepath.Join(rel, n))
		}
	}
	visit(".")
	slices.SortStableFunc(out, func(a, b diff.Change) int {
		if diff.Less(a, b) {
			return -1
		}
		if diff.Less(b, a) {
			return 1
		}
		return 0
	})
	return out
}

func ptr[T any](v T) *T { return &v }

// compact renders changes one per line, paths relative to root, for
// golden files and readable failures.
func compact(root string, changes []diff.Change) string {
	var b strings.Builder
	s := func(p *string) string {
		if p == nil {
			return "-"
		}
		return *p
	}
	n := func(p *int64) string {
		if p == nil {
			return "-"
		}
		return fmt.Sprint(*p)
	}
	for _, c := range changes {
		rel, _ := filepath.Rel(root, c.Path)
		fmt.Fprintf(&b, "%s %s %s", c.Kind, c.Type, rel)
		switch c.Type {
		case "file":
			fmt.Fprintf(&b, " mode %s>%s size %s>%s", s(c.ModeBefore), s(c.ModeAfter), n(c.SizeBefore), n(c.SizeAfter))
		case "dir":
			fmt.Fprintf(&b, " mode %s>%s", s(c.ModeBefore), s(c.ModeAfter))
		case "symlink":
			fmt.Fprintf(&b, " link %s>%s", s(c.LinkBefore), s(c.LinkAfter))
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// errClass names the class of err that callers test with errors.Is.
func errClass(err error) string {
	if err == nil {
		return "ok"
	}
	for _, c := range []struct {
		name string
		err  error
	}{
		{"ErrSymlinkInPath", sandbox.ErrSymlinkInPath},
		{"ENOTEMPTY", syscall.ENOTEMPTY}, // before ErrExist, which it matches
		{"ErrNotExist", fs.ErrNotExist},
		{"ErrExist", fs.ErrExist},
		{"ENOTDIR", syscall.ENOTDIR},
		{"EISDIR", syscall.EISDIR},
		{"EINVAL", syscall.EINVAL},
		{"EINVAL", fs.ErrInvalid},
		{"ELOOP", syscall.ELOOP},
		{"EOPNOTSUPP", syscall.EOPNOTSUPP},
		{"EBUSY", syscall.EBUSY},
		{"ErrPermission", fs.ErrPermission},
	} {
		if errors.Is(err, c.err) {
			return c.name
		}
	}
	return "other: " + err.Error()
}

// osSystem is a System over the real filesystem with the semantics act
// wants of sandbox.RealSystem — exact modes, symlinks never followed at the
// last component, a dir rename falling back to copy and delete on EXDEV
// like mv — for paths under from, carried out under to. The tests run it
// on a copy of the lower tree and through a kernel overlay mount.
type osSystem struct{ from, to string }

func (s osSystem) m(p string) string {
	if p == s.from {
		return s.to
	}
	if rest, ok := strings.CutPrefix(p, s.from+"/"); ok {
		return filepath.Join(s.to, rest)
	}
	panic("osSystem: path outside the tree: " + p)
}

func (s osSystem) Lstat(p string) (fs.FileInfo, error)  { return sandbox.RealSystem{}.Lstat(s.m(p)) }
func (s osSystem) Open(p string) (io.ReadCloser, error) { return sandbox.RealSystem{}.Open(s.m(p)) }
func (s osSystem) ReadDir(p string) ([]fs.DirEntry, error) {
	return sandbox.RealSystem{}.ReadDir(s.m(p))
}
func (s osSystem) Readlink(p string) (string, error) { return sandbox.RealSystem{}.Readlink(s.m(p)) }
func (s osSystem) WriteFile(p string, data []byte, perm fs.FileMode) error {
	return sandbox.RealSystem{}.WriteFile(s.m(p), data, perm)
}
func (s osSystem) Mkdir(p string, perm fs.FileMode) error {
	return sandbox.RealSystem{}.Mkdir(s.m(p), perm)
}
func (s osSystem) Remove(p string) error    { return sandbox.RealSystem{}.Remove(s.m(p)) }
func (s osSystem) RemoveAll(p string) error { return sandbox.RealSystem{}.RemoveAll(s.m(p)) }
func (s osSystem) Rename(from, to string) error {
	return sandbox.RealSystem{}.Rename(s.m(from), s.m(to))
}
func (s osSystem) Chmod(p string, mode fs.FileMode) error {
	return sandbox.RealSystem{}.Chmod(s.m(p), mode)
}
