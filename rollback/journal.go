// Package rollback promotes planned changes onto the real tree and undoes
// them, crash-safely: [Apply], [Rollback] and [Recover], and the
// write-ahead journal they write ([Create], [Read]).
//
// # Journal format
//
// A journal is one file for one promotion (or rollback): an 8-byte header,
// "ACTJNL" followed by the format version 0x00 0x01, then records, each
//
//	length   uint32, little endian: the size of kind + payload
//	crc      uint32, little endian: CRC-32C (Castagnoli) of length, kind, payload
//	kind     one byte: 1 Begin, 2 Step, 3 Commit, 4 Revert
//	payload  the record as JSON
//
// The first record is a [Begin] naming the action, the plan and every step
// the promotion will take; then any number of [Step] records; then at most
// one [Commit] or [Revert], which is the last record (STYLE rule 9).
//
// # Durability and what a reader may conclude
//
// [Writer.Append] returns only once its records are on disk (one fsync for
// all the records of one call, so callers batch by passing several).
// [Writer.Write] hands records to the kernel without fsync: they survive the
// writer being killed, even by SIGKILL, but not a power loss until the next
// Append or [Writer.Sync].
//
// [Read] returns the records of the longest valid prefix of the file. A
// record cut short or failing its checksum ends the journal: [Read] reports
// it as [ErrTorn] and the record, and anything after it, as never written —
// a torn Step means that step did not complete; a torn Commit means the
// promotion did not commit. A record whose checksum holds but whose content
// cannot be right (an unknown kind, bad JSON, a Step before Begin or naming
// no planned step, a record after Commit) is reported as [ErrCorrupt]: act
// never wrote it. Neither is ever a panic, and any prefix of a journal
// decodes to a prefix of its records (FuzzJournalDecode).
package rollback

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/act-project/act/internal/atomicfile"
	"github.com/act-project/act/plan"
)

// magic is the journal header: a name and the format version.
var magic = []byte("ACTJNL\x00\x01")

const (
	frameHeader = 8 // length + crc
	// maxRecord bounds a record's length field, so that a garbled length
	// is rejected before anything is allocated. A Begin listing 100,000
	// changes is about 30 MiB.
	maxRecord = 256 << 20
)

// castagnoli is built on first use: building it costs half a millisecond,
// which every act process would pay at start-up.
var castagnoli = sync.OnceValue(func() *crc32.Table { return crc32.MakeTable(crc32.Castagnoli) })

// ErrTorn marks a journal whose last record is incomplete or garbled: the
// write of that record did not complete.
var ErrTorn = errors.New("torn record")

// ErrCorrupt marks a journal holding something act never writes: not a
// journal, or records in an impossible order.
var ErrCorrupt = errors.New("corrupt journal")

// A DecodeError says where and why decoding a journal stopped. It unwraps
// to [ErrTorn] or [ErrCorrupt].
type DecodeError struct {
	// Offset is the byte offset of the first record not decoded; the
	// records before it were returned.
	Offset int64
	// Ignored is the number of bytes from Offset to the end of the file.
	Ignored int64
	// Torn distinguishes ErrTorn (true) from ErrCorrupt.
	Torn bool
	// Reason says what was wrong, as "checksum mismatch".
	Reason string
}

func (e *DecodeError) Error() string {
	what := "corrupt record"
	if e.Torn {
		what = "torn record"
	}
	return fmt.Sprintf("%s at byte %d (%s; %d bytes ignored)", what, e.Offset, e.Reason, e.Ignored)
}

// Unwrap returns ErrTorn or ErrCorrupt.
func (e *DecodeError) Unwrap() error {
	if e.Torn {
		return ErrTorn
	}
	return ErrCorrupt
}

// Kind identifies a record type in the file.
type Kind uint8

// The record kinds, as stored.
const (
	KindBegin  Kind = 1
	KindStep   Kind = 2
	KindCommit Kind = 3
	KindRevert Kind = 4
)

// A Record is one of [Begin], [Step], [Commit] and [Revert].
type Record interface {
	// Kind is the record's type as stored.
	Kind() Kind
}

