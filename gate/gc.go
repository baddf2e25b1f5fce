package gate

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/act-project/act/audit"
	"github.com/act-project/act/internal/lifecycle"
	"github.com/act-project/act/internal/outcome"
	"github.com/act-project/act/internal/rmtree"
	"github.com/act-project/act/internal/state"
	"github.com/act-project/act/internal/timings"
	"github.com/act-project/act/plan"
	"github.com/act-project/act/rollback"
	"github.com/act-project/act/sandbox"
)

// gcPrefix names what gc is removing: plans/<id> and backups/<id> are
// first renamed to .gc-<id> (one atomic step, so a plan is never seen
// half removed), then removed; a crash in between leaves a .gc-* the next
// gc removes.
const gcPrefix = state.GCPrefix

// Collected is what a gc did to the state directory (docs/state.md).
type Collected struct {
	// Before is the retention cutoff: what is older is past retention.
	Before time.Time `json:"before"`
	// Plans are the plans removed, with their layers.
	Plans []string `json:"plans"`
	// Layers are the plans whose layer alone was removed: planned, never
	// waiting for a person, and expired, they can no longer be applied;
	// their records stay until retention.
	Layers []string `json:"layers"`
	// Backups are the actions whose backups were removed: they can no
	// longer be rolled back.
	Backups []string `json:"backups"`
	// Temp counts leftover directories removed: plans a crash left
	// half-written (plans/.tmp-*) and removals a crash interrupted.
	Temp int `json:"temp"`
	// Kept says what is past retention but was kept, and why.
	Kept []string `json:"kept"`
	// Audit is what was pruned from the audit log.
	Audit audit.PruneInfo `json:"audit"`
	// Caches counts act's own caches emptied (act gc --caches), and
	// their bytes; nil when they were not asked for.
	Caches *CachesCleared `json:"caches,omitempty"`
}

// CachesCleared is what act gc --caches removed.
type CachesCleared struct {
	Caches int   `json:"caches"`
	Bytes  int64 `json:"bytes"`
}

// ClearCaches empties act's own caches (the policy's opt-in
// sandbox.persistent_caches, under the state dir's caches/): each cache's
// directory is removed whole, without following a link in it; the next
// plan makes it again, empty. docs/sandbox-filesystem.md, "A persistent
// cache of act's own".
func (g *Gate) ClearCaches() (*CachesCleared, error) {
	c := &CachesCleared{}
	caches, err := plan.CachesDir(g.Home.Root) // act's own, never a link followed
	if err != nil {
		return c, err
	}
	ents, err := os.ReadDir(caches)
	if err != nil {
		return c, err
	}
	for _, e := range ents {
		dir := filepath.Join(caches, e.Name())
		_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() {
				if fi, err := d.Info(); err == nil {
					c.Bytes += fi.Size()
				}
			}
			return nil
		})
		if err := rmtree.RemoveAll(dir); err != nil {
			return c, err
		}
		c.Caches++
	}
	return c, nil
}

// GC removes what is past the host policy's retention (audit.retain_days)
// at before: the bodies of older audit records (audit.Log.GC), the plans
// made before it with their layers, and the backups of actions applied or
// rolled back before it. It also removes, whatever their age, the layers
// of the planned plans that expired (they can no longer be applied; their
// records stay until retention), so that they stop holding room under the
// policy's max_layers_mb. It never removes a pending plan, a plan that can
// still be applied, or the plan and backups of the newest applied action:
// those are listed in Kept. It removes nothing that is not act's own: only
// plan directories named by a plan id, backups of an action id that has an
// action record, and its own leftovers. The gc is one audit record, made
// after the removals.
func (g *Gate) GC(ctx context.Context, before time.Time) (*Collected, error) {
	c, err := g.collect(ctx, before)
	if err != nil {
		return c, err
	}
	ev := audit.Event{Name: audit.EventGC, Status: outcome.OK.Status,
		Removed: &audit.GCRemoved{Plans: c.Plans, Backups: c.Backups, Kept: c.Kept},
		Reason: fmt.Sprintf("removed %s and the backups of %s past retention (before %s), and the layers of %s",
			plural(len(c.Plans), "plan"), plural(len(c.Backups), "action"), before.UTC().Format(time.RFC3339),
			plural(len(c.Layers), "expired plan"))}
	l, err := auditLog(g.Home)
	if err != nil {
		return c, err
	}
	g.fill(&ev)
	appendMu.Lock()
	defer appendMu.Unlock()
	l.Now = g.Now
	c.Audit, err = l.GC(ctx, before, ev)
	return c, err
}

