package audit

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/mod/sumdb/tlog"
	"golang.org/x/sys/unix"

	"github.com/act-project/act/internal/atomicfile"
)

// TileHeight is the height of a c2sp.org/tlog-tiles tile: 256 hashes.
const TileHeight = 8

// MaxEntrySize is the largest entry an entry bundle can hold: its length
// is a big-endian uint16.
const MaxEntrySize = 1<<16 - 1

// A TilesReport is what ExportTiles wrote.
type TilesReport struct {
	Dir     string `json:"dir"`
	Records int64  `json:"records"`
	// Previous is the size of the checkpoint DIR held before (0 for none).
	Previous   int64  `json:"previous"`
	Checkpoint string `json:"checkpoint"`
	// Written lists the files written, relative to Dir, in the order
	// written; the checkpoint is last.
	Written []string `json:"written"`
	// Withheld lists the entry bundles not written, each with why: a
	// bundle holding a record pruned by gc (its body is gone) or one
	// larger than an entry may be. Their hash tiles are written all the
	// same, so every proof still works.
	Withheld []string `json:"withheld,omitempty"`
}

// ExportTiles verifies the log in dir (as Verify does, with opts) and
// writes it to out as a c2sp.org/tlog-tiles log: the hash tiles
// tile/<L>/<N>[.p/<W>], the entry bundles tile/entries/<N>[.p/<W>] (each
// entry a big-endian uint16 length and the record's payload, the bytes
// whose RFC 6962 leaf hash is the tree's leaf), and last the log's own
// newest signed checkpoint at out/checkpoint, carrying after its own
// signature the cosignatures stored in witness/ for that very checkpoint
// by the witnesses of opts.Witnesses (docs/audit.md, "A fleet").
//
// An export into a directory exported before writes only what is new: a
// full tile already there is never rewritten (it is compared, and one
// that differs is an error), the partial tiles of the new size are added
// beside the old ones (clients holding the older checkpoint still find
// theirs). Each file is written to a temporary name and renamed; the
// tiles are synced before the checkpoint is replaced. The checkpoint
// already in out must be one of this log's, no larger than the log and
// consistent with it: out is never made to describe another tree.
func ExportTiles(dir, out string, opts VerifyOptions) (TilesReport, error) {
	rep := TilesReport{Dir: out}
	r, s, err := scan(dir, opts)
	if err != nil {
		return rep, err
	}
	n := r.Records
	rep.Records = n
	if n == 0 {
		return rep, errors.New("audit: the log holds no record yet: nothing to export")
	}
	rf := s.reader()
	root, err := tlog.TreeHash(n, rf)
	if err != nil {
		return rep, err
	}
	cpText := s.lines[n-1].Checkpoint + cosignatures(dir, s, r.Origin, n, root, opts.Witnesses)
	rep.Checkpoint = cpText

	// What out holds already.
	cpPath := filepath.Join(out, CheckpointFile)
	if old, err := os.ReadFile(cpPath); err == nil {
		cp, err := openCheckpoint(string(old), s.verif, r.Origin)
		if err == errUnknownKey {
			return rep, fmt.Errorf("audit: %s is not signed by this log's key: another log's tiles", cpPath)
		}
		if err != nil {
			return rep, fmt.Errorf("audit: %s: %v", cpPath, err)
		}
		if cp.N > n {
			return rep, fmt.Errorf("audit: %s has %d records, the log %d: the log was truncated", cpPath, cp.N, n)
		}
		proof, err := tlog.ProveTree(n, cp.N, rf)
		if err == nil {
			err = tlog.CheckTree(proof, n, root, cp.N, cp.Hash)
		}
		if err != nil {
			return rep, fmt.Errorf("audit: the log does not extend %s (size %d): rewritten", cpPath, cp.N)
		}
		rep.Previous = cp.N
	} else if !errors.Is(err, fs.ErrNotExist) {
		return rep, fmt.Errorf("audit: %w", err)
	}

	write := func(rel string, data []byte, full bool) error {
		name := filepath.Join(out, filepath.FromSlash(rel))
		if old, err := os.ReadFile(name); err == nil {
			if bytes.Equal(old, data) {
				return nil
			}
			if full {
				return fmt.Errorf("audit: %s differs from the log's tile: not this log's, or altered", name)
			}
		}
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			return err
		}
		if err := atomicfile.Replace(name, data, 0o644); err != nil {
			return err
		}
		rep.Written = append(rep.Written, rel)
		return nil
	}
	for _, t := range tlog.NewTiles(TileHeight, 0, n) {
		full := t.W == 1<<TileHeight
		data, err := tlog.ReadTileData(t, rf)
		if err != nil {
			return rep, fmt.Errorf("audit: tile %s: %v", TilePath(t), err)
		}
		if err := write(TilePath(t), data, full); err != nil {
			return rep, err
		}
		if t.L != 0 {
			continue
		}
		et := t
		et.L = -1
		bundle, why := entryBundle(s, t)
		if why != "" {
			rep.Withheld = append(rep.Withheld, TilePath(et)+": "+why)
			continue
		}
		if err := write(TilePath(et), bundle, full); err != nil {
			return rep, err
		}
	}
	// The tiles are durable before the checkpoint that needs them.
	if len(rep.Written) > 0 {
		if err := syncFS(out); err != nil {
			return rep, err
		}
	}
	if old, err := os.ReadFile(cpPath); err != nil || string(old) != cpText {
		if err := os.MkdirAll(out, 0o755); err != nil {
			return rep, err
		}
		if err := atomicfile.WriteFile(cpPath, []byte(cpText), 0o644); err != nil {
			return rep, err
		}
		rep.Written = append(rep.Written, CheckpointFile)
	}
	return rep, nil
}

