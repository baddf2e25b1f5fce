// Package audit keeps act's signed, append-only audit log: one DSSE
// envelope over an in-toto Statement per decision, in a Merkle tree log
// (RFC 6962 hashing, golang.org/x/mod/sumdb/tlog) whose signed tree heads
// are C2SP tlog-checkpoint signed notes. docs/audit.md is the reference of
// the format; this comment says how the files are kept.
//
// # Files in the log directory
//
//	key         ed25519 private key, PKCS #8 PEM, mode 0600; never printed
//	key.pub     its public key, PEM (derived; verify does not trust it blindly)
//	log.jsonl   one record per line (see [line]); the only file fsynced
//	tree        tlog stored hashes, 32 bytes each: a cache rebuilt from the log
//	checkpoint  the newest signed tree head: a cache of the last line's
//	lock        flock serializing writers across processes
//
// # Durability: one fsync per record
//
// A record's line carries the signed checkpoint of the tree that ends with
// it, so the one fdatasync of log.jsonl makes the record and its tree head
// durable together; tree and checkpoint are then rewritten without a sync
// and re-derived by [Open] when they fall behind. A line is written with a
// single write(2) at the end of the file under the lock: a crash leaves no
// line, a whole line, or a torn last line without its '\n', which the next
// [Open] trims and records (a "recovered" record, rule audit.torn_tail).
package audit

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/secure-systems-lab/go-securesystemslib/dsse"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
	"golang.org/x/sys/unix"

	"github.com/act-project/act/internal/atomicfile"
	"github.com/act-project/act/internal/timings"
)

// The files of a log directory.
const (
	KeyFile        = "key"
	PublicKeyFile  = "key.pub"
	LogFile        = "log.jsonl"
	TreeFile       = "tree"
	CheckpointFile = "checkpoint"
	LockFile       = "lock"
)

// Errors of Open and Append.
var (
	// ErrKeyMissing: records exist but the signing key is gone; act never
	// makes a new key over records signed by the old one.
	ErrKeyMissing = errors.New("audit key missing while the log holds signed records")
	// ErrKeyChanged: the key is not the one that signed the log's records.
	ErrKeyChanged = errors.New("audit key changed: the log's records were signed by another key")
	// ErrDamaged: the log's end is damaged in a way a crash cannot cause.
	ErrDamaged = errors.New("audit log damaged")
)

// A Log is an open audit log. Its methods are safe for one goroutine at a
// time; any number of processes may append to the same directory.
type Log struct {
	dir    string
	origin string
	priv   ed25519.PrivateKey
	pub    ed25519.PublicKey
	keyID  string
	signer note.Signer
	verif  note.Verifier

	// Now is the clock stamping records; tests replace it.
	Now func() time.Time

	f     *os.File // log.jsonl, O_APPEND
	tree  *os.File // stored hashes
	cpf   *os.File // checkpoint, opened on first write
	lockf *os.File // the lock file, kept open

	// What this process last saw of the log, revalidated under the lock.
	size int64     // bytes of log.jsonl
	n    int64     // records
	last [32]byte  // lineHash of line n-1: the next record's prev
	root tlog.Hash // tree hash of size n
}

// Open opens or creates the log in dir (<home>/audit). origin names the
// log in its checkpoints (a schema-less URL such as
// "act.example/host/audit", no spaces or '+'); it is fixed when the log is
// created and an existing log keeps its own. Open repairs what a crash can
// leave behind (a torn last line, stale caches) and records the repair.
func Open(dir, origin string) (*Log, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	unlock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	defer unlock()
	l := &Log{dir: dir, Now: time.Now}
	if err := l.openFiles(); err != nil {
		return nil, err
	}
	// Open the files every append uses now, not inside the first append.
	if l.lockf, err = os.OpenFile(filepath.Join(dir, LockFile), os.O_RDWR, 0); err == nil {
		// (Made by the first write: an empty file would read as a
		// checkpoint of a log since emptied.)
		if l.cpf, err = os.OpenFile(filepath.Join(dir, CheckpointFile), os.O_RDWR, 0); errors.Is(err, fs.ErrNotExist) {
			l.cpf, err = nil, nil
		}
	}
	if err != nil {
		l.Close()
		return nil, err
	}
	repaired, err := l.load(origin)
	if err != nil {
		l.Close()
		return nil, err
	}
	if repaired > 0 {
		ev := Event{Name: EventRecovered, Status: "repaired", Rules: []string{"audit.torn_tail"},
			Reason: fmt.Sprintf("trimmed a torn last record (%d bytes) left by an interrupted append", repaired)}
		if _, err := l.appendLocked(context.Background(), []Event{ev}, nil); err != nil {
			l.Close()
			return nil, err
		}
	}
	return l, nil
}

