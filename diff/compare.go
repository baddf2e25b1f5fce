package diff

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/act-project/act/internal/digest"
	"github.com/act-project/act/internal/overlay"
	"github.com/act-project/act/internal/parallel"
	"github.com/act-project/act/internal/pathglob"
)

// Tree is the real tree as Compare reads it. Paths are absolute and clean;
// errors wrap the usual fs errors. sandbox.RealSystem satisfies it.
type Tree interface {
	// Lstat describes path without following a final symlink.
	Lstat(path string) (fs.FileInfo, error)
	// Open opens a regular file for reading.
	Open(path string) (io.ReadCloser, error)
	// ReadDir lists a directory.
	ReadDir(path string) ([]fs.DirEntry, error)
	// Readlink returns a symlink's target.
	Readlink(path string) (string, error)
}

// Compare returns the changes that the layer whose upper dir is upperDir
// makes to the real tree, sorted by [Less]. The real absolute path P is at
// upperDir+P in the layer. Only the subtrees of roots (the scope paths) are
// compared; the directories above them are structure, not changes. A
// missing upperDir is a layer with no changes.
//
// A file is modified when its mode, size or content differs from the real
// one (a file copied up unchanged is no change), a directory when its mode
// does, a symlink when its target does. A whiteout over nothing real is no
// change.
func Compare(upperDir string, roots []string, real Tree) ([]Change, error) {
	changes, _, err := CompareExtra(upperDir, roots, real, Limits{})
	return changes, err
}

// CompareExtra is [Compare] within the limits lim, and also returns what
// its reading of the files learnt on the way ([Extra]), which spares its
// caller reading them again. The first entry past a limit stops it with a
// [*LimitError]: what it holds is bounded by lim, however much the layer
// holds.
func CompareExtra(upperDir string, roots []string, real Tree, lim Limits) ([]Change, Extra, error) {
	rs, err := cleanRoots(roots)
	if err != nil {
		return nil, Extra{}, err
	}
	c := &comparer{upper: filepath.Clean(upperDir), real: real, lim: lim, x: Extra{before: map[string]bool{}, after: map[string]bool{}}}
	for _, r := range rs {
		if err := c.root(r); err != nil {
			return nil, Extra{}, err
		}
	}
	// The walk found what changed, and which files need hashing; the
	// hashing, most of the cost, runs on every CPU.
	if err := c.hashAll(); err != nil {
		return nil, Extra{}, err
	}
	for _, r := range c.found {
		if r.kind == Modify && r.before.equal(r.after) {
			continue // a file copied up unchanged
		}
		c.add(r.path, r.kind, r.before, r.after)
	}
	slices.SortStableFunc(c.changes, func(a, b Change) int {
		if Less(a, b) {
			return -1
		}
		if Less(b, a) {
			return 1
		}
		return 0
	})
	c.x.LayerBytes = c.names + c.summed
	for _, j := range c.hashes {
		if !j.real {
			c.x.LayerBytes += *j.s.size
		}
	}
	return c.changes, c.x, nil
}

// Limits bound what a [CompareExtra] reads of a layer, and so the memory
// it holds (docs/lifecycle.md, "Limits of a dry run"). A zero field is no
// limit.
type Limits struct {
	// MaxChanges is the most changes: an entry that is a change whatever
	// its hash (created, deleted, or another type, mode, target or size)
	// counts as soon as the walk meets it. A file whose only difference
	// may be its content counts once hashed, and so cannot stop the walk:
	// such files have a real twin, and are as many as the real tree has.
	MaxChanges int64
	// MaxBytes is the most bytes of the layer below the roots, as
	// [Extra.LayerBytes] counts them: every entry's name (a whiteout's
	// too) and every regular file's size.
	MaxBytes int64
	// MaxPathBytes is the most bytes of the paths the walk keeps: every
	// entry it notes (a change, or a file it must hash to tell) costs the
	// length of its whole path, which is what act holds of it. MaxBytes
	// counts each name once; a deep tree makes every path long, so that a
	// layer of few bytes may still hold gigabytes of paths.
	MaxPathBytes int64
	// Sums, if not nil, gives the sum of the layer's file at the real path
	// p, read already elsewhere: from the tmpfs upper the layer was copied
	// from, beside the copy ([SumTree]). A layer file whose size and
	// modification time are its sum's is not read again; any other is.
	Sums func(p string) (FileSum, bool)
}

