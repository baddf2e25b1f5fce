package audit

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/secure-systems-lab/go-securesystemslib/dsse"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/act-project/act/internal/redact"
)

// The record format; docs/audit.md describes it for readers without act.
const (
	// PayloadType is the DSSE payload type of every record.
	PayloadType = "application/vnd.in-toto+json"
	// StatementType is the in-toto Statement v1 type.
	StatementType = "https://in-toto.io/Statement/v1"
	// PredicateType names act's predicate; the trailing v1 is the major
	// version, and Predicate.Version the minor one.
	PredicateType = "https://act-project.dev/audit/v1"
	// PredicateVersion is the version of the predicate's fields.
	PredicateVersion = 1
)

// The events a record can hold (docs/audit.md).
const (
	EventValidateBlocked = "validate_blocked"
	EventPlanned         = "planned"
	EventRejected        = "rejected"
	EventQueued          = "queued"
	EventApplied         = "applied"
	// EventRan: a plan that changed nothing was closed as applied: its
	// commands ran in the dry run, there was nothing to promote, and no
	// person was needed for it (docs/lifecycle.md).
	EventRan        = "ran"
	EventReverted   = "reverted"
	EventRolledBack = "rolled_back"
	EventRecovered  = "recovered"
	EventDenied     = "denied"
	EventExpired    = "expired"
	EventGC         = "gc"
	// EventApplyRefused: act apply refused a saved plan (blocked, denied,
	// stale, or its change list no longer what its descriptor allows).
	EventApplyRefused = "apply_refused"
	// EventRollbackRefused: act rollback refused (changed since the apply,
	// already rolled back, backups gone, a forced rollback unconfirmed).
	EventRollbackRefused = "rollback_refused"
)

var events = map[string]bool{
	EventValidateBlocked: true, EventPlanned: true, EventRejected: true, EventQueued: true,
	EventApplied: true, EventRan: true, EventReverted: true, EventRolledBack: true, EventRecovered: true,
	EventDenied: true, EventExpired: true, EventGC: true, EventApplyRefused: true, EventRollbackRefused: true,
}

// The log levels of a record (the descriptor's audit.log_level, raised by
// the host policy's minimum before the caller fills Event.LogLevel).
const (
	LevelSummary  = "SUMMARY"
	LevelDetailed = "DETAILED"
	LevelForensic = "FORENSIC"
)

// An Event is what a caller records: one decision of act. Append adds the
// sequence number, the previous record's hash and the time, applies the log
// level (file lists only at DETAILED and above, captured output only at
// FORENSIC, redacted) and signs it. There is deliberately no field for file
// contents or the environment.
type Event struct {
	Name             string     `json:"event"`
	ActionID         string     `json:"action_id,omitempty"`
	PlanID           string     `json:"plan_id,omitempty"`
	DescriptorSHA256 string     `json:"descriptor_sha256,omitempty"` // hex; the statement's subject
	Status           string     `json:"status,omitempty"`
	ExitCode         int        `json:"exit_code"`
	Reason           string     `json:"reason,omitempty"`
	Rules            []string   `json:"rules,omitempty"`
	Risk             *Risk      `json:"risk,omitempty"`
	Policy           *Policy    `json:"policy,omitempty"`
	Approval         *Approval  `json:"approval,omitempty"`
	Via              string     `json:"via,omitempty"` // the door: cli, run, mcp, claude-code, codex
	Changes          *Changes   `json:"changes,omitempty"`
	Resources        *Resources `json:"resources,omitempty"`
	Started          time.Time  `json:"started,omitzero"`
	Finished         time.Time  `json:"finished,omitzero"`
	UID              int        `json:"uid"`
	User             string     `json:"user,omitempty"`
	Host             string     `json:"host,omitempty"`
	LogLevel         string     `json:"log_level"`
	// Output is the captured output of sandboxed commands. It is kept only
	// at FORENSIC, redacted; it stays on this host (never shown to agents).
	Output string `json:"output,omitempty"`
	// Pruned is set by PruneBefore on the gc record it appends.
	Pruned *PruneInfo `json:"pruned,omitempty"`
	// Removed is what a gc removed from the state directory.
	Removed *GCRemoved `json:"removed,omitempty"`
}