// Close releases the log's files.
func (l *Log) Close() error {
	err := l.f.Close()
	if e := l.tree.Close(); err == nil {
		err = e
	}
	if l.lockf != nil {
		l.lockf.Close()
	}
	if l.cpf != nil {
		if e := l.cpf.Close(); err == nil {
			err = e
		}
	}
	return err
}

// Dir is the log's directory.
func (l *Log) Dir() string { return l.dir }

// Origin is the log's origin line.
func (l *Log) Origin() string { return l.origin }

// KeyID is the signing key's fingerprint: hex sha256 of its PKIX DER.
func (l *Log) KeyID() string { return l.keyID }

func (l *Log) openFiles() error {
	var err error
	l.f, err = os.OpenFile(filepath.Join(l.dir, LogFile), os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	l.tree, err = os.OpenFile(filepath.Join(l.dir, TreeFile), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		l.f.Close()
	}
	return err
}

// lockDir takes the writers' lock of dir.
func lockDir(dir string) (func(), error) {
	f, err := os.OpenFile(filepath.Join(dir, LockFile), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	return flock(f, unix.LOCK_EX, dir)
}

// lock takes the writers' lock through the Log's open lock file.
func (l *Log) lock() (func(), error) {
	if l.lockf == nil {
		f, err := os.OpenFile(filepath.Join(l.dir, LockFile), os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return nil, err
		}
		l.lockf = f
	}
	var err error
	for {
		err = unix.Flock(int(l.lockf.Fd()), unix.LOCK_EX)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", l.dir, err)
	}
	return func() { unix.Flock(int(l.lockf.Fd()), unix.LOCK_UN) }, nil
}

// readLock takes the lock shared, for a reader that must not see a
// checkpoint half-rewritten; a reader who cannot open the lock file (a
// log it may read but not write) goes without.
func readLock(dir string) func() {
	f, err := os.Open(filepath.Join(dir, LockFile))
	if err != nil {
		return func() {}
	}
	unlock, err := flock(f, unix.LOCK_SH, dir)
	if err != nil {
		return func() {}
	}
	return unlock
}

func flock(f *os.File, how int, dir string) (func(), error) {
	var err error
	for {
		err = unix.Flock(int(f.Fd()), how)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	return func() { f.Close() }, nil
}

// load reads the log's end and the key under the lock, trims a torn last
// line (returning how many bytes it trimmed) and brings the caches up to
// date.
func (l *Log) load(origin string) (trimmed int, err error) {
	trimmed, err = l.trimTorn()
	if err != nil {
		return 0, err
	}
	last, err := l.lastLine()
	if err != nil {
		return 0, err
	}
	if last != nil && last.Pruned == nil && len(last.Signatures) > 0 {
		err = l.loadKey(last.Signatures[0].KeyID)
	} else {
		err = l.loadKey("")
	}
	if err != nil {
		return 0, err
	}
	if last != nil {
		cp, err := l.openCheckpoint(last.Checkpoint, "")
		if err != nil {
			return 0, fmt.Errorf("%w: last record: %v", ErrDamaged, err)
		}
		origin = cp.Origin
	}
	if origin == "" || strings.ContainsAny(origin, " +\n") {
		return 0, fmt.Errorf("audit: bad origin %q", origin)
	}
	l.origin = origin
	if err := l.initNote(); err != nil {
		return 0, err
	}
	if last != nil {
		if _, err := l.openCheckpoint(last.Checkpoint, origin); err != nil {
			return 0, fmt.Errorf("%w: last record: %v", ErrDamaged, err)
		}
	}
	if err := l.refresh(); err != nil {
		return 0, err
	}
	// The checkpoint cache: rewrite it when behind or unreadable, never
	// when it claims more than the log holds (that is evidence).
	b, rerr := os.ReadFile(filepath.Join(l.dir, CheckpointFile))
	if rerr == nil || l.n > 0 {
		cp, err := l.openCheckpoint(string(b), l.origin)
		if l.n == 0 {
			return 0, fmt.Errorf("%w: the log is empty but a checkpoint exists: truncated", ErrDamaged)
		}
		if err == nil && cp.N > l.n {
			return 0, fmt.Errorf("%w: checkpoint says %d records, the log holds %d: truncated", ErrDamaged, cp.N, l.n)
		}
		if l.n > 0 && (err != nil || cp.N < l.n) {
			// Behind: a crash between an append and the cache's
			// rewrite, or deferred records (BatchOptions.Deferred),
			// made durable first.
			if err := syncData(l.f); err != nil {
				return 0, err
			}
			if err := l.writeCheckpointCache(last.Checkpoint); err != nil {
				return 0, err
			}
		}
	}
	return trimmed, nil
}

// trimTorn removes a last line without its '\n': the only damage an
// interrupted append can leave.
func (l *Log) trimTorn() (int, error) {
	fi, err := l.f.Stat()
	if err != nil {
		return 0, err
	}
	size := fi.Size()
	if size == 0 {
		return 0, nil
	}
	end := size
	buf := make([]byte, 64<<10)
	for end > 0 {
		off := max(end-int64(len(buf)), 0)
		b := buf[:end-off]
		if _, err := l.f.ReadAt(b, off); err != nil {
			return 0, err
		}
		if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
			end = off + int64(i) + 1
			break
		}
		end = off
	}
	if end == size {
		return 0, nil
	}
	if err := l.f.Truncate(end); err != nil {
		return 0, err
	}
	if err := l.f.Sync(); err != nil {
		return 0, err
	}
	return int(size - end), nil
}

// lastLine returns the log's last line decoded, or nil for an empty log.
func (l *Log) lastLine() (*line, error) {
	fi, err := l.f.Stat()
	if err != nil {
		return nil, err
	}
	b, err := readLastLine(l.f, fi.Size())
	if err != nil || b == nil {
		return nil, err
	}
	ln, err := decodeLine(b)
	if err != nil {
		return nil, fmt.Errorf("%w: last record: %v", ErrDamaged, err)
	}
	return ln, nil
}

// readLastLine returns the last '\n'-terminated line of the first size
// bytes of f, without the '\n'.
func readLastLine(f io.ReaderAt, size int64) ([]byte, error) {
	if size == 0 {
		return nil, nil
	}
	end := size - 1 // the final '\n'
	// Find where the last line starts, a block at a time, then read it
	// once: a record may be megabytes long (the paths of a large plan),
	// and gathering it block by block would copy it over and over.
	start := int64(0)
	b := make([]byte, 4096)
	for off := end; off > 0; {
		from := max(off-int64(len(b)), 0)
		if _, err := f.ReadAt(b[:off-from], from); err != nil {
			return nil, err
		}
		if i := bytes.LastIndexByte(b[:off-from], '\n'); i >= 0 {
			start = from + int64(i) + 1
			break
		}
		off = from
	}
	line := make([]byte, end-start)
	if _, err := f.ReadAt(line, start); err != nil {
		return nil, err
	}
	return line, nil
}

// loadKey reads the key, or makes one for an empty log. keyID is the key
// that signed the log's last record ("" when it has none).
func (l *Log) loadKey(keyID string) error {
	priv, err := readOrMakeKey(l.dir, keyID, func() (bool, error) {
		fi, err := l.f.Stat()
		return err == nil && fi.Size() == 0, err
	})
	if err != nil {
		return err
	}
	l.priv = priv
	l.pub = priv.Public().(ed25519.PublicKey)
	l.keyID = KeyID(l.pub)
	return nil
}

// EnsureKey makes the log directory dir and its signing key, unless
// key.pub is there already: the first use of any audit command makes the
// key, so that a person can pin it (act audit pubkey) before the first
// record. It takes the writers' lock, as Open does, so concurrent first
// uses agree on one key. It writes nothing when key.pub exists or the log
// holds records, and never makes a key for a log that holds records
// (ErrKeyMissing).
func EnsureKey(dir string) error {
	if _, err := os.Stat(filepath.Join(dir, PublicKeyFile)); err == nil {
		return nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	unlock, err := lockDir(dir)
	if err != nil {
		return err
	}
	defer unlock()
	fi, err := os.Stat(filepath.Join(dir, LogFile))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err == nil && fi.Size() > 0 {
		// A log with records: its key.pub is Open's to rewrite, once it
		// has checked the key against the records.
		if _, err := os.Stat(filepath.Join(dir, KeyFile)); err != nil {
			return fmt.Errorf("%w: %s", ErrKeyMissing, filepath.Join(dir, KeyFile))
		}
		return nil
	}
	_, err = readOrMakeKey(dir, "", func() (bool, error) { return true, nil })
	return err
}

// readOrMakeKey reads dir's private key, or makes one when there is none
// and empty says the log holds no record, and keeps key.pub in step with
// it. keyID is the key that signed the log's last record ("" when it has
// none): another key is ErrKeyChanged, and key.pub is left as it is. The
// caller holds the writers' lock.
func readOrMakeKey(dir, keyID string, empty func() (bool, error)) (ed25519.PrivateKey, error) {
	path := filepath.Join(dir, KeyFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		ok, serr := empty()
		if serr != nil {
			return nil, serr
		}
		if !ok {
			return nil, fmt.Errorf("%w: %s", ErrKeyMissing, path)
		}
		if err := makeKey(path); err != nil {
			return nil, err
		}
		b, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, err
	}
	priv, err := parsePrivateKeyPEM(b)
	if err != nil {
		return nil, fmt.Errorf("audit key %s: %v", path, err)
	}
	pub := priv.Public().(ed25519.PublicKey)
	if id := KeyID(pub); keyID != "" && keyID != id {
		return nil, fmt.Errorf("%w (key %s, records by %s)", ErrKeyChanged, id, keyID)
	}
	pubPEM, err := PublicKeyPEM(pub)
	if err != nil {
		return nil, err
	}
	if old, err := os.ReadFile(filepath.Join(dir, PublicKeyFile)); err != nil || !bytes.Equal(old, pubPEM) {
		if err := atomicfile.WriteFile(filepath.Join(dir, PublicKeyFile), pubPEM, 0o644); err != nil {
			return nil, err
		}
	}
	return priv, nil
}

// makeKey writes a new ed25519 key at path, mode 0600, crash-safely and
// never over another: a temporary file written and synced, then linked
// to path (link(2) fails where path exists, where rename would replace
// it), then the directory synced. Where path exists already, the key
// there stands.
func makeKey(path string) error {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return err
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return err
	}
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+KeyFile+".tmp-*") // mode 0600
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	_, err = f.Write(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.Link(tmp, path); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return atomicfile.SyncDir(dir)
}

// parsePrivateKeyPEM decodes a PKCS #8 PEM ed25519 private key.
func parsePrivateKeyPEM(b []byte) (ed25519.PrivateKey, error) {
	blk, _ := pem.Decode(b)
	if blk == nil || blk.Type != "PRIVATE KEY" {
		return nil, errors.New("not a PEM private key")
	}
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		return nil, err
	}
	priv, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, errors.New("not ed25519")
	}
	return priv, nil
}

