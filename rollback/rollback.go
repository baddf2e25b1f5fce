package rollback

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/act-project/act/diff"
	"github.com/act-project/act/internal/atomicfile"
	"github.com/act-project/act/internal/lifecycle"
	"github.com/act-project/act/internal/problem"
	"github.com/act-project/act/internal/state"
	"github.com/act-project/act/plan"
)

// Rollback restores the pre-images of everything action id's apply changed
// (docs/promotion.md), all or nothing, journaled like apply. A path changed since the
// apply is a Conflict (exit 8) unless opts.Force, which saves the current
// version first (Outcome.Action.Saved). An unknown id is
// [plan.ErrNotFound]. Its steps, each refusing before anything is
// touched: the action's record and its plan (planOf), what changed since
// the apply (drifted), directories gone from under it (goneDirs), the
// apply's backups (lostBackups); then the journaled commit.
func Rollback(ctx context.Context, home state.Dir, id string, opts Options) (*Outcome, error) {
	out, unlock, err := lockAndRecover(ctx, home, opts.Now)
	if err != nil {
		return out, err
	}
	defer unlock()
	a, err := LoadAction(home, id)
	if err != nil {
		return out, err
	}
	out.Action = a
	if a.State == lifecycle.RolledBack {
		return out, problem.List{conflict(RuleAlreadyRolled, "action_id",
			"action %s was already rolled back at %s", id, a.RolledBackAt.UTC().Format(time.RFC3339))}
	}
	changed, probs, err := drifted(a)
	if err != nil {
		return out, err
	}
	p, err := planOf(home, a)
	if err != nil {
		return out, err
	}
	for _, check := range []func() (problem.List, error){
		func() (problem.List, error) { return goneDirs(a, p, changed) },
		func() (problem.List, error) { return lostBackups(a) },
	} {
		if refused, err := check(); err != nil {
			return out, err
		} else if len(refused) > 0 {
			return out, refused
		}
	}
	if len(probs) > 0 && !opts.Force {
		return out, probs
	}
	out.Action, err = commitRollback(home, a, p, changed, opts)
	if out.Action == nil {
		out.Action = a
	}
	return out, err
}

// drifted lists what changed since the apply: each path no longer as the
// apply left it, and each entry in a directory the apply created that it
// did not create (the rollback removes that directory: whatever it holds
// now is drift like an edited file).
func drifted(a *Action) (changed map[string]string, probs problem.List, err error) {
	changed = map[string]string{}
	retype := retyped(a.Changes)
	for _, c := range a.Changes {
		if c.Kind == diff.Delete && retype[c.Path] {
			continue // what the apply left at the path is its Create's
		}
		why, err := after(c).mismatch(c.Path)
		if err != nil {
			return nil, nil, err
		}
		if why != "" {
			changed[c.Path] = why
			probs = append(probs, conflict(RuleTargetChanged, c.Path, "%s changed since the apply: %s; nothing was rolled back (rollback --force --confirm restores anyway, saving the current version)", c.Path, why))
		}
	}
	added, err := addedEntries(a.Changes, changed)
	if err != nil {
		return nil, nil, err
	}
	for _, d := range added {
		changed[d.dir] = d.why
		probs = append(probs, conflict(RuleTargetChanged, d.dir, "%s was not created by the apply: %s; nothing was rolled back (rollback --force --confirm saves it first, then rolls back)", d.dir, d.why))
	}
	return changed, probs, nil
}

