package rollback

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"golang.org/x/sys/unix"

	"github.com/act-project/act/internal/outcome"
	"github.com/act-project/act/internal/parallel"
)

// The events a journal records.
const (
	EventApply    = "apply"
	EventRollback = "rollback"
)

// CrashPoint, when set, is called at every point of a promotion, a rollback
// and a recovery where a crash leaves a distinct state on disk. The test
// build of the CLI sets it to kill the process at the Nth point; the
// shipped binary never does.
var CrashPoint func()

func crashPoint() {
	if CrashPoint != nil {
		CrashPoint()
	}
}

// Progress, when not nil, is told how many of total ops are done, at most
// every few hundred milliseconds, once a promotion has run for a second.
type Progress func(done, total int)

// A RevertedError says that a promotion failed part-way and everything it
// had done was undone: the tree is as before.
type RevertedError struct {
	Op  Op
	Err error
}

func (e *RevertedError) Error() string {
	return fmt.Sprintf("%s %s: %v; everything done before it was undone", e.Op.Kind, e.Op.Path, e.Err)
}

func (e *RevertedError) Unwrap() error { return e.Err }

// Outcome is reverted (exit 1, apply.reverted).
func (e *RevertedError) Outcome() outcome.Outcome { return outcome.Reverted }

// execute carries out b.Steps all or nothing under a journal at path:
//
//  1. the journal's Begin record is made durable;
//  2. new content on another filesystem than its target is copied beside
//     the target (Op.Stage), and all new content is made durable together,
//     one syncfs(2) per filesystem, rather than one fsync per file; the
//     filesystems of durable (the plan's directory, which recovery of a
//     committed journal reads again) are synced in the same pass. Without
//     steps nothing is staged, and the Begin record is made durable in
//     this pass, not with fsyncs of its own in 1: nothing is written
//     between the two that a crash could leave without the journal;
//  3. each op runs after its Step record is written (no fsync: the record
//     survives a crash of act, and undo checks inodes, not only records);
//  4. every directory an op touched is fsync'd once;
//  5. the Commit record is made durable.
//
// A failure in 2–4 undoes what was done and ends the journal with Revert
// (a *RevertedError). A crash is left to [Recover].
func execute(path string, b Begin, progress Progress, durable ...string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	for _, dir := range backupDirs(b.Steps) {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
	}
	// Without steps (a plan that changed nothing) the Begin record is
	// made durable by stage's syncfs of the journal's filesystem.
	none := len(b.Steps) == 0
	w, err := create(path, b, !none)
	if err != nil {
		return err
	}
	if none {
		durable = append(slices.Clip(durable), filepath.Dir(path))
	}
	defer w.Close()
	crashPoint()
	d := newDirs(b.Pins)
	defer d.close()
	started := 0
	inos := make([]uint64, len(b.Steps))
	fail := func(op Op, cause error) error {
		if uerr := undoAll(d, b.Steps, inos[:started]); uerr != nil {
			// Left Started: the next act command retries the undo.
			return fmt.Errorf("%s %s: %v; undoing it failed too, run act recover: %w", op.Kind, op.Path, cause, uerr)
		}
		if err := w.Append(Revert{Reason: fmt.Sprintf("%s %s: %v", op.Kind, op.Path, cause)}); err != nil {
			return err
		}
		return &RevertedError{Op: op, Err: cause}
	}
	if err := stage(d, b.Steps, durable...); err != nil {
		return fail(Op{Kind: "stage"}, err)
	}
	crashPoint()
	t0 := time.Now()
	last := t0
	for i := range b.Steps {
		op := &b.Steps[i]
		if op.Kind == OpPut {
			ino, err := op.newInode(d)
			if err != nil {
				return fail(*op, err)
			}
			inos[i] = ino
		}
		if err := w.Write(Step{N: i, Ino: inos[i]}); err != nil {
			return fail(*op, err)
		}
		started = i + 1
		crashPoint()
		if err := op.do(d); err != nil {
			return fail(*op, err)
		}
		crashPoint()
		if progress != nil && time.Since(t0) > time.Second && time.Since(last) > 200*time.Millisecond {
			progress(i+1, len(b.Steps))
			last = time.Now()
		}
	}
	if err := syncDirs(b.Steps); err != nil {
		return fail(Op{Kind: "sync"}, err)
	}
	if progress != nil && time.Since(t0) > time.Second {
		progress(len(b.Steps), len(b.Steps))
	}
	if err := w.Append(Commit{}); err != nil {
		// Not known to be durable: undo, so that the tree agrees with the
		// journal whichever way the Commit record went.
		return fail(Op{Kind: "commit"}, err)
	}
	crashPoint()
	return nil
}

