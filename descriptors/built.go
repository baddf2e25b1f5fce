package descriptors

import (
	"encoding/json"
	"time"

	"github.com/act-project/act/internal/document"
	"github.com/act-project/act/internal/problem"
)

// A built descriptor is one act writes itself for a door (act run's
// command, a hook's Write or Edit, a Codex patch): a Go value, never a
// document. It skips the parser and the schema, whose job the Go types
// do, and goes through the same static rules ([Check], with no document:
// its problems name only their field) and the same policy as any other.

// StampBuilt completes a built descriptor as [Expand] completes a short
// one: the single-valued fields, an action_id and created_at where d has
// none (from st), and the raw operation of d and of each step from its
// typed Op, so that its canonical form and digest are those of the same
// descriptor written out.
func StampBuilt(d *Descriptor, st Stamp) {
	if d.DescriptorVersion == "" {
		d.DescriptorVersion = "1.0"
	}
	if d.CreatedBy == "" {
		d.CreatedBy = "ai"
	}
	if d.Sandbox.SandboxType == "" {
		d.Sandbox.SandboxType = "container"
	}
	if d.Rollback.RollbackType == "" {
		d.Rollback.RollbackType = "filesystem_snapshot"
	}
	if d.ActionID == "" {
		d.ActionID = st.ActionID
		if d.ActionID == "" {
			d.ActionID = NewUUID()
		}
	}
	if d.CreatedAt == "" {
		d.CreatedAt = st.CreatedAt
		if d.CreatedAt == "" {
			now := st.Now
			if now.IsZero() {
				now = time.Now()
			}
			d.CreatedAt = now.UTC().Format(time.RFC3339)
		}
	}
	d.Operation = rawOp(d.Op)
	d.Effects = builtEffects(d.Effects, d.Op, d.Steps)
}

// builtEffects are effects e where declared (any list set), else what
// they default to in the short form: the file operation's, or a
// composite's steps' together; each step is completed too.
func builtEffects(e Effects, op Operation, steps []Step) Effects {
	all := &fileEffects{create: []string{}, modify: []string{}, delete: []string{}}
	for i := range steps {
		s := &steps[i]
		s.Operation = rawOp(s.Op)
		s.Effects = builtEffects(s.Effects, s.Op, s.Steps)
		all.addEffects(s.Effects)
	}
	if fs := e.Filesystem; fs.Create != nil || fs.Modify != nil || fs.Delete != nil {
		return e
	}
	if steps != nil {
		return all.effects()
	}
	if f := opEffects(op); f != nil {
		return f.effects()
	}
	return e
}

// rawOp is op as the raw operation object; nil for none.
func rawOp(op Operation) json.RawMessage {
	if op == nil {
		return nil
	}
	b, err := json.Marshal(op)
	if err != nil {
		// The operations are plain structs of strings, bools and maps of
		// strings: they always marshal.
		panic(err)
	}
	return b
}

// RunsCommand reports whether d, or one of its steps, is a
// COMMAND_EXECUTION (a sandbox is worth starting beside its checks).
func RunsCommand(d *Descriptor) bool {
	n := node{typ: d.ActionType, steps: d.Steps}
	return usesType(n, CommandExecution)
}

// Locate gives problems that name only a field the file and position of
// that field in doc.
func Locate(doc *document.Document, probs problem.List) problem.List {
	out := make(problem.List, len(probs))
	for i, p := range probs {
		if p.File == "" {
			p.File = doc.Name
		}
		if p.Line == 0 {
			pos := doc.Pos(problem.SplitFieldPath(p.Field)...)
			p.Line, p.Column = pos.Line, pos.Column
		}
		out[i] = p
	}
	out.Sort()
	return out
}

// Built is the descriptor a door builds around a file operation op (or a
// composite's steps, with op nil): its intent, scope and resources, and
// what the short form leaves to defaults fixed as a door needs them — no
// network, no UI, no preconditions, run in the sandbox where sandboxed,
// rolled back by its declared effects, no confirmation asked for by the
// agent (act decides that), audited at SUMMARY. The risk it declares is
// LOW: act grades the plan and uses the stricter. Effects default as in
// the short form; set them on the result where they must be declared (a
// command's).
func Built(intent string, op Operation, steps []Step, scope FilesystemScope, res Resources, sandboxed bool) *Descriptor {
	d := &Descriptor{
		IntentSummary: intent,
		RiskLevel:     RiskLow,
		Scope:         Scope{Filesystem: scope},
		Resources:     res,
		Preconditions: Preconditions{PathsExist: []string{}},
		Sandbox:       Sandbox{Required: sandboxed, MaxRuns: 1},
		Rollback:      Rollback{Supported: true, RollbackScope: "declared_effects_only"},
		Audit:         Audit{Log: true, LogLevel: "SUMMARY", RetainDays: 30},
		Op:            op,
		Steps:         steps,
	}
	if op != nil {
		d.ActionType = op.Type()
	} else {
		d.ActionType = MultiStepComposite
	}
	return d
}

// BuiltStep is a composite's step of op, its effects defaulted.
func BuiltStep(op Operation) Step { return Step{ActionType: op.Type(), Op: op} }
