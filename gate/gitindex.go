package gate

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// git's index (gitformat-index(5)), read for what `git status` shows:
// which paths are tracked, and which of them a flag hides from it.

// Index entry flags that hide a tracked file's changes from git status.
const (
	indexAssumeValid  = 0x8000 // "assume unchanged" (flags)
	indexExtended     = 0x4000 // an extended-flags word follows (flags)
	indexSkipWorktree = 0x4000 // extended flags
)

// An indexEntry is one path of the index.
type indexEntry struct {
	// stat is the cached stat data (ctime, mtime, dev, ino, mode, uid,
	// gid, size); oid the object id.
	stat [40]byte
	oid  []byte
	// hidden names the flag that hides the path from git status, "".
	hidden string
	dir    bool // a sparse index's directory entry
}

// A gitIndex is a parsed index file.
type gitIndex struct {
	hashLen int
	entries map[string]indexEntry
	// ext holds the optional extensions that change what git status
	// shows without an entry's flag: the untracked cache (UNTR), the
	// file system monitor's token (FSMN) and a split index's link (link).
	ext map[string][]byte
}

var errIndexFormat = errors.New("not an index git reads")

// parseIndex parses data, an index file: versions 2 to 4, SHA-1 or
// SHA-256, checked against its trailing checksum as git checks it.
func parseIndex(data []byte) (*gitIndex, error) {
	var last error
	for _, hashLen := range []int{sha1.Size, sha256.Size} {
		ix, err := parseIndexHash(data, hashLen)
		if err == nil {
			return ix, nil
		}
		last = err
	}
	return nil, last
}

func parseIndexHash(data []byte, hashLen int) (*gitIndex, error) {
	if len(data) < 12+hashLen || string(data[:4]) != "DIRC" {
		return nil, errIndexFormat
	}
	body, sum := data[:len(data)-hashLen], data[len(data)-hashLen:]
	if !bytes.Equal(sum, make([]byte, hashLen)) { // index.skipHash writes zeros
		var got []byte
		if hashLen == sha1.Size {
			s := sha1.Sum(body)
			got = s[:]
		} else {
			s := sha256.Sum256(body)
			got = s[:]
		}
		if !bytes.Equal(got, sum) {
			return nil, fmt.Errorf("%w: bad checksum", errIndexFormat)
		}
	}
	version := binary.BigEndian.Uint32(body[4:])
	if version < 2 || version > 4 {
		return nil, fmt.Errorf("%w: version %d", errIndexFormat, version)
	}
	n := binary.BigEndian.Uint32(body[8:])
	ix := &gitIndex{hashLen: hashLen, entries: map[string]indexEntry{}, ext: map[string][]byte{}}
	off, prev := 12, ""
	for range n {
		var e indexEntry
		fixed := 40 + hashLen + 2
		if off+fixed > len(body) {
			return nil, errIndexFormat
		}
		start := off
		copy(e.stat[:], body[off:off+40])
		e.oid = body[off+40 : off+40+hashLen]
		flags := binary.BigEndian.Uint16(body[off+40+hashLen:])
		off += fixed
		var ext uint16
		if flags&indexExtended != 0 {
			if version < 3 || off+2 > len(body) {
				return nil, errIndexFormat
			}
			ext = binary.BigEndian.Uint16(body[off:])
			off += 2
		}
		var name string
		if version == 4 {
			strip, k := gitVarint(body[off:])
			if k <= 0 || strip > uint64(len(prev)) {
				return nil, errIndexFormat
			}
			off += k
			end := bytes.IndexByte(body[off:], 0)
			if end < 0 {
				return nil, errIndexFormat
			}
			name = prev[:len(prev)-int(strip)] + string(body[off:off+end])
			off += end + 1
		} else {
			end := bytes.IndexByte(body[off:], 0)
			if end < 0 {
				return nil, errIndexFormat
			}
			name = string(body[off : off+end])
			// Padded with 1 to 8 NULs to a multiple of 8 bytes.
			off = start + (off-start+end+8)&^7
			if off > len(body) {
				return nil, errIndexFormat
			}
		}
		prev = name
		mode := binary.BigEndian.Uint32(e.stat[24:])
		switch {
		case flags&indexAssumeValid != 0:
			e.hidden = "assume-unchanged"
		case ext&indexSkipWorktree != 0:
			e.hidden = "skip-worktree"
		}
		if mode&0o170000 == 0o040000 { // sparse index: a directory
			e.dir = true
			name = strings.TrimSuffix(name, "/")
		}
		if old, ok := ix.entries[name]; !ok || old.hidden == "" {
			ix.entries[name] = e // any stage; a hidden one wins
		}
	}
	for off+8 <= len(body) {
		sig := string(body[off : off+4])
		size := int(binary.BigEndian.Uint32(body[off+4:]))
		off += 8
		if size < 0 || off+size > len(body) {
			return nil, errIndexFormat
		}
		switch sig {
		case "UNTR", "FSMN", "link":
			ix.ext[sig] = body[off : off+size]
		}
		off += size
	}
	if off != len(body) {
		return nil, errIndexFormat
	}
	return ix, nil
}

// gitVarint decodes git's offset varint (varint.c): each continuation
// adds one before shifting.
func gitVarint(b []byte) (uint64, int) {
	var val uint64
	for i, c := range b {
		if i > 0 {
			val++
		}
		if i >= 9 {
			return 0, 0
		}
		val = val<<7 | uint64(c&0x7f)
		if c&0x80 == 0 {
			return val, i + 1
		}
	}
	return 0, 0
}

// lookup returns the entry of path, or of the sparse directory that
// holds it.
func (ix *gitIndex) lookup(path string) (indexEntry, bool) {
	if e, ok := ix.entries[path]; ok {
		return e, true
	}
	for d := path; ; {
		i := strings.LastIndexByte(d, '/')
		if i < 0 {
			return indexEntry{}, false
		}
		d = d[:i]
		if e, ok := ix.entries[d]; ok && e.dir {
			return e, true
		}
	}
}

// blobID is git's object id of a blob holding data, for an index of
// hashLen.
func blobID(data []byte, hashLen int) []byte {
	head := "blob " + strconv.Itoa(len(data)) + "\x00"
	if hashLen == sha256.Size {
		h := sha256.New()
		h.Write([]byte(head))
		h.Write(data)
		return h.Sum(nil)
	}
	h := sha1.New()
	h.Write([]byte(head))
	h.Write(data)
	return h.Sum(nil)
}
