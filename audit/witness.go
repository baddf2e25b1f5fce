package audit

// Witnesses (docs/audit.md, "Witnesses"): a witness is an independent
// service that cosigns a checkpoint only if it is consistent with every
// checkpoint of the same log it cosigned before (c2sp.org/tlog-witness).
// WitnessLog sends it the log's newest checkpoint with a consistency proof
// from the size it last cosigned, and stores its cosignature beside the
// log, in witness/<name>: the checkpoint as a signed note carrying the
// log's signature and the witness's cosignature, which any note reader
// opens. Verify checks those files against the policy's keys and the log.
//
// Nothing here is on the append path: an append never reads or writes
// witness/.

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
	"golang.org/x/sys/unix"

	"github.com/act-project/act/internal/atomicfile"
)

// WitnessDir is the directory, inside the log directory, of the stored
// cosigned checkpoints: one file per witness, named after it.
const WitnessDir = "witness"

// WitnessTimeout is how long WitnessLog waits for one witness by default.
const WitnessTimeout = 10 * time.Second

// witnessLock, in WitnessDir, serializes the writers of the stored
// cosignatures. A policy's witness names start with a letter or a digit,
// so none is this file.
const witnessLock = ".lock"

// A Witness is one witness of the policy.
type Witness struct {
	// Name is the policy's name for it: the name of its file in
	// witness/ (letters, digits, '.', '_', '-').
	Name string `json:"name"`
	// Key is its note verifier key, cosignature/v1 (see
	// [NewCosignatureVerifier]); the name inside it is the one its
	// cosignature lines carry.
	Key string `json:"key"`
	// URL is its submission prefix: act POSTs to URL/add-checkpoint.
	URL string `json:"url"`
}

// A Quorum asks that at least K of the witnesses named cosign.
type Quorum struct {
	Witnesses []string `json:"witnesses"`
	K         int      `json:"k"`
}

// The key type byte of a cosignature/v1 verifier key
// (c2sp.org/tlog-cosignature: Ed25519 over a timestamped message).
const cosignatureV1 = 0x04

// A cosignatureVerifier verifies c2sp.org/tlog-cosignature v1 signatures:
// Ed25519 over "cosignature/v1\ntime <T>\n" and the checkpoint body, the
// signature being the 8-byte big-endian T and the Ed25519 signature.
type cosignatureVerifier struct {
	name string
	hash uint32
	key  ed25519.PublicKey
}

func (v *cosignatureVerifier) Name() string    { return v.name }
func (v *cosignatureVerifier) KeyHash() uint32 { return v.hash }

func (v *cosignatureVerifier) Verify(msg, sig []byte) bool {
	if len(sig) != 8+ed25519.SignatureSize {
		return false
	}
	t := binary.BigEndian.Uint64(sig)
	if t > math.MaxInt64 {
		return false
	}
	m := append(fmt.Appendf(nil, "cosignature/v1\ntime %d\n", t), msg...)
	return ed25519.Verify(v.key, m, sig[8:])
}

// NewCosignatureVerifier parses a witness's note verifier key,
// "<name>+<8 hex digits of key hash>+<base64 of 0x04 || Ed25519 public
// key>", as litewitness prints it, into a note verifier of its
// cosignatures. Only cosignature/v1 keys (type 0x04) are accepted: an
// Ed25519 note key (0x01) proves no time, and ML-DSA-44 cosignatures
// (0x06) are not supported yet.
func NewCosignatureVerifier(vkey string) (note.Verifier, error) {
	name, rest, ok1 := strings.Cut(vkey, "+")
	hash16, key64, ok2 := strings.Cut(rest, "+")
	if !ok1 || !ok2 || name == "" || strings.ContainsFunc(name, func(r rune) bool { return r <= ' ' }) || len(hash16) != 8 {
		return nil, errors.New("not a note verifier key (<name>+<hash>+<base64 key>)")
	}
	hash, err := strconv.ParseUint(hash16, 16, 32)
	if err != nil {
		return nil, errors.New("not a note verifier key: its key hash is not 8 hex digits")
	}
	key, err := base64.StdEncoding.Strict().DecodeString(key64)
	if err != nil || len(key) == 0 {
		return nil, errors.New("not a note verifier key: its key is not base64")
	}
	switch key[0] {
	case cosignatureV1:
	case 0x01:
		return nil, errors.New("an Ed25519 note key (type 0x01), not a witness's cosignature/v1 key (type 0x04)")
	case 0x06:
		return nil, errors.New("an ML-DSA-44 cosignature key (type 0x06): act verifies only cosignature/v1 Ed25519 keys (type 0x04) yet")
	default:
		return nil, fmt.Errorf("a key of type 0x%02x: act verifies only cosignature/v1 Ed25519 keys (type 0x04)", key[0])
	}
	if len(key) != 1+ed25519.PublicKeySize {
		return nil, errors.New("a cosignature/v1 key of the wrong length")
	}
	h := sha256.Sum256(append([]byte(name+"\n"), key...))
	if uint32(hash) != binary.BigEndian.Uint32(h[:]) {
		return nil, errors.New("the key hash does not match the name and key")
	}
	return &cosignatureVerifier{name: name, hash: uint32(hash), key: ed25519.PublicKey(key[1:])}, nil
}

