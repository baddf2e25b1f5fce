// Package state lays out act's state directory and holds the lock that
// serialises every change to the real tree.
//
// # Layout
//
// The state directory (docs/policy.md: --home, $ACT_HOME, $XDG_STATE_HOME/act or
// ~/.local/state/act, resolved by cmd) holds:
//
//	plans/       saved plans, one directory per plan id: plan.json, layer/
//	             (layer/upper/ its new content), adopt/ (the hook's copies
//	             for an adoption); .tmp-* a plan being written (work/ its
//	             overlay work directory), .gc-* what act gc is removing
//	journal/     write-ahead journals of promotions and rollbacks in progress
//	backups/     pre-images kept for rollback, one directory per action id
//	actions/     one record per promoted action: its ops, backups and state
//	attempts/    per action id: its refusals, sandbox runs and saved plans
//	cooldowns/   when the same action was last rolled back, for cooldown_on_repeat
//	caches/      act's own caches (sandbox.persistent_caches), one directory each
//	hooks/       the plan act hook asked a person about, per tool call
//	told/        one empty file per warning act shows a person only once
//	audit/       the signed audit log (its own layout: audit's package doc)
//	plans.index  which saved plans are done, a cache for act pending (never trusted)
//	policy.yaml  the user's policy layer, if any
//	lock         the lock file; its content is empty and never read
//
// Every path under the state directory is named here, by a method of
// [Dir] or a name below: no other package joins names onto Root.
//
// # Lock
//
// Promotions, rollbacks and recovery run under [Dir.Lock], an exclusive
// flock(2) on <root>/lock held for the whole check-then-change sequence, so
// a stale-plan check and the promotion it guards are one step for every
// other act process. The kernel drops the lock when its holder exits, even
// by SIGKILL, so a crashed process never leaves the state dir locked; the
// next holder finds the crashed promotion's journal and recovers it.
//
// The lock file is never removed: removing it would let one process lock
// the old inode and another a new one.
package state

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"time"

	// gofrs/flock is a small, well-kept wrapper of flock(2) (LockFileEx on
	// Windows); it is used here rather than a hand-written syscall so that
	// the EINTR and NFS-reopen corners are someone's long-tested code.
	"github.com/gofrs/flock"
)

// Dir is act's state directory. Root is absolute and clean (cmd resolves
// it); the methods only join names under it.
type Dir struct{ Root string }

// Plans is the directory of saved plans.
func (d Dir) Plans() string { return filepath.Join(d.Root, "plans") }

// Journal is the directory of write-ahead journals.
func (d Dir) Journal() string { return filepath.Join(d.Root, "journal") }

// JournalFile is the journal of the promotion or rollback of actionID.
// The caller has checked that actionID is a single path element.
func (d Dir) JournalFile(actionID string) string {
	return filepath.Join(d.Journal(), actionID+".journal")
}

// Actions is the directory of action records, one <action id>.json each.
func (d Dir) Actions() string { return filepath.Join(d.Root, "actions") }

// Cooldowns is the directory of cooldown records, one per rolled-back
// action's identity.
func (d Dir) Cooldowns() string { return filepath.Join(d.Root, "cooldowns") }

// Caches is the directory of act's own caches (the policy's opt-in
// sandbox.persistent_caches), one directory each, shown read-only to
// sandboxed commands and filled by act with what passed its checks of a
// dry run's additions (docs/sandbox-filesystem.md).
func (d Dir) Caches() string { return filepath.Join(d.Root, "caches") }

// Cache is the directory of the cache the sandbox shows at rel, a path
// below the user's home ("go/pkg/mod"): one path element, escaped.
func (d Dir) Cache(rel string) string {
	return filepath.Join(d.Caches(), url.PathEscape(filepath.ToSlash(rel)))
}

// Backups is the directory of pre-images kept for rollback.
func (d Dir) Backups() string { return filepath.Join(d.Root, "backups") }

// The names inside a plan's directory: its record and its layer. A plan
// being written lives in a temporary directory under Plans() with the same
// names, renamed into place whole.
const (
	PlanRecordName = "plan.json"
	LayerName      = "layer"
	// WorkName is the overlay's work directory in a plan being written,
	// removed before the plan is saved.
	WorkName = "work"
)

// The prefixes of the names under Plans() (and Backups()) that no plan
// or action id has: TempPrefix a plan being written (or made ahead),
// GCPrefix what act gc is removing (renamed first, so that nothing is
// seen half removed).
const (
	TempPrefix = ".tmp-"
	GCPrefix   = ".gc-"
)

// Plan is the directory of saved plan id.
func (d Dir) Plan(id string) string { return filepath.Join(d.Plans(), id) }

// PlanRecord is saved plan id's record.
func (d Dir) PlanRecord(id string) string { return filepath.Join(d.Plan(id), PlanRecordName) }

// Layer is the directory of plan id's layer.
func (d Dir) Layer(id string) string { return filepath.Join(d.Plan(id), LayerName) }

// Upper is the upper directory of plan id's layer: the real absolute path
// p lives at Upper(id) + p.
func (d Dir) Upper(id string) string { return filepath.Join(d.Layer(id), "upper") }