// A LimitError is a [CompareExtra] stopped at the first entry past one of
// its [Limits]: the layer holds more than Limit changes (Bytes and Paths
// false), bytes (Bytes) or bytes of paths (Paths). Seen is what the walk
// had counted when it stopped.
type LimitError struct {
	Bytes       bool
	Paths       bool
	Limit, Seen int64
}

func (e *LimitError) Error() string {
	switch {
	case e.Bytes:
		return fmt.Sprintf("diff: the layer holds more than %d bytes of names and content (%d when the diff stopped)", e.Limit, e.Seen)
	case e.Paths:
		return fmt.Sprintf("diff: the layer's entries have more than %d bytes of paths (%d when the diff stopped)", e.Limit, e.Seen)
	}
	return fmt.Sprintf("diff: the layer makes more than %d changes", e.Limit)
}

// Extra is what [CompareExtra] learnt of the files it read.
type Extra struct {
	// LayerBytes is what the layer holds below the roots: the name of
	// every entry (a whiteout's too) and the size of every regular file
	// (every one of them is read, changed or not).
	LayerBytes int64
	// The files known to be binary as [Unified] defines it: a NUL byte in
	// the first [SniffSize] bytes, or larger than [MaxTextSize]. A file
	// not recorded may be either.
	before, after map[string]bool
}

// Binary reports whether Unified of the change c, its sides read as they
// were hashed, would find c binary. False means unknown.
func (x Extra) Binary(c Change) bool {
	switch c.Kind {
	case Create:
		return x.after[c.Path]
	case Delete:
		return x.before[c.Path]
	}
	return x.before[c.Path] || x.after[c.Path]
}

// cleanRoots cleans the scope roots, drops those inside another and sorts
// them.
func cleanRoots(roots []string) ([]string, error) {
	var rs []string
	for _, r := range roots {
		if !filepath.IsAbs(r) {
			return nil, fmt.Errorf("diff: scope path %q is not absolute", r)
		}
		rs = append(rs, filepath.Clean(r))
	}
	slices.SortFunc(rs, comparePaths)
	var out []string
	for _, r := range rs {
		if n := len(out); n > 0 && pathglob.Within(r, out[n-1]) {
			continue
		}
		out = append(out, r)
	}
	return out, nil
}

// Less orders changes by path, component by component (a directory's
// contents right after it), and at one path a delete before a create.
func Less(a, b Change) bool {
	if c := comparePaths(a.Path, b.Path); c != 0 {
		return c < 0
	}
	return kindRank(a.Kind) < kindRank(b.Kind)
}

func kindRank(k Kind) int {
	switch k {
	case Delete:
		return 0
	case Create:
		return 1
	}
	return 2
}

// comparePaths compares paths as sequences of components: as strings
// with "/" ordered before every other byte. It allocates nothing, as a
// sort of many changes calls it often.
func comparePaths(a, b string) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		x, y := a[i], b[i]
		if x == y {
			continue
		}
		switch {
		case x == '/':
			return -1
		case y == '/':
			return 1
		case x < y:
			return -1
		}
		return 1
	}
	return cmp.Compare(len(a), len(b))
}

// comparer holds the state of one Compare.
type comparer struct {
	upper string
	real  Tree
	// found are the changes the walk saw, hashes the files whose size and
	// sha256 they still lack; changes is found once hashAll filled those in.
	found   []found
	hashes  []hashJob
	changes []Change
	x       Extra
	// lim are the limits; n counts the changes known so far, bytes the
	// names and sizes of the layer's entries met, names the names alone.
	lim          Limits
	n            int64
	bytes, names int64
	paths        int64
	// summed is the size of the layer files whose sums Limits.Sums gave.
	summed int64
}

// charge counts n more bytes of the layer, name bytes if name.
func (c *comparer) charge(n int64, name bool) error {
	c.bytes += n
	if name {
		c.names += n
	}
	if c.lim.MaxBytes > 0 && c.bytes > c.lim.MaxBytes {
		return &LimitError{Bytes: true, Limit: c.lim.MaxBytes, Seen: c.bytes}
	}
	return nil
}

