package gate

import (
	"github.com/act-project/act/descriptors"
	"github.com/act-project/act/diff"
	"github.com/act-project/act/internal/pathglob"
	"github.com/act-project/act/plan"
	"github.com/act-project/act/policy"
)

// Expect is the policy's decision on d before any dry run, by the function
// apply decides a plan with (decide, Admit), over act's grading of what d
// says it will change: each path its file operations name, graded by where
// it lies and what it will be (a workspace, a home's dot-file, a file that
// runs code later, an executable mode, a delete), its reads, its commands
// and their network. What only a dry run shows — what a command changes,
// what git status shows of a change — is not read (act validate touches
// nothing in the scope): the decision is then the one apply makes when the
// dry run finds nothing more, and its reason says the dry run decides
// again (docs/risk.md, "Before the dry run"). A descriptor that asks for a
// person (confirmation.required) says so in the reason: apply waits for
// one whatever the mode.
func (g *Gate) Expect(d *descriptors.Descriptor) policy.Decision {
	changes, reads, exact := declaredChanges(d)
	rules := g.riskRules()
	rules.Preview = true
	r := Assess(d, changes, rules)
	AssessReads(&r, reads, rules)
	dec := g.decide(d, r, changes)
	if !exact && dec.Mode != policy.Deny {
		dec.Reason += "; until its dry run: act decides again on what it changes"
	}
	if d.Confirmation.Required && dec.Mode != policy.Deny {
		dec.Reason += "; apply waits for a person all the same: the descriptor requires confirmation"
	}
	return dec
}

// declaredChanges are the changes d's file operations (steps included)
// will make, as far as d says: their paths and kinds, a mode d sets, and
// the files it reads. exact is false where a dry run may find more or
// other changes (a command, a package manager, a glob) or grade them
// otherwise (what git status shows of a write).
func declaredChanges(d *descriptors.Descriptor) (changes []diff.Change, reads []plan.ReadResult, exact bool) {
	exact = true
	mode := func(m string) *string {
		if m == "" {
			return nil
		}
		return &m
	}
	add := func(path string, kind diff.Kind, typ string, m string) {
		if pathglob.HasMeta(path) {
			exact = false
			return
		}
		c := diff.Change{Path: path, Kind: kind, Type: typ}
		if kind != diff.Delete {
			c.ModeAfter = mode(m)
			exact = false // what git status shows of it, only the tree says
		}
		changes = append(changes, c)
	}
	var walk func(op descriptors.Operation, steps []descriptors.Step)
	walk = func(op descriptors.Operation, steps []descriptors.Step) {
		switch o := op.(type) {
		case descriptors.FileReadOp:
			reads = append(reads, plan.ReadResult{Path: o.Path, Resolved: o.Path})
		case descriptors.FileWriteOp:
			add(o.Path, diff.Modify, diff.TypeFile, o.Mode)
		case descriptors.ConfigChangeOp:
			add(o.Path, diff.Modify, diff.TypeFile, "")
		case descriptors.FileDeleteOp:
			for _, p := range o.Paths {
				add(p, diff.Delete, diff.TypeFile, "")
			}
		case descriptors.FileMoveOp:
			// The same content leaves one path and arrives at the
			// other: what the changes amount to (impliedTypes) is a
			// move and a write, as the dry run's will be.
			n := len(changes)
			add(o.From, diff.Delete, diff.TypeFile, "")
			add(o.To, diff.Create, diff.TypeFile, "")
			if len(changes) == n+2 {
				moved := "the content of " + o.From
				changes[n].SHA256Before, changes[n+1].SHA256After = &moved, &moved
			}
		case descriptors.DirectoryCreateOp:
			add(o.Path, diff.Create, diff.TypeDir, o.Mode)
		case descriptors.DirectoryDeleteOp:
			add(o.Path, diff.Delete, diff.TypeDir, "")
		case descriptors.NetworkRequestOp:
			if o.SaveTo != "" {
				add(o.SaveTo, diff.Create, diff.TypeFile, "")
			}
		case nil:
		default: // a command or a package manager: only its dry run says
			exact = false
		}
		for _, s := range steps {
			walk(s.Op, s.Steps)
		}
	}
	walk(d.Op, d.Steps)
	if d.Verification != nil && len(d.Verification.Commands) > 0 {
		exact = false
	}
	return changes, reads, exact
}