// GCLayer is the name plan id's layer is renamed to while act gc removes
// it alone (the plan's record stays).
func (d Dir) GCLayer(id string) string { return filepath.Join(d.Plans(), GCPrefix+id+".layer") }

// Adopt is the directory of the copies act hook claude-code keeps for
// the adoption of plan id (docs/agents.md).
func (d Dir) Adopt(id string) string { return filepath.Join(d.Plan(id), "adopt") }

// AdoptCopy is the copy of the file plan id's change n replaces.
func (d Dir) AdoptCopy(id string, n int) string {
	return filepath.Join(d.Adopt(id), strconv.Itoa(n))
}

// Replay is the directory of the output act hook claude-code keeps of a
// Bash call it promoted itself, for the command that replaces the call
// to print (docs/agents.md, "Bash is promoted by act").
func (d Dir) Replay(id string) string { return filepath.Join(d.Plan(id), "replay") }

// Hooks is the directory of act hook's notes: per tool call, the plan it
// asked a person about.
func (d Dir) Hooks() string { return filepath.Join(d.Root, "hooks") }

// HookNote is the note of one tool call; key is a hex digest, so nothing
// of the hook's input reaches a path.
func (d Dir) HookNote(key string) string { return filepath.Join(d.Hooks(), key) }

// Told is the file that says a person was shown the warning of rule once
// (rule is one of act's rule ids, never input).
func (d Dir) Told(rule string) string { return filepath.Join(d.Root, "told", rule) }

// PolicyFileName is the name of the user's policy layer in the state
// directory.
const PolicyFileName = "policy.yaml"

// PolicyFile is the user's policy layer (docs/policy.md).
func (d Dir) PolicyFile() string { return filepath.Join(d.Root, PolicyFileName) }

// ActionFile is the record of action id. The caller has checked that id
// is a single path element.
func (d Dir) ActionFile(id string) string { return filepath.Join(d.Actions(), id+".json") }

// Attempts is the directory of the records of each action id's attempts.
func (d Dir) Attempts() string { return filepath.Join(d.Root, "attempts") }

// AttemptsFile is the record of action id's attempts. The caller has
// checked that id is a single path element.
func (d Dir) AttemptsFile(id string) string { return filepath.Join(d.Attempts(), id+".json") }

// CooldownFile is the cooldown record of key (a hex digest).
func (d Dir) CooldownFile(key string) string { return filepath.Join(d.Cooldowns(), key+".json") }

// Backup is the directory of action id's pre-images; sub names the event
// that kept them (apply, rollback) or "saved" (what a forced rollback
// found), "" the whole directory.
func (d Dir) Backup(actionID, sub string) string {
	return filepath.Join(d.Backups(), actionID, sub)
}

// Audit is the directory of the audit log.
func (d Dir) Audit() string { return filepath.Join(d.Root, "audit") }

// PlansIndex is the plans index: which saved plans are done (applied,
// rolled back or denied), so that act pending reads only the others. A
// cache the agent can write like the rest: never trusted (docs/state.md,
// "The plans index").
func (d Dir) PlansIndex() string { return filepath.Join(d.Root, "plans.index") }

// LockFile is the file [Dir.Lock] locks.
func (d Dir) LockFile() string { return filepath.Join(d.Root, "lock") }

// lockPoll is how often Lock retries while another process holds the lock.
// flock(2) cannot be interrupted by a context, so waiting is polling with
// LOCK_NB; 5 ms is small beside a promotion (at least one fsync, ~1.5 ms).
const lockPoll = 5 * time.Millisecond

// Lock takes the exclusive lock on the state directory, creating the
// directory (0700) and the lock file (0600) if needed. It waits while
// another process, or another Lock call in this one, holds the lock, until
// ctx is done; then it returns ctx's error, wrapped.
//
// unlock releases the lock; calling it more than once is harmless.
func (d Dir) Lock(ctx context.Context) (unlock func() error, err error) {
	if err := os.MkdirAll(d.Root, 0o700); err != nil {
		return nil, fmt.Errorf("lock %s: %w", d.Root, err)
	}
	name := d.LockFile()
	// Each call opens its own descriptor: flock(2) locks belong to the open
	// file description, so two Lock calls in one process exclude each other
	// just as two processes do.
	fl := flock.New(name, flock.SetPermissions(0o600))
	ok, err := fl.TryLockContext(ctx, lockPoll)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", name, err)
	}
	if !ok { // not reached: TryLockContext returns an error when it gives up
		return nil, fmt.Errorf("lock %s: not acquired", name)
	}
	return fl.Unlock, nil
}

// TryLock takes the lock only if no one holds it: ok is false, and unlock
// nil, when another process (or Lock call) has it.
func (d Dir) TryLock() (unlock func() error, ok bool, err error) {
	if err := os.MkdirAll(d.Root, 0o700); err != nil {
		return nil, false, fmt.Errorf("lock %s: %w", d.Root, err)
	}
	fl := flock.New(d.LockFile(), flock.SetPermissions(0o600))
	ok, err = fl.TryLock()
	if err != nil {
		return nil, false, fmt.Errorf("lock %s: %w", d.LockFile(), err)
	}
	if !ok {
		return nil, false, nil
	}
	return fl.Unlock, true, nil
}