// undoAll undoes the first len(inos) ops (those that started) in reverse,
// then removes what the others may have left.
func undoAll(d *dirs, ops []Op, inos []uint64) error {
	var errs []error
	for i := len(inos) - 1; i >= 0; i-- {
		if err := ops[i].undo(d, inos[i]); err != nil {
			errs = append(errs, err)
		}
		crashPoint()
	}
	for i := range ops {
		if err := ops[i].cleanup(d); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return syncDirs(ops)
}

// stage copies each OpPut's Src that lives on another filesystem than its
// target to Op.Stage, and each file or link of the plan's layer to its
// Stage as the plan recorded it (Op.stageVerified), then makes all new
// content durable: one syncfs(2) per filesystem holding a Src, a Stage or
// one of durable.
func stage(d *dirs, ops []Op, durable ...string) error {
	devs := map[uint64]string{}
	for _, dir := range durable {
		dev, err := device(dir)
		if err != nil {
			return err
		}
		devs[dev] = dir
	}
	// The verified copies of the layer's files, the bulk of the work,
	// are made on every CPU once their directories are open.
	type verified struct {
		op   *Op
		dfd  int
		base string
	}
	var copies []verified
	for i := range ops {
		op := &ops[i]
		if op.Kind != OpPut {
			continue
		}
		if op.Stage != "" {
			dfd, base, err := d.at(op.Stage)
			if err != nil {
				return err
			}
			if op.SHA256 != "" || op.Target != "" {
				copies = append(copies, verified{op, dfd, base})
			} else if err := copyEntry(unix.AT_FDCWD, op.Src, dfd, base, false); err != nil {
				return err
			}
		}
		dir := filepath.Dir(op.from())
		dev, err := device(dir)
		if err != nil {
			return err
		}
		if _, ok := devs[dev]; !ok {
			devs[dev] = dir
		}
	}
	errs := make([]error, len(copies))
	parallel.Do(len(copies), parallel.CPUs(), 16, func(_, i int) {
		errs[i] = copies[i].op.stageVerified(copies[i].dfd, copies[i].base)
	})
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for _, dir := range devs {
		if err := syncfs(dir); err != nil {
			return err
		}
	}
	return nil
}

// flushEarly starts a syncfs(2) of the filesystem holding dir (when dir
// exists) in the background, so that writing out new content overlaps with
// the checks that precede a promotion, and returns a function that waits
// for it and returns its error (the same each call). It only starts early:
// the syncfs that stage makes after the Begin record is still the one that
// makes the content durable. Its error must not be ignored, though: a
// writeback error is reported to the syncfs that saw it happen, not to a
// later one on a file opened afterwards.
func flushEarly(dir string) func() error {
	f, err := os.Open(dir)
	if err != nil {
		return func() error { return nil }
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer f.Close()
		if serr := unix.Syncfs(int(f.Fd())); serr != nil {
			err = fmt.Errorf("syncfs %s: %w", dir, serr)
		}
	}()
	return func() error {
		<-done
		return err
	}
}

func syncfs(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := unix.Syncfs(int(f.Fd())); err != nil {
		return fmt.Errorf("syncfs %s: %w", dir, err)
	}
	return nil
}

// syncDirs fsyncs, once each, the directories whose entries the ops
// changed: the targets' parents, the backups' and the sources'.
func syncDirs(ops []Op) error {
	seen := map[string]bool{}
	var dirs []string
	add := func(name string) {
		if name == "" {
			return
		}
		d := filepath.Dir(name)
		if !seen[d] {
			seen[d] = true
			dirs = append(dirs, d)
		}
	}
	for i := range ops {
		add(ops[i].Path)
		add(ops[i].Backup)
		add(ops[i].Src)
	}
	slices.Sort(dirs)
	// The fsyncs are independent (all must be done before the caller goes
	// on, in no particular order), so several are in flight at once: each
	// waits for its own writes, and the disk takes them together.
	errs := make([]error, len(dirs))
	parallel.Do(len(dirs), 8, 1, func(_, i int) {
		if err := syncPath(dirs[i]); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs[i] = err
		}
	})
	return errors.Join(errs...)
}

// backupDirs lists the directories the ops' backups go in.
func backupDirs(ops []Op) []string {
	seen := map[string]bool{}
	var dirs []string
	for i := range ops {
		if ops[i].Backup == "" {
			continue
		}
		d := filepath.Dir(ops[i].Backup)
		if !seen[d] {
			seen[d] = true
			dirs = append(dirs, d)
		}
	}
	return dirs
}

// replay finishes a journal a crash left Started: it undoes the ops that
// started (those with a Step record) and ends the journal with Revert.
func replay(path string, recs []Record) error {
	b := recs[0].(Begin)
	inos := map[int]uint64{}
	last := -1
	for _, r := range recs[1:] {
		if s, ok := r.(Step); ok {
			inos[s.N] = s.Ino
			last = max(last, s.N)
		}
	}
	started := make([]uint64, last+1)
	for n, ino := range inos {
		started[n] = ino
	}
	w, err := Open(path)
	if err != nil {
		return err
	}
	defer w.Close()
	d := newDirs(b.Pins)
	defer d.close()
	if err := undoAll(d, b.Steps, started); err != nil {
		return err
	}
	return w.Append(Revert{Reason: "act stopped part-way; recovery undid what it had done"})
}