// collect removes the plans and backups past retention, under the state
// directory's lock (promotions, rollbacks and denials hold it too).
func (g *Gate) collect(ctx context.Context, before time.Time) (*Collected, error) {
	c := &Collected{Before: before.UTC(), Plans: []string{}, Layers: []string{}, Backups: []string{}, Kept: []string{}}
	unlock, err := g.Home.Lock(ctx)
	if err != nil {
		return c, err
	}
	defer unlock()

	// Leftovers first: earlier gcs' and crashed plans'.
	for _, dir := range []string{g.Home.Plans(), g.Home.Backups()} {
		n, err := removeLeftovers(dir, dir == g.Home.Plans(), g.Now().Add(-g.Policy.PlanExpiry))
		c.Temp += n
		if err != nil {
			return c, err
		}
	}

	// The hook's notes of the plans it asked a person about
	// (docs/agents.md): past the plan expiry, their plans can no longer
	// be adopted.
	if err := removeOlder(g.Home.Hooks(), g.Now().Add(-g.Policy.PlanExpiry)); err != nil {
		return c, err
	}

	// The actions: which are past retention, and the newest applied one.
	acts, err := g.actions()
	if err != nil {
		return c, err
	}
	var newest *rollback.Action
	for _, a := range acts {
		if a.State == lifecycle.Applied && (newest == nil || a.AppliedAt.After(newest.AppliedAt)) {
			newest = a
		}
	}
	unfinished := rollback.NeedsRecovery(g.Home)
	released := map[string]bool{} // plan ids of actions past retention
	for _, a := range acts {
		if !actionTime(a).Before(before) {
			continue
		}
		switch {
		case a == newest:
			c.Kept = append(c.Kept, fmt.Sprintf("action %s: the newest applied action keeps its plan and backups, so that it can still be rolled back", a.ActionID))
			continue
		case unfinished:
			c.Kept = append(c.Kept, fmt.Sprintf("action %s: a promotion or rollback is unfinished, so no backups are removed", a.ActionID))
			continue
		}
		released[a.PlanID] = true
		dir := g.Home.Backup(a.ActionID, "")
		removed, err := removeDir(dir)
		if err != nil {
			return c, err
		}
		if removed {
			c.Backups = append(c.Backups, a.ActionID)
		}
	}

	// The plans.
	ids, err := plan.List(g.Home.Root)
	if err != nil {
		return c, err
	}
	slices.Sort(ids)
	owner := map[string]*rollback.Action{}
	for _, a := range acts {
		owner[a.PlanID] = a
	}
	for _, id := range ids {
		p, err := plan.Load(g.Home.Root, id)
		var st lifecycle.State
		if err == nil {
			if st, err = g.stateOf(p); err != nil {
				c.Kept = append(c.Kept, fmt.Sprintf("plan %s: %v", id, err))
				continue
			}
		}
		if err != nil {
			// A plan whose own record does not read (torn by a power
			// cut) is removed when its directory is past retention.
			fi, serr := os.Stat(plan.Dir(g.Home.Root, id))
			if serr != nil || !fi.ModTime().Before(before) {
				continue
			}
		} else {
			if st == lifecycle.Expired && p.State == lifecycle.Planned {
				removed, err := g.removeLayer(id)
				if err != nil {
					return c, err
				}
				if removed {
					c.Layers = append(c.Layers, id)
				}
			}
			if !p.CreatedAt.Before(before) {
				continue
			}
			if a := owner[id]; a != nil && !released[id] {
				continue // its action is kept (within retention, or said above)
			}
			switch st {
			case lifecycle.Pending:
				c.Kept = append(c.Kept, fmt.Sprintf("plan %s: pending, waiting for a person (%s, or %s)", id, g.actLine("apply", id, "--confirm"), g.actLine("deny", id)))
				continue
			case lifecycle.Expired:
				if p.State == lifecycle.Pending {
					c.Kept = append(c.Kept, fmt.Sprintf("plan %s: pending though expired: %s removes its layer", id, g.actLine("deny", id)))
					continue
				}
			case lifecycle.Planned:
				c.Kept = append(c.Kept, fmt.Sprintf("plan %s: still within the plan expiry, it can be applied", id))
				continue
			}
		}
		removed, err := removeDir(plan.Dir(g.Home.Root, id))
		if err != nil {
			return c, err
		}
		if removed {
			c.Plans = append(c.Plans, id)
		}
	}
	return c, nil
}

// actionTime is when an action last changed: its rollback, or its apply.
func actionTime(a *rollback.Action) time.Time {
	if a.RolledBackAt != nil {
		return *a.RolledBackAt
	}
	return a.AppliedAt
}