// entryBundle is the entry bundle of level-0 tile t, or why it cannot be
// written.
func entryBundle(s *scanned, t tlog.Tile) ([]byte, string) {
	var b []byte
	start := t.N << TileHeight
	for i := start; i < start+int64(t.W); i++ {
		ln := s.lines[i]
		if ln.Pruned != nil {
			return nil, fmt.Sprintf("record %d was pruned", i)
		}
		_, p, err := ln.leafHash()
		if err != nil {
			return nil, fmt.Sprintf("record %d: %v", i, err) // verified: cannot happen
		}
		if len(p) > MaxEntrySize {
			return nil, fmt.Sprintf("record %d is %d bytes, more than an entry may hold (%d)", i, len(p), MaxEntrySize)
		}
		b = binary.BigEndian.AppendUint16(b, uint16(len(p)))
		b = append(b, p...)
	}
	return b, ""
}

// TilePath is the c2sp.org/tlog-tiles path of t, a tile of height 8:
// tile/<L>/<N>[.p/<W>], or for L -1 the entry bundle
// tile/entries/<N>[.p/<W>]. (tlog.Tile.Path is the Go checksum
// database's layout, tile/8/<L>/... and tile/8/data/..., which differs.)
func TilePath(t tlog.Tile) string {
	level := "entries"
	if t.L >= 0 {
		level = strconv.Itoa(t.L)
	}
	nStr := fmt.Sprintf("%03d", t.N%1000)
	for n := t.N / 1000; n > 0; n /= 1000 {
		nStr = fmt.Sprintf("x%03d/", n%1000) + nStr
	}
	p := "tile/" + level + "/" + nStr
	if t.W < 1<<TileHeight {
		p += ".p/" + strconv.Itoa(t.W)
	}
	return p
}

// syncFS makes the files written under dir durable: one syncfs(2) of its
// filesystem rather than an fsync per tile.
func syncFS(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := unix.Syncfs(int(f.Fd())); err != nil {
		return fmt.Errorf("audit: syncfs %s: %w", dir, err)
	}
	return nil
}
