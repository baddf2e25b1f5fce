package rollback

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/act-project/act/diff"
	"github.com/act-project/act/internal/atomicfile"
	"github.com/act-project/act/internal/lifecycle"
	"github.com/act-project/act/internal/problem"
	"github.com/act-project/act/internal/state"
	"github.com/act-project/act/internal/timings"
	"github.com/act-project/act/plan"
)

// An Action is act's record of a promoted action, kept in
// <home>/actions/<action id>.json: what the apply did (its ops, with the
// backups of what it replaced or removed) and where the action stands.
type Action struct {
	ActionID         string          `json:"action_id"`
	PlanID           string          `json:"plan_id"`
	DescriptorDigest string          `json:"descriptor_digest"`
	ActionType       string          `json:"action_type"`
	State            lifecycle.State `json:"state"`
	AppliedAt        time.Time       `json:"applied_at"`
	RolledBackAt     *time.Time      `json:"rolled_back_at,omitempty"`
	Changes          []diff.Change   `json:"changes"`
	Ops              []Op            `json:"ops"`
	// Saved lists, after `rollback --force`, where the versions of paths
	// changed since the apply were kept.
	Saved []SavedPath `json:"saved,omitempty"`
	// Approval is how the promotion was confirmed.
	Approval *Approval `json:"approval,omitempty"`
}

// An Approval records who confirmed a promotion and how: Via is "none"
// (none was needed), "flag" (--confirm), "terminal" (a yes at the
// controlling terminal) or "signed" (an SSH signature, whose signer
// Principal and KeyFingerprint name). Reported is where a door was told
// the yes came from, when act did not see it given: "agent-prompt" (a
// person at the agent's permission prompt) or "prompt-program" (a
// program answering it).
type Approval struct {
	Via            string `json:"via"`
	UID            int    `json:"uid"`
	User           string `json:"user,omitempty"`
	Principal      string `json:"principal,omitempty"`
	KeyFingerprint string `json:"key_fingerprint,omitempty"`
	Reported       string `json:"reported,omitempty"`
}

// A SavedPath is the version of Path found by a forced rollback, kept at
// Copy.
type SavedPath struct {
	Path string `json:"path"`
	Copy string `json:"copy"`
}

// A Recovery is a promotion or rollback that a crash had left unfinished,
// as recovery ended it: Outcome "before" (undone) or "after" (it had
// committed; the records were completed).
type Recovery struct {
	Event    string `json:"event"`
	ActionID string `json:"action_id"`
	PlanID   string `json:"plan_id"`
	Outcome  string `json:"outcome"`
}

// Rule ids of the conflicts (exit 8) apply and rollback report.
const (
	RuleStale           = "apply.stale"
	RuleLayerChanged    = "apply.layer-changed"
	RuleOtherContent    = "apply.already-applied-other-content"
	RuleWasRolledBack   = "apply.rolled-back"
	RuleTargetChanged   = "rollback.target-changed"
	RuleAlreadyRolled   = "rollback.already-rolled-back"
	RuleBackupChanged   = "rollback.backup-changed"
	RulePreconditionNow = "apply.precondition-failed"
	RuleScopeMoved      = "apply.scope-moved"
)

// RuleCooldown blocks (exit 4) a repeat of a rolled-back action during the
// policy's cooldown.
const RuleCooldown = "policy.cooldown"

