package audit_test

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"filippo.io/torchwood"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/act-project/act/audit"
)

const tilesOrigin = "act.test/tiles/audit"

// appendN appends n records to the log in dir.
func appendN(t *testing.T, dir string, n int) {
	t.Helper()
	l, err := audit.Open(dir, tilesOrigin)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i := 0; i < n; i++ {
		ev := audit.Event{Name: audit.EventApplied, ActionID: fmt.Sprintf("a-%d", i), Status: "applied",
			DescriptorSHA256: strings.Repeat("ab", 32), LogLevel: audit.LevelSummary}
		if _, err := l.Append(context.Background(), ev); err != nil {
			t.Fatal(err)
		}
	}
}

// httpTiles is a tlog.TileReader that GETs c2sp.org/tlog-tiles paths from
// a server: a client act did not write, beyond the mapping of tlog's tile
// names to tlog-tiles paths (tlog.Tile.Path is the Go sumdb's
// "tile/8/<L>/..." and "tile/8/data/...").
type httpTiles struct {
	t    *testing.T
	base string
	gets []string
}

func (h *httpTiles) Height() int { return 8 }

func (h *httpTiles) path(t tlog.Tile) string {
	p := strings.TrimPrefix(t.Path(), "tile/8/")
	if rest, ok := strings.CutPrefix(p, "data/"); ok {
		return "tile/entries/" + rest
	}
	return "tile/" + p
}

func (h *httpTiles) get(p string) ([]byte, error) {
	h.gets = append(h.gets, p)
	resp, err := http.Get(h.base + "/" + p)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", p, resp.Status)
	}
	return io.ReadAll(resp.Body)
}

func (h *httpTiles) ReadTiles(tiles []tlog.Tile) ([][]byte, error) {
	out := make([][]byte, len(tiles))
	for i, t := range tiles {
		b, err := h.get(h.path(t))
		if err != nil {
			return nil, err
		}
		out[i] = b
	}
	return out, nil
}

func (h *httpTiles) SaveTiles([]tlog.Tile, [][]byte) {}

// openCheckpoint verifies a served checkpoint with the log's public key
// and parses its body.
func openCheckpoint(t *testing.T, text []byte, pub []byte) tlog.Tree {
	t.Helper()
	k, err := audit.ParsePublicKeyPEM(pub)
	if err != nil {
		t.Fatal(err)
	}
	vkey, err := note.NewEd25519VerifierKey(tilesOrigin, k)
	if err != nil {
		t.Fatal(err)
	}
	v, err := note.NewVerifier(vkey)
	if err != nil {
		t.Fatal(err)
	}
	n, err := note.Open(text, note.VerifierList(v))
	if err != nil {
		t.Fatalf("checkpoint: %v\n%s", err, text)
	}
	f := strings.Split(n.Text, "\n")
	if len(f) != 4 || f[0] != tilesOrigin || f[3] != "" {
		t.Fatalf("checkpoint body %q", n.Text)
	}
	size, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	h, err := base64.StdEncoding.DecodeString(f[2])
	if err != nil || len(h) != tlog.HashSize {
		t.Fatalf("checkpoint hash %q", f[2])
	}
	var tr tlog.Tree
	tr.N = size
	copy(tr.Hash[:], h)
	return tr
}

// entries splits an entry bundle.
func entries(t *testing.T, b []byte) [][]byte {
	t.Helper()
	var out [][]byte
	for len(b) > 0 {
		if len(b) < 2 {
			t.Fatal("entry bundle: torn length")
		}
		n := int(binary.BigEndian.Uint16(b))
		if len(b) < 2+n {
			t.Fatal("entry bundle: torn entry")
		}
		out = append(out, b[2:2+n])
		b = b[2+n:]
	}
	return out
}

func TestExportTiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "audit")
	out := filepath.Join(t.TempDir(), "tiles")
	appendN(t, dir, 100)
	rep, err := audit.ExportTiles(dir, out, audit.VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"tile/0/000.p/100", "tile/entries/000.p/100", "checkpoint"}
	if !slices.Equal(rep.Written, want) || rep.Records != 100 || rep.Previous != 0 {
		t.Errorf("first export: %+v", rep)
	}
	saved, err := os.ReadFile(filepath.Join(out, "checkpoint"))
	if err != nil {
		t.Fatal(err)
	}

	// More records than one full tile; the second export adds only what
	// is new.
	appendN(t, dir, 200)
	rep, err = audit.ExportTiles(dir, out, audit.VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want = []string{"tile/0/000", "tile/entries/000", "tile/0/001.p/44", "tile/entries/001.p/44", "tile/1/000.p/1", "checkpoint"}
	if !slices.Equal(rep.Written, want) || rep.Records != 300 || rep.Previous != 100 {
		t.Errorf("second export: %+v", rep)
	}
	// The log's own newest checkpoint, byte for byte.
	cp, err := audit.CheckpointText(dir, audit.VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(out, "checkpoint")); string(b) != cp || rep.Checkpoint != cp {
		t.Errorf("exported checkpoint\n%s\nthe log's\n%s", b, cp)
	}
	// The older partial tiles stay for clients of the older checkpoint.
	if _, err := os.Stat(filepath.Join(out, "tile/0/000.p/100")); err != nil {
		t.Error(err)
	}

	srv := httptest.NewServer(http.FileServer(http.Dir(out)))
	defer srv.Close()
	client := &httpTiles{t: t, base: srv.URL}
	cpServed, err := client.get("checkpoint")
	if err != nil {
		t.Fatal(err)
	}
	pub, err := os.ReadFile(filepath.Join(dir, audit.PublicKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	tree := openCheckpoint(t, cpServed, pub)
	if tree.N != 300 {
		t.Fatalf("served checkpoint of %d records", tree.N)
	}
	thr := tlog.TileHashReader(tree, client)

	// Every entry of every bundle hashes to its leaf in the level-0 tile,
	// and is record i's statement.
	var all [][]byte
	for _, tl := range tlog.NewTiles(8, 0, tree.N) {
		if tl.L != 0 {
			continue
		}
		hashes, err := client.get(client.path(tl))
		if err != nil {
			t.Fatal(err)
		}
		dt := tl
		dt.L = -1
		b, err := client.get(client.path(dt))
		if err != nil {
			t.Fatal(err)
		}
		es := entries(t, b)
		if len(es) != tl.W || len(hashes) != tl.W*tlog.HashSize {
			t.Fatalf("tile %v: %d entries, %d bytes of hashes", tl, len(es), len(hashes))
		}
		for j, e := range es {
			if h := tlog.RecordHash(e); string(h[:]) != string(hashes[j*tlog.HashSize:(j+1)*tlog.HashSize]) {
				t.Errorf("entry %d does not hash to its leaf", int(tl.N)*256+j)
			}
		}
		all = append(all, es...)
	}
	if int64(len(all)) != tree.N {
		t.Fatalf("%d entries for %d records", len(all), tree.N)
	}
	for i, e := range all {
		var st audit.Statement
		if err := json.Unmarshal(e, &st); err != nil || st.Type != audit.StatementType || st.Predicate.Seq != uint64(i) {
			t.Fatalf("entry %d: %v %+v", i, err, st)
		}
	}

	// Inclusion of a few records, proved from tiles fetched over HTTP.
	for _, i := range []int64{0, 1, 99, 255, 256, 299} {
		proof, err := tlog.ProveRecord(tree.N, i, thr)
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if err := tlog.CheckRecord(proof, tree.N, tree.Hash, i, tlog.RecordHash(all[i])); err != nil {
			t.Errorf("record %d: %v", i, err)
		}
		if err := tlog.CheckRecord(proof, tree.N, tree.Hash, i, tlog.RecordHash(all[(i+1)%tree.N])); err == nil {
			t.Errorf("record %d: another record's leaf proved", i)
		}
	}
	// Consistency with the checkpoint of the first export.
	old := openCheckpoint(t, saved, pub)
	proof, err := tlog.ProveTree(tree.N, old.N, thr)
	if err != nil {
		t.Fatal(err)
	}
	if err := tlog.CheckTree(proof, tree.N, tree.Hash, old.N, old.Hash); err != nil {
		t.Errorf("consistency with the first export: %v", err)
	}

	// Nothing new: nothing written.
	rep, err = audit.ExportTiles(dir, out, audit.VerifyOptions{})
	if err != nil || len(rep.Written) != 0 {
		t.Errorf("third export: %v %+v", err, rep)
	}

	// Full tiles are never rewritten; the next partial ones are added.
	full, err := os.Stat(filepath.Join(out, "tile/0/000"))
	if err != nil {
		t.Fatal(err)
	}
	appendN(t, dir, 220)
	rep, err = audit.ExportTiles(dir, out, audit.VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want = []string{"tile/0/001", "tile/entries/001", "tile/0/002.p/8", "tile/entries/002.p/8", "tile/1/000.p/2", "checkpoint"}
	if !slices.Equal(rep.Written, want) || rep.Previous != 300 {
		t.Errorf("fourth export: %+v", rep)
	}
	if again, err := os.Stat(filepath.Join(out, "tile/0/000")); err != nil || !os.SameFile(full, again) || !again.ModTime().Equal(full.ModTime()) {
		t.Error("a full tile was rewritten")
	}
	// No temporary file is left behind.
	filepath.WalkDir(out, func(p string, d os.DirEntry, err error) error {
		if strings.Contains(filepath.Base(p), ".tmp-") {
			t.Errorf("left behind: %s", p)
		}
		return err
	})
}

func TestExportTilesRefuses(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "audit")
	out := filepath.Join(t.TempDir(), "tiles")
	appendN(t, dir, 3)
	if _, err := audit.ExportTiles(dir, out, audit.VerifyOptions{}); err != nil {
		t.Fatal(err)
	}
	// Another log's export into the same directory.
	other := filepath.Join(t.TempDir(), "audit")
	appendN(t, other, 5)
	if _, err := audit.ExportTiles(other, out, audit.VerifyOptions{}); err == nil || !strings.Contains(err.Error(), "another log") {
		t.Errorf("another log's tiles: %v", err)
	}
	// A full tile altered in place is found, not papered over.
	appendN(t, dir, 300)
	if _, err := audit.ExportTiles(dir, out, audit.VerifyOptions{}); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(out, "tile/0/000")
	b, _ := os.ReadFile(p)
	b[0] ^= 1
	os.WriteFile(p, b, 0o644)
	appendN(t, dir, 1)
	if _, err := audit.ExportTiles(dir, out, audit.VerifyOptions{}); err == nil || !strings.Contains(err.Error(), "differs") {
		t.Errorf("altered tile: %v", err)
	}
	// An empty log has nothing to export.
	empty := filepath.Join(t.TempDir(), "audit")
	if err := audit.EnsureKey(empty); err != nil {
		t.Fatal(err)
	}
	if _, err := audit.ExportTiles(empty, filepath.Join(t.TempDir(), "x"), audit.VerifyOptions{}); err == nil {
		t.Error("an empty log exported")
	}
}

func TestExportTilesPruned(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "audit")
	out := filepath.Join(t.TempDir(), "tiles")
	l, err := audit.Open(dir, tilesOrigin)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	i := 0
	l.Now = func() time.Time { i++; return t0.Add(time.Duration(i) * time.Minute) }
	for j := 0; j < 260; j++ {
		if _, err := l.Append(context.Background(), audit.Event{Name: audit.EventApplied, LogLevel: audit.LevelSummary}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.PruneBefore(context.Background(), t0.Add(10*time.Minute)); err != nil {
		t.Fatal(err)
	}
	rep, err := audit.ExportTiles(dir, out, audit.VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Withheld) != 1 || !strings.HasPrefix(rep.Withheld[0], "tile/entries/000: record 0 was pruned") {
		t.Errorf("withheld %q", rep.Withheld)
	}
	for _, p := range []string{"tile/0/000", "tile/0/001.p/5", "tile/entries/001.p/5", "checkpoint"} {
		if _, err := os.Stat(filepath.Join(out, p)); err != nil {
			t.Error(err)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "tile/entries/000")); err == nil {
		t.Error("a bundle of pruned records was written")
	}
}

// TestExportTilesTorchwood reads an export with filippo.io/torchwood's
// tlog-tiles client over HTTP: its own tile paths (TilePath), its own
// entry bundle parser, every entry checked against the tree.
func TestExportTilesTorchwood(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "audit")
	out := filepath.Join(t.TempDir(), "tiles")
	appendN(t, dir, 40)
	if _, err := audit.ExportTiles(dir, out, audit.VerifyOptions{}); err != nil {
		t.Fatal(err)
	}
	saved, err := os.ReadFile(filepath.Join(out, "checkpoint"))
	if err != nil {
		t.Fatal(err)
	}
	appendN(t, dir, 260)
	if _, err := audit.ExportTiles(dir, out, audit.VerifyOptions{}); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.FileServer(http.Dir(out)))
	defer srv.Close()
	ctx := context.Background()
	tf, err := torchwood.NewTileFetcher(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := os.ReadFile(filepath.Join(dir, audit.PublicKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	text, err := tf.ReadEndpoint(ctx, "checkpoint")
	if err != nil {
		t.Fatal(err)
	}
	tree := openCheckpoint(t, text, pub)
	body, _, _ := strings.Cut(string(text), "\n\n")
	if cp, err := torchwood.ParseCheckpoint(body + "\n"); err != nil || cp.Tree != tree || cp.Origin != tilesOrigin {
		t.Fatalf("torchwood.ParseCheckpoint: %v %+v", err, cp)
	}
	c, err := torchwood.NewClient(tf)
	if err != nil {
		t.Fatal(err)
	}
	// Entries checks each entry's inclusion as it reads the bundles; it
	// may stop short of a partial bundle, so resume until the end.
	var n int64
	for tries := 0; n < tree.N && tries < 4; tries++ {
		for i, e := range c.Entries(ctx, tree, n) {
			var st audit.Statement
			if i != n || json.Unmarshal(e, &st) != nil || st.Predicate.Seq != uint64(i) {
				t.Fatalf("entry %d (want %d): %q", i, n, e)
			}
			n++
		}
		if err := c.Err(); err != nil {
			t.Fatal(err)
		}
	}
	if n != tree.N {
		t.Fatalf("read %d entries of %d", n, tree.N)
	}
	for _, i := range []int64{0, 39, 255, 256, 299} {
		e, proof, err := c.Entry(ctx, tree, i)
		if err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
		if err := tlog.CheckRecord(proof, tree.N, tree.Hash, i, tlog.RecordHash(e)); err != nil {
			t.Errorf("entry %d: %v", i, err)
		}
	}
	old := openCheckpoint(t, saved, pub)
	proof, err := tlog.ProveTree(tree.N, old.N, torchwood.TileHashReaderWithContext(ctx, tree, tf))
	if err == nil {
		err = tlog.CheckTree(proof, tree.N, tree.Hash, old.N, old.Hash)
	}
	if err != nil {
		t.Errorf("consistency with the checkpoint of %d records: %v", old.N, err)
	}
}