// KeyID is a public key's fingerprint: hex sha256 of its PKIX DER, as
// `openssl pkey -pubin -outform DER | sha256sum` prints it.
func KeyID(pub ed25519.PublicKey) string {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		panic(err) // an ed25519 key always marshals
	}
	s := sha256.Sum256(der)
	return hex.EncodeToString(s[:])
}

// PublicKeyPEM encodes pub as a PKIX "PUBLIC KEY" PEM block.
func PublicKeyPEM(pub ed25519.PublicKey) ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), nil
}

// ParsePublicKeyPEM decodes a PEM ed25519 public key.
func ParsePublicKeyPEM(b []byte) (ed25519.PublicKey, error) {
	blk, _ := pem.Decode(b)
	if blk == nil || blk.Type != "PUBLIC KEY" {
		return nil, errors.New("not a PEM public key")
	}
	k, err := x509.ParsePKIXPublicKey(blk.Bytes)
	if err != nil {
		return nil, err
	}
	pub, ok := k.(ed25519.PublicKey)
	if !ok {
		return nil, errors.New("not an ed25519 public key")
	}
	return pub, nil
}

// PublicKey is the log's public key.
func (l *Log) PublicKey() ed25519.PublicKey { return l.pub }

// NoteVerifierKey is the note verifier key of the log's checkpoints
// ("<origin>+<hash>+<base64 key>"), for note.NewVerifier.
func (l *Log) NoteVerifierKey() string {
	vkey, err := note.NewEd25519VerifierKey(l.origin, l.pub)
	if err != nil {
		panic(err) // origin was checked
	}
	return vkey
}