// A found change: a Modify is one only if its sides differ once hashed.
type found struct {
	path          string
	kind          Kind
	before, after *side
}

// A hashJob fills in the size and sha256 of the file side s at p.
type hashJob struct {
	p    string
	real bool
	s    *side
}

// hashAll runs the pending hash jobs, on every CPU.
func (c *comparer) hashAll() error {
	errs := make([]error, len(c.hashes))
	parallel.Do(len(c.hashes), parallel.CPUs(), 8, func(_, i int) {
		errs[i] = c.hash(c.hashes[i])
	})
	return errors.Join(errs...)
}

// hash reads the file of j and sets its side's size and sha256.
func (c *comparer) hash(j hashJob) error {
	var r io.ReadCloser
	var err error
	if j.real {
		r, err = c.real.Open(j.p)
	} else {
		r, err = digest.OpenRaw(c.up(j.p), 0)
	}
	if err != nil {
		return err
	}
	defer r.Close()
	n, sum, binary, err := sumReader(r)
	if err != nil {
		return fmt.Errorf("read %s: %w", j.p, err)
	}
	j.s.binary = binary
	j.s.size, j.s.sum = &n, &sum
	return nil
}

// A sniffer reads r and notes whether the head Unified sniffs (the first
// [SniffSize] bytes of the first read that yields any) holds a NUL: that
// makes the file binary whatever follows.
type sniffer struct {
	r      io.Reader
	seen   bool
	binary bool
}

func (s *sniffer) Read(b []byte) (int, error) {
	n, err := s.r.Read(b)
	if n > 0 && !s.seen {
		s.seen = true
		s.binary = bytes.IndexByte(b[:min(n, SniffSize)], 0) >= 0
	}
	return n, err
}

// up returns the layer path of the real path p.
func (c *comparer) up(p string) string { return c.upper + p }

// root compares the scope root r.
func (c *comparer) root(r string) error {
	// The upper dir's ancestors of r: an opaque one hides what is below
	// (the real r is gone unless the layer has it), a whiteout or a
	// non-directory removes r outright.
	inOpaque, gone := false, false
	if r != "/" {
		for a := range ancestors(r) {
			fi, err := lstat(c.up(a))
			if err != nil {
				return err
			}
			if fi == nil {
				break
			}
			if !fi.IsDir() {
				gone = true
				break
			}
			inOpaque = inOpaque || overlay.IsOpaque(c.up(a))
		}
	}
	twin, err := c.realLstat(r)
	if err != nil {
		return err
	}
	var fi fs.FileInfo
	if !gone {
		if fi, err = lstat(c.up(r)); err != nil {
			return err
		}
	}
	switch {
	case fi == nil && !gone && !inOpaque, fi != nil && overlay.IsWhiteout(fi) && twin == nil:
		return nil
	case fi == nil || overlay.IsWhiteout(fi):
		if twin == nil {
			return nil
		}
		return c.deleted(r, twin)
	}
	return c.walk(r, fi, twin, inOpaque)
}

// ancestors yields the proper ancestors of the absolute path p, from the
// first component down, without "/".
func ancestors(p string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for i := 1; i < len(p); i++ {
			if p[i] == '/' && !yield(p[:i]) {
				return
			}
		}
	}
}

// walk compares the upper entry fi at p (not a whiteout) with its real
// twin (nil when absent), and what lies below it. inOpaque is true below
// an opaque directory, where the real tree does not show through.
func (c *comparer) walk(p string, fi, twin fs.FileInfo, inOpaque bool) error {
	below, err := c.entry(p, fi, twin, inOpaque)
	if err != nil || below == nil {
		return err
	}
	return c.children(*below)
}

// A dir is an upper directory whose entries are still to be compared.
// realDir tells whether the real p is a directory; opaque whether the real
// p's content is hidden, so that its children missing from the upper dir
// are deleted.
type dir struct {
	p               string
	realDir, opaque bool
}