// Rules lists the rule ids apply and rollback report: conflicts (exit 8)
// and the cooldown block (exit 4).
func Rules() []plan.Rule {
	c := problem.Conflict
	return []plan.Rule{
		{ID: RuleCooldown, Summary: "the same action (type, scope and effects) was rolled back less than the policy's cooldown ago (confirmation.cooldown_on_repeat)", Layer: problem.Policy},
		{ID: RuleStale, Summary: "a path no longer matches the plan's pre-image (type, mode, content; absent still absent), or the directory that holds it is gone", Layer: c},
		{ID: RulePreconditionNow, Summary: "a precondition that held at plan time no longer holds at apply (the message names the precondition's rule id)", Layer: c},
		{ID: RuleLayerChanged, Summary: "the plan's saved layer no longer holds what the plan recorded", Layer: c},
		{ID: RuleOtherContent, Summary: "the action id was already applied with another descriptor", Layer: c},
		{ID: RuleWasRolledBack, Summary: "the action id was applied and rolled back: an action id is promoted at most once", Layer: c},
		{ID: RuleScopeMoved, Summary: "a directory on the way to a scope root was replaced (by a symbolic link, say) since the plan", Layer: c},
		{ID: RuleTargetChanged, Summary: "a path the apply changed has changed since; rollback --force restores anyway, keeping the current version (not when the directory that holds it is gone)", Layer: c},
		{ID: RuleBackupChanged, Summary: "the pre-image the apply kept in the state directory's backups is gone or no longer what it was: rollback cannot restore it", Layer: c},
		{ID: RuleAlreadyRolled, Summary: "the action was already rolled back", Layer: c},
	}
}

func conflict(rule, path, format string, args ...any) problem.Problem {
	return problem.Problem{Rule: rule, Field: path, Message: fmt.Sprintf(format, args...), Layer: problem.Conflict}
}

// LoadAction reads the record of action id; an unknown id is
// [plan.ErrNotFound].
func LoadAction(home state.Dir, id string) (*Action, error) {
	a := new(Action)
	if err := readAction(home, id, a); err != nil {
		return nil, err
	}
	return a, nil
}

// readAction decodes the record of action id into v, which may hold only
// some of its fields; an unknown id is [plan.ErrNotFound].
func readAction(home state.Dir, id string, v any) error {
	if id == "" || id != filepath.Base(id) || id[0] == '.' {
		return fmt.Errorf("action %s: %w", id, plan.ErrNotFound)
	}
	b, err := os.ReadFile(home.ActionFile(id))
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("action %s: %w", id, plan.ErrNotFound)
	}
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("read action %s: %w", id, err)
	}
	return nil
}

func saveAction(home state.Dir, a *Action, durable bool) error {
	if err := os.MkdirAll(home.Actions(), 0o700); err != nil {
		return err
	}
	// Compact: the record of 10,000 changes is megabytes, and indenting it
	// costs as much again as encoding it.
	b, err := json.Marshal(a)
	if err != nil {
		return err
	}
	if !durable {
		return atomicfile.Replace(home.ActionFile(a.ActionID), append(b, '\n'), 0o600)
	}
	return atomicfile.WriteFile(home.ActionFile(a.ActionID), append(b, '\n'), 0o600)
}

// SyncAction makes the record of action id durable: for an Options.Record
// whose own durable round does not reach the actions directory's
// filesystem.
func SyncAction(home state.Dir, id string) error {
	f, err := os.Open(home.ActionFile(id))
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return err
	}
	return atomicfile.SyncDir(home.Actions())
}

// Options are what Apply and Rollback need besides their subject.
type Options struct {
	Now      func() time.Time
	Progress Progress
	// Preconditions re-checks the descriptor's preconditions (Apply only);
	// it runs under the lock, with the stale-plan check.
	Preconditions func() problem.List
	// Force makes Rollback restore paths changed since the apply, after
	// saving their current versions.
	Force bool
	// Record, when set, records the committed outcome elsewhere (the
	// audit log) before the journal is removed, so that a crash never
	// leaves an action done and unrecorded: until the journal is gone,
	// recovery finishes it and records that. Apply then writes its action
	// record without a sync of its own, and Record must make it durable in
	// the same round as its own record: with syncFS true, a syncfs(2) of
	// the state directory's filesystem (docs/audit.md). A rollback's action
	// record, which recovery must be able to read back, is made durable
	// before Record, which is then called with syncFS false.
	Record func(a *Action, syncFS bool) error
	// Approval is how the promotion was confirmed (Apply only).
	Approval *Approval
}

// An Outcome is what Apply or Rollback did.
type Outcome struct {
	Action *Action
	// AlreadyApplied: the same action id and descriptor digest had been
	// applied; nothing changed.
	AlreadyApplied bool
	// Recovered lists the crashed promotions this call recovered first.
	Recovered []Recovery
}