// cosignatureTime is the timestamp of a cosignature (base64 of key hash,
// time, signature).
func cosignatureTime(b64sig string) time.Time {
	b, err := base64.StdEncoding.DecodeString(b64sig)
	if err != nil || len(b) < 12 {
		return time.Time{}
	}
	t := binary.BigEndian.Uint64(b[4:12])
	if t > math.MaxInt64 {
		return time.Time{}
	}
	return time.Unix(int64(t), 0).UTC()
}

// A Cosigned checkpoint of one witness, as stored in witness/<name>.
type Cosigned struct {
	Checkpoint
	// Time is the witness's timestamp in its cosignature.
	Time time.Time
}

// readCosigned reads and checks the stored cosigned checkpoint of w: it
// must carry a valid signature of the log (verif, origin) and one of the
// witness (wv). A missing file is (nil, nil).
func readCosigned(dir, name string, verif, wv note.Verifier, origin string) (*Cosigned, error) {
	b, err := os.ReadFile(filepath.Join(dir, WitnessDir, name))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return openCosigned(b, verif, wv, origin)
}

// Errors of openCosigned.
var (
	errNotLogs     = errors.New("the checkpoint is not signed by the log's key")
	errNoCosig     = errors.New("it carries no cosignature by the witness's key")
	errBadCosig    = errors.New("its cosignature does not verify with the witness's key")
	errNotCosigned = errors.New("not a cosigned checkpoint")
)

// openCosigned checks a cosigned checkpoint note.
func openCosigned(b []byte, verif, wv note.Verifier, origin string) (*Cosigned, error) {
	n, err := note.Open(b, note.VerifierList(verif, wv))
	var inv *note.InvalidSignatureError
	switch {
	case errors.As(err, &inv) && inv.Name == wv.Name() && inv.Hash == wv.KeyHash():
		return nil, errBadCosig
	case errors.As(err, &inv):
		return nil, errNotLogs
	case err != nil:
		var unv *note.UnverifiedNoteError
		if errors.As(err, &unv) {
			return nil, errNotLogs
		}
		return nil, errNotCosigned
	}
	var logSig, cosig *note.Signature
	for i, sg := range n.Sigs {
		switch {
		case sg.Name == verif.Name() && sg.Hash == verif.KeyHash():
			logSig = &n.Sigs[i]
		case sg.Name == wv.Name() && sg.Hash == wv.KeyHash():
			cosig = &n.Sigs[i]
		}
	}
	if logSig == nil {
		return nil, errNotLogs
	}
	if cosig == nil {
		return nil, errNoCosig
	}
	cp, err := parseCheckpointBody(n.Text)
	if err != nil {
		return nil, err
	}
	if cp.Origin != origin {
		return nil, fmt.Errorf("checkpoint origin %q, the log's is %q", cp.Origin, origin)
	}
	cp.Text = string(b)
	return &Cosigned{Checkpoint: cp, Time: cosignatureTime(cosig.Base64)}, nil
}

// extends reports whether the tree s (of n records) extends cp: cp is no
// larger and its root is the tree's root at its size.
func (s *scanned) extends(cp Checkpoint, n int64) bool {
	if cp.N > n {
		return false
	}
	root, err := tlog.TreeHash(cp.N, s.reader())
	return err == nil && root == cp.Hash
}

