package plan

// The file operations, one function each (see the rules at the top of
// ops.go). Each checks everything first, then changes the tree.

import (
	"bytes"
	"encoding/base64"
	"errors"
	"io"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/act-project/act/descriptors"
	"github.com/act-project/act/diff"
	"github.com/act-project/act/internal/configedit"
	"github.com/act-project/act/internal/digest"
	"github.com/act-project/act/internal/pathglob"
)

func (r *runner) fileRead(f []string, op descriptors.FileReadOp) error {
	pf := field(f, "path")
	p, fi, err := r.regularFile(pf, op.Path)
	if err != nil {
		return err
	}
	rc, err := r.sys.Open(p)
	if err != nil {
		return fsErr(pf, "read", p, err)
	}
	defer rc.Close()
	head := &capped{max: MaxReadContent}
	sum, n, err := digest.Reader(io.TeeReader(rc, head))
	if err != nil {
		return fsErr(pf, "read", p, err)
	}
	r.res.Read = append(r.res.Read, ReadResult{
		Field: pf, Path: op.Path, Resolved: p, Mode: diff.FormatMode(fi.Mode()),
		Size: n, SHA256: sum,
		Content: head.buf.Bytes(), Truncated: head.cut,
	})
	return nil
}

// capped keeps the first max bytes written to it.
type capped struct {
	buf bytes.Buffer
	max int
	cut bool
}

func (c *capped) Write(b []byte) (int, error) {
	if room := c.max - c.buf.Len(); len(b) > room {
		c.buf.Write(b[:room])
		c.cut = true
	} else {
		c.buf.Write(b)
	}
	return len(b), nil
}

// regularFile resolves named, following a final symlink, and checks that
// it is a regular file.
// resolveStat resolves p (see [runner.resolve]) and describes what it
// resolves to; a nil FileInfo means absent.
func (r *runner) resolveStat(f []string, p string, followLast bool) (string, fs.FileInfo, error) {
	res, err := r.resolve(f, p, followLast)
	if err != nil {
		return "", nil, err
	}
	fi, err := r.lstat(f, res)
	return res, fi, err
}

func (r *runner) regularFile(f []string, named string) (string, fs.FileInfo, error) {
	p, fi, err := r.resolveStat(f, named, true)
	switch {
	case err != nil:
		return "", nil, err
	case fi == nil:
		return "", nil, opErr("op.path-missing", f, named, nil, "%q does not exist", named)
	case !fi.Mode().IsRegular():
		return "", nil, opErr("op.not-a-file", f, named, nil, "%q is %s, not a regular file", named, describe(fi))
	}
	return p, fi, nil
}

func (r *runner) fileWrite(f []string, op descriptors.FileWriteOp) error {
	pf := field(f, "path")
	var data []byte
	switch {
	case op.Content != nil && op.ContentBase64 == nil:
		data = []byte(*op.Content)
	case op.ContentBase64 != nil && op.Content == nil:
		var err error
		if data, err = base64.StdEncoding.DecodeString(*op.ContentBase64); err != nil {
			return opErr("op.invalid-content", field(f, "content_base64"), op.Path, err,
				"content_base64 is not valid base64: %v", err)
		}
	case op.Edits != nil && op.Content == nil && op.ContentBase64 == nil:
		var err error
		if data, err = r.edited(f, op); err != nil {
			return err
		}
	default:
		return opErr("op.invalid-content", f, op.Path, nil, "exactly one of content, content_base64 and edits must be set")
	}
	return r.writeTo(pf, field(f, "mode"), op.Path, data, op.Mode, op.CreateOnly)
}

// maxEditSize bounds the file FILE_WRITE's edits change.
const maxEditSize = 16 << 20

