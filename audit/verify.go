package audit

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/secure-systems-lab/go-securesystemslib/dsse"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// The kinds of damage Verify names.
const (
	Altered      = "altered"
	Removed      = "removed"
	Duplicated   = "duplicated"
	Reordered    = "reordered"
	Truncated    = "truncated"
	BadSignature = "bad signature"
	UnknownKey   = "unknown key"
)

// A Problem is the first damage Verify found: record Seq (the line's
// position, from 0) and what is wrong with it.
type Problem struct {
	Seq    int64  `json:"seq"`
	Kind   string `json:"kind"`
	Detail string `json:"detail"`
}

func (p *Problem) Error() string {
	return fmt.Sprintf("record %d: %s: %s", p.Seq, p.Kind, p.Detail)
}

// VerifyOptions tune Verify.
type VerifyOptions struct {
	// PublicKey pins the key; by default the log directory's key.pub.
	PublicKey ed25519.PublicKey
	// Since is a checkpoint saved earlier (signed note text): Verify proves
	// with a consistency proof that the log extends it.
	Since []byte

	// Witnesses are the policy's witnesses: Verify checks the cosigned
	// checkpoint stored for each in witness/ (docs/audit.md, "Verifying
	// with witnesses"). None: witness/ is not read.
	Witnesses []Witness
	// Quorums must each cover, by their cosigned checkpoints, every
	// record appended more than Grace before Now (time.Now() when zero).
	Quorums []Quorum
	Grace   time.Duration
	Now     time.Time
}

// A Report is what Verify found.
type Report struct {
	OK      bool      `json:"ok"`
	Records int64     `json:"records"`
	First   time.Time `json:"first,omitzero"`
	Last    time.Time `json:"last,omitzero"`
	Root    string    `json:"root,omitempty"` // base64, as in checkpoints
	Origin  string    `json:"origin,omitempty"`
	KeyID   string    `json:"key_id,omitempty"`
	// Pruned records (bodies dropped by gc, leaf hashes kept): how many,
	// and the time of the newest pruned one.
	Pruned        int64     `json:"pruned,omitempty"`
	PrunedThrough time.Time `json:"pruned_through,omitzero"`
	// Since is the saved checkpoint's size when VerifyOptions.Since held
	// one and the log extends it.
	Since int64 `json:"since,omitempty"`
	// Witnessed is, for each witness of VerifyOptions.Witnesses, the
	// checkpoint it cosigned; Quorums says how far each quorum covers.
	Witnessed []WitnessStatus `json:"witnessed,omitempty"`
	Quorums   []QuorumStatus  `json:"quorums,omitempty"`
	// Asked is what each witness answered when VerifyAsking asked it.
	Asked   []WitnessResult `json:"asked,omitempty"`
	Problem *Problem        `json:"problem,omitempty"`
}

// scanned is a log as Verify read it.
type scanned struct {
	lines  []*line
	stmts  []*Statement
	leaves []tlog.Hash
	hashes []tlog.Hash
	times  []time.Time // each record's time (a pruned one's from its stub)
	verif  note.Verifier
}

func (s *scanned) reader() tlog.HashReader {
	return tlog.HashReaderFunc(func(ix []int64) ([]tlog.Hash, error) { return pick(s.hashes, ix) })
}

// Verify checks the log in dir: every envelope's signature and statement,
// the sequence numbers, the hash chain, each line's signed tree head
// against the recomputed Merkle tree, the checkpoint file, and with
// opts.Since a consistency proof from a saved checkpoint; with
// opts.Witnesses, each witness's stored cosigned checkpoint and the
// quorums. A damaged log gives a Report whose Problem names the first bad
// record, and that Problem as the error; other errors mean the log could
// not be read.
func Verify(dir string, opts VerifyOptions) (Report, error) {
	r, s, err := scan(dir, opts)
	if err != nil || len(opts.Witnesses) == 0 && len(opts.Quorums) == 0 {
		return r, err
	}
	err = verifyWitnesses(&r, s, dir, opts)
	return r, err
}