// Promoted applies the promote-once rule (docs/promotion.md) to action id with
// descriptor digest: (nil, nil) if the id was never promoted; the action if
// it was, with this same digest (already applied: nothing to do); a
// Conflict otherwise (other content, or rolled back).
func Promoted(home state.Dir, id, digest string) (*Action, error) {
	a, err := LoadAction(home, id)
	switch {
	case errors.Is(err, plan.ErrNotFound):
		return nil, nil
	case err != nil:
		return nil, err
	case a.State == lifecycle.RolledBack:
		return nil, problem.List{conflict(RuleWasRolledBack, "action_id",
			"action %s was applied (plan %s) and rolled back at %s; an action id is promoted at most once: give the action a new action_id",
			a.ActionID, a.PlanID, a.RolledBackAt.UTC().Format(time.RFC3339))}
	case a.DescriptorDigest != digest:
		return nil, problem.List{conflict(RuleOtherContent, "action_id",
			"action %s was already applied (plan %s) with another descriptor (digest %s, this one %s)",
			a.ActionID, a.PlanID, short(a.DescriptorDigest), short(digest))}
	}
	return a, nil
}

// lockAndRecover takes the state-dir lock and recovers what a crash left
// part-way, as every promotion and rollback does first. On error the lock
// is not held.
func lockAndRecover(ctx context.Context, home state.Dir, now func() time.Time) (*Outcome, func() error, error) {
	unlock, err := home.Lock(ctx)
	if err != nil {
		return nil, nil, err
	}
	out := &Outcome{}
	if out.Recovered, err = recoverLocked(home, now); err != nil {
		unlock()
		return out, nil, err
	}
	return out, unlock, nil
}

// Apply promotes plan p onto the real tree, all or nothing, under the
// state-dir lock (docs/promotion.md). Its errors: a problem.List of layer Conflict
// (exit 8; nothing changed) or Precondition, a *RevertedError (a failure
// part-way, undone), or an ordinary error.
func Apply(ctx context.Context, home state.Dir, p *plan.Plan, opts Options) (*Outcome, error) {
	ctx, endApply := timings.Begin(ctx, "promote")
	defer endApply()
	end := timings.Start(ctx, "lock and recovery")
	out, unlock, err := lockAndRecover(ctx, home, opts.Now)
	end()
	if err != nil {
		return out, err
	}
	defer unlock()
	if a, err := Promoted(home, p.ActionID, p.DescriptorDigest); err != nil || a != nil {
		out.Action, out.AlreadyApplied = a, a != nil
		return out, err
	}
	// The plan's layer may still be in the page cache, dirty: start writing
	// it out now, while the checks below hash it. A plan that changes
	// nothing (a command that only read) takes nothing from its layer:
	// no filesystem-wide sync for it.
	flushed := func() error { return nil }
	if len(p.Changes) > 0 {
		flushed = flushEarly(plan.UpperDir(home.Root, p.ID))
	}
	defer flushed()
	var probs problem.List
	retype := retyped(p.Changes)
	end = timings.Start(ctx, "stale check: the tree as the plan saw it")
	stale := checkAll(len(p.Changes), func(i int) (string, error) {
		c := p.Changes[i]
		if c.Kind == diff.Create && retype[c.Path] {
			return "", nil // the path's pre-image is its Delete's
		}
		return before(c).mismatch(c.Path)
	})
	for i, c := range p.Changes {
		why, err := stale[i].why, stale[i].err
		if err != nil {
			return out, err
		}
		if why != "" {
			probs = append(probs, conflict(RuleStale, c.Path, "%s changed since the plan: %s", c.Path, why))
		}
	}
	gone, err := goneParents(p.Changes, p.Scope)
	if err != nil {
		return out, err
	}
	for _, g := range gone {
		probs = append(probs, conflict(RuleStale, g.dir, "%s changed since the plan: %s", g.dir, g.why))
	}
	probs = append(probs, scopeMoved(p, "the plan")...)
	if opts.Preconditions != nil {
		for _, pr := range opts.Preconditions() {
			pr.Message = "no longer holds (" + pr.Rule + "): " + pr.Message
			pr.Rule, pr.Layer = RulePreconditionNow, problem.Conflict
			probs = append(probs, pr)
		}
	}
	end()
	if len(probs) > 0 {
		return out, probs
	}
	end = timings.Start(ctx, "layer check: its recorded hashes")
	ops, probs, err := applyOps(home, p)
	end()
	if err != nil {
		return out, err
	}
	if len(probs) > 0 {
		return out, probs
	}
	end = timings.Start(ctx, "the layer made durable")
	err = flushed()
	end()
	if err != nil {
		return out, err
	}
	b := Begin{Event: EventApply, ActionID: p.ActionID, PlanID: p.ID, Steps: ops, Approval: opts.Approval, Pins: p.ScopeRoots}
	jpath := home.JournalFile(p.ActionID)
	end = timings.Start(ctx, "journal: write, sync, commit")
	err = execute(jpath, b, opts.Progress, plan.Dir(home.Root, p.ID))
	end()
	if err != nil {
		var rev *RevertedError
		if errors.As(err, &rev) {
			removeJournal(jpath)
			if probs := layerChanged(err); len(probs) > 0 {
				// Found by the copies, before any op ran: nothing
				// changed, as when apply's checks find it.
				return out, probs
			}
		}
		return out, err
	}
	durable := opts.Record == nil
	end = timings.Start(ctx, "action record")
	out.Action, err = finishPlan(home, b, p, nil, opts.Now(), durable)
	end()
	if err != nil {
		return out, err
	}
	if opts.Record != nil {
		if err := opts.Record(out.Action, !durable); err != nil {
			return out, err // the journal stays: recovery finishes and records it
		}
		crashPoint()
	}
	defer timings.Start(ctx, "journal removed")()
	return out, removeJournal(jpath)
}