func (l *Log) initNote() error {
	vkey, err := note.NewEd25519VerifierKey(l.origin, l.pub)
	if err != nil {
		return err
	}
	l.verif, err = note.NewVerifier(vkey)
	if err != nil {
		return err
	}
	// A note signer key: PRIVATE+KEY+<name>+<hash>+base64(0x01 || seed).
	// (The hash is 8 hex digits after "<name>+"; the key's base64 may hold '+'.)
	hash := vkey[len(l.origin)+1 : len(l.origin)+9]
	skey := "PRIVATE+KEY+" + l.origin + "+" + hash + "+" + base64.StdEncoding.EncodeToString(append([]byte{1}, l.priv.Seed()...))
	l.signer, err = note.NewSigner(skey)
	return err
}

// A Checkpoint is a signed tree head: the log's origin, size and root.
type Checkpoint struct {
	Origin string
	N      int64
	Hash   tlog.Hash
	Text   string // the signed note, as stored
}

func formatCheckpoint(origin string, n int64, h tlog.Hash) string {
	return origin + "\n" + strconv.FormatInt(n, 10) + "\n" + base64.StdEncoding.EncodeToString(h[:]) + "\n"
}

// parseCheckpointBody parses a C2SP checkpoint body (no extension lines).
func parseCheckpointBody(text string) (Checkpoint, error) {
	var c Checkpoint
	f := strings.SplitN(text, "\n", 4)
	if len(f) != 4 || f[3] != "" {
		return c, errors.New("malformed checkpoint")
	}
	n, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil || n < 0 || strconv.FormatInt(n, 10) != f[1] {
		return c, errors.New("malformed checkpoint size")
	}
	h, err := base64.StdEncoding.Strict().DecodeString(f[2])
	if err != nil || len(h) != len(c.Hash) {
		return c, errors.New("malformed checkpoint hash")
	}
	c.Origin, c.N = f[0], n
	copy(c.Hash[:], h)
	return c, nil
}

