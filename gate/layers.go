package gate

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/act-project/act/diff"
	"github.com/act-project/act/internal/lifecycle"
	"github.com/act-project/act/internal/problem"
	"github.com/act-project/act/plan"
	"github.com/act-project/act/rollback"
)

// RuleMaxLayers: the layers of the plans not yet applied would hold more
// than the policy's max_layers_mb (exit 4).
const RuleMaxLayers = "policy.max-layers"

// DefaultMaxLayersMB is the bound on the plans' layers when the policy
// sets none.
const DefaultMaxLayersMB = 2048

// layersLimit refuses (exit 4) a plan whose layer, of size bytes, would
// take the layers of the plans not yet applied past the policy's
// max_layers_mb (docs/lifecycle.md, "Limits of a dry run").
//
// The layers are measured on disk (diff.LayerSize), never taken from the
// layer_bytes plan.json records: plan.json is the agent's to edit, and a
// layer holds what it holds whatever its record says. Only a layer with a
// directory act cannot read (a command's mode 000, as an ordinary user)
// counts the larger of what was measured and what its record says. Measuring stops
// once past the bound, so it costs no more than the bound allows. A plan
// not yet applied is planned, pending or expired (its layer stays until
// act gc or act deny removes it); the plans the plans index lists as done
// are left out (index.go: at 2,000 applied actions, measuring their
// emptied layers cost every plan tens of milliseconds; a promotion lists
// its plan), and of the others the states are read (each plan.json
// loaded) only when every layer there is would pass the bound, to leave
// out the plans applied, rolled back or denied. A forged index can leave a
// waiting plan's layer out of the count, as a forged action record naming
// that plan can.
//
// early, when set, waits for what besideDryRun measured of the other
// plans' layers while this plan's dry run ran: if that and this plan's
// layer pass the bound, nothing is measured again.
func (g *Gate) layersLimit(bytes int64, early func() (int64, bool)) error {
	mb := g.maxLayersMB()
	limit := mb << 20
	if early != nil {
		if held, ok := early(); ok && held+bytes <= limit {
			return nil
		}
	}
	if bytes > limit {
		return problem.List{{
			Rule: RuleMaxLayers, Field: "resources.max_disk_mb", Layer: problem.Policy,
			Message: fmt.Sprintf("this plan's layer alone holds %s, more than the policy's max_layers_mb of %d MiB", mib(bytes), mb),
		}}
	}
	ids, err := g.notDone()
	if err != nil {
		return err
	}
	held, err := g.layersHeld(ids, nil, limit-bytes)
	if err != nil || held+bytes <= limit {
		return err
	}
	held, err = g.layersHeld(ids, g.applied, limit-bytes)
	if err != nil || held+bytes <= limit {
		return err
	}
	return problem.List{{
		Rule: RuleMaxLayers, Field: "resources.max_disk_mb", Layer: problem.Policy,
		Message: fmt.Sprintf("the layers of the plans not yet applied hold at least %s, and this plan's %s would take them past the policy's max_layers_mb of %d MiB: "+
			"apply or deny some (%s lists them; %s removes a layer), or remove the expired ones with %s",
			mib(held), mib(bytes), mb, g.actLine("history"), g.actLine("deny", "PLAN_ID"), g.actLine("gc")),
	}}
}

// maxLayersMB is the policy's max_layers_mb, or the default.
func (g *Gate) maxLayersMB() int64 {
	if mb := g.Policy.MaxLayersMB; mb > 0 {
		return mb
	}
	return DefaultMaxLayersMB
}

// besideDryRun starts, beside a plan's dry run, what the plan's last steps
// need and the run does not change, and returns what waits for it: the
// layers of the plans not yet done, measured up to the policy's bound, as
// layersLimit would measure them after the run (ok false: not measured;
// layersLimit then measures), and the first use of the JSON encoding of a
// plan and of an action record (building encoding/json's encoders for
// their types costs a fresh process about a millisecond each). A plan
// saved by another process during the run is not in the count, as it
// would not be had it been saved just after.
func (g *Gate) besideDryRun() func() (held int64, ok bool) {
	done := make(chan struct{})
	var held int64
	var ok bool
	go func() {
		defer close(done)
		warmJSON()
		ids, err := g.notDone()
		if err != nil {
			return
		}
		h, err := g.layersHeld(ids, nil, g.maxLayersMB()<<20)
		held, ok = h, err == nil
	}()
	return func() (int64, bool) {
		<-done
		return held, ok
	}
}

// warmJSON makes encoding/json build its encoders for the plan and the
// action record, whose first use is what costs.
func warmJSON() {
	json.Marshal(&plan.Plan{})
	json.Marshal(&rollback.Action{})
}

// layersHeld measures the layers of the plans ids, but of those skip says
// to leave out, stopping once past budget (at least 0).
func (g *Gate) layersHeld(ids []string, skip func(id string) bool, budget int64) (int64, error) {
	var held int64
	for _, id := range ids {
		dir := plan.LayerDir(g.Home.Root, id)
		if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if skip != nil && skip(id) {
			continue
		}
		// budget-held is at least 0 here; LayerSize's 0 is no limit.
		n, whole, err := layerSize(dir, max(budget-held, 1))
		if err != nil {
			return held, fmt.Errorf("measure the layer of plan %s: %w", id, err)
		}
		if !whole {
			// A directory act cannot read (mode 000, as an ordinary
			// user): what the diff counted there is in the record.
			if p, err := plan.Load(g.Home.Root, id); err == nil {
				n = max(n, p.LayerBytes)
			}
		}
		if held += n; held > budget {
			break
		}
	}
	return held, nil
}

// applied reports whether plan id is no longer waiting to be applied:
// applied, rolled back or denied. A plan whose record does not load is
// counted as waiting: its layer may hold anything.
func (g *Gate) applied(id string) bool {
	e, err := g.Load(id)
	if err != nil {
		return false
	}
	g.indexDone(e)
	switch e.State {
	case lifecycle.Planned, lifecycle.Pending, lifecycle.Expired:
		return false
	}
	return true
}

// layerSize measures a layer (a variable: a test counts the layers
// measured).
var layerSize = diff.LayerSize

// mib shows n bytes in MiB, to one decimal.
func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