// edited is the content of the file op.Path names as it is now (in a
// plan, the layer's view: after the steps before this one) with op.Edits
// made, in order, each to the result of the one before. Each old must
// occur exactly once, unless replace_all: else nothing is written.
func (r *runner) edited(f []string, op descriptors.FileWriteOp) ([]byte, error) {
	pf := field(f, "path")
	p, fi, err := r.regularFile(pf, op.Path)
	if err != nil {
		return nil, err
	}
	if fi.Size() > maxEditSize {
		return nil, opErr("op.edit-too-large", pf, op.Path, nil,
			"%q is %d bytes, more than the %d edits change", op.Path, fi.Size(), maxEditSize)
	}
	rc, err := r.sys.Open(p)
	if err != nil {
		return nil, fsErr(pf, "read", p, err)
	}
	data, err := io.ReadAll(io.LimitReader(rc, maxEditSize+1))
	rc.Close()
	if err != nil {
		return nil, fsErr(pf, "read", p, err)
	}
	if len(data) > maxEditSize {
		return nil, opErr("op.edit-too-large", pf, op.Path, nil,
			"%q is more than the %d bytes edits change", op.Path, maxEditSize)
	}
	text := string(data)
	for i, e := range op.Edits {
		ef := field(f, "edits", strconv.Itoa(i), "old")
		switch n := occurrences(text, e.Old); {
		case n == 0:
			return nil, opErr("op.edit-not-found", ef, op.Path, nil,
				"edits[%d].old does not occur in %q%s", i, op.Path, editsBefore(i))
		case n > 1 && !e.ReplaceAll:
			return nil, opErr("op.edit-ambiguous", ef, op.Path, nil,
				"edits[%d].old occurs %d times in %q%s: make it unique with more of its surroundings, or set replace_all", i, n, op.Path, editsBefore(i))
		case e.ReplaceAll:
			text = strings.ReplaceAll(text, e.Old, e.New)
		default:
			text = strings.Replace(text, e.Old, e.New, 1)
		}
	}
	return []byte(text), nil
}

// occurrences counts where old occurs in text, overlapping ones too
// ("aa" is twice in "aaa", where strings.Count finds one): an edit's old
// is exact only if it occurs once so.
func occurrences(text, old string) int {
	if old == "" {
		return strings.Count(text, old)
	}
	n := 0
	for i := strings.Index(text, old); i >= 0; n++ {
		j := strings.Index(text[i+1:], old)
		if j < 0 {
			return n + 1
		}
		i += 1 + j
	}
	return n
}

// editsBefore says, for edit i, that the edits before it were made first.
func editsBefore(i int) string {
	switch i {
	case 0:
		return ""
	case 1:
		return " (after edits[0])"
	}
	return " (after edits[0] to edits[" + strconv.Itoa(i-1) + "])"
}

// writeTo writes data to path (named by the field pf; mf names its mode)
// as FILE_WRITE does: through a final symlink in scope, over a regular file
// only, keeping an existing file's mode unless mode is given, refusing an
// existing path when createOnly.
func (r *runner) writeTo(pf, mf []string, path string, data []byte, mode string, createOnly bool) error {
	perm, explicit, err := parseMode(mf, path, mode, 0o644)
	if err != nil {
		return err
	}
	if createOnly {
		switch _, fi, err := r.resolveStat(pf, path, false); {
		case err != nil:
			return err
		case fi != nil:
			return opErr("op.create-only-exists", pf, path, nil,
				"create_only is set and %q already exists (%s)", path, describe(fi))
		}
	}
	p, fi, err := r.resolveStat(pf, path, true)
	switch {
	case err != nil:
		return err
	case fi == nil:
	case fi.IsDir():
		return opErr("op.target-is-directory", pf, path, nil, "%q is a directory", path)
	case !fi.Mode().IsRegular():
		return opErr("op.not-a-file", pf, path, nil, "%q is %s, not a regular file", path, describe(fi))
	}
	if err := r.parentDir(pf, path, p); err != nil {
		return err
	}
	if fi != nil && !explicit {
		perm = fi.Mode() & modeBits
	}
	return r.writeFile(pf, p, data, perm, fi)
}