// planOf loads the plan a promoted, its facts set again from its
// descriptor (plan.Rebind), and checks that the action record's changes
// are that plan's: the record lives in the state directory, and a
// rollback, which needs no confirmation, must put back only what the
// reviewed plan changed (docs/lifecycle.md, "What apply trusts").
func planOf(home state.Dir, a *Action) (*plan.Plan, error) {
	p, err := plan.Load(home.Root, a.PlanID)
	if errors.Is(err, plan.ErrNotFound) {
		return nil, problem.List{conflict(RuleBackupChanged, "action_id", "the plan and backups of action %s are gone: act gc removes them past the policy's retention (audit.retain_days); it can no longer be rolled back", a.ActionID)}
	}
	if err != nil {
		return nil, err
	}
	if p.ActionID != a.ActionID {
		return nil, fmt.Errorf("action %s: its record names plan %s, which is of action %s", a.ActionID, p.ID, p.ActionID)
	}
	if _, err := p.Rebind(); err != nil {
		return nil, err
	}
	if (len(p.Changes) > 0 || len(a.Changes) > 0) && !reflect.DeepEqual(p.Changes, a.Changes) {
		return nil, problem.List{conflict(RuleBackupChanged, "action_id", "the record of action %s no longer lists the changes of its plan %s; nothing was rolled back", a.ActionID, p.ID)}
	}
	return p, nil
}

// goneDirs refuses a rollback into directories that are gone, forced or
// not: a scope root that moved, a parent of a change removed, or a
// directory the apply only changed the mode of that is no longer one
// (there is nothing to set back, and what is there now is not the
// rollback's to replace).
func goneDirs(a *Action, p *plan.Plan, changed map[string]string) (problem.List, error) {
	if moved := scopeMoved(p, "the apply"); len(moved) > 0 {
		return moved, nil
	}
	gone, err := goneParents(a.Changes, p.Scope)
	if err != nil {
		return nil, err
	}
	only := chmodOnly(a.Ops)
	for p, why := range changed {
		if only[p] {
			if fi, err := os.Lstat(p); err != nil || !fi.IsDir() {
				gone = append(gone, goneDir{p, why})
			}
		}
	}
	slices.SortFunc(gone, func(a, b goneDir) int { return strings.Compare(a.dir, b.dir) })
	var probs problem.List
	for _, g := range gone {
		probs = append(probs, conflict(RuleTargetChanged, g.dir, "%s changed since the apply: %s; nothing was rolled back (make the directory again, then roll back)", g.dir, g.why))
	}
	return probs, nil
}

// lostBackups checks the apply's backups, where what the rollback puts
// back comes from: each must still be the pre-image the plan recorded,
// checked before anything is touched.
func lostBackups(a *Action) (problem.List, error) {
	var restores []Op
	for _, ap := range a.Ops {
		if ap.Backup != "" && (ap.Kind == OpPut || ap.Kind == OpRemove) {
			restores = append(restores, ap)
		}
	}
	kept := checkAll(len(restores), func(i int) (string, error) {
		return before(a.Changes[restores[i].Change]).mismatch(restores[i].Backup)
	})
	var lost problem.List
	for i, k := range kept {
		if k.err != nil {
			return nil, k.err
		}
		if k.why != "" {
			p := restores[i].Path
			lost = append(lost, conflict(RuleBackupChanged, p, "the apply's backup of %s (%s) no longer holds what %s was: %s; nothing was rolled back", p, restores[i].Backup, p, k.why))
		}
	}
	return lost, nil
}

// commitRollback saves what changed since the apply (a forced rollback),
// then undoes the apply's ops, journaled: a failure part-way is undone, a
// crash recovered; the action record, then the audit record, say it was
// rolled back.
func commitRollback(home state.Dir, a *Action, p *plan.Plan, changed map[string]string, opts Options) (*Action, error) {
	saves, err := saveOps(home, a, changed)
	if err != nil {
		return nil, err
	}
	ops, err := rollbackOps(home, a)
	if err != nil {
		return nil, err
	}
	keep := make([]int, len(saves))
	for i := range saves {
		keep[i] = i
	}
	b := Begin{Event: EventRollback, ActionID: a.ActionID, PlanID: a.PlanID, Steps: append(saves, ops...), Keep: keep, Pins: p.ScopeRoots}
	jpath := rollbackJournal(home, a.ActionID)
	if err := execute(jpath, b, opts.Progress, plan.Dir(home.Root, a.PlanID)); err != nil {
		var rev *RevertedError
		if errors.As(err, &rev) {
			removeJournal(jpath)
		}
		return nil, err
	}
	// The record as loaded at the start: the apply's ops and changes are
	// all it adds to, and a plan of 100,000 changes makes it a hundred
	// megabytes to decode again.
	done, err := finishPlan(home, b, p, a, opts.Now(), true)
	if err != nil {
		return nil, err
	}
	if opts.Record != nil {
		if err := opts.Record(done, false); err != nil {
			return done, err // the journal stays: recovery finishes and records it
		}
		crashPoint()
	}
	return done, removeJournal(jpath)
}