// GCRemoved is what act gc removed from the state directory past retention,
// and what it kept although past retention, with why.
type GCRemoved struct {
	Plans   []string `json:"plans,omitempty"`   // plan ids, with their layers
	Backups []string `json:"backups,omitempty"` // action ids whose backups went
	Kept    []string `json:"kept,omitempty"`
}

// Risk is the descriptor's declared risk and act's own assessment.
type Risk struct {
	Declared string `json:"declared,omitempty"`
	Assessed string `json:"assessed,omitempty"`
}

// Policy is the mode that decided and where it came from.
type Policy struct {
	Mode   string `json:"mode,omitempty"`
	Source string `json:"source,omitempty"`
}

// Approval says who confirmed and how: Via is "--confirm", "terminal",
// "none-needed" or the approval mechanism's name; Reported, where a door
// was told the yes came from when act did not see it given (an agent's
// prompt, a program answering it).
type Approval struct {
	Via            string `json:"via"`
	UID            int    `json:"uid"`
	User           string `json:"user,omitempty"`
	Principal      string `json:"principal,omitempty"`
	KeyFingerprint string `json:"key_fingerprint,omitempty"`
	Reported       string `json:"reported,omitempty"`
}

// Changes summarizes a change set: counts always, Files only at DETAILED
// and FORENSIC.
type Changes struct {
	Created  int          `json:"created"`
	Modified int          `json:"modified"`
	Deleted  int          `json:"deleted"`
	Files    []FileChange `json:"files,omitempty"`
}

// A FileChange is one changed path: never its content.
type FileChange struct {
	Path         string `json:"path"`
	Kind         string `json:"kind"`           // created, modified, deleted
	Type         string `json:"type,omitempty"` // file, dir, symlink
	Mode         string `json:"mode,omitempty"` // octal, e.g. "0644"
	Size         int64  `json:"size,omitempty"`
	SHA256Before string `json:"sha256_before,omitempty"`
	SHA256After  string `json:"sha256_after,omitempty"`
}

// Resources is the resource use of sandboxed commands.
type Resources struct {
	CPUMillis  int64 `json:"cpu_ms"`
	WallMillis int64 `json:"wall_ms"`
	MaxRSSKiB  int64 `json:"max_rss_kib"`
	DiskBytes  int64 `json:"disk_bytes,omitempty"`
	Processes  int   `json:"processes,omitempty"`
}

// PruneInfo is what a gc record says it pruned.
type PruneInfo struct {
	Count   uint64    `json:"count"`
	Through uint64    `json:"through_seq"` // the last pruned record
	Before  time.Time `json:"before"`
}

// Predicate is act's in-toto predicate: the event and its place in the log.
type Predicate struct {
	Version int       `json:"version"`
	Seq     uint64    `json:"seq"`
	Prev    string    `json:"prev"` // hex sha256 of line Seq-1 of log.jsonl (without '\n'); "" for record 0
	Time    time.Time `json:"time"`
	Event
}

// Statement is an in-toto Statement v1 holding a Predicate. It is written
// as plain Go structs (checked against github.com/in-toto/attestation in
// the tests) to keep protobuf out of act's record path.
type Statement struct {
	Type          string    `json:"_type"`
	Subject       []Subject `json:"subject"`
	PredicateType string    `json:"predicateType"`
	Predicate     Predicate `json:"predicate"`
}

// Subject is an in-toto ResourceDescriptor with a sha256 digest.
type Subject struct {
	Name   string            `json:"name"`
	Digest map[string]string `json:"digest"`
}

// line is one line of log.jsonl: a DSSE envelope plus the signed
// checkpoint of the tree that ends with it, or (after PruneBefore) a
// pruned stub keeping the leaf hash.
type line struct {
	PayloadType string           `json:"payloadType,omitempty"`
	Payload     string           `json:"payload,omitempty"`
	Signatures  []dsse.Signature `json:"signatures,omitempty"`
	Pruned      *stub            `json:"pruned,omitempty"`
	Checkpoint  string           `json:"checkpoint"`
}

type stub struct {
	Seq  uint64    `json:"seq"`
	Leaf string    `json:"leaf"` // hex
	Line string    `json:"line"` // hex sha256 of the pruned line: the next record's prev
	Time time.Time `json:"time"`
}