// writeFile writes data to the resolved path p with exactly the mode perm.
// old describes the file p replaces, or is nil. A file its owner may not
// write is made writable for the write.
func (r *runner) writeFile(f []string, p string, data []byte, perm fs.FileMode, old fs.FileInfo) error {
	err := r.sys.WriteFile(p, data, perm)
	if errors.Is(err, fs.ErrPermission) && old != nil && old.Mode().Perm()&0o200 == 0 {
		if err := r.sys.Chmod(p, old.Mode()&modeBits|0o200); err != nil {
			return fsErr(f, "write", p, err)
		}
		err = r.sys.WriteFile(p, data, perm)
	}
	if err != nil {
		return fsErr(f, "write", p, err)
	}
	// Exact mode: an existing file keeps its own, a new one lost the umask.
	if err := r.sys.Chmod(p, perm); err != nil {
		return fsErr(f, "chmod", p, err)
	}
	return nil
}

// A deletion is one path FILE_DELETE removes.
type deletion struct {
	path  string
	dir   bool
	field []string // the operation.paths entry that named it
}

func (r *runner) fileDelete(f []string, op descriptors.FileDeleteOp) error {
	var errs OpErrors
	var dels []deletion
	for i, entry := range op.Paths {
		ef := field(f, "paths", strconv.Itoa(i))
		if !pathglob.HasMeta(entry) {
			d, err := r.literalDeletion(ef, entry)
			if err != nil {
				var oe *OpError
				if !errors.As(err, &oe) {
					return err
				}
				errs = append(errs, oe)
				continue
			}
			d.field = ef
			dels = append(dels, d)
			continue
		}
		matches, err := r.glob(ef, entry)
		if err != nil {
			var oe *OpError
			if !errors.As(err, &oe) {
				return err
			}
			errs = append(errs, oe)
			continue
		}
		if len(matches) == 0 {
			r.note("op.glob-no-match", ef, entry, "the glob %q matched nothing", entry)
		}
		for _, m := range matches {
			fi, err := r.lstat(ef, m)
			if err != nil {
				return err
			}
			if fi.IsDir() {
				errs = append(errs, opErr("op.delete-directory", ef, m, nil,
					"the glob %q matches the directory %q: FILE_DELETE deletes a directory only when a path names it and the scope is recursive; use DIRECTORY_DELETE", entry, m))
				continue
			}
			dels = append(dels, deletion{path: m, field: ef})
		}
	}
	if len(errs) > 0 {
		return errs
	}
	// Delete parents before children, and nothing twice.
	slices.SortFunc(dels, func(a, b deletion) int { return strings.Compare(a.path, b.path) })
	var gone []string
	for _, d := range dels {
		if under(d.path, gone) {
			continue
		}
		gone = append(gone, d.path)
		var err error
		if d.dir {
			err = r.sys.RemoveAll(d.path)
		} else {
			err = r.sys.Remove(d.path)
		}
		if err != nil {
			return fsErr(d.field, "delete", d.path, err)
		}
	}
	return nil
}

// literalDeletion checks a FILE_DELETE entry that names one path.
func (r *runner) literalDeletion(f []string, named string) (deletion, error) {
	p, fi, err := r.resolveStat(f, named, false)
	switch {
	case err != nil:
		return deletion{}, err
	case fi == nil:
		return deletion{}, opErr("op.path-missing", f, named, nil, "%q does not exist", named)
	case fi.IsDir() && !r.scope.recursive:
		return deletion{}, opErr("op.delete-directory", f, named, nil,
			"%q is a directory, and FILE_DELETE deletes a directory only when the scope is recursive; use DIRECTORY_DELETE", named)
	}
	return deletion{path: p, dir: fi.IsDir()}, nil
}

// under reports whether p is one of dirs or lies below one.
func under(p string, dirs []string) bool {
	for _, d := range dirs {
		if pathglob.Within(p, d) {
			return true
		}
	}
	return false
}