// applyOps turns p's changes into ops, checking that the layer still holds
// what the plan recorded (the layer is written without fsync and lives in
// the user's state dir, so apply trusts its recorded digests, not it).
// Directories are created writable and get their planned mode after their
// contents; a directory's mode change that removes the owner's write or
// search permission comes after its contents, one that adds it before.
func applyOps(home state.Dir, p *plan.Plan) ([]Op, problem.List, error) {
	layer := plan.UpperDir(home.Root, p.ID)
	bdir := home.Backup(p.ActionID, EventApply)
	fsOf := newDevices()
	// Backups are of what a change replaces: a plan that only creates
	// needs no backup directory (two inodes fewer to make).
	if slices.ContainsFunc(p.Changes, func(c diff.Change) bool { return c.Kind != diff.Create }) {
		if err := os.MkdirAll(bdir, 0o700); err != nil {
			return nil, nil, err
		}
	}
	// The layer's files, checked on all CPUs first; the loop below uses
	// the outcomes in order. A file's content is not read here: it is
	// copied, and its digest checked on the bytes the copy writes, once
	// the journal is begun (stage).
	isPut := func(c diff.Change) bool { return c.Kind != diff.Delete && c.Type != diff.TypeDir }
	layerCheck := checkAll(len(p.Changes), func(i int) (string, error) {
		c := p.Changes[i]
		if !isPut(c) {
			return "", nil
		}
		im := after(c)
		im.sha256 = nil
		if why, err := im.mismatch(layer + c.Path); why != "" || err != nil {
			return why, err
		}
		return layerIdentity(layer + c.Path)
	})
	var early, ops, late []Op
	var probs problem.List
	root := os.Geteuid() == 0
	var owners diff.Owners
	stages := stageDirs{}
	for i, c := range p.Changes {
		n := strconv.Itoa(i)
		op := Op{Path: c.Path, Change: i}
		if root && c.Kind != diff.Delete {
			op.Owner = OwnerOf(&owners, c)
		}
		if c.Kind != diff.Create {
			op.Backup = filepath.Join(bdir, n)
			cross, err := fsOf.differ(filepath.Dir(c.Path), bdir)
			if err != nil {
				return nil, nil, err
			}
			op.BackupCopy = cross
		}
		switch {
		case c.Kind == diff.Delete:
			op.Kind = OpRemove
			ops = append(ops, op)
		case c.Type == diff.TypeDir && c.Kind == diff.Create:
			op.Kind, op.Mode = OpMkdir, *c.ModeAfter
			if !ownerWX(*c.ModeAfter) {
				op.Mode = "0700"
				late = append(late, Op{Kind: OpChmod, Path: c.Path, Mode: *c.ModeAfter, ModeBefore: "0700", Change: i})
			}
			ops = append(ops, op)
		case c.Type == diff.TypeDir:
			op.Kind, op.Mode, op.ModeBefore, op.Backup, op.BackupCopy = OpChmod, *c.ModeAfter, *c.ModeBefore, "", false
			if ownerWX(*c.ModeAfter) && !ownerWX(*c.ModeBefore) {
				early = append(early, op)
			} else {
				late = append(late, op)
			}
		default:
			op.Kind, op.Src = OpPut, layer+c.Path
			why, err := layerCheck[i].why, layerCheck[i].err
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return nil, nil, err
			}
			if why != "" || err != nil {
				probs = append(probs, conflict(RuleLayerChanged, c.Path,
					"the plan's layer copy of %s no longer matches the plan (%s): plan again", c.Path, why))
				continue
			}
			// Never the layer's own entry: a new one made as the plan
			// recorded it (Op.SHA256, Op.Target), which nobody else holds.
			switch {
			case c.Type == diff.TypeFile && c.SHA256After != nil && c.SizeAfter != nil && c.ModeAfter != nil:
				op.SHA256, op.Size, op.Mode = *c.SHA256After, *c.SizeAfter, *c.ModeAfter
			case c.Type == diff.TypeSymlink && c.LinkAfter != nil && *c.LinkAfter != "":
				op.Target = *c.LinkAfter
			default:
				probs = append(probs, conflict(RuleLayerChanged, c.Path,
					"the plan records no content for %s: plan again", c.Path))
				continue
			}
			op.Stage = stageName(stages, c.Path, p.ActionID, EventApply, i)
			ops = append(ops, op)
		}
	}
	// Late chmods run deepest first, so a parent made read-only comes last.
	for i, j := 0, len(late)-1; i < j; i, j = i+1, j-1 {
		late[i], late[j] = late[j], late[i]
	}
	return append(append(early, ops...), late...), probs, nil
}