func rollbackJournal(home state.Dir, id string) string {
	return home.JournalFile(id + "." + EventRollback)
}

// rollbackOps inverts the apply's ops, last first: what it created is
// moved to the rollback's backups, what it replaced or removed comes back
// from the apply's backups, modes are set back. Every op that finds
// something at its path moves it to a backup first; what was changed since
// the apply has been moved away by the save ops before them (saveOps), so
// these backups only ever hold what the apply made, and are dropped at
// commit.
func rollbackOps(home state.Dir, a *Action) ([]Op, error) {
	bdir := home.Backup(a.ActionID, EventRollback)
	if err := os.MkdirAll(bdir, 0o700); err != nil {
		return nil, err
	}
	fsOf, stages := newDevices(), stageDirs{}
	var ops []Op
	for i := len(a.Ops) - 1; i >= 0; i-- {
		ap := a.Ops[i]
		n := len(ops)
		op := Op{Path: ap.Path, Change: ap.Change, Backup: filepath.Join(bdir, strconv.Itoa(n))}
		cross, err := fsOf.differ(filepath.Dir(ap.Path), op.Backup)
		if err != nil {
			return nil, err
		}
		op.BackupCopy = cross
		switch {
		case ap.Kind == OpChmod:
			op = Op{Kind: OpChmod, Path: ap.Path, Mode: ap.ModeBefore, ModeBefore: ap.Mode, Change: ap.Change}
		case ap.Kind == OpMkdir || (ap.Kind == OpPut && ap.Backup == ""):
			op.Kind = OpRemove
		default: // a put over an entry, or a remove: bring the entry back
			op.Kind, op.Src = OpPut, ap.Backup
			cross, err := fsOf.differ(filepath.Dir(ap.Path), ap.Backup)
			if err != nil {
				return nil, err
			}
			if cross {
				op.Stage = stageName(stages, ap.Path, a.ActionID, EventRollback, n)
			}
		}
		ops = append(ops, op)
	}
	return ops, nil
}

// chmodOnly returns the paths whose only ops are mode changes: directories
// that were there before the apply and stay after the rollback.
func chmodOnly(ops []Op) map[string]bool {
	only := map[string]bool{}
	for _, op := range ops {
		if _, seen := only[op.Path]; !seen || op.Kind != OpChmod {
			only[op.Path] = op.Kind == OpChmod
		}
	}
	return only
}

// SavedDir is where a forced rollback of action id keeps what it found
// changed since the apply: each entry under its own absolute path, so
// <SavedDir>/home/me/proj/notes.txt is what was at /home/me/proj/notes.txt.
func SavedDir(home state.Dir, id string) string {
	return home.Backup(id, "saved")
}

// saveOps returns the first steps of a forced rollback: each entry that
// changed since the apply (changed: edited, replaced, or added inside a
// directory the apply created) and that the rollback would remove or
// replace is moved, whole, to [SavedDir] under its own path. They are
// journaled like every other step, so a crash undoes them, and kept at
// commit (Begin.Keep). Only the outermost of nested entries is moved (it
// carries the rest), and a directory the rollback only sets the mode of
// stays where it is: nothing of it is removed.
func saveOps(home state.Dir, a *Action, changed map[string]string) ([]Op, error) {
	if len(changed) == 0 {
		return nil, nil
	}
	chmodOnly := chmodOnly(a.Ops)
	var paths []string
	for p := range changed {
		if !chmodOnly[p] {
			paths = append(paths, p)
		}
	}
	slices.Sort(paths)
	dir := SavedDir(home, a.ActionID)
	fsOf := newDevices()
	var ops []Op
	moved := map[string]bool{}
	inMoved := func(p string) bool {
		for d := filepath.Dir(p); d != filepath.Dir(d); d = filepath.Dir(d) {
			if moved[d] {
				return true
			}
		}
		return false
	}
	for _, p := range paths {
		if inMoved(p) {
			continue
		}
		if _, ok, err := exists(p); err != nil {
			return nil, err
		} else if !ok {
			continue // gone since the apply: nothing to keep
		}
		moved[p] = true
		op := Op{Kind: OpRemove, Path: p, Backup: filepath.Join(dir, p), Change: -1}
		cross, err := fsOf.differ(filepath.Dir(p), op.Backup)
		if err != nil {
			return nil, err
		}
		op.BackupCopy = cross
		ops = append(ops, op)
	}
	return ops, nil
}