// openCheckpoint checks a signed checkpoint's signature and origin. With
// origin "" (before the verifier exists) it only parses the body.
func (l *Log) openCheckpoint(text, origin string) (Checkpoint, error) {
	if origin == "" {
		i := strings.Index(text, "\n\n")
		if i < 0 {
			return Checkpoint{}, errors.New("malformed checkpoint")
		}
		return parseCheckpointBody(text[:i+1])
	}
	return openCheckpoint(text, l.verif, origin)
}

func openCheckpoint(text string, v note.Verifier, origin string) (Checkpoint, error) {
	n, err := note.Open([]byte(text), note.VerifierList(v))
	if err != nil {
		var unk *note.UnverifiedNoteError
		if errors.As(err, &unk) {
			return Checkpoint{}, errUnknownKey
		}
		return Checkpoint{}, fmt.Errorf("checkpoint: %v", err)
	}
	// note.Open decodes signatures leniently: a flip of a base64 padding
	// bit would go unnoticed. Only the canonical spelling is accepted.
	for _, sg := range append(n.Sigs, n.UnverifiedSigs...) {
		b, err := base64.StdEncoding.Strict().DecodeString(sg.Base64)
		if err != nil || base64.StdEncoding.EncodeToString(b) != sg.Base64 {
			return Checkpoint{}, errors.New("checkpoint: signature not in canonical base64")
		}
	}
	c, err := parseCheckpointBody(n.Text)
	if err != nil {
		return c, err
	}
	if c.Origin != origin {
		return c, fmt.Errorf("checkpoint origin %q, the log's is %q", c.Origin, origin)
	}
	c.Text = text
	return c, nil
}

var errUnknownKey = errors.New("signed by an unknown key")

func (l *Log) sign(n int64, h tlog.Hash) (string, error) {
	b, err := note.Sign(&note.Note{Text: formatCheckpoint(l.origin, n, h)}, l.signer)
	return string(b), err
}

// refresh brings this process's view (n, last, root) and the tree cache up
// to the log's current end. It runs under the lock.
func (l *Log) refresh() error {
	if err := l.reopenIfReplaced(); err != nil {
		return err
	}
	fi, err := l.f.Stat()
	if err != nil {
		return err
	}
	if fi.Size() == l.size && l.size > 0 {
		return nil
	}
	b, err := readLastLine(l.f, fi.Size())
	if err != nil {
		return err
	}
	if b == nil {
		l.size, l.n = 0, 0
		return l.tree.Truncate(0)
	}
	ln, err := decodeLine(b)
	if err != nil {
		return fmt.Errorf("%w: last record: %v", ErrDamaged, err)
	}
	cp, err := l.openCheckpoint(ln.Checkpoint, l.origin)
	if err != nil {
		return fmt.Errorf("%w: last record: %v", ErrDamaged, err)
	}
	lh, err := lineHash(ln, b)
	if err != nil {
		return fmt.Errorf("%w: last record: %v", ErrDamaged, err)
	}
	// The tree cache must hold exactly the stored hashes of cp.N records
	// and agree with the signed root; else rebuild it from the log.
	ti, err := l.tree.Stat()
	if err != nil {
		return err
	}
	ok := ti.Size() == tlog.StoredHashCount(cp.N)*tlog.HashSize
	if ok {
		h, err := tlog.TreeHash(cp.N, fileHashReader{l.tree})
		ok = err == nil && h == cp.Hash
	}
	if !ok {
		if err := l.rebuildTree(fi.Size(), cp); err != nil {
			return err
		}
	}
	l.size, l.n, l.last, l.root = fi.Size(), cp.N, lh, cp.Hash
	return nil
}

