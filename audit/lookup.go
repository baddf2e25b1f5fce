package audit

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/secure-systems-lab/go-securesystemslib/dsse"
	"golang.org/x/mod/sumdb/tlog"
)

// IDsFile is the lookup index of the log (Lookup): which records name
// which action and plan, and where each line is. A cache in the log's
// directory, rebuilt when it does not fit the log; never trusted.
const IDsFile = "ids"

// Lookup returns, oldest first, the records of action id actionID or of
// plan planID (either may be ""), as Find does, without reading and
// verifying every record: the records are found through the lookup index
// (IDsFile), brought up to the log's end first, and each one found is then
// verified on its own — its line read again at its place, its envelope's
// signature with the log's key, its sequence number and ids, and its
// inclusion in the tree of the log's last signed checkpoint, whose
// signature and tree cache are checked as a witness's are (readHead).
// Whatever does not check out — the index, the last checkpoint, the tree
// cache, a record — is answered by Find instead, which verifies the whole
// log and names the damage; an index that did not fit is removed, to be
// rebuilt.
//
// The index is in the state dir like the log: a forged one can leave a
// record out (act show lists fewer), never make one up (every record
// returned is verified); act audit verify checks the whole log.
func Lookup(dir, actionID, planID string, opts VerifyOptions) ([]Found, error) {
	if actionID == "" && planID == "" {
		return nil, nil
	}
	if !safeID(actionID) || !safeID(planID) {
		return Find(dir, actionID, planID)
	}
	found, err := lookup(dir, actionID, planID, opts)
	if errors.Is(err, errLookup) {
		os.Remove(filepath.Join(dir, IDsFile))
		return Find(dir, actionID, planID)
	}
	return found, err
}

// errLookup: the index, the head or a record did not check out; Find
// answers instead.
var errLookup = errors.New("lookup did not check out")