// actions reads every action record, oldest first.
func (g *Gate) actions() ([]*rollback.Action, error) {
	ents, err := os.ReadDir(g.Home.Actions())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []*rollback.Action
	for _, e := range ents {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || !e.Type().IsRegular() || !fileID(id) {
			continue
		}
		a, err := rollback.LoadAction(g.Home, id)
		if err != nil || a.ActionID != id {
			continue // not a record act can read: not gc's to judge
		}
		out = append(out, a)
	}
	slices.SortFunc(out, func(a, b *rollback.Action) int { return a.AppliedAt.Compare(b.AppliedAt) })
	return out, nil
}

// removeDir removes dir, whatever modes a command left inside it: renamed
// to a .gc-* name first, then removed. It reports whether dir existed.
func removeDir(dir string) (bool, error) {
	return removeAs(dir, filepath.Join(filepath.Dir(dir), gcPrefix+filepath.Base(dir)))
}

// removeLayer removes the layer of plan id, as removeDir does, by way of
// plans/.gc-<id>.layer: a crash in between leaves a leftover the next gc
// removes.
func (g *Gate) removeLayer(id string) (bool, error) {
	return removeAs(g.Home.Layer(id), g.Home.GCLayer(id))
}

// Removing a layer of many files can take longer than the promotion
// that used them (an unlink that frees blocks a filesystem mounted with
// discard must trim): past these, an applied plan's layer is removed by
// a process of its own (Gate.RemoveLater), once renamed out of the plan.
const (
	removeLaterChanges = 64
	removeLaterBytes   = 16 << 20
)

// dropLayer removes the layer of applied plan p: renamed out of the plan
// at once (the plan has no layer from then on), then removed, by another
// process where p's layer is large and the gate may hand it off. A
// removal that does not finish leaves a .gc-* leftover for gc.
func (g *Gate) dropLayer(ctx context.Context, p *Plan) {
	dir, tmp := g.Home.Layer(p.ID), g.Home.GCLayer(p.ID)
	if err := os.Rename(dir, tmp); err != nil {
		return
	}
	if g.RemoveLater != nil && (len(p.Changes) >= removeLaterChanges || layerBytes(p) >= removeLaterBytes) {
		end := timings.Start(ctx, "the layer handed to another process for removal")
		handed := g.RemoveLater(tmp)
		end()
		if handed {
			return
		}
	}
	defer timings.Start(ctx, "the layer removed")()
	_ = sandbox.RemoveAll(tmp)
}

// droppedLayer reports whether name is that of a layer renamed out of
// its plan (state.Dir.GCLayer): .gc-<plan id>.layer.
func droppedLayer(name string) bool {
	id, pre := strings.CutPrefix(name, state.GCPrefix)
	id, suf := strings.CutSuffix(id, ".layer")
	return pre && suf && len(id) == 16 && strings.Trim(id, "0123456789abcdef") == ""
}

// RemoveDroppedLayer removes dir, a layer dropLayer renamed out of its
// plan and handed to another process (Gate.RemoveLater): only a
// directory so named, directly in a plans directory, never through a
// link. Anything else it leaves, and what it cannot remove stays for gc,
// which removes such leftovers.
func RemoveDroppedLayer(dir string) {
	if !filepath.IsAbs(dir) || filepath.Clean(dir) != dir || !droppedLayer(filepath.Base(dir)) || filepath.Base(filepath.Dir(dir)) != "plans" {
		return
	}
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
		return
	}
	_ = sandbox.RemoveAll(dir)
}

// layerBytes is the size of the files plan p's layer holds, as its
// changes record them.
func layerBytes(p *Plan) int64 {
	var n int64
	for _, c := range p.Changes {
		if c.SizeAfter != nil {
			n += *c.SizeAfter
		}
	}
	return n
}

// removeAs removes dir by way of tmp (renamed, then removed). It reports
// whether dir existed.
func removeAs(dir, tmp string) (bool, error) {
	if err := os.Rename(dir, tmp); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		return false, err
	}
	return true, sandbox.RemoveAll(tmp)
}

// removeOlder removes the regular files in dir not modified since t.
func removeOlder(dir string, t time.Time) error {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range ents {
		if fi, err := e.Info(); err == nil && fi.Mode().IsRegular() && fi.ModTime().Before(t) {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
	}
	return nil
}

// removeLeftovers removes, in dir, what earlier gcs left (.gc-*) and, in
// the plans directory, plans a crash left half-written (.tmp-*, only when
// not modified since stale: another act may be writing a newer one). It
// returns how many it removed.
func removeLeftovers(dir string, plans bool, stale time.Time) (int, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range ents {
		name := e.Name()
		switch {
		case strings.HasPrefix(name, gcPrefix):
		case plans && strings.HasPrefix(name, state.TempPrefix):
			fi, err := e.Info()
			if err != nil || !fi.ModTime().Before(stale) {
				continue
			}
		default:
			continue
		}
		if !e.IsDir() {
			continue
		}
		if err := sandbox.RemoveAll(filepath.Join(dir, name)); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}