// Recover ends every promotion and rollback a crash left unfinished
// (docs/promotion.md): one that had not committed is undone, one that had
// is completed.
// Every act command that changes the tree calls it first, under the lock;
// `act recover` calls it alone.
func Recover(ctx context.Context, home state.Dir, now func() time.Time) ([]Recovery, error) {
	if !NeedsRecovery(home) {
		return nil, nil
	}
	unlock, err := home.Lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	return recoverLocked(home, now)
}

// RecoverIfIdle is Recover for commands that do not change the tree: it
// does nothing, rather than wait, while another act process holds the lock
// (that process is promoting, or will recover first itself).
func RecoverIfIdle(home state.Dir, now func() time.Time) ([]Recovery, error) {
	if !NeedsRecovery(home) {
		return nil, nil
	}
	unlock, ok, err := home.TryLock()
	if err != nil || !ok {
		return nil, err
	}
	defer unlock()
	return recoverLocked(home, now)
}

// NeedsRecovery reports, cheaply and without the lock, whether a journal
// is waiting in home.
func NeedsRecovery(home state.Dir) bool {
	ents, err := os.ReadDir(home.Journal())
	return err == nil && len(ents) > 0
}

func recoverLocked(home state.Dir, now func() time.Time) ([]Recovery, error) {
	ents, err := os.ReadDir(home.Journal())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Recovery
	for _, e := range ents {
		path := filepath.Join(home.Journal(), e.Name())
		if filepath.Ext(e.Name()) != ".journal" {
			continue
		}
		recs, st, err := Read(path)
		var de *DecodeError
		if err != nil && !(errors.As(err, &de) && de.Torn) {
			return out, fmt.Errorf("recover: %w; move the journal away to go on (it is not removed automatically)", err)
		}
		var b Begin
		if len(recs) > 0 {
			b = recs[0].(Begin)
		}
		r := Recovery{Event: b.Event, ActionID: b.ActionID, PlanID: b.PlanID, Outcome: "before"}
		switch st {
		case Started:
			if err := replay(path, recs); err != nil {
				return out, fmt.Errorf("recover %s of %s: %w", b.Event, b.ActionID, err)
			}
		case Committed:
			if _, err := finish(home, b, now()); err != nil {
				return out, fmt.Errorf("recover %s of %s: %w", b.Event, b.ActionID, err)
			}
			r.Outcome = "after"
		}
		crashPoint()
		if err := removeJournal(path); err != nil {
			return out, err
		}
		if st != Empty {
			out = append(out, r)
		}
	}
	return out, nil
}

type cooldown struct {
	ActionID     string    `json:"action_id"`
	RolledBackAt time.Time `json:"rolled_back_at"`
}

func writeCooldown(home state.Dir, key, id string, at time.Time) error {
	if err := os.MkdirAll(home.Cooldowns(), 0o700); err != nil {
		return err
	}
	b, err := json.Marshal(cooldown{ActionID: id, RolledBackAt: at})
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(home.CooldownFile(key), append(b, '\n'), 0o600)
}

// LastRollback returns when an action with cooldown key key was last
// rolled back, and which; ok is false if never.
func LastRollback(home state.Dir, key string) (at time.Time, actionID string, ok bool) {
	b, err := os.ReadFile(home.CooldownFile(key))
	if err != nil {
		return time.Time{}, "", false
	}
	var c cooldown
	if json.Unmarshal(b, &c) != nil {
		return time.Time{}, "", false
	}
	return c.RolledBackAt, c.ActionID, true
}