func scan(dir string, opts VerifyOptions) (Report, *scanned, error) {
	var r Report
	pub := opts.PublicKey
	if pub == nil {
		b, err := os.ReadFile(filepath.Join(dir, PublicKeyFile))
		if err != nil {
			return r, nil, fmt.Errorf("audit: public key: %w", err)
		}
		if pub, err = ParsePublicKeyPEM(b); err != nil {
			return r, nil, fmt.Errorf("audit: public key %s: %v", filepath.Join(dir, PublicKeyFile), err)
		}
	}
	keyID := KeyID(pub)
	r.KeyID = keyID
	data, cpData, cpErr, err := readLog(dir)
	if err != nil {
		return r, nil, fmt.Errorf("audit: %w", err)
	}
	fail := func(seq int64, kind, format string, args ...any) (Report, *scanned, error) {
		r.Problem = &Problem{Seq: seq, Kind: kind, Detail: fmt.Sprintf(format, args...)}
		return r, nil, r.Problem
	}

	// Pass 1: split and decode every line; damage is judged in order in
	// pass 2, which needs to look ahead to tell a removal from a reorder.
	var raw [][]byte
	torn := false
	for rest := data; len(rest) > 0; {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			torn = true
			break
		}
		raw = append(raw, rest[:i])
		rest = rest[i+1:]
	}
	n := int64(len(raw))
	s := &scanned{lines: make([]*line, n), stmts: make([]*Statement, n), leaves: make([]tlog.Hash, n)}
	seqs := make([]int64, n)
	bad := make([]error, n)
	badStmt := make([]error, n) // judged after the signature
	payloads := make([][]byte, n)
	lineHashes := make([][32]byte, n)
	for i, b := range raw {
		seqs[i] = -1
		ln, err := decodeLine(b)
		if err != nil {
			bad[i] = err
			continue
		}
		leaf, p, err := ln.leafHash()
		if err != nil {
			bad[i] = err
			continue
		}
		lh, err := lineHash(ln, b)
		if err != nil {
			bad[i] = err
			continue
		}
		s.lines[i], s.leaves[i], payloads[i], lineHashes[i] = ln, leaf, p, lh
		if ln.Pruned != nil {
			seqs[i] = int64(ln.Pruned.Seq)
			continue
		}
		st, err := decodeStatement(p)
		if err != nil {
			badStmt[i] = err
			continue
		}
		s.stmts[i], seqs[i] = st, int64(st.Predicate.Seq)
	}

	// The origin and the note verifier come from the first line's
	// checkpoint body; a different origin anywhere fails its signature.
	if n > 0 && s.lines[0] != nil {
		c := s.lines[0].Checkpoint
		if j := strings.Index(c, "\n\n"); j >= 0 {
			if cp, err := parseCheckpointBody(c[:j+1]); err == nil {
				r.Origin = cp.Origin
			}
		}
	}
	if r.Origin == "" && n > 0 {
		return fail(0, Altered, "no readable checkpoint in the first record")
	}
	if r.Origin != "" {
		if s.verif, err = noteVerifier(r.Origin, pub); err != nil {
			return fail(0, Altered, "origin %q: %v", r.Origin, err)
		}
	}

	// Pass 2, in order.
	rf := s.reader()
	for i := int64(0); i < n; i++ {
		ln := s.lines[i]
		if seqs[i] != i && seqs[i] >= 0 {
			return classifySeq(fail, seqs, s.leaves, i)
		}
		if bad[i] != nil {
			return fail(i, Altered, "%v", bad[i])
		}
		if ln.Pruned != nil {
			if r.Pruned != i {
				return fail(i, Altered, "a pruned record after kept ones (gc prunes only the oldest)")
			}
			r.Pruned++
			r.PrunedThrough = ln.Pruned.Time
		} else {
			if ln.PayloadType != PayloadType {
				return fail(i, Altered, "payload type %q", ln.PayloadType)
			}
			if len(ln.Signatures) != 1 {
				return fail(i, Altered, "%d signatures, want 1", len(ln.Signatures))
			}
			sg := ln.Signatures[0]
			if sg.KeyID != keyID {
				return fail(i, UnknownKey, "signed by key %s, not %s", sg.KeyID, keyID)
			}
			sig, err := b64.DecodeString(sg.Sig)
			if err != nil || !ed25519.Verify(pub, dsse.PAE(PayloadType, payloads[i]), sig) {
				return fail(i, BadSignature, "the envelope's signature does not verify")
			}
			if badStmt[i] != nil {
				return fail(i, Altered, "%v", badStmt[i])
			}
			if i > 0 && s.stmts[i].Predicate.Prev != hex.EncodeToString(lineHashes[i-1][:]) {
				// Line i-1's checkpoint signature is checked only through
				// this hash; name it when it is the culprit.
				if _, err := openCheckpoint(s.lines[i-1].Checkpoint, s.verif, r.Origin); err != nil {
					return fail(i-1, BadSignature, "its checkpoint: %v", err)
				}
				return fail(i, Altered, "prev %q is not the hash of line %d", s.stmts[i].Predicate.Prev, i-1)
			}
			if i == 0 && s.stmts[i].Predicate.Prev != "" {
				return fail(i, Altered, "the first record names a previous one")
			}
		}
		hs, err := tlog.StoredHashesForRecordHash(i, s.leaves[i], rf)
		if err != nil {
			return fail(i, Altered, "tree: %v", err)
		}
		s.hashes = append(s.hashes, hs...)
		root, err := tlog.TreeHash(i+1, rf)
		if err != nil {
			return fail(i, Altered, "tree: %v", err)
		}
		// A line's checkpoint signature is covered by the next record's
		// prev (a signed hash of the whole line), so only the last line's
		// and a pruned stub's are verified here: one ed25519 verification
		// per record.
		var cp Checkpoint
		if i == n-1 || ln.Pruned != nil {
			cp, err = openCheckpoint(ln.Checkpoint, s.verif, r.Origin)
		} else {
			cp, err = checkpointBody(ln.Checkpoint, r.Origin)
		}
		if err == errUnknownKey {
			return fail(i, UnknownKey, "its checkpoint is not signed by key %s", keyID)
		}
		if err != nil {
			return fail(i, Altered, "%v", err)
		}
		if cp.N != i+1 || cp.Hash != root {
			return fail(i, Altered, "its checkpoint (size %d) does not match the tree of records 0..%d", cp.N, i)
		}
		t := time.Time{}
		if ln.Pruned != nil {
			t = ln.Pruned.Time
		} else {
			t = s.stmts[i].Predicate.Time
		}
		s.times = append(s.times, t)
		if i == 0 {
			r.First = t
		}
		r.Last = t
		r.Records = i + 1
		r.Root = base64.StdEncoding.EncodeToString(root[:])
	}
	if torn {
		return fail(n, Truncated, "torn last line (an interrupted append; the next act command trims it)")
	}

	// The checkpoint file: never ahead of the log, and on its tree.
	b, err := cpData, cpErr
	switch {
	case errors.Is(err, os.ErrNotExist) && n == 0:
	case err != nil && n > 0:
		return fail(n, Truncated, "the checkpoint file is missing: %v", err)
	case err != nil:
		return r, nil, err
	default:
		if n == 0 {
			return fail(0, Truncated, "the log is empty but a checkpoint exists")
		}
		if err := checkAgainst(s, r.Origin, b, n, "checkpoint file", fail); err != nil {
			return r, nil, err
		}
	}
	if opts.Since != nil {
		verif, origin := s.verif, r.Origin
		if verif == nil {
			// An empty log has no origin of its own yet: the saved
			// checkpoint's, under this key.
			if origin, err = sinceOrigin(opts.Since); err != nil {
				return fail(0, Altered, "saved checkpoint: %v", err)
			}
			if verif, err = noteVerifier(origin, pub); err != nil {
				return fail(0, Altered, "saved checkpoint: %v", err)
			}
		}
		cp, err := openCheckpoint(string(opts.Since), verif, origin)
		if err == errUnknownKey {
			return fail(0, UnknownKey, "the saved checkpoint is not signed by key %s: the log was re-signed", keyID)
		}
		if err != nil {
			return fail(0, Altered, "saved checkpoint: %v", err)
		}
		if cp.N > n {
			return fail(n, Truncated, "the saved checkpoint has %d records, the log %d", cp.N, n)
		}
		if cp.N == 0 {
			// Every log extends the empty tree, whose hash is fixed.
			if empty, _ := tlog.TreeHash(0, rf); cp.Hash != empty {
				return fail(0, Altered, "the saved checkpoint of 0 records has the hash of another tree")
			}
		} else {
			root, _ := tlog.TreeHash(n, rf)
			proof, err := tlog.ProveTree(n, cp.N, rf)
			if err == nil {
				err = tlog.CheckTree(proof, n, root, cp.N, cp.Hash)
			}
			if err != nil {
				return fail(firstDiff(s, cp), Altered, "the log does not extend the saved checkpoint (size %d): rewritten", cp.N)
			}
		}
		r.Since = cp.N
	}
	r.OK = true
	return r, s, nil
}