// rebuildTree recomputes the tree cache from every line of the log.
func (l *Log) rebuildTree(size int64, cp Checkpoint) error {
	r := io.NewSectionReader(l.f, 0, size)
	leaves, err := readLeaves(r)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrDamaged, err)
	}
	if int64(len(leaves)) != cp.N {
		return fmt.Errorf("%w: %d lines, the last checkpoint says %d", ErrDamaged, len(leaves), cp.N)
	}
	hashes := storedHashes(leaves)
	if h, err := tlog.TreeHash(cp.N, tlog.HashReaderFunc(func(ix []int64) ([]tlog.Hash, error) { return pick(hashes, ix) })); err != nil || h != cp.Hash {
		return fmt.Errorf("%w: the records do not hash to the last checkpoint", ErrDamaged)
	}
	buf := make([]byte, 0, len(hashes)*tlog.HashSize)
	for _, h := range hashes {
		buf = append(buf, h[:]...)
	}
	if err := l.tree.Truncate(0); err != nil {
		return err
	}
	_, err = l.tree.WriteAt(buf, 0)
	return err
}

// readLeaves returns the leaf hash of every line.
func readLeaves(r io.Reader) ([]tlog.Hash, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	var leaves []tlog.Hash
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			return nil, errors.New("torn last line")
		}
		ln, err := decodeLine(data[:i])
		if err != nil {
			return nil, fmt.Errorf("record %d: %v", len(leaves), err)
		}
		h, _, err := ln.leafHash()
		if err != nil {
			return nil, fmt.Errorf("record %d: %v", len(leaves), err)
		}
		leaves = append(leaves, h)
		data = data[i+1:]
	}
	return leaves, nil
}

// storedHashes returns the tlog stored hashes of a list of leaves.
func storedHashes(leaves []tlog.Hash) []tlog.Hash {
	var all []tlog.Hash
	rf := tlog.HashReaderFunc(func(ix []int64) ([]tlog.Hash, error) { return pick(all, ix) })
	for i, leaf := range leaves {
		hs, err := storedHashesForLeaf(int64(i), leaf, rf)
		if err != nil {
			panic(err) // all holds every index StoredHashes asks for
		}
		all = append(all, hs...)
	}
	return all
}

// storedHashesForLeaf is tlog.StoredHashesForRecordHash.
func storedHashesForLeaf(n int64, leaf tlog.Hash, r tlog.HashReader) ([]tlog.Hash, error) {
	return tlog.StoredHashesForRecordHash(n, leaf, r)
}

func pick(all []tlog.Hash, ix []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(ix))
	for i, x := range ix {
		if x < 0 || x >= int64(len(all)) {
			return nil, fmt.Errorf("hash %d not stored", x)
		}
		out[i] = all[x]
	}
	return out, nil
}

type fileHashReader struct{ f *os.File }

func (r fileHashReader) ReadHashes(ix []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(ix))
	// The hashes a tree hash or a proof needs are few but spread over the
	// file: one read of the span between them when it is small, else one
	// per hash.
	if len(ix) > 1 {
		lo, hi := slices.Min(ix), slices.Max(ix)
		if lo >= 0 && (hi-lo+1)*tlog.HashSize <= 64<<10 {
			buf := make([]byte, (hi-lo+1)*tlog.HashSize)
			if _, err := r.f.ReadAt(buf, lo*tlog.HashSize); err != nil {
				return nil, fmt.Errorf("tree cache: hashes %d-%d: %v", lo, hi, err)
			}
			for i, x := range ix {
				copy(out[i][:], buf[(x-lo)*tlog.HashSize:])
			}
			return out, nil
		}
	}
	for i, x := range ix {
		if _, err := r.f.ReadAt(out[i][:], x*tlog.HashSize); err != nil {
			return nil, fmt.Errorf("tree cache: hash %d: %v", x, err)
		}
	}
	return out, nil
}

// Append records ev and makes it durable: one fdatasync of the log. It
// returns the record's sequence number.
func (l *Log) Append(ctx context.Context, ev Event) (uint64, error) {
	seqs, err := l.AppendBatch(ctx, []Event{ev}, nil)
	if err != nil {
		return 0, err
	}
	return seqs[0], nil
}

// BatchOptions tune AppendBatch.
type BatchOptions struct {
	// SyncFS makes the records durable with syncfs(2) on the log's
	// filesystem instead of fdatasync of the log: writes the caller made
	// before the call to files on the same filesystem (an action record,
	// written but not synced) become durable in the same round.
	SyncFS bool
	// Deferred writes the records without making them durable: the next
	// durable append makes them durable with its own (an fdatasync or
	// syncfs flushes every earlier line), as does any reader that hands
	// out a checkpoint (readLog, readTail) and Open when the checkpoint
	// cache is behind. Until then a power cut — not a killed process, whose
	// writes the kernel keeps — may lose them, or cut the last of them
	// short, and only them: they are the log's last lines. The checkpoint
	// cache is not advanced past what is durable. For the records of
	// decisions that changed nothing (docs/audit.md, "Durability").
	Deferred bool
}

