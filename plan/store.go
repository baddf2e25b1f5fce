package plan

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sync"

	"github.com/act-project/act/internal/atomicfile"
	"github.com/act-project/act/internal/digest"
	"github.com/act-project/act/internal/problem"
	"github.com/act-project/act/internal/state"
)

// MaxPlanRecord bounds a saved plan's record (plan.json), in bytes.
const MaxPlanRecord = 64 << 20

// MaxLayerPaths bounds the bytes of the paths a dry run's diff keeps: the
// whole path of every entry of the layer it notes. A change's record is
// its path and a few hundred bytes more, so no more than a quarter of
// MaxPlanRecord goes to paths; and what act makes of a plan (its changes,
// their record, their review) stays a small multiple of them, within
// 512 MiB however the layer is shaped (docs/lifecycle.md, "Limits of a
// dry run").
const MaxLayerPaths = MaxPlanRecord / 4

// RulePlanTooLarge: a plan's record would exceed MaxPlanRecord.
const RulePlanTooLarge = "plan.record-too-large"

// ErrNotFound is returned for an unknown plan id.
var ErrNotFound = errors.New("not found")

var idRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9a-f]{16}$`) })

// IsID reports whether s has the form of a plan id.
func IsID(s string) bool { return idRE().MatchString(s) }

// Dir is where plan id lives under stateDir.
func Dir(stateDir, id string) string { return state.Dir{Root: stateDir}.Plan(id) }

// save writes p into the temporary plan directory tmp and renames it into
// plans/<id>: a crash at any point leaves either no plan or a whole one
// (a leftover .tmp-* directory is ignored by Load and removed by gc).
//
// Nothing is fsynced: the layer is written volatile anyway, and a plan is
// only a proposal until apply, which makes it durable (a syncfs of its
// filesystem) before it commits anything that refers to it. A plan lost or torn by a power cut
// is not found, or refused by Load (its JSON does not parse).
//
// record, if not nil, runs beside the writing of plan.json (the gate's
// audit record, whose fdatasync is the slower of the two): the plan is
// renamed into place only if both succeed, so no saved plan lacks its
// record. A plan past MaxPlanRecord is refused before either.
func save(tmp, plans string, p *Plan, record func(*Plan) error) error {
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return err
	}
	if len(b) > MaxPlanRecord {
		return problem.List{{Rule: RulePlanTooLarge, Field: "effects", Layer: problem.Rejected,
			Message: fmt.Sprintf("the plan's record would be %d bytes, more than act keeps for one plan (%d)", len(b), MaxPlanRecord)}}
	}
	recorded := make(chan error, 1)
	if record != nil {
		go func() { recorded <- record(p) }()
	} else {
		recorded <- nil
	}
	err = os.WriteFile(filepath.Join(tmp, state.PlanRecordName), append(b, '\n'), 0o600)
	if rerr := <-recorded; rerr != nil {
		return rerr
	}
	if err != nil {
		return fmt.Errorf("save plan: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(plans, p.ID)); err != nil {
		return fmt.Errorf("save plan: %w", err)
	}
	return nil
}

// readRecord reads the plan record name, no more of it than save writes
// (MaxPlanRecord and a newline): plan.json is the agent's to write, and a
// larger one is refused before act holds it.
func readRecord(name string) ([]byte, error) {
	f, err := digest.OpenRaw(name, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxPlanRecord+2))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxPlanRecord+1 {
		return nil, fmt.Errorf("its record is more than act writes for one plan (%d bytes): it was not written by act", MaxPlanRecord+1)
	}
	return b, nil
}

// Load reads the saved plan id from stateDir.
func Load(stateDir, id string) (*Plan, error) {
	if !IsID(id) {
		return nil, fmt.Errorf("plan %s: %w", id, ErrNotFound)
	}
	b, err := readRecord(state.Dir{Root: stateDir}.PlanRecord(id))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("plan %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("read plan %s: %w", id, err)
	}
	p := new(Plan)
	if err := json.Unmarshal(b, p); err != nil {
		return nil, fmt.Errorf("read plan %s: %w", id, err)
	}
	// plan.json is indented: give Descriptor back the canonical bytes its
	// digest is of. Warnings are all of the plan stage.
	var canon bytes.Buffer
	if err := json.Compact(&canon, p.Descriptor); err != nil {
		return nil, fmt.Errorf("read plan %s: %w", id, err)
	}
	p.Descriptor = canon.Bytes()
	for i := range p.Warnings {
		p.Warnings[i].Layer = problem.Rejected
	}
	return p, nil
}

// LayerDir is the directory of plan id's layer.
func LayerDir(stateDir, id string) string { return state.Dir{Root: stateDir}.Layer(id) }

// Update rewrites the saved plan p (its state, typically) atomically.
func Update(stateDir string, p *Plan) error {
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(state.Dir{Root: stateDir}.PlanRecord(p.ID), append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("save plan: %w", err)
	}
	return nil
}

// UpperDir is the upper directory of plan id's layer: the real absolute path
// p lives at UpperDir + p.
func UpperDir(stateDir, id string) string { return state.Dir{Root: stateDir}.Upper(id) }

// List returns the ids of every saved plan under stateDir, in no order.
func List(stateDir string) ([]string, error) {
	ents, err := os.ReadDir(state.Dir{Root: stateDir}.Plans())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, e := range ents {
		if IsID(e.Name()) {
			ids = append(ids, e.Name())
		}
	}
	return ids, nil
}