// WitnessOptions tune WitnessLog.
type WitnessOptions struct {
	VerifyOptions
	// Timeout bounds the exchange with each witness (WitnessTimeout when
	// 0); the context bounds them all.
	Timeout time.Duration
	// Client makes the requests (http.DefaultClient's transport when nil).
	Client *http.Client
}

// The status of a witness after WitnessLog.
const (
	// WitnessCosigned: it cosigned the log's newest checkpoint now.
	WitnessCosigned = "cosigned"
	// WitnessCurrent: its stored cosignature is of the newest checkpoint
	// already; it was not asked again.
	WitnessCurrent = "current"
	// WitnessFailed: unreachable, refused, or answered with no valid
	// cosignature; Error says which.
	WitnessFailed = "failed"
)

// A WitnessResult is what one witness did.
type WitnessResult struct {
	Name   string `json:"name"`
	URL    string `json:"url"`
	Status string `json:"status"`
	// Size is the size of the checkpoint it has cosigned, as stored now
	// (0: none).
	Size int64 `json:"size"`
	// Previous is the size it had cosigned before this call, as it said
	// (its 409 answer) or as act had stored it.
	Previous int64 `json:"previous"`
	// Known is the size the witness itself said it had cosigned (its 409
	// answer); 0 when it did not say.
	Known int64 `json:"known,omitempty"`
	// Time is the timestamp of its stored cosignature.
	Time  time.Time `json:"time,omitzero"`
	Error string    `json:"error,omitempty"`
	// Fork: the witness holds a checkpoint of this log that the log does
	// not extend (it cosigned a larger or a different tree), or refused
	// the proof: the log was rewritten, or someone showed it a fork.
	Fork bool `json:"fork,omitempty"`
}

// A WitnessReport is what WitnessLog did.
type WitnessReport struct {
	Records    int64           `json:"records"`
	Checkpoint string          `json:"checkpoint"`
	Witnesses  []WitnessResult `json:"witnesses"`
}

// A WitnessError names the witnesses that did not cosign.
type WitnessError struct {
	Failed []WitnessResult
}

func (e *WitnessError) Error() string {
	var b strings.Builder
	for i, f := range e.Failed {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "witness %s: %s", f.Name, f.Error)
	}
	return b.String()
}

// WitnessLog asks each of ws, at once, to cosign the newest checkpoint of
// the log in dir (signed by its key, its tree from the tree cache: see
// readHead; act audit verify checks the records) per c2sp.org/tlog-witness:
// POST <URL>/add-checkpoint with "old <size>", the consistency proof from
// that size (the one the witness last cosigned, as stored in witness/),
// an empty line and the signed checkpoint. A witness that answers 409
// with the size it knows is asked once more, with the proof from that
// size; one that knows more records than the log, or refuses the proof
// (422), holds a checkpoint the log does not extend: a fork. A
// cosignature is verified with the witness's key before it is stored in
// witness/<name> (atomically, fsynced); one by another key is refused.
// A witness whose stored cosignature is of the newest checkpoint already
// is not asked. The error, when some witness did not cosign, is a
// *WitnessError; the report has every witness's result either way.
func WitnessLog(ctx context.Context, dir string, ws []Witness, opts WitnessOptions) (WitnessReport, error) {
	var rep WitnessReport
	w, err := readHead(dir, opts.VerifyOptions)
	if err != nil {
		return rep, err
	}
	rep.Records = w.n
	if w.n == 0 {
		return rep, errors.New("audit: the log holds no record yet: nothing to witness")
	}
	if err := os.MkdirAll(filepath.Join(dir, WitnessDir), 0o700); err != nil {
		return rep, err
	}
	w.opts = opts
	rep.Checkpoint = w.cp
	rep.Witnesses = make([]WitnessResult, len(ws))
	var wg sync.WaitGroup
	for i, wt := range ws {
		wg.Go(func() { rep.Witnesses[i] = w.one(ctx, wt, false) })
	}
	wg.Wait()
	var we WitnessError
	for _, res := range rep.Witnesses {
		if res.Status == WitnessFailed {
			we.Failed = append(we.Failed, res)
		}
	}
	if len(we.Failed) > 0 {
		return rep, &we
	}
	return rep, nil
}

// witnessing is one WitnessLog call: the log's newest checkpoint and its
// tree's stored hashes.
type witnessing struct {
	dir    string
	s      *scanned
	n      int64
	root   tlog.Hash
	origin string
	cp     string // the newest checkpoint, signed
	opts   WitnessOptions
}