// safeID reports whether id can stand in an index line: empty, or at
// most 128 letters, digits, dots, underscores and dashes (plan ids and
// action ids are).
func safeID(id string) bool {
	if len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// An idsLine is one record in the index.
type idsLine struct {
	seq, off, n         int64 // its sequence number; its line's offset and length (without '\n')
	event, action, plan string
}

func (x idsLine) text() string {
	dash := func(s string) string {
		if s == "" {
			return "-"
		}
		return s
	}
	return fmt.Sprintf("%d %d %d %s %s %s\n", x.seq, x.off, x.n, dash(x.event), dash(x.action), dash(x.plan))
}

func lookup(dir, actionID, planID string, opts VerifyOptions) ([]Found, error) {
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
	f, err := os.Open(filepath.Join(dir, LogFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// The log's size, last line and tree cache at one moment (under the
	// shared lock), made durable (BatchOptions.Deferred).
	unlock := readLock(dir)
	fi, err := f.Stat()
	var last, tree []byte
	if err == nil {
		last, err = readLastLine(f, fi.Size())
	}
	if err == nil {
		tree, err = os.ReadFile(filepath.Join(dir, TreeFile))
	}
	if err == nil {
		err = syncData(f)
	}
	unlock()
	if err != nil {
		return nil, errLookup
	}
	size := fi.Size()
	if last == nil {
		return nil, nil
	}
	head, ok := headFromCache(last, tree, pub)
	if !ok {
		return nil, errLookup
	}
	index, err := indexTo(dir, f, fi, head.n)
	if err != nil {
		return nil, err
	}
	if len(index) != int(head.n) || index[len(index)-1].off+index[len(index)-1].n+1 != size {
		return nil, errLookup
	}
	keyID := KeyID(pub)
	rf := head.s.reader()
	var out []Found
	for _, x := range index {
		if x.event == "pruned" || !(actionID != "" && x.action == actionID || planID != "" && x.plan == planID) {
			continue
		}
		st, leaf, err := readRecord(f, x, pub, keyID)
		if err != nil {
			return nil, errLookup
		}
		p := st.Predicate
		if int64(p.Seq) != x.seq || !(actionID != "" && p.ActionID == actionID || planID != "" && p.PlanID == planID) {
			return nil, errLookup
		}
		proof, err := tlog.ProveRecord(head.n, x.seq, rf)
		if err != nil || tlog.CheckRecord(proof, head.n, head.root, x.seq, leaf) != nil {
			return nil, errLookup
		}
		out = append(out, Found{Seq: p.Seq, Event: p.Name, Time: p.Time})
	}
	return out, nil
}

// readRecord reads the record of index line x from the log f and checks
// it: a whole line at its place, a record (not a stub) signed by pub.
func readRecord(f *os.File, x idsLine, pub ed25519.PublicKey, keyID string) (*Statement, tlog.Hash, error) {
	if x.off < 0 || x.n <= 0 || x.n > 64<<20 {
		return nil, tlog.Hash{}, errLookup
	}
	start := x.off
	if start > 0 {
		start-- // the '\n' before it
	}
	b := make([]byte, x.off+x.n+1-start)
	if _, err := f.ReadAt(b, start); err != nil {
		return nil, tlog.Hash{}, errLookup
	}
	if x.off > 0 && b[0] != '\n' || b[len(b)-1] != '\n' {
		return nil, tlog.Hash{}, errLookup
	}
	raw := b[len(b)-1-int(x.n) : len(b)-1]
	ln, err := decodeLine(raw)
	if err != nil || ln.Pruned != nil || ln.PayloadType != PayloadType || len(ln.Signatures) != 1 || ln.Signatures[0].KeyID != keyID {
		return nil, tlog.Hash{}, errLookup
	}
	leaf, p, err := ln.leafHash()
	if err != nil {
		return nil, tlog.Hash{}, errLookup
	}
	sig, err := b64.DecodeString(ln.Signatures[0].Sig)
	if err != nil || !ed25519.Verify(pub, dsse.PAE(PayloadType, p), sig) {
		return nil, tlog.Hash{}, errLookup
	}
	st, err := decodeStatement(p)
	if err != nil {
		return nil, tlog.Hash{}, errLookup
	}
	return st, leaf, nil
}

// indexTo returns the index of the log f (fi its state) up to its first n
// records: the index file's lines where they fit the log — consecutive
// sequence numbers, each line after the last, for this log file (a prune
// replaces it) — and the records after them read from the log itself
// (decoded, not verified: lookup verifies what it returns), appended to
// the file. The index is a cache: a write that fails costs the next
// lookup a read.
func indexTo(dir string, f *os.File, fi os.FileInfo, n int64) ([]idsLine, error) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil, errLookup
	}
	header := fmt.Sprintf("act audit ids 1 %d %d\n", st.Dev, st.Ino)
	name := filepath.Join(dir, IDsFile)
	index, whole := readIndex(name, header, n)
	var off int64
	if k := len(index); k > 0 {
		off = index[k-1].off + index[k-1].n + 1
	}
	if off > fi.Size() {
		index, off = nil, 0
	}
	if int64(len(index)) == n {
		return index, nil
	}
	data := make([]byte, fi.Size()-off)
	if _, err := f.ReadAt(data, off); err != nil && !errors.Is(err, io.EOF) {
		return nil, errLookup
	}
	// An index that held lines past those that fit is written anew:
	// appended to, the lines after would never fit either.
	fresh := len(index) == 0 || !whole
	kept := len(index)
	var added strings.Builder
	for int64(len(index)) < n {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			return nil, errLookup
		}
		x := idsLine{seq: int64(len(index)), off: off, n: int64(i)}
		ln, err := decodeLine(data[:i])
		if err != nil {
			return nil, errLookup
		}
		if ln.Pruned != nil {
			x.event = "pruned"
		} else {
			_, p, err := ln.leafHash()
			if err != nil {
				return nil, errLookup
			}
			s, err := decodeStatement(p)
			if err != nil || int64(s.Predicate.Seq) != x.seq {
				return nil, errLookup
			}
			pr := s.Predicate
			if !safeID(pr.ActionID) || !safeID(pr.PlanID) || !safeID(pr.Name) || pr.Name == "" {
				return nil, errLookup
			}
			x.event, x.action, x.plan = pr.Name, pr.ActionID, pr.PlanID
		}
		index = append(index, x)
		added.WriteString(x.text())
		data, off = data[i+1:], off+int64(i)+1
	}
	if fresh {
		tmp, err := os.CreateTemp(dir, "."+IDsFile+"-*")
		if err == nil {
			var all strings.Builder
			all.WriteString(header)
			for _, x := range index[:kept] {
				all.WriteString(x.text())
			}
			all.WriteString(added.String())
			_, werr := tmp.WriteString(all.String())
			if tmp.Close() != nil || werr != nil || os.Rename(tmp.Name(), name) != nil {
				os.Remove(tmp.Name())
			}
		}
	} else if w, err := os.OpenFile(name, os.O_WRONLY|os.O_APPEND|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0); err == nil {
		if wi, err := w.Stat(); err == nil && wi.Mode().IsRegular() {
			_, _ = w.WriteString(added.String()) // one write of whole lines
		}
		w.Close()
	}
	return index, nil
}

// maxIndex bounds what is read of the index file.
const maxIndex = 256 << 20

// readIndex reads the index file name: its lines up to the first that
// does not fit (a line cut short, a gap, a line of another log), and no
// more than n; whole says the file held nothing else. A file whose header
// is not header (another log file, or not an index) gives nothing.
func readIndex(name, header string, n int64) (_ []idsLine, whole bool) {
	f, err := os.OpenFile(name, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, false
	}
	b, err := io.ReadAll(io.LimitReader(f, maxIndex))
	if err != nil || !bytes.HasPrefix(b, []byte(header)) {
		return nil, false
	}
	b = b[len(header):]
	var out []idsLine
	var next int64
	for int64(len(out)) < n {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			break
		}
		fields := strings.Fields(string(b[:i]))
		b = b[i+1:]
		if len(fields) != 6 {
			break
		}
		var x idsLine
		var e1, e2, e3 error
		x.seq, e1 = strconv.ParseInt(fields[0], 10, 64)
		x.off, e2 = strconv.ParseInt(fields[1], 10, 64)
		x.n, e3 = strconv.ParseInt(fields[2], 10, 64)
		if e1 != nil || e2 != nil || e3 != nil || x.seq != int64(len(out)) || x.off != next || x.n <= 0 {
			break
		}
		undash := func(s string) string {
			if s == "-" {
				return ""
			}
			return s
		}
		x.event, x.action, x.plan = fields[3], undash(fields[4]), undash(fields[5])
		out = append(out, x)
		next = x.off + x.n + 1
	}
	return slices.Clip(out), len(b) == 0
}