// entry compares the upper entry fi at p (not a whiteout) with its real
// twin (nil when absent), not what lies below it: for a directory it
// returns the dir to compare next.
func (c *comparer) entry(p string, fi, twin fs.FileInfo, inOpaque bool) (*dir, error) {
	if fi.Mode().IsRegular() {
		if err := c.charge(fi.Size(), false); err != nil {
			return nil, err
		}
	}
	after, err := c.describe(p, fi, false)
	if err != nil {
		return nil, err
	}
	var before *side
	if twin != nil {
		if before, err = c.describe(p, twin, true); err != nil {
			return nil, err
		}
	}
	switch {
	case before == nil:
		err = c.find(p, Create, nil, after, true)
	case before.typ != after.typ:
		if err = c.find(p, Delete, before, nil, true); err == nil {
			err = c.find(p, Create, nil, after, true)
		}
		before = nil
	default:
		// Kept if the sides differ; before the hashes, a change for
		// sure if anything but the content does.
		changed := !before.equal(after) || fi.Mode().IsRegular() && fi.Size() != twin.Size()
		err = c.find(p, Modify, before, after, changed)
	}
	if err != nil || after.typ != TypeDir {
		return nil, err
	}
	return &dir{p: p, realDir: before != nil, opaque: inOpaque || overlay.IsOpaque(c.up(p))}, nil
}

// readBatch is how many entries of a directory children reads at a time:
// a directory costs its walk that many entries, however many it holds.
const readBatch = 256

// children compares the entries of the upper directory d. It reads them
// readBatch at a time, and compares what lies below its subdirectories
// once d is closed, so that a deep tree holds one directory open at a time.
func (c *comparer) children(d dir) error {
	f, err := os.Open(c.up(d.p))
	if err != nil {
		return err
	}
	// present: the upper entries of an opaque d over a real directory,
	// whose real entries not among them are deleted.
	var present map[string]bool
	if d.realDir && d.opaque {
		present = map[string]bool{}
	}
	var subs []dir
	dfd := int(f.Fd())
	for {
		ents, rerr := f.ReadDir(readBatch)
		for _, e := range ents {
			sub, err := c.child(d, dfd, e, present)
			if err != nil {
				f.Close()
				return err
			}
			if sub != nil {
				subs = append(subs, *sub)
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			f.Close()
			return rerr
		}
	}
	if err := f.Close(); err != nil {
		return err
	}
	for _, s := range subs {
		if err := c.children(s); err != nil {
			return err
		}
	}
	if present == nil {
		return nil
	}
	p := d.p
	real, err := c.real.ReadDir(p)
	if err != nil {
		return err
	}
	for _, e := range real {
		if present[e.Name()] {
			continue
		}
		child := filepath.Join(p, e.Name())
		twin, err := c.realLstat(child)
		if err != nil {
			return err
		}
		if twin != nil {
			if err := c.deleted(child, twin); err != nil {
				return err
			}
		}
	}
	return nil
}

// child compares the entry e of the upper directory d, open as dfd, and
// returns the dir to compare next when e is a directory. present, if not
// nil, gathers the entries that are not whiteouts.
func (c *comparer) child(d dir, dfd int, e fs.DirEntry, present map[string]bool) (*dir, error) {
	if err := c.charge(int64(len(e.Name())), true); err != nil {
		return nil, err
	}
	child := filepath.Join(d.p, e.Name())
	cfi, err := statAt(dfd, e.Name(), c.up(child))
	if err != nil {
		return nil, err
	}
	var twin fs.FileInfo
	if d.realDir && !(d.opaque && overlay.IsWhiteout(cfi)) {
		if twin, err = c.realLstat(child); err != nil {
			return nil, err
		}
	}
	if overlay.IsWhiteout(cfi) {
		if twin != nil {
			return nil, c.deleted(child, twin)
		}
		return nil, nil
	}
	if present != nil {
		present[e.Name()] = true
	}
	return c.entry(child, cfi, twin, d.opaque)
}

// deleted records the deletion of the real entry twin at p. A directory is
// one change; its contents are covered by it.
func (c *comparer) deleted(p string, twin fs.FileInfo) error {
	before, err := c.describe(p, twin, true)
	if err != nil {
		return err
	}
	return c.find(p, Delete, before, nil, true)
}

// find notes a change the walk found, made whole once its files are
// hashed. changed tells that it is a change whatever the hashes say: it
// counts against MaxChanges at once.
func (c *comparer) find(p string, k Kind, before, after *side, changed bool) error {
	// Every entry noted is kept until the end, with its whole path.
	c.paths += int64(len(p))
	if c.lim.MaxPathBytes > 0 && c.paths > c.lim.MaxPathBytes {
		return &LimitError{Paths: true, Limit: c.lim.MaxPathBytes, Seen: c.paths}
	}
	c.found = append(c.found, found{path: p, kind: k, before: before, after: after})
	if !changed {
		return nil
	}
	c.n++
	if c.lim.MaxChanges > 0 && c.n > c.lim.MaxChanges {
		return &LimitError{Limit: c.lim.MaxChanges, Seen: c.n}
	}
	return nil
}

// add records a change of p from before to after (either may be nil).
func (c *comparer) add(p string, k Kind, before, after *side) {
	ch := Change{Path: p, Kind: k}
	if before != nil {
		if before.binary {
			c.x.before[p] = true
		}
		ch.Type = before.typ
		ch.ModeBefore, ch.SizeBefore, ch.SHA256Before, ch.LinkBefore = before.mode, before.size, before.sum, before.link
		ch.OwnerBefore = before.uid
	}
	if after != nil {
		if after.binary {
			c.x.after[p] = true
		}
		ch.Type = after.typ
		ch.ModeAfter, ch.SizeAfter, ch.SHA256After, ch.LinkAfter = after.mode, after.size, after.sum, after.link
	}
	c.changes = append(c.changes, ch)
}

// side is one side of a change.
type side struct {
	typ  string
	mode *string
	size *int64
	sum  *string
	link *string
	// uid owns a real entry (nil for the layer's: the promotion decides).
	uid *uint32
	// binary: a file known binary (Extra), not part of the change.
	binary bool
}

func (s *side) equal(o *side) bool {
	eq := func(a, b *string) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }
	return s.typ == o.typ && eq(s.mode, o.mode) && eq(s.sum, o.sum) && eq(s.link, o.link) &&
		(s.size == nil) == (o.size == nil) && (s.size == nil || *s.size == *o.size)
}

