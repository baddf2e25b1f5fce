package plan

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/act-project/act/descriptors"
	"github.com/act-project/act/internal/credstore"
	"github.com/act-project/act/internal/pathglob"
	"github.com/act-project/act/internal/problem"
)

// Reads are the files the draft's FILE_READ operations read.
func (dr *Draft) Reads() []ReadResult {
	if dr.ops == nil {
		return nil
	}
	return dr.ops.Read
}

// RuleReadNotDeclared: a saved plan lists a read its descriptor does not
// name (only a plan.json edited after its dry run holds one).
const RuleReadNotDeclared = "plan.read-not-declared"

// CheckReads checks a saved plan's reads against the descriptor d it was
// made for: each is of a path a FILE_READ operation of d names, and the
// file read lies inside d's scope. Apply reads those files again and
// prints them, so plan.json, which the agent may write, must not choose
// them (docs/lifecycle.md, "What apply trusts").
func CheckReads(d *descriptors.Descriptor, reads []ReadResult) problem.List {
	named := readPaths(d.Op, d.Steps)
	var probs problem.List
	for _, r := range reads {
		inScope := filepath.IsAbs(r.Resolved) && filepath.Clean(r.Resolved) == r.Resolved &&
			slices.ContainsFunc(d.Scope.Filesystem.Paths, func(s string) bool { return pathglob.Within(r.Resolved, s) })
		if !slices.Contains(named, r.Path) || !inScope {
			probs = append(probs, problem.Problem{Rule: RuleReadNotDeclared, Field: "operation.path", Layer: problem.Rejected,
				Message: fmt.Sprintf("the plan reads %s (%s), which no FILE_READ of its descriptor names inside its scope", r.Path, r.Resolved)})
		}
	}
	return probs
}

// readPaths are the paths the FILE_READ operations of op and steps name.
func readPaths(op descriptors.Operation, steps []descriptors.Step) []string {
	var out []string
	if r, ok := op.(descriptors.FileReadOp); ok {
		out = append(out, r.Path)
	}
	for _, s := range steps {
		out = append(out, readPaths(s.Op, s.Steps)...)
	}
	return out
}

// IsCredentialStore reports whether path is, or lies in, a place where
// credentials usually live: a credential store under one of homes (globs
// such as /home/* allowed), or a system secret (shadow files, TLS private
// keys). credstore holds the one list.
func IsCredentialStore(path string, homes []string) bool {
	return credstore.Secret(path, homes)
}

// systemSecretPaths are the existing paths of the host's secrets the
// sandbox can hide (credstore.SystemPaths).
func systemSecretPaths() []string {
	return credstore.SystemPaths(func(p string) bool { _, err := os.Lstat(p); return err == nil })
}