// readLog returns the log in dir and its checkpoint file as they were at
// one moment: a whole prefix of the log, never a record half-appended, and
// the checkpoint of that prefix. A log not made yet reads as empty.
//
// Under the shared lock, which no append holds at the same time, it opens
// log.jsonl, takes its size and reads the checkpoint file; it reads the
// log's bytes up to that size after the lock is released, so that an
// append waits only for those three calls. The bytes before that size do
// not change: an append writes after them, PruneBefore replaces the file
// by a rename (the open file is the one measured), and only a torn last
// line (no '\n') is trimmed in place. Where the prefix ends torn, it is
// read again whole under the lock, so a torn line is reported only when
// it is there.
func readLog(dir string) (data, cp []byte, cpErr, err error) {
	unlock := readLock(dir)
	f, err := os.Open(filepath.Join(dir, LogFile))
	var size int64
	switch {
	case errors.Is(err, fs.ErrNotExist):
		f, err = nil, nil
	case err == nil:
		var fi os.FileInfo
		if fi, err = f.Stat(); err == nil {
			size = fi.Size()
		}
	}
	if err == nil {
		cp, cpErr = os.ReadFile(filepath.Join(dir, CheckpointFile))
	}
	if err == nil && f != nil {
		// What is read here may be handed out (a checkpoint, a proof):
		// durable first (BatchOptions.Deferred).
		err = syncData(f)
	}
	unlock()
	if f == nil || err != nil {
		if f != nil {
			f.Close()
		}
		return nil, cp, cpErr, err
	}
	defer f.Close()
	data = make([]byte, size)
	_, err = io.ReadFull(io.NewSectionReader(f, 0, size), data)
	if err == nil && (size == 0 || data[size-1] == '\n') {
		return data, cp, cpErr, nil
	}
	// Torn at the moment measured: read it all under the lock.
	defer readLock(dir)()
	data, err = os.ReadFile(filepath.Join(dir, LogFile))
	if errors.Is(err, fs.ErrNotExist) {
		data, err = nil, nil
	}
	if err != nil {
		return nil, nil, nil, err
	}
	cp, cpErr = os.ReadFile(filepath.Join(dir, CheckpointFile))
	return data, cp, cpErr, nil
}