// describe reads the entry fi at p, in the real tree when real is true and
// in the layer otherwise: its type, mode, and target of a symlink; the size
// and sha256 of a file come later, from hashAll.
func (c *comparer) describe(p string, fi fs.FileInfo, real bool) (s *side, err error) {
	if real {
		defer func() {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok && s != nil {
				s.uid = &st.Uid
			}
		}()
	}
	m := fi.Mode()
	switch {
	case m.IsRegular() && !real && fi.Size() == 0:
		// An empty layer file needs no reading: a layer is not written
		// while it is diffed, and apply checks every digest again.
		return &side{typ: TypeFile, mode: ptr(FormatMode(m)), size: ptr(int64(0)), sum: ptr(emptySHA256)}, nil
	case m.IsRegular() && !real && c.lim.Sums != nil:
		if sum, ok := c.lim.Sums(p); ok && sum.Size == fi.Size() && sum.ModTime == fi.ModTime().UnixNano() {
			c.summed += sum.Size
			return &side{typ: TypeFile, mode: ptr(FormatMode(m)), size: ptr(sum.Size), sum: ptr(sum.SHA256), binary: sum.Binary}, nil
		}
		fallthrough
	case m.IsRegular():
		s := &side{typ: TypeFile, mode: ptr(FormatMode(m))}
		c.hashes = append(c.hashes, hashJob{p: p, real: real, s: s}) // size and sha256: hashAll
		return s, nil
	case m.IsDir():
		return &side{typ: TypeDir, mode: ptr(FormatMode(m))}, nil
	case m&fs.ModeSymlink != 0:
		var target string
		var err error
		if real {
			target, err = c.real.Readlink(p)
		} else {
			target, err = os.Readlink(c.up(p))
		}
		if err != nil {
			return nil, err
		}
		return &side{typ: TypeSymlink, link: &target}, nil
	}
	where := "the layer"
	if real {
		where = "the real tree"
	}
	return nil, fmt.Errorf("diff %s: unsupported file type %v in %s", p, m.Type(), where)
}

func ptr[T any](v T) *T { return &v }