// Begin opens a journal: Event (EventApply or EventRollback) of ActionID,
// from plan PlanID, will carry out Steps, in order. Step records refer to
// them by index.
type Begin struct {
	Event    string `json:"event"`
	ActionID string `json:"action_id"`
	PlanID   string `json:"plan_id"`
	Steps    []Op   `json:"steps"`
	// Keep lists, for a forced rollback, the steps whose backups hold a
	// version of the path changed since the apply: they are kept and
	// shown to the user; the other backups are removed after Commit.
	Keep []int `json:"keep,omitempty"`
	// Approval is how an apply was confirmed, for its action record.
	Approval *Approval `json:"approval,omitempty"`
	// Pins are the plan's scope-root directories (plan.Plan.ScopeRoots):
	// every op, and its undo in recovery, resolves its path below them
	// without following a symbolic link (docs/sandbox-promotion.md).
	Pins []plan.PathID `json:"pins,omitempty"`
}

// Step records progress on Begin.Steps[N]: Done false means the step is
// about to start (it may be partly made), Done true that it is complete.
// Ino is the inode of the entry an OpPut moves in, so that undoing it can
// tell that entry from anything else at the path.
type Step struct {
	N    int    `json:"n"`
	Done bool   `json:"done"`
	Ino  uint64 `json:"ino,omitempty"`
}

// Commit is the last record of a promotion that completed: every step is
// in place.
type Commit struct{}

// Revert is the last record of a promotion that failed and whose steps
// were all undone. Reason says why it failed.
type Revert struct {
	Reason string `json:"reason,omitempty"`
}

// Kind returns KindBegin.
func (Begin) Kind() Kind { return KindBegin }

// Kind returns KindStep.
func (Step) Kind() Kind { return KindStep }

// Kind returns KindCommit.
func (Commit) Kind() Kind { return KindCommit }

// Kind returns KindRevert.
func (Revert) Kind() Kind { return KindRevert }

// State is how far a journal got.
type State int

// The journal states.
const (
	// Empty: no Begin record. Nothing was promised, so nothing was done.
	Empty State = iota
	// Started: Begin, and maybe Steps, but no final record. A crash:
	// recovery must finish or undo the promotion.
	Started
	// Committed: the promotion completed.
	Committed
	// Reverted: the promotion failed and was undone.
	Reverted
)