// ownerWX reports whether mode lets its owner write and search.
func ownerWX(mode string) bool {
	m, err := diff.ParseMode(mode)
	return err == nil && m&0o300 == 0o300
}

// stageName is where new content for path is copied: its source is on
// another filesystem, or is a file or link of the plan's layer, which is
// never moved into place (Op.SHA256). The copy is hidden, named for the
// action, in path's directory if act may write there now; else (a
// directory the same promotion creates or opens for writing: staging
// comes before any op) in the nearest ancestor on the same filesystem that
// it may write, from where one rename still moves it into place. stages
// remembers the answer for each directory, for all the paths of one
// promotion (nil: none).
func stageName(stages stageDirs, path, actionID, event string, n int) string {
	id := actionID
	if len(id) > 8 {
		id = id[:8]
	}
	if stages == nil {
		stages = stageDirs{}
	}
	return filepath.Join(stages.dir(filepath.Dir(path)), fmt.Sprintf(".act-%s-%s-%d", id, event, n))
}

// stageDirs are stageName's answers, by directory: the changes below a
// deep directory the promotion creates cost one walk up, not one each.
type stageDirs map[string]string

// dir is where the stage of an entry of the directory dir goes.
func (sd stageDirs) dir(dir string) string {
	if s, ok := sd[dir]; ok {
		return s
	}
	var s string
	if fi, err := os.Lstat(dir); (err == nil && fi.IsDir()) || dir == "/" {
		s = dir
		if err == nil {
			s = writableAbove(dir, fi.Sys().(*syscall.Stat_t).Dev)
		}
	} else {
		s = sd.dir(filepath.Dir(dir))
	}
	sd[dir] = s
	return s
}