// readHead reads what WitnessLog needs of the log in dir: its last
// record's checkpoint, verified with the log's public key, and the tree's
// stored hashes from the tree cache, checked against that checkpoint's
// root. Not every record: witnessing runs after each apply
// (audit.witness_after) within seconds however long the log is, a witness
// cosigns the tree (it checks the consistency proof itself), and act audit
// verify checks the records. Where the cache does not match the last
// checkpoint (an append was interrupted), the log is scanned as Verify
// does.
func readHead(dir string, opts VerifyOptions) (*witnessing, error) {
	pub := opts.PublicKey
	if pub == nil {
		b, err := os.ReadFile(filepath.Join(dir, PublicKeyFile))
		if err != nil {
			return nil, fmt.Errorf("audit: public key: %w", err)
		}
		if pub, err = ParsePublicKeyPEM(b); err != nil {
			return nil, fmt.Errorf("audit: public key %s: %v", filepath.Join(dir, PublicKeyFile), err)
		}
	}
	last, tree, err := readTail(dir)
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	if w, ok := headFromCache(last, tree, pub); ok {
		w.dir = dir
		return w, nil
	}
	r, s, err := scan(dir, opts)
	if err != nil {
		return nil, err
	}
	w := &witnessing{dir: dir, s: s, n: r.Records, origin: r.Origin}
	if w.n > 0 {
		w.cp = s.lines[w.n-1].Checkpoint
		w.root, _ = tlog.TreeHash(w.n, s.reader())
	}
	return w, nil
}