// checkAgainst checks a signed checkpoint file against the scanned tree.
func checkAgainst(s *scanned, origin string, b []byte, n int64, what string, fail func(int64, string, string, ...any) (Report, *scanned, error)) error {
	cp, err := openCheckpoint(string(b), s.verif, origin)
	if err == errUnknownKey {
		_, _, err = fail(n, UnknownKey, "the %s is not signed by the log's key", what)
		return err
	}
	if err != nil {
		_, _, err = fail(n, Altered, "%s: %v", what, err)
		return err
	}
	if cp.N > n {
		_, _, err = fail(n, Truncated, "the %s says %d records, the log holds %d", what, cp.N, n)
		return err
	}
	if root, err := tlog.TreeHash(cp.N, s.reader()); err != nil || root != cp.Hash {
		_, _, err = fail(firstDiff(s, cp), Altered, "the log does not match the %s (size %d)", what, cp.N)
		return err
	}
	return nil
}

// firstDiff guesses the first record of a rewrite: the first line whose
// own checkpoint's root differs from the one a saved checkpoint implies is
// not knowable, so name the saved checkpoint's last record.
func firstDiff(_ *scanned, cp Checkpoint) int64 { return max(cp.N-1, 0) }

// classifySeq names the damage when line i holds record seqs[i] ≠ i.
func classifySeq(fail func(int64, string, string, ...any) (Report, *scanned, error), seqs []int64, leaves []tlog.Hash, i int64) (Report, *scanned, error) {
	got := seqs[i]
	if got < i {
		if leaves[got] == leaves[i] {
			return fail(i, Duplicated, "record %d appears again", got)
		}
		return fail(i, Reordered, "record %d stands after record %d", got, i-1)
	}
	for j := i + 1; j < int64(len(seqs)); j++ {
		if seqs[j] == i {
			return fail(i, Reordered, "record %d stands at position %d", i, j)
		}
	}
	return fail(i, Removed, "record %d is missing (the next is %d)", i, got)
}