func (s State) String() string {
	switch s {
	case Empty:
		return "empty"
	case Started:
		return "started"
	case Committed:
		return "committed"
	case Reverted:
		return "reverted"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// machine checks the order of records; Writer and decode share it.
type machine struct {
	state State
	steps int // len(Begin.Steps)
}

// next moves m past r, or says why r cannot come now.
func (m *machine) next(r Record) error {
	switch m.state {
	case Committed, Reverted:
		return fmt.Errorf("%T after the journal ended (%s)", r, m.state)
	case Empty:
		b, ok := r.(Begin)
		if !ok {
			return fmt.Errorf("%T before Begin", r)
		}
		m.state, m.steps = Started, len(b.Steps)
		return nil
	}
	switch r := r.(type) {
	case Begin:
		return errors.New("second Begin")
	case Step:
		if r.N < 0 || r.N >= m.steps {
			return fmt.Errorf("Step %d: %d steps were planned", r.N, m.steps)
		}
	case Commit:
		m.state = Committed
	case Revert:
		m.state = Reverted
	default:
		return fmt.Errorf("unknown record %T", r)
	}
	return nil
}

// appendRecord appends r's frame to buf.
func appendRecord(buf []byte, r Record) ([]byte, error) {
	payload, err := json.Marshal(r)
	if err != nil {
		return buf, err
	}
	n := 1 + len(payload)
	if n > maxRecord {
		return buf, fmt.Errorf("%T record of %d bytes exceeds %d", r, n, maxRecord)
	}
	start := len(buf)
	buf = binary.LittleEndian.AppendUint32(buf, uint32(n))
	buf = append(buf, 0, 0, 0, 0) // crc, below
	buf = append(buf, byte(r.Kind()))
	buf = append(buf, payload...)
	crc := crc32.Update(crc32.Checksum(buf[start:start+4], castagnoli()), castagnoli(), buf[start+frameHeader:])
	binary.LittleEndian.PutUint32(buf[start+4:], crc)
	return buf, nil
}

// decode decodes a whole journal file. It returns the records of the
// longest valid prefix, the state they reach, and a *DecodeError if data
// holds more than that prefix.
func decode(data []byte) ([]Record, State, error) {
	var m machine
	fail := func(off int, torn bool, reason string) ([]Record, State, error) {
		return nil, m.state, &DecodeError{Offset: int64(off), Ignored: int64(len(data) - off), Torn: torn, Reason: reason}
	}
	if len(data) < len(magic) {
		if bytes.HasPrefix(magic, data) {
			return fail(0, true, "header cut short")
		}
		return fail(0, false, "not a journal")
	}
	if !bytes.Equal(data[:len(magic)], magic) {
		return fail(0, false, "not a journal, or another version")
	}
	var recs []Record
	off := len(magic)
	for off < len(data) {
		stop := func(torn bool, reason string) ([]Record, State, error) {
			_, st, err := fail(off, torn, reason)
			return recs, st, err
		}
		rest := data[off:]
		if len(rest) < frameHeader {
			return stop(true, "record header cut short")
		}
		n := binary.LittleEndian.Uint32(rest)
		if n == 0 || n > maxRecord {
			return stop(true, fmt.Sprintf("record length %d", n))
		}
		if uint64(len(rest)-frameHeader) < uint64(n) {
			return stop(true, "record cut short")
		}
		body := rest[frameHeader : frameHeader+int(n)]
		crc := crc32.Update(crc32.Checksum(rest[:4], castagnoli()), castagnoli(), body)
		if crc != binary.LittleEndian.Uint32(rest[4:]) {
			return stop(true, "checksum mismatch")
		}
		r, err := unmarshal(Kind(body[0]), body[1:])
		if err != nil {
			return stop(false, err.Error())
		}
		if err := m.next(r); err != nil {
			return stop(false, err.Error())
		}
		recs = append(recs, r)
		off += frameHeader + int(n)
	}
	return recs, m.state, nil
}

func unmarshal(k Kind, payload []byte) (Record, error) {
	var r Record
	var err error
	switch k {
	case KindBegin:
		var b Begin
		err = json.Unmarshal(payload, &b)
		r = b
	case KindStep:
		var s Step
		err = json.Unmarshal(payload, &s)
		r = s
	case KindCommit:
		var c Commit
		err = json.Unmarshal(payload, &c)
		r = c
	case KindRevert:
		var v Revert
		err = json.Unmarshal(payload, &v)
		r = v
	default:
		return nil, fmt.Errorf("unknown record kind %d", k)
	}
	if err != nil {
		return nil, fmt.Errorf("record kind %d: %w", k, err)
	}
	return r, nil
}

// Read reads the journal at path: its valid records, the state they reach,
// and, if the file holds more than those records, a *[DecodeError]
// (wrapping [ErrTorn] or [ErrCorrupt]) saying where and why. The records and
// state are meaningful whatever the error, except when the file cannot be
// read at all.
func Read(path string) ([]Record, State, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, Empty, fmt.Errorf("read journal: %w", err)
	}
	recs, st, err := decode(data)
	if err != nil {
		return recs, st, fmt.Errorf("read journal %s: %w", path, err)
	}
	return recs, st, nil
}

// A Writer appends records to one journal. It is not safe for concurrent
// use; the caller holds the state-dir lock anyway.
type Writer struct {
	f    *os.File
	path string
	size int64 // bytes of valid records in the file
	m    machine
	err  error // set when the file may end in a partial record
}

// Create creates the journal at path, which must not exist (its directory
// must), and makes its Begin record durable (file and directory fsync'd)
// before returning. On error no journal is left behind.
func Create(path string, b Begin) (*Writer, error) { return create(path, b, true) }

// create is Create, which leaves the Begin record's durability to the
// caller unless sync.
func create(path string, b Begin, sync bool) (_ *Writer, err error) {
	var m machine
	if err := m.next(b); err != nil {
		return nil, fmt.Errorf("create journal %s: %w", path, err)
	}
	buf, err := appendRecord(bytes.Clone(magic), b)
	if err != nil {
		return nil, fmt.Errorf("create journal %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("create journal: %w", err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(path)
			err = fmt.Errorf("create journal %s: %w", path, err)
		}
	}()
	if _, err := f.Write(buf); err != nil {
		return nil, err
	}
	if sync {
		if err := f.Sync(); err != nil {
			return nil, err
		}
		if err := atomicfile.SyncDir(filepath.Dir(path)); err != nil {
			return nil, err
		}
	}
	return &Writer{f: f, path: path, size: int64(len(buf)), m: m}, nil
}

// Open opens the existing journal at path to append to it, as recovery
// does to end a crashed promotion with Commit or Revert. A torn tail is cut
// off (and the cut made durable) so that new records follow valid ones. A
// corrupt journal, or one without a Begin record, is not opened.
func Open(path string) (*Writer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("open journal: %w", err)
	}
	recs, st, derr := decode(data)
	size := int64(len(data))
	var de *DecodeError
	if errors.As(derr, &de) {
		if !de.Torn {
			return nil, fmt.Errorf("open journal %s: %w", path, derr)
		}
		size = de.Offset
	}
	if st == Empty {
		return nil, fmt.Errorf("open journal %s: no Begin record", path)
	}
	var m machine
	for _, r := range recs {
		m.next(r) // cannot fail: decode checked the order
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return nil, fmt.Errorf("open journal: %w", err)
	}
	if size != int64(len(data)) {
		if err := f.Truncate(size); err != nil {
			f.Close()
			return nil, fmt.Errorf("open journal %s: cut torn tail: %w", path, err)
		}
		if err := f.Sync(); err != nil {
			f.Close()
			return nil, fmt.Errorf("open journal %s: %w", path, err)
		}
	}
	return &Writer{f: f, path: path, size: size, m: m}, nil
}