var b64 = base64.StdEncoding.Strict()

// encodeLine marshals l compactly, the one form verify accepts.
func encodeLine(l *line) ([]byte, error) {
	return appendLine(make([]byte, 0, 3072), l)
}

// decodeLine parses one line (without its '\n') and insists that it is in
// the form encodeLine writes: any other spelling of the same JSON (case,
// spaces, escapes, base64 padding bits) is an alteration.
func decodeLine(b []byte) (*line, error) {
	var l line
	// Unknown fields need no decoder option: re-encoding drops them, and
	// the comparison below fails.
	if err := json.Unmarshal(b, &l); err != nil {
		return nil, fmt.Errorf("not a record: %v", err)
	}
	re, err := encodeLine(&l)
	if err != nil || !bytes.Equal(re[:len(re)-1], b) {
		return nil, errors.New("not in canonical form")
	}
	return &l, nil
}

// leafHash returns the RFC 6962 leaf hash of a record: the hash of its
// payload (the statement). A pruned stub carries it.
func (l *line) leafHash() (tlog.Hash, []byte, error) {
	if l.Pruned != nil {
		if l.Payload != "" || l.Signatures != nil {
			return tlog.Hash{}, nil, errors.New("pruned stub with a body")
		}
		h, err := parseHash(l.Pruned.Leaf)
		return h, nil, err
	}
	p, err := b64.DecodeString(l.Payload)
	if err != nil {
		return tlog.Hash{}, nil, fmt.Errorf("payload: %v", err)
	}
	return tlog.RecordHash(p), p, nil
}

func parseHash(s string) (tlog.Hash, error) {
	var h tlog.Hash
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != len(h) || hex.EncodeToString(b) != s {
		return h, fmt.Errorf("bad hash %q", s)
	}
	copy(h[:], b)
	return h, nil
}

// applyLevel returns ev as it may be recorded at its log level.
func applyLevel(ev Event) (Event, error) {
	switch ev.LogLevel {
	case "":
		ev.LogLevel = LevelSummary
	case LevelSummary, LevelDetailed, LevelForensic:
	default:
		return ev, fmt.Errorf("unknown log level %q", ev.LogLevel)
	}
	if ev.Changes != nil {
		c := *ev.Changes
		if ev.LogLevel == LevelSummary {
			c.Files = nil
		}
		ev.Changes = &c
	}
	// Every time in a record is UTC, like the record's own.
	ev.Started, ev.Finished = utc(ev.Started), utc(ev.Finished)
	if ev.LogLevel == LevelForensic {
		ev.Output = redact.String(ev.Output)
	} else {
		ev.Output = ""
	}
	return ev, nil
}

func utc(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.UTC()
}

// decodeStatement parses and checks the shape of a record's payload.
func decodeStatement(p []byte) (*Statement, error) {
	// The payload is signed, so fields act does not know come from a newer
	// act with the same key, and are ignored like any reader would.
	var st Statement
	if err := json.Unmarshal(p, &st); err != nil {
		return nil, fmt.Errorf("statement: %v", err)
	}
	if st.Type != StatementType {
		return nil, fmt.Errorf("statement type %q", st.Type)
	}
	if st.PredicateType != PredicateType {
		return nil, fmt.Errorf("predicate type %q", st.PredicateType)
	}
	if len(st.Subject) != 1 || len(st.Subject[0].Digest) != 1 {
		return nil, errors.New("statement must have one subject with one digest")
	}
	if _, err := parseHash(st.Subject[0].Digest["sha256"]); err != nil {
		return nil, fmt.Errorf("subject digest: %v", err)
	}
	if st.Predicate.Version != PredicateVersion {
		return nil, fmt.Errorf("predicate version %d", st.Predicate.Version)
	}
	if !events[st.Predicate.Name] {
		return nil, fmt.Errorf("unknown event %q", st.Predicate.Name)
	}
	return &st, nil
}

// lineHash is the hash the next record's prev names: sha256 of the line as
// written (raw, without '\n'), which a pruned stub keeps.
func lineHash(l *line, raw []byte) ([32]byte, error) {
	if l.Pruned != nil {
		h, err := parseHash(l.Pruned.Line)
		return h, err
	}
	return sha256.Sum256(raw), nil
}