// emptySHA256 is the sha256 of no bytes.
const emptySHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

// statAt is lstat(2) of name in the directory dfd (whose path is path's
// directory, for errors): one lookup however deep the directory lies, where
// an lstat of the whole path walks every component again.
func statAt(dfd int, name, path string) (fs.FileInfo, error) {
	var st unix.Stat_t
	for {
		err := unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "lstat", Path: path, Err: err}
		}
		break
	}
	fi := &statInfo{name: name, sys: syscall.Stat_t{
		Dev: st.Dev, Ino: st.Ino, Nlink: st.Nlink, Mode: st.Mode, Uid: st.Uid, Gid: st.Gid, Rdev: st.Rdev,
		Size: st.Size, Blksize: st.Blksize, Blocks: st.Blocks,
		Atim: syscall.Timespec{Sec: st.Atim.Sec, Nsec: st.Atim.Nsec},
		Mtim: syscall.Timespec{Sec: st.Mtim.Sec, Nsec: st.Mtim.Nsec},
		Ctim: syscall.Timespec{Sec: st.Ctim.Sec, Nsec: st.Ctim.Nsec},
	}}
	fi.mode = fs.FileMode(st.Mode & 0o777)
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFBLK:
		fi.mode |= fs.ModeDevice
	case unix.S_IFCHR:
		fi.mode |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFDIR:
		fi.mode |= fs.ModeDir
	case unix.S_IFIFO:
		fi.mode |= fs.ModeNamedPipe
	case unix.S_IFLNK:
		fi.mode |= fs.ModeSymlink
	case unix.S_IFSOCK:
		fi.mode |= fs.ModeSocket
	}
	if st.Mode&unix.S_ISGID != 0 {
		fi.mode |= fs.ModeSetgid
	}
	if st.Mode&unix.S_ISUID != 0 {
		fi.mode |= fs.ModeSetuid
	}
	if st.Mode&unix.S_ISVTX != 0 {
		fi.mode |= fs.ModeSticky
	}
	return fi, nil
}

// statInfo is the fs.FileInfo of statAt, as os.Lstat makes it.
type statInfo struct {
	name string
	mode fs.FileMode
	sys  syscall.Stat_t
}

func (s *statInfo) Name() string       { return s.name }
func (s *statInfo) Size() int64        { return s.sys.Size }
func (s *statInfo) Mode() fs.FileMode  { return s.mode }
func (s *statInfo) ModTime() time.Time { return time.Unix(s.sys.Mtim.Sec, s.sys.Mtim.Nsec) }
func (s *statInfo) IsDir() bool        { return s.mode.IsDir() }
func (s *statInfo) Sys() any           { return &s.sys }

// realLstat is Lstat of the real tree with absence as nil.
func (c *comparer) realLstat(p string) (fs.FileInfo, error) {
	fi, err := c.real.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return nil, nil
	}
	return fi, err
}

// lstat is os.Lstat with absence as nil.
func lstat(name string) (fs.FileInfo, error) {
	fi, err := os.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return nil, nil
	}
	return fi, err
}

// FormatMode returns the mode bits of m as a 4-digit octal string such as
// "0644" or "4755": permissions, setuid, setgid and sticky.
func FormatMode(m fs.FileMode) string {
	v := uint32(m.Perm())
	if m&fs.ModeSetuid != 0 {
		v |= 0o4000
	}
	if m&fs.ModeSetgid != 0 {
		v |= 0o2000
	}
	if m&fs.ModeSticky != 0 {
		v |= 0o1000
	}
	return fmt.Sprintf("%04o", v)
}

// ParseMode is the inverse of [FormatMode].
func ParseMode(s string) (fs.FileMode, error) {
	v, err := strconv.ParseUint(s, 8, 32)
	if err != nil || len(s) != 4 || v > 0o7777 {
		return 0, fmt.Errorf("mode %q is not 4 octal digits", s)
	}
	m := fs.FileMode(v & 0o777)
	if v&0o4000 != 0 {
		m |= fs.ModeSetuid
	}
	if v&0o2000 != 0 {
		m |= fs.ModeSetgid
	}
	if v&0o1000 != 0 {
		m |= fs.ModeSticky
	}
	return m, nil
}