// AppendBatch records evs in order with one durable write and returns their
// sequence numbers. Either every record is durable or, after a crash,
// a prefix of them is (the next Open trims a torn one).
func (l *Log) AppendBatch(ctx context.Context, evs []Event, opts *BatchOptions) ([]uint64, error) {
	if len(evs) == 0 {
		return nil, nil
	}
	end := timings.Start(ctx, "lock and refresh")
	unlock, err := l.lock()
	if err != nil {
		end()
		return nil, err
	}
	defer unlock()
	err = l.refresh()
	end()
	if err != nil {
		return nil, err
	}
	return l.appendLocked(ctx, evs, opts)
}

func (l *Log) appendLocked(ctx context.Context, evs []Event, opts *BatchOptions) ([]uint64, error) {
	syncfs := opts != nil && opts.SyncFS
	// A log without its checkpoint cache yet (its first records) makes
	// them durable: verify reads a missing cache as a truncation.
	deferred := opts != nil && opts.Deferred && !syncfs && l.cpf != nil
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out []byte
	var newHashes []tlog.Hash
	seqs := make([]uint64, 0, len(evs))
	n, last, root := l.n, l.last, l.root
	// Hashes stored so far come from the tree file, new ones from memory.
	base := tlog.StoredHashCount(n)
	rf := tlog.HashReaderFunc(func(ix []int64) ([]tlog.Hash, error) {
		hs := make([]tlog.Hash, len(ix))
		var old []int64 // those in the file, read together
		for i, x := range ix {
			if x >= base {
				if x-base >= int64(len(newHashes)) {
					return nil, fmt.Errorf("hash %d not stored", x)
				}
				hs[i] = newHashes[x-base]
				continue
			}
			old = append(old, x)
		}
		if len(old) == 0 {
			return hs, nil
		}
		got, err := fileHashReader{l.tree}.ReadHashes(old)
		if err != nil {
			return nil, err
		}
		for i, x := range ix {
			if x < base {
				hs[i], got = got[0], got[1:]
			}
		}
		return hs, nil
	})
	var lastCP string
	end := timings.Start(ctx, "sign")
	for _, ev := range evs {
		payload, err := l.statement(ev, n, last, root)
		if err != nil {
			return nil, err
		}
		// (Not on another goroutine beside the checkpoint's: in a fresh
		// process that starts a thread, which costs more than it saves.)
		sig := ed25519.Sign(l.priv, dsse.PAE(PayloadType, payload))
		hs, err := tlog.StoredHashesForRecordHash(n, tlog.RecordHash(payload), rf)
		if err != nil {
			return nil, err
		}
		newHashes = append(newHashes, hs...)
		root, err = tlog.TreeHash(n+1, rf)
		if err != nil {
			return nil, err
		}
		cp, err := l.sign(n+1, root)
		if err != nil {
			return nil, err
		}
		enc, err := encodeLine(&line{
			PayloadType: PayloadType,
			Payload:     b64.EncodeToString(payload),
			Signatures:  []dsse.Signature{{KeyID: l.keyID, Sig: b64.EncodeToString(sig)}},
			Checkpoint:  cp,
		})
		if err != nil {
			return nil, err
		}
		out = append(out, enc...)
		seqs = append(seqs, uint64(n))
		n, last, lastCP = n+1, sha256.Sum256(enc[:len(enc)-1]), cp
	}
	end()
	// One write(2) of whole lines, then the one durable round.
	end = timings.Start(ctx, "write")
	_, err := l.f.Write(out)
	end()
	if err != nil {
		// A short write (ENOSPC) must not leave part of a line for the
		// next append to follow: cut the file back to its last whole line.
		l.f.Truncate(l.size)
		l.size = -1 // unknown: refresh rereads
		return nil, fmt.Errorf("audit: append: %w", err)
	}
	if deferred {
		// Durable with the next durable append (BatchOptions.Deferred).
	} else if syncfs {
		end := timings.Start(ctx, "syncfs")
		err := unix.Syncfs(int(l.f.Fd()))
		end()
		if err != nil {
			l.size = -1
			return nil, fmt.Errorf("audit: syncfs: %w", err)
		}
	} else if err := fdatasync(ctx, l.f); err != nil {
		l.size = -1
		return nil, fmt.Errorf("audit: sync: %w", err)
	}
	// The caches: the tree's stored hashes and the checkpoint, unsynced.
	buf := make([]byte, 0, len(newHashes)*tlog.HashSize)
	for _, h := range newHashes {
		buf = append(buf, h[:]...)
	}
	if _, err := l.tree.WriteAt(buf, base*tlog.HashSize); err != nil {
		return nil, err
	}
	// The checkpoint cache never says more than is durable: after a power
	// cut it must not claim records the log lost (that reads as a
	// truncation).
	if !deferred {
		if err := l.writeCheckpointCache(lastCP); err != nil {
			return nil, err
		}
	}
	l.size += int64(len(out))
	l.n, l.last, l.root = n, last, root
	return seqs, nil
}