// A Shown record: one decoded record with its inclusion proof in the tree
// of the log's current checkpoint.
type Shown struct {
	Seq        int64      `json:"seq"`
	Statement  *Statement `json:"statement,omitempty"`
	Pruned     bool       `json:"pruned,omitempty"`
	KeyID      string     `json:"key_id,omitempty"`
	LeafHash   string     `json:"leaf_hash"`
	Proof      []string   `json:"inclusion_proof"` // base64 hashes
	Checkpoint string     `json:"checkpoint"`
}

// Show verifies the log in dir and returns record seq with its inclusion
// proof (checked) against the newest checkpoint.
func Show(dir string, seq int64, opts VerifyOptions) (Shown, error) {
	r, s, err := scan(dir, opts)
	if err != nil {
		return Shown{}, err
	}
	if seq < 0 || seq >= r.Records {
		return Shown{}, fmt.Errorf("audit: no record %d (the log has %d)", seq, r.Records)
	}
	n := r.Records
	rf := s.reader()
	proof, err := tlog.ProveRecord(n, seq, rf)
	if err != nil {
		return Shown{}, err
	}
	root, _ := tlog.TreeHash(n, rf)
	if err := tlog.CheckRecord(proof, n, root, seq, s.leaves[seq]); err != nil {
		return Shown{}, err
	}
	out := Shown{Seq: seq, Statement: s.stmts[seq], Pruned: s.lines[seq].Pruned != nil,
		LeafHash: hex.EncodeToString(s.leaves[seq][:]), Checkpoint: s.lines[n-1].Checkpoint}
	if !out.Pruned {
		out.KeyID = s.lines[seq].Signatures[0].KeyID
	}
	for _, h := range proof {
		out.Proof = append(out.Proof, base64.StdEncoding.EncodeToString(h[:]))
	}
	return out, nil
}

// CheckpointText returns the signed checkpoint of the log in dir as
// verified by Verify. For a log with no record yet it signs, with the key
// in dir, the checkpoint of the empty tree under [HostOrigin], the origin
// the log's first record will carry on this host.
func CheckpointText(dir string, opts VerifyOptions) (string, error) {
	r, s, err := scan(dir, opts)
	if err != nil {
		return "", err
	}
	if r.Records == 0 {
		return emptyCheckpoint(dir, HostOrigin())
	}
	return s.lines[r.Records-1].Checkpoint, nil
}

// emptyCheckpoint is the checkpoint of size 0 of the log in dir, signed
// with its private key under origin.
func emptyCheckpoint(dir, origin string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, KeyFile))
	if err != nil {
		return "", fmt.Errorf("audit: the signing key: %w", err)
	}
	priv, err := parsePrivateKeyPEM(b)
	if err != nil {
		return "", fmt.Errorf("audit key %s: %v", filepath.Join(dir, KeyFile), err)
	}
	l := &Log{origin: origin, priv: priv, pub: priv.Public().(ed25519.PublicKey)}
	if err := l.initNote(); err != nil {
		return "", err
	}
	empty, _ := tlog.TreeHash(0, nil)
	return l.sign(0, empty)
}

