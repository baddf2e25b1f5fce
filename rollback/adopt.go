package rollback

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/act-project/act/diff"
	"github.com/act-project/act/internal/atomicfile"
	"github.com/act-project/act/internal/problem"
	"github.com/act-project/act/internal/state"
	"github.com/act-project/act/plan"
)

// KeepCopy copies the entry at src (not following a last symlink) to dst,
// which must not exist, as a backup is copied across filesystems: mode,
// owner and group (as root) and times kept, durably. It is how a copy for
// [Adopt] is kept: act rollback puts it back in src's place.
func KeepCopy(src, dst string) error {
	return copyEntry(unix.AT_FDCWD, src, unix.AT_FDCWD, dst, true)
}

// Adopt records plan p as applied without changing the real tree, which
// holds its changes already: an agent's own tool made them after a person
// allowed the call at the agent's prompt (docs/agents.md). Every path must
// be as the plan's after-image says, so nothing is adopted that was not
// reviewed. copies[i] is a copy of what change i replaced, kept before the
// tool ran: it must match the change's before-image, and becomes the
// backup act rollback restores. Adopt takes what a file write makes
// (files created or modified, directories created); anything else is
// refused. Nothing on the real tree is touched, so there is no journal:
// the action record is made durable before opts.Record, as a rollback's
// is. Its errors: a problem.List of Conflict (nothing recorded), or an
// ordinary error.
func Adopt(ctx context.Context, home state.Dir, p *plan.Plan, copies map[int]string, opts Options) (*Outcome, error) {
	out, unlock, err := lockAndRecover(ctx, home, opts.Now)
	if err != nil {
		return out, err
	}
	defer unlock()
	if a, err := Promoted(home, p.ActionID, p.DescriptorDigest); err != nil || a != nil {
		out.Action, out.AlreadyApplied = a, a != nil
		return out, err
	}
	var probs problem.List
	for i, c := range p.Changes {
		switch {
		case c.Kind == diff.Delete, c.Type == diff.TypeDir && c.Kind != diff.Create, c.Type == diff.TypeSymlink:
			return out, fmt.Errorf("plan %s %ss %s %s: only what a file write makes is adopted", p.ID, c.Kind, typeName(c.Type), c.Path)
		}
		why, err := after(c).mismatch(c.Path)
		if err != nil {
			return out, err
		}
		if why != "" {
			probs = append(probs, conflict(RuleStale, c.Path, "%s is not what the plan makes of it: %s", c.Path, why))
			continue
		}
		if c.Kind == diff.Create {
			continue
		}
		cp, ok := copies[i]
		if !ok {
			probs = append(probs, conflict(RuleStale, c.Path, "no copy of what %s held before was kept", c.Path))
			continue
		}
		if why, err := before(c).mismatch(cp); err != nil {
			return out, err
		} else if why != "" {
			probs = append(probs, conflict(RuleStale, c.Path, "the copy of what %s held before is not what the plan found: %s", c.Path, why))
		}
	}
	probs = append(probs, scopeMoved(p, "the plan")...)
	if len(probs) > 0 {
		return out, probs
	}
	bdir := home.Backup(p.ActionID, EventApply)
	ops := make([]Op, 0, len(p.Changes))
	var owners diff.Owners
	for i, c := range p.Changes {
		op := Op{Path: c.Path, Change: i, Kind: OpPut}
		if os.Geteuid() == 0 {
			op.Owner = OwnerOf(&owners, c)
		}
		if c.Type == diff.TypeDir {
			op.Kind, op.Mode = OpMkdir, *c.ModeAfter
		}
		if c.Kind == diff.Modify {
			// The kept copy is the backup: linked, so that a failure
			// here leaves it for another try.
			if err := os.MkdirAll(bdir, 0o700); err != nil {
				return out, err
			}
			op.Backup = filepath.Join(bdir, strconv.Itoa(i))
			if err := os.Remove(op.Backup); err != nil && !errors.Is(err, os.ErrNotExist) {
				return out, err
			}
			if err := os.Link(copies[i], op.Backup); err != nil {
				return out, err
			}
		}
		ops = append(ops, op)
	}
	if _, err := os.Stat(bdir); err == nil {
		if err := atomicfile.SyncDir(bdir); err != nil {
			return out, err
		}
	}
	b := Begin{Event: EventApply, ActionID: p.ActionID, PlanID: p.ID, Steps: ops, Approval: opts.Approval, Pins: p.ScopeRoots}
	if out.Action, err = finishPlan(home, b, p, nil, opts.Now(), true); err != nil {
		return out, err
	}
	if opts.Record != nil {
		if err := opts.Record(out.Action, false); err != nil {
			return out, err
		}
	}
	return out, nil
}