// readTail reads, at one moment (under the shared lock), the last line of
// the log in dir (nil for none) and its tree cache.
func readTail(dir string) (last, tree []byte, err error) {
	defer readLock(dir)()
	f, err := os.Open(filepath.Join(dir, LogFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if last, err = readLastLine(f, fi.Size()); err != nil {
		return nil, nil, err
	}
	if err = syncData(f); err != nil { // a witness cosigns only what is durable (BatchOptions.Deferred)
		return nil, nil, err
	}
	tree, err = os.ReadFile(filepath.Join(dir, TreeFile))
	if errors.Is(err, fs.ErrNotExist) {
		err = nil
	}
	return last, tree, err
}

// headFromCache is the witnessing of the last line and tree cache read by
// readTail, when the line's checkpoint is signed by pub and the cache
// holds exactly the stored hashes of its tree.
func headFromCache(last, tree []byte, pub ed25519.PublicKey) (*witnessing, bool) {
	if last == nil {
		return nil, false
	}
	ln, err := decodeLine(last)
	if err != nil {
		return nil, false
	}
	i := strings.Index(ln.Checkpoint, "\n\n")
	if i < 0 {
		return nil, false
	}
	body, err := parseCheckpointBody(ln.Checkpoint[:i+1])
	if err != nil {
		return nil, false
	}
	verif, err := noteVerifier(body.Origin, pub)
	if err != nil {
		return nil, false
	}
	cp, err := openCheckpoint(ln.Checkpoint, verif, body.Origin)
	if err != nil || cp.N == 0 || int64(len(tree)) != tlog.StoredHashCount(cp.N)*tlog.HashSize {
		return nil, false
	}
	s := &scanned{verif: verif, hashes: make([]tlog.Hash, len(tree)/tlog.HashSize)}
	for j := range s.hashes {
		copy(s.hashes[j][:], tree[j*tlog.HashSize:])
	}
	if root, err := tlog.TreeHash(cp.N, s.reader()); err != nil || root != cp.Hash {
		return nil, false
	}
	return &witnessing{s: s, n: cp.N, root: cp.Hash, origin: cp.Origin, cp: ln.Checkpoint}, true
}

// one asks witness wt to cosign; unless always, not where its stored
// cosignature is of the newest checkpoint already.
func (w *witnessing) one(ctx context.Context, wt Witness, always bool) (res WitnessResult) {
	res = WitnessResult{Name: wt.Name, URL: wt.URL, Status: WitnessFailed}
	fail := func(fork bool, format string, args ...any) WitnessResult {
		res.Status, res.Fork, res.Error = WitnessFailed, fork, fmt.Sprintf(format, args...)
		return res
	}
	wv, err := NewCosignatureVerifier(wt.Key)
	if err != nil {
		return fail(false, "its key: %v", err)
	}
	stored, err := readCosigned(w.dir, wt.Name, w.s.verif, wv, w.origin)
	if err != nil {
		// A stored file that does not verify is not trusted for a size:
		// ask from 0, the witness answers with the size it knows.
		stored = nil
	}
	old := int64(0)
	if stored != nil {
		res.Size, res.Previous, res.Time = stored.N, stored.N, stored.Time
		if !w.s.extends(stored.Checkpoint, w.n) {
			return fail(true, "it cosigned a checkpoint of %d records that this log does not extend (%s): the log was rewritten or truncated", stored.N, filepath.Join(w.dir, WitnessDir, wt.Name))
		}
		if stored.N == w.n && !always {
			res.Status = WitnessCurrent
			return res
		}
		old = stored.N
	}
	timeout := w.opts.Timeout
	if timeout <= 0 {
		timeout = WitnessTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	body, code, err := w.post(ctx, wt.URL, old)
	if err != nil {
		return fail(false, "%s", err)
	}
	if code == http.StatusConflict {
		known, err := strconv.ParseInt(strings.TrimSuffix(string(body), "\n"), 10, 64)
		if err != nil || known < 0 {
			return fail(false, "it answered 409 without a size (%q)", short(body))
		}
		res.Previous, res.Known = known, known
		if known > w.n {
			return fail(true, "it has cosigned %d records of this log, and the log holds %d: the log was truncated or rewritten (a fork)", known, w.n)
		}
		if body, code, err = w.post(ctx, wt.URL, known); err != nil {
			return fail(false, "%s", err)
		}
	}
	switch code {
	case http.StatusOK:
	case http.StatusConflict:
		return fail(false, "it answered 409 twice (%s): its state changed while act asked", short(body))
	case http.StatusUnprocessableEntity:
		return fail(true, "it refused the consistency proof from %d records (422: %s): the checkpoint it cosigned before is not on this log (a fork, or the log was rewritten)", res.Previous, short(body))
	case http.StatusNotFound, http.StatusForbidden:
		return fail(false, "it does not know this log (origin %s) or its key (%d: %s): register it with the witness (docs/audit.md)", w.origin, code, short(body))
	default:
		return fail(false, "it answered %d: %s", code, short(body))
	}
	text := w.cp + string(body)
	c, err := openCosigned([]byte(text), w.s.verif, wv, w.origin)
	switch {
	case errors.Is(err, errNoCosig):
		return fail(false, "it answered with no cosignature by the policy's key %s (it signed as %s): refused, not stored", wv.Name(), signers(body))
	case errors.Is(err, errBadCosig):
		return fail(false, "its cosignature does not verify with the policy's key %s: refused, not stored", wv.Name())
	case err != nil:
		return fail(false, "its answer is not a cosignature of the checkpoint (%v): refused, not stored", err)
	case c.N != w.n || c.Hash != w.root:
		return fail(false, "it cosigned another checkpoint than the one sent: refused, not stored")
	}
	if err := w.store(wt.Name, wv, c); err != nil {
		return fail(false, "store its cosignature: %v", err)
	}
	res.Status, res.Size, res.Time = WitnessCosigned, c.N, c.Time
	return res
}

// post sends the add-checkpoint request with the proof from size old.
func (w *witnessing) post(ctx context.Context, base string, old int64) ([]byte, int, error) {
	var req bytes.Buffer
	fmt.Fprintf(&req, "old %d\n", old)
	if old > 0 && old < w.n {
		proof, err := tlog.ProveTree(w.n, old, w.s.reader())
		if err != nil {
			return nil, 0, fmt.Errorf("consistency proof from %d records: %v", old, err)
		}
		for _, h := range proof {
			fmt.Fprintf(&req, "%s\n", base64.StdEncoding.EncodeToString(h[:]))
		}
	}
	req.WriteString("\n")
	req.WriteString(w.cp)
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(base, "/")+"/add-checkpoint", &req)
	if err != nil {
		return nil, 0, fmt.Errorf("its url: %v", err)
	}
	hr.Header.Set("Content-Type", "text/plain; charset=utf-8")
	client := w.opts.Client
	if client == nil {
		client = &http.Client{}
	}
	resp, err := client.Do(hr)
	if err != nil {
		return nil, 0, unreachable(ctx, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return nil, 0, unreachable(ctx, err)
	}
	return body, resp.StatusCode, nil
}

// unreachable says why a request got no answer.
func unreachable(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return errors.New("unreachable: no answer in time")
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return errors.New("unreachable: no answer in time")
	}
	return fmt.Errorf("unreachable: %v", err)
}

// short is an answer's body for a message: its first line, bounded.
func short(b []byte) string {
	s, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	if s == "" {
		return "no body"
	}
	return strconv.Quote(s)
}

// signers names the signers of note signature lines, for a message.
func signers(b []byte) string {
	var names []string
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, "— "); ok {
			name, sig, _ := strings.Cut(rest, " ")
			id := ""
			if k, err := base64.StdEncoding.DecodeString(sig); err == nil && len(k) >= 4 {
				id = "+" + hex.EncodeToString(k[:4])
			}
			names = append(names, name+id)
		}
	}
	if len(names) == 0 {
		return "nothing"
	}
	return strings.Join(names, ", ")
}