// State is the state the journal's records reach.
func (w *Writer) State() State { return w.m.state }

// Write appends recs to the journal in one write(2), without fsync: they
// survive the process being killed but not a power loss; [Writer.Sync]
// makes them durable. The records must follow on from the journal's (see
// the package doc); otherwise nothing is written.
func (w *Writer) Write(recs ...Record) error {
	if w.err != nil {
		return w.err
	}
	m := w.m
	var buf []byte
	for _, r := range recs {
		if err := m.next(r); err != nil {
			return fmt.Errorf("journal %s: %w", w.path, err)
		}
		var err error
		if buf, err = appendRecord(buf, r); err != nil {
			return fmt.Errorf("journal %s: %w", w.path, err)
		}
	}
	if _, err := w.f.Write(buf); err != nil {
		// Cut back a partial write so that later records follow valid ones.
		// If that fails too, the Writer is unusable.
		if terr := w.f.Truncate(w.size); terr != nil {
			w.err = fmt.Errorf("journal %s: unusable after failed write (%v): %w", w.path, err, terr)
		}
		return fmt.Errorf("write journal %s: %w", w.path, err)
	}
	w.size += int64(len(buf))
	w.m = m
	return nil
}

// Sync makes every record written so far durable.
func (w *Writer) Sync() error {
	if w.err != nil {
		return w.err
	}
	if err := w.f.Sync(); err != nil {
		// After a failed fsync the kernel may have dropped the dirty pages:
		// nothing written since the last good Sync can be trusted.
		w.err = fmt.Errorf("sync journal %s: %w", w.path, err)
		return w.err
	}
	return nil
}

// Append writes recs and makes them, and every record before them, durable
// with one fsync. Pass several records to batch them.
func (w *Writer) Append(recs ...Record) error {
	if err := w.Write(recs...); err != nil {
		return err
	}
	return w.Sync()
}

// Close closes the journal file. It does not sync: records written with
// [Writer.Write] since the last Sync stay only as durable as the kernel
// makes them.
func (w *Writer) Close() error {
	return w.f.Close()
}

var _ io.Closer = (*Writer)(nil)