// writableAbove is the nearest of dir and its ancestors on the filesystem
// dev that act may write and search; dir where there is none.
func writableAbove(dir string, dev uint64) string {
	for d := dir; ; d = filepath.Dir(d) {
		st, err := os.Lstat(d)
		if err != nil || st.Sys().(*syscall.Stat_t).Dev != dev {
			break
		}
		if unix.Access(d, unix.W_OK|unix.X_OK) == nil {
			return d
		}
		if d == "/" {
			break
		}
	}
	return dir
}

// devices caches the filesystem of directories.
type devices map[string]uint64

func newDevices() devices { return devices{} }

func (d devices) of(name string) (uint64, error) {
	if dev, ok := d[name]; ok {
		return dev, nil
	}
	dev, err := device(name)
	if err != nil {
		return 0, err
	}
	d[name] = dev
	return dev, nil
}

// differ reports whether a and b are on different filesystems (for a path
// that does not exist yet, its nearest existing ancestor's).
func (d devices) differ(a, b string) (bool, error) {
	da, err := d.of(a)
	if err != nil {
		return false, err
	}
	db, err := d.of(filepath.Dir(b))
	if err != nil {
		return false, err
	}
	return da != db, nil
}

// finish completes the records of a committed journal b: the action
// record, and for a rollback the cooldown record and the backups. It is
// what Apply and Rollback do after Commit, and what recovery does for a
// journal that committed before a crash, so it can be repeated.
func finish(home state.Dir, b Begin, now time.Time) (*Action, error) {
	p, err := plan.Load(home.Root, b.PlanID)
	if err != nil {
		return nil, err
	}
	return finishPlan(home, b, p, nil, now, true)
}

// finishPlan is finish with b's plan p already loaded (Apply has it: a
// plan of 10,000 changes is megabytes of JSON to decode again), and for a
// rollback the action record a as loaded before it (nil: read again).
//
// An apply's action record is written durably unless durable is false:
// then the caller makes it durable before the journal is removed.
func finishPlan(home state.Dir, b Begin, p *plan.Plan, loaded *Action, now time.Time, durable bool) (*Action, error) {
	var err error
	var a *Action
	switch b.Event {
	case EventApply:
		a = &Action{
			ActionID: b.ActionID, PlanID: b.PlanID, DescriptorDigest: p.DescriptorDigest,
			ActionType: p.ActionType, State: lifecycle.Applied, AppliedAt: now.UTC(),
			Changes: p.Changes, Ops: b.Steps, Approval: b.Approval,
		}
		if old, err := LoadAction(home, b.ActionID); err == nil && old.State == lifecycle.Applied {
			a.AppliedAt = old.AppliedAt // a repeat after a crash
		}
	case EventRollback:
		if a = loaded; a == nil {
			if a, err = LoadAction(home, b.ActionID); err != nil {
				return nil, err
			}
		}
		if a.State != lifecycle.RolledBack {
			t := now.UTC()
			a.State, a.RolledBackAt = lifecycle.RolledBack, &t
		}
		if a.Saved, err = keepBackups(home, b); err != nil {
			return nil, err
		}
		keys, on, err := p.Cooldown()
		if err != nil {
			return nil, err
		}
		for _, key := range keys {
			if !on {
				break
			}
			if err := writeCooldown(home, key, b.ActionID, *a.RolledBackAt); err != nil {
				return nil, err
			}
		}
	default:
		return nil, fmt.Errorf("journal of action %s: unknown event %q", b.ActionID, b.Event)
	}
	// The action record is all that is written: it is what says what the
	// engine did (the gate's store derives the plan's state from it), so
	// that promoting a plan makes one record durable, not two.
	if err := saveAction(home, a, durable || b.Event != EventApply); err != nil {
		return nil, err
	}
	crashPoint()
	return a, nil
}