// store writes the cosigned checkpoint c of witness name: the log's
// checkpoint and the witness's cosignature lines only. Under
// witness/.lock (no witness's name: those start with a letter or digit)
// it keeps a stored checkpoint of more records that is still on the log
// (another act process stored it meanwhile): a store never goes back.
func (w *witnessing) store(name string, wv note.Verifier, c *Cosigned) error {
	n, err := note.Open([]byte(c.Text), note.VerifierList(w.s.verif, wv))
	if err != nil {
		return err
	}
	var text strings.Builder
	text.WriteString(n.Text)
	text.WriteString("\n")
	for _, sg := range n.Sigs {
		if sg.Name == w.s.verif.Name() && sg.Hash == w.s.verif.KeyHash() {
			fmt.Fprintf(&text, "— %s %s\n", sg.Name, sg.Base64)
		}
	}
	for _, sg := range n.Sigs {
		if sg.Name == wv.Name() && sg.Hash == wv.KeyHash() {
			fmt.Fprintf(&text, "— %s %s\n", sg.Name, sg.Base64)
		}
	}
	wdir := filepath.Join(w.dir, WitnessDir)
	lf, err := os.OpenFile(filepath.Join(wdir, witnessLock), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	unlock, err := flock(lf, unix.LOCK_EX, wdir)
	if err != nil {
		return err
	}
	defer unlock()
	if prev, err := readCosigned(w.dir, name, w.s.verif, wv, w.origin); err == nil && prev != nil &&
		prev.N > c.N && w.s.extends(prev.Checkpoint, w.n) {
		return nil
	}
	return atomicfile.WriteFile(filepath.Join(wdir, name), []byte(text.String()), 0o644)
}

// A WitnessStatus is what Verify found of one witness's stored
// cosignature.
type WitnessStatus struct {
	Name string `json:"name"`
	// Size is the size of the checkpoint it cosigned (0: none stored).
	Size int64 `json:"size"`
	// Time is its cosignature's timestamp.
	Time time.Time `json:"time,omitzero"`
}

// A QuorumStatus is what Verify found of one quorum.
type QuorumStatus struct {
	Quorum
	// Size is the most records K of the witnesses cosigned: every record
	// below it is covered by the quorum.
	Size int64 `json:"size"`
	// Due is the fewest records the quorum must cover now: those
	// appended more than the grace period ago by their own time, or every
	// record when the quorum's cosignatures are stale.
	Due int64 `json:"due"`
	// Time is when the quorum last cosigned, by the witnesses' clocks:
	// the K-th newest cosignature time of its witnesses (zero: fewer
	// than K have cosigned).
	Time time.Time `json:"time,omitzero"`
	// Stale: Time is zero or more than the grace period (and a minute)
	// before now. Nothing act can check then shows that a record beyond
	// Size was appended within the grace period (a record's own time is
	// the key holder's word), so every record is due.
	Stale bool `json:"stale,omitempty"`
}

// Unwitnessed is the kind of Problem of a record older than the grace
// period that a quorum has not cosigned.
const Unwitnessed = "unwitnessed"

// verifyWitnesses checks, for each witness of opts, its stored cosigned
// checkpoint: the log's signature, the witness's cosignature by the key
// of opts, and that the log extends it (its root is the log's at its
// size, whatever opts.Since says); then each quorum: the records that are
// due must lie within a checkpoint that K of its witnesses cosigned. A
// record is due when its own time is more than opts.Grace before opts.Now
// (or far ahead of it); and every record is, unless K of the quorum's
// witnesses cosigned within opts.Grace by their own clocks: a log
// rewritten with fresh times by the key's holder, witness/ deleted, has
// records that all look young, and only a witness's clock says otherwise
// (docs/audit.md, "Verifying with witnesses").
func verifyWitnesses(r *Report, s *scanned, dir string, opts VerifyOptions) error {
	fail := func(seq int64, kind, format string, args ...any) error {
		r.OK = false
		r.Problem = &Problem{Seq: seq, Kind: kind, Detail: fmt.Sprintf(format, args...)}
		return r.Problem
	}
	n := r.Records
	sizes := map[string]int64{}
	times := map[string]time.Time{}
	for _, wt := range opts.Witnesses {
		st := WitnessStatus{Name: wt.Name}
		wv, err := NewCosignatureVerifier(wt.Key)
		if err != nil {
			r.OK = false
			return fmt.Errorf("audit: witness %s: its key: %v", wt.Name, err)
		}
		file := filepath.Join(dir, WitnessDir, wt.Name)
		var c *Cosigned
		if s.verif != nil {
			c, err = readCosigned(dir, wt.Name, s.verif, wv, r.Origin)
		} else if _, serr := os.Stat(file); serr == nil {
			err = errNotLogs // a log with no record has no key to check it with
		}
		switch {
		case errors.Is(err, errNotLogs):
			return fail(n, UnknownKey, "%s: the checkpoint witness %s cosigned is not signed by the log's key: the log was re-signed", file, wt.Name)
		case errors.Is(err, errBadCosig), errors.Is(err, errNoCosig):
			return fail(n, BadSignature, "%s: %v (%s): run act audit witness", file, err, wv.Name())
		case err != nil:
			return fail(n, Altered, "%s: %v", file, err)
		case c != nil && c.N > n:
			return fail(n, Truncated, "witness %s cosigned a checkpoint of %d records, the log holds %d: truncated", wt.Name, c.N, n)
		case c != nil && !s.extends(c.Checkpoint, n):
			return fail(max(c.N-1, 0), Altered, "the log does not extend the checkpoint of %d records witness %s cosigned: rewritten below a cosigned size", c.N, wt.Name)
		case c != nil:
			st.Size, st.Time = c.N, c.Time
		}
		sizes[wt.Name], times[wt.Name] = st.Size, st.Time
		r.Witnessed = append(r.Witnessed, st)
	}
	now := opts.Now
	if now.IsZero() {
		now = time.Now()
	}
	// A record is due once appended more than Grace ago; one stamped
	// more than Grace (and a minute) after now is due too: no honest
	// clock is that far behind, and a key holder must not postpone the
	// quorum by stamping records in the future.
	due := int64(0)
	for i, t := range s.times {
		if !t.After(now.Add(-opts.Grace)) || t.After(now.Add(opts.Grace+time.Minute)) {
			due = int64(i) + 1
		}
	}
	fresh := now.Add(-opts.Grace - time.Minute)
	for _, q := range opts.Quorums {
		var got []int64
		var when []time.Time
		for _, name := range q.Witnesses {
			got = append(got, sizes[name])
			if !times[name].IsZero() {
				when = append(when, times[name])
			}
		}
		slices.Sort(got)
		slices.Reverse(got)
		slices.SortFunc(when, func(a, b time.Time) int { return b.Compare(a) })
		qs := QuorumStatus{Quorum: q, Due: due}
		if q.K > 0 && q.K <= len(got) {
			qs.Size = got[q.K-1]
		} else if q.K == 0 {
			qs.Size = n
		}
		if q.K > 0 && q.K <= len(when) {
			qs.Time = when[q.K-1]
		}
		if q.K > 0 && (qs.Time.IsZero() || qs.Time.Before(fresh)) {
			qs.Stale, qs.Due = true, n
		}
		r.Quorums = append(r.Quorums, qs)
		if qs.Size < qs.Due {
			have := 0
			for _, g := range got {
				if g > qs.Size {
					have++
				}
			}
			need := fmt.Sprintf("%d of %s must cosign a checkpoint that holds it, and %d did", q.K, strings.Join(q.Witnesses, ", "), have)
			if qs.Size < due {
				return fail(qs.Size, Unwitnessed, "appended at %s, more than witness_grace %s ago, and not cosigned by a quorum: %s (act audit witness)",
					s.times[qs.Size].UTC().Format(time.RFC3339), shortDuration(opts.Grace), need)
			}
			last := fmt.Sprintf("fewer than %d of its witnesses have cosigned any checkpoint of this log", q.K)
			if q.K == 1 {
				last = "none of its witnesses has cosigned any checkpoint of this log"
			}
			if !qs.Time.IsZero() {
				last = fmt.Sprintf("the quorum last cosigned at %s, more than witness_grace %s ago by the witnesses' clocks", qs.Time.UTC().Format(time.RFC3339), shortDuration(opts.Grace))
			}
			return fail(qs.Size, Unwitnessed, "not cosigned by a quorum, and %s: nothing act can check shows it was appended less than witness_grace %s ago (a record's own time is the word of the key's holder): %s (act audit witness, or act audit verify --witnesses)",
				last, shortDuration(opts.Grace), need)
		}
	}
	return nil
}

// Forked is the kind of Problem of a log that a witness, asked now, holds a
// checkpoint of that the log does not extend: its 409 names more records
// than the log holds, or its 422 refuses the consistency proof (or act's
// stored cosignature of it is not on the log).
const Forked = "forked"

// VerifyAsking is Verify that asks the witnesses of opts before it checks
// their stored cosignatures (act audit verify --witnesses): once the log's
// records verify, each witness is sent the log's newest checkpoint, as
// WitnessLog sends it, even where act's stored cosignature is of that
// checkpoint already, and what it cosigns is stored. A witness that holds
// a checkpoint of this log the log does not extend — the log was rewritten
// or truncated, or the whole state directory put back to an older copy,
// witness/ included — says so now, whatever witness/ holds: verify fails
// (Forked), naming it. A witness that cannot be reached, or refuses for
// another reason, is reported in Report.Asked; the quorums are then
// checked with what is stored, as Verify checks them.
func VerifyAsking(ctx context.Context, dir string, opts VerifyOptions, wopts WitnessOptions) (Report, error) {
	r, s, err := scan(dir, opts)
	if err != nil {
		return r, err
	}
	if r.Records > 0 && len(opts.Witnesses) > 0 {
		if err := os.MkdirAll(filepath.Join(dir, WitnessDir), 0o700); err != nil {
			return r, err
		}
		w := &witnessing{dir: dir, s: s, n: r.Records, origin: r.Origin, cp: s.lines[r.Records-1].Checkpoint, opts: wopts}
		if w.root, err = tlog.TreeHash(w.n, s.reader()); err != nil {
			return r, err
		}
		r.Asked = make([]WitnessResult, len(opts.Witnesses))
		var wg sync.WaitGroup
		for i, wt := range opts.Witnesses {
			wg.Go(func() { r.Asked[i] = w.one(ctx, wt, true) })
		}
		wg.Wait()
		for _, a := range r.Asked {
			if a.Fork {
				r.OK = false
				r.Problem = &Problem{Seq: r.Records, Kind: Forked, Detail: fmt.Sprintf("witness %s: %s", a.Name, a.Error)}
				return r, r.Problem
			}
		}
	}
	err = verifyWitnesses(&r, s, dir, opts)
	return r, err
}

// cosignatures are the signature lines of the cosignatures stored by the
// witnesses ws for the checkpoint of n records and root: each verified
// with the witness's key and the log's, in the order of ws.
func cosignatures(dir string, s *scanned, origin string, n int64, root tlog.Hash, ws []Witness) string {
	var out strings.Builder
	for _, wt := range ws {
		wv, err := NewCosignatureVerifier(wt.Key)
		if err != nil {
			continue
		}
		c, err := readCosigned(dir, wt.Name, s.verif, wv, origin)
		if err != nil || c == nil || c.N != n || c.Hash != root {
			continue
		}
		nt, err := note.Open([]byte(c.Text), note.VerifierList(s.verif, wv))
		if err != nil {
			continue
		}
		for _, sg := range nt.Sigs {
			if sg.Name == wv.Name() && sg.Hash == wv.KeyHash() {
				fmt.Fprintf(&out, "— %s %s\n", sg.Name, sg.Base64)
			}
		}
	}
	return out.String()
}

// shortDuration is d as a policy writes it: 1h, not 1h0m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