// Keys returns the public key (PEM) of the log in dir and the note
// verifier key of its checkpoints: under the origin of its checkpoint, or
// for a log with no record yet under [HostOrigin], the origin its first
// record will carry on this host.
func Keys(dir string) (pubPEM []byte, noteKey string, err error) {
	pubPEM, err = os.ReadFile(filepath.Join(dir, PublicKeyFile))
	if err != nil {
		return nil, "", fmt.Errorf("audit: public key: %w", err)
	}
	pub, err := ParsePublicKeyPEM(pubPEM)
	if err != nil {
		return nil, "", fmt.Errorf("audit: public key %s: %v", filepath.Join(dir, PublicKeyFile), err)
	}
	var origin string
	unlock := readLock(dir)
	cp, cpErr := os.ReadFile(filepath.Join(dir, CheckpointFile))
	fi, logErr := os.Stat(filepath.Join(dir, LogFile))
	unlock()
	switch {
	case cpErr == nil:
		origin, _, _ = strings.Cut(string(cp), "\n")
	case errors.Is(logErr, fs.ErrNotExist) || logErr == nil && fi.Size() == 0:
		origin = HostOrigin()
	default:
		return pubPEM, "", nil
	}
	noteKey, err = note.NewEd25519VerifierKey(origin, pub)
	return pubPEM, noteKey, err
}

// noteVerifier is the note verifier of checkpoints of origin signed by pub.
func noteVerifier(origin string, pub ed25519.PublicKey) (note.Verifier, error) {
	vkey, err := note.NewEd25519VerifierKey(origin, pub)
	if err != nil {
		return nil, err
	}
	return note.NewVerifier(vkey)
}

// sinceOrigin is the origin line of a saved checkpoint, unverified.
func sinceOrigin(text []byte) (string, error) {
	i := bytes.Index(text, []byte("\n\n"))
	if i < 0 {
		return "", errors.New("malformed checkpoint")
	}
	c, err := parseCheckpointBody(string(text[:i+1]))
	return c.Origin, err
}

// checkpointBody parses a signed checkpoint's body without checking its
// signature (the caller has it covered otherwise).
func checkpointBody(text, origin string) (Checkpoint, error) {
	i := strings.Index(text, "\n\n")
	if i < 0 {
		return Checkpoint{}, errors.New("malformed checkpoint")
	}
	c, err := parseCheckpointBody(text[:i+1])
	if err == nil && c.Origin != origin {
		err = fmt.Errorf("checkpoint origin %q, the log's is %q", c.Origin, origin)
	}
	return c, err
}

// A Found record names one record of the log: its sequence number, event
// and time.
type Found struct {
	Seq   uint64    `json:"seq"`
	Event string    `json:"event"`
	Time  time.Time `json:"time"`
}

// Named verifies the log in dir and returns, oldest first, the records
// whose event is one of names (act history lists the rejected dry runs,
// of which the log is the only record: docs/lifecycle.md). A log with no
// records yet has none.
func Named(dir string, names ...string) ([]Predicate, error) {
	if _, err := os.Stat(filepath.Join(dir, LogFile)); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	_, s, err := scan(dir, VerifyOptions{})
	if err != nil {
		return nil, err
	}
	var out []Predicate
	for _, st := range s.stmts {
		if st != nil && slices.Contains(names, st.Predicate.Name) {
			out = append(out, st.Predicate)
		}
	}
	return out, nil
}

// Find verifies the log in dir and returns, oldest first, the records of
// action id actionID or of plan planID (either may be ""). A log with no
// records yet finds none.
func Find(dir, actionID, planID string) ([]Found, error) {
	if _, err := os.Stat(filepath.Join(dir, LogFile)); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	_, s, err := scan(dir, VerifyOptions{})
	if err != nil {
		return nil, err
	}
	var out []Found
	for _, st := range s.stmts {
		if st == nil {
			continue // pruned: its body is gone
		}
		p := st.Predicate
		if (actionID != "" && p.ActionID == actionID) || (planID != "" && p.PlanID == planID) {
			out = append(out, Found{Seq: p.Seq, Event: p.Name, Time: p.Time})
		}
	}
	return out, nil
}