// An ActionHead is the part of an action record that says which plan it
// promoted and what the engine last did with it: read without the
// changes and ops, megabytes for a big action.
type ActionHead struct {
	PlanID string          `json:"plan_id"`
	State  lifecycle.State `json:"state"`
}

// LoadActionHead reads the head of action id's record; an unknown id is
// [plan.ErrNotFound].
func LoadActionHead(home state.Dir, id string) (*ActionHead, error) {
	h := new(ActionHead)
	if err := readAction(home, id, h); err != nil {
		return nil, err
	}
	return h, nil
}

// keepBackups disposes of a committed rollback's backups: those of the
// steps in b.Keep (what a forced rollback found changed since the apply,
// under [SavedDir]) are kept and returned; the others, which only hold what
// the apply had put there, are removed, as are the consumed apply backups.
func keepBackups(home state.Dir, b Begin) ([]SavedPath, error) {
	keep := map[int]bool{}
	for _, n := range b.Keep {
		keep[n] = true
	}
	var saved []SavedPath
	for i, op := range b.Steps {
		if op.Backup == "" {
			continue
		}
		if _, err := os.Lstat(op.Backup); err != nil {
			continue
		}
		if keep[i] {
			saved = append(saved, SavedPath{Path: op.Path, Copy: op.Backup})
		} else if err := os.RemoveAll(op.Backup); err != nil {
			return nil, err
		}
	}
	dir := home.Backup(b.ActionID, "")
	if len(saved) == 0 {
		return nil, os.RemoveAll(dir)
	}
	for _, sub := range []string{EventApply, EventRollback} {
		if err := os.RemoveAll(filepath.Join(dir, sub)); err != nil {
			return nil, err
		}
	}
	return saved, nil
}

func removeJournal(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return atomicfile.SyncDir(filepath.Dir(path))
}

// scopeMoved reports each directory from / to a scope root of p that is no
// longer what the plan found (docs/sandbox-promotion.md): a promotion or
// rollback through it would land wherever it now leads.
func scopeMoved(p *plan.Plan, since string) problem.List {
	moved := plan.CheckScopeRootIDs(p.ScopeRoots)
	var probs problem.List
	for _, id := range p.ScopeRoots {
		if why, ok := moved[id.Path]; ok {
			probs = append(probs, conflict(RuleScopeMoved, id.Path, "%s changed since %s: %s; nothing was changed", id.Path, since, why))
		}
	}
	return probs
}

// layerIdentity says why the layer entry at name may not be promoted even
// though its type, mode and content are the plan's: a regular file with
// more than one link (a hard link to a file outside the layer would be
// promoted still shared with it), one owned by another user, or an
// extended attribute the plan dropped (docs/sandbox-promotion.md).
func layerIdentity(name string) (string, error) {
	fi, err := os.Lstat(name)
	if err != nil {
		return "", err
	}
	st := fi.Sys().(*syscall.Stat_t)
	if fi.Mode().IsRegular() && st.Nlink > 1 {
		return fmt.Sprintf("it has %d links: it is shared with a file outside the layer", st.Nlink), nil
	}
	if uid := uint32(os.Geteuid()); st.Uid != uid {
		// The sandbox maps only the caller's id: anything else was put
		// there from outside it, and would be promoted with its owner.
		return fmt.Sprintf("it is owned by uid %d, not by the user running act (%d)", st.Uid, uid), nil
	}
	names, err := plan.ForeignXattrs(name)
	if err != nil {
		return "", err
	}
	if len(names) > 0 {
		return fmt.Sprintf("it has extended attributes the plan did not (%s)", strings.Join(names, ", ")), nil
	}
	return "", nil
}

// OwnerOf is diff.PromotedOwner as an Op's Owner, looked up in o (which
// reads each directory once for all the changes of a plan).
func OwnerOf(o *diff.Owners, c diff.Change) *Owner {
	uid, gid, ok := o.Of(c)
	if !ok {
		return nil
	}
	return &Owner{UID: uid, GID: gid}
}