func (r *runner) fileMove(f []string, op descriptors.FileMoveOp) error {
	ff, tf := field(f, "from"), field(f, "to")
	from, err := r.resolve(ff, op.From, false)
	if err != nil {
		return err
	}
	to, err := r.resolve(tf, op.To, false)
	if err != nil {
		return err
	}
	ffi, err := r.lstat(ff, from)
	switch {
	case err != nil:
		return err
	case ffi == nil:
		return opErr("op.source-missing", ff, op.From, nil, "%q does not exist", op.From)
	}
	switch {
	case from == to:
		return opErr("op.move-into-itself", tf, op.To, nil, "%q and %q are the same path %q", op.From, op.To, to)
	case pathglob.Within(to, from):
		return opErr("op.move-into-itself", tf, op.To, nil, "%q lies inside %q, the path being moved", to, from)
	}
	if err := r.parentDir(tf, op.To, to); err != nil {
		return err
	}
	if ffi.IsDir() && !r.scope.recursive {
		ents, err := r.sys.ReadDir(from)
		if err != nil {
			return fsErr(ff, "list", from, err)
		}
		if len(ents) > 0 {
			return opErr("op.not-empty", ff, op.From, nil,
				"%q is a directory that is not empty, and moving its contents needs scope.filesystem.recursive", op.From)
		}
	}
	tfi, err := r.lstat(tf, to)
	switch {
	case err != nil:
		return err
	case tfi == nil:
	case !op.Overwrite:
		return opErr("op.target-exists", tf, op.To, nil, "%q already exists (%s) and overwrite is not set", op.To, describe(tfi))
	case tfi.IsDir():
		return opErr("op.target-is-directory", tf, op.To, nil, "%q is a directory, which overwrite never replaces", op.To)
	case ffi.IsDir():
		// rename(2) replaces a file with a file only.
		if err := r.sys.Remove(to); err != nil {
			return fsErr(tf, "replace", to, err)
		}
	}
	if err := r.sys.Rename(from, to); err != nil {
		return fsErr(f, "move", from, err)
	}
	return nil
}

func (r *runner) directoryCreate(f []string, op descriptors.DirectoryCreateOp) error {
	pf := field(f, "path")
	perm, _, err := parseMode(field(f, "mode"), op.Path, op.Mode, 0o755)
	if err != nil {
		return err
	}
	// The path itself: an existing directory (through a symlink too) is
	// fine with parents; a symlink to nothing is not a place to create one.
	_, lfi, err := r.resolveStat(pf, op.Path, false)
	if err != nil {
		return err
	}
	p, fi, err := r.resolveStat(pf, op.Path, true)
	switch {
	case err != nil:
		return err
	case fi != nil && fi.IsDir() && op.Parents:
		r.note("op.directory-exists", pf, op.Path, "the directory %q already exists", op.Path)
		return nil
	case fi != nil && fi.IsDir():
		return opErr("op.target-exists", pf, op.Path, nil, "the directory %q already exists (parents: true accepts it)", op.Path)
	case fi != nil:
		return opErr("op.target-exists", pf, op.Path, nil, "%q exists and is %s", op.Path, describe(fi))
	case lfi != nil:
		return opErr("op.target-exists", pf, op.Path, nil, "%q is a symlink to %q, which does not exist", op.Path, p)
	}
	// Missing ancestors, nearest first.
	var todo []string
	for dir := path.Dir(p); ; dir = path.Dir(dir) {
		dfi, err := r.lstat(pf, dir)
		if err != nil {
			return err
		}
		if dfi != nil {
			if !dfi.IsDir() {
				return opErr("op.parent-not-directory", pf, op.Path, nil, "%q is not a directory", dir)
			}
			break
		}
		todo = append(todo, dir)
	}
	if len(todo) > 0 && !op.Parents {
		return opErr("op.parent-missing", pf, op.Path, nil,
			"the directory %q does not exist (parents: true creates it)", todo[0])
	}
	for i := len(todo) - 1; i >= 0; i-- {
		if !r.scope.contains(todo[i]) {
			return opErr("op.parent-outside-scope", pf, op.Path, nil,
				"the missing directory %q lies outside the scope %s, so it is not created", todo[i], r.scope)
		}
	}
	for i := len(todo) - 1; i >= 0; i-- {
		if err := r.mkdir(pf, todo[i], 0o755); err != nil {
			return err
		}
	}
	return r.mkdir(pf, p, perm)
}