// syncData makes the data of f — the log, open for reading or writing —
// durable: what a checkpoint handed out covers must not be lost to a power
// cut (BatchOptions.Deferred). A filesystem that cannot sync (EINVAL,
// EROFS) has nothing to make durable.
func syncData(f *os.File) error {
	err := unix.Fdatasync(int(f.Fd()))
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.EROFS) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("audit: sync: %w", err)
	}
	return nil
}

// fdatasync makes f's data durable, timed (docs/timings.md).
func fdatasync(ctx context.Context, f *os.File) error {
	defer timings.Start(ctx, "fdatasync")()
	return unix.Fdatasync(int(f.Fd()))
}

// writeCheckpointCache rewrites the checkpoint file in place, under the
// writers' lock, without a sync: the same signed text is durable in the
// log's last line. Verify reads it under a shared lock, so it never sees a
// half-written one; rewriting in place saves making an inode per record.
func (l *Log) writeCheckpointCache(cp string) error {
	if l.cpf == nil {
		f, err := os.OpenFile(filepath.Join(l.dir, CheckpointFile), os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return err
		}
		l.cpf = f
	}
	if _, err := l.cpf.WriteAt([]byte(cp), 0); err != nil {
		return err
	}
	// A newer checkpoint is never shorter than an older one of the same
	// log (only the size's digits vary); truncate only a longer leftover.
	fi, err := l.cpf.Stat()
	if err != nil || fi.Size() > int64(len(cp)) {
		return l.cpf.Truncate(int64(len(cp)))
	}
	return nil
}

// statement builds the payload of ev as record n: the statement the
// record's envelope signs.
func (l *Log) statement(ev Event, n int64, prev [32]byte, root tlog.Hash) ([]byte, error) {
	if !events[ev.Name] {
		return nil, fmt.Errorf("audit: unknown event %q", ev.Name)
	}
	ev, err := applyLevel(ev)
	if err != nil {
		return nil, fmt.Errorf("audit: %v", err)
	}
	st := Statement{
		Type:          StatementType,
		PredicateType: PredicateType,
		Predicate:     Predicate{Version: PredicateVersion, Seq: uint64(n), Time: l.Now().UTC(), Event: ev},
	}
	if n > 0 {
		st.Predicate.Prev = hex.EncodeToString(prev[:])
	}
	if ev.DescriptorSHA256 != "" {
		if _, err := parseHash(ev.DescriptorSHA256); err != nil {
			return nil, fmt.Errorf("audit: descriptor sha256: %v", err)
		}
		st.Subject = []Subject{{Name: ev.ActionID, Digest: map[string]string{"sha256": ev.DescriptorSHA256}}}
	} else {
		// No descriptor (gc, a repair): the subject is the log itself, by
		// the root of the tree before this record.
		st.Subject = []Subject{{Name: l.origin, Digest: map[string]string{"sha256": hex.EncodeToString(root[:])}}}
	}
	return marshalStatement(&st)
}

// Checkpoint returns the log's current signed tree head.
func (l *Log) Checkpoint() (Checkpoint, error) {
	unlock, err := l.lock()
	if err != nil {
		return Checkpoint{}, err
	}
	defer unlock()
	if err := l.refresh(); err != nil {
		return Checkpoint{}, err
	}
	if l.n == 0 {
		return Checkpoint{}, errors.New("audit: the log is empty")
	}
	ln, err := l.lastLine()
	if err != nil {
		return Checkpoint{}, err
	}
	return l.openCheckpoint(ln.Checkpoint, l.origin)
}

// reopenIfReplaced reopens log.jsonl when PruneBefore (in any process)
// replaced it since this Log opened it.
func (l *Log) reopenIfReplaced() error {
	path := filepath.Join(l.dir, LogFile)
	pi, err := os.Stat(path)
	if err != nil {
		return err
	}
	fi, err := l.f.Stat()
	if err != nil {
		return err
	}
	if os.SameFile(pi, fi) {
		return nil
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	l.f.Close()
	l.f, l.size = f, -1
	return nil
}

// HostOrigin is the origin act gives a new log on this host:
// "<hostname>/act/audit", with characters a note name cannot hold
// replaced by '-'.
func HostOrigin() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		h = "localhost"
	}
	h = strings.Map(func(r rune) rune {
		if r <= ' ' || r == '+' || r == '/' || r > '~' {
			return '-'
		}
		return r
	}, h)
	return h + "/act/audit"
}