func (r *runner) mkdir(f []string, p string, perm fs.FileMode) error {
	if err := r.sys.Mkdir(p, perm); err != nil {
		return fsErr(f, "create directory", p, err)
	}
	if err := r.sys.Chmod(p, perm); err != nil {
		return fsErr(f, "chmod", p, err)
	}
	return nil
}

func (r *runner) directoryDelete(f []string, op descriptors.DirectoryDeleteOp) error {
	pf := field(f, "path")
	p, fi, err := r.resolveStat(pf, op.Path, false)
	switch {
	case err != nil:
		return err
	case fi == nil:
		return opErr("op.path-missing", pf, op.Path, nil, "%q does not exist", op.Path)
	case fi.Mode()&fs.ModeSymlink != 0:
		return opErr("op.not-a-directory", pf, op.Path, nil,
			"%q is a symlink, which DIRECTORY_DELETE does not follow; FILE_DELETE deletes the link", op.Path)
	case !fi.IsDir():
		return opErr("op.not-a-directory", pf, op.Path, nil, "%q is %s, not a directory", op.Path, describe(fi))
	}
	ents, err := r.sys.ReadDir(p)
	if err != nil {
		return fsErr(pf, "list", p, err)
	}
	switch {
	case len(ents) == 0:
		err = r.sys.Remove(p)
	case r.scope.recursive:
		err = r.sys.RemoveAll(p)
	default:
		return opErr("op.not-empty", pf, op.Path, nil,
			"the directory %q is not empty, and deleting its contents needs scope.filesystem.recursive", op.Path)
	}
	if err != nil {
		return fsErr(pf, "delete", p, err)
	}
	return nil
}

func (r *runner) configChange(f []string, op descriptors.ConfigChangeOp) error {
	pf := field(f, "path")
	p, fi, err := r.regularFile(pf, op.Path)
	if err != nil {
		return err
	}
	if fi.Size() > maxConfigSize {
		return opErr("op.config-too-large", pf, op.Path, nil,
			"%q is %d bytes, more than the %d a CONFIG_CHANGE edits", op.Path, fi.Size(), maxConfigSize)
	}
	rc, err := r.sys.Open(p)
	if err != nil {
		return fsErr(pf, "read", p, err)
	}
	data, err := io.ReadAll(io.LimitReader(rc, maxConfigSize+1))
	rc.Close()
	if err != nil {
		return fsErr(pf, "read", p, err)
	}
	if len(data) > maxConfigSize {
		return opErr("op.config-too-large", pf, op.Path, nil,
			"%q is more than the %d bytes a CONFIG_CHANGE edits", op.Path, maxConfigSize)
	}
	res, err := configedit.Edit(configedit.Format(op.Format), data, op.Set, op.Unset)
	var ce *configedit.Error
	switch {
	case errors.As(err, &ce) && errors.Is(err, configedit.ErrParse):
		return opErr("op.config-parse", pf, op.Path, err, "%q is not valid %s: %v", op.Path, strings.ToUpper(op.Format), ce)
	case errors.As(err, &ce):
		return opErr("op.config-key-conflict", configKeyField(f, op, ce.Key), op.Path, err, "in %q: %v", op.Path, ce)
	case err != nil:
		return err
	}
	for _, k := range res.Absent {
		r.note("op.config-key-absent", configKeyField(f, op, k), op.Path, "the key %q to unset is not in %q", k, op.Path)
	}
	if bytes.Equal(res.Data, data) {
		return nil
	}
	return r.writeFile(pf, p, res.Data, fi.Mode()&modeBits, fi)
}

// configKeyField returns the field naming the dotted key k of op: under
// set, else under unset, else the operation's path.
func configKeyField(f []string, op descriptors.ConfigChangeOp, k string) []string {
	if _, ok := op.Set[k]; ok {
		return field(f, "set", k)
	}
	for i, u := range op.Unset {
		if u == k {
			return field(f, "unset", strconv.Itoa(i))
		}
	}
	return field(f, "path")
}

// describe names the type of what fi describes, for messages.
func describe(fi fs.FileInfo) string {
	switch m := fi.Mode(); {
	case m.IsRegular():
		return "a file"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeSymlink != 0:
		return "a symlink"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "a special file"
}
