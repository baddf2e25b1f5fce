package plan

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/act-project/act/descriptors"
	"github.com/act-project/act/diff"
	"github.com/act-project/act/sandbox"
)

// An entry is one node of a test tree. For a symlink, Content is the
// target, with the tree's root written $ROOT.
type entry struct {
	Type    string // file, dir or symlink
	Mode    string // 4-digit octal; empty for a symlink
	Content string
}

func file(content, mode string) *entry { return &entry{Type: "file", Mode: mode, Content: content} }
func dir(mode string) *entry           { return &entry{Type: "dir", Mode: mode} }
func link(target string) *entry        { return &entry{Type: "symlink", Content: target} }

// A tree maps slash-separated paths relative to the root to entries.
type tree map[string]*entry

// with returns a copy of t changed by delta: a nil entry deletes the path
// and everything below it.
func (t tree) with(delta tree) tree {
	out := tree{}
	for k, v := range t {
		out[k] = v
	}
	for k, v := range delta {
		if v != nil {
			out[k] = v
			continue
		}
		for p := range out {
			if p == k || strings.HasPrefix(p, k+"/") {
				delete(out, p)
			}
		}
	}
	return out
}

// mktree creates t below root, modes exact.
func mktree(t *testing.T, root string, tr tree) {
	t.Helper()
	keys := make([]string, 0, len(tr))
	for k := range tr {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		e, p := tr[k], filepath.Join(root, k)
		var err error
		switch e.Type {
		case "dir":
			err = os.MkdirAll(p, 0o755)
		case "file":
			err = os.WriteFile(p, []byte(e.Content), 0o600)
		case "symlink":
			err = os.Symlink(strings.ReplaceAll(e.Content, "$ROOT", root), p)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	// Modes last, deepest first, so that read-only directories are filled.
	for i := len(keys) - 1; i >= 0; i-- {
		if e := tr[keys[i]]; e.Type != "symlink" {
			m, _, err := parseMode(nil, "", e.Mode, 0)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(filepath.Join(root, keys[i]), m); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// snapshot reads the tree below root through sys.
func snapshot(t *testing.T, sys sandbox.System, root string) tree {
	t.Helper()
	out := tree{}
	var walk func(d string)
	walk = func(d string) {
		ents, err := sys.ReadDir(d)
		if err != nil {
			t.Fatal(err)
		}
		for _, de := range ents {
			p := path.Join(d, de.Name())
			rel := strings.TrimPrefix(p, root+"/")
			fi, err := sys.Lstat(p)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case fi.IsDir():
				out[rel] = dir(diff.FormatMode(fi.Mode()))
				walk(p)
			case fi.Mode()&fs.ModeSymlink != 0:
				target, err := sys.Readlink(p)
				if err != nil {
					t.Fatal(err)
				}
				if target == root || strings.HasPrefix(target, root+"/") {
					target = "$ROOT" + strings.TrimPrefix(target, root)
				}
				out[rel] = link(target)
			case fi.Mode().IsRegular():
				rc, err := sys.Open(p)
				if err != nil {
					t.Fatal(err)
				}
				b, err := io.ReadAll(rc)
				rc.Close()
				if err != nil {
					t.Fatal(err)
				}
				out[rel] = file(string(b), diff.FormatMode(fi.Mode()))
			default:
				out[rel] = &entry{Type: "special", Mode: diff.FormatMode(fi.Mode())}
			}
		}
	}
	walk(root)
	return out
}

// A system under test: the real one, or a layer over it.
type testSystem struct {
	name string
	new  func(t *testing.T) sandbox.System
}

var testSystems = []testSystem{
	{"real", func(*testing.T) sandbox.System { return sandbox.RealSystem{} }},
	{"layer", func(t *testing.T) sandbox.System {
		return sandbox.NewLayerSystem(sandbox.RealSystem{}, t.TempDir())
	}},
}

// An opCase is one operation on a prepared tree and what must come of it.
type opCase struct {
	name string
	// extra is added to the base tree before the run.
	extra tree
	// scope lists the scope paths relative to the root; default ["s"].
	scope     []string
	recursive bool
	// d is the descriptor, built by one of the helpers below.
	d *descriptors.Descriptor
	// want is the change to the tree (nil: none) when the run succeeds.
	want tree
	// wantErr lists the rule and field of each expected OpError.
	wantErr []ruleAt
	// wantNotes lists the rule and field of each expected Note.
	wantNotes []ruleAt
	// check, if set, looks at the result.
	check func(t *testing.T, root string, res *OpsResult)
}

// ruleAt is a rule id at a field path (rendered like problem.FieldPath).
type ruleAt struct {
	Rule  string
	Field string
}

// op builds a descriptor of one operation given as JSON, in which $S stands
// for the scope path root/s and $ROOT for the root.
func op(t descriptors.ActionType, js string) *descriptors.Descriptor {
	return &descriptors.Descriptor{ActionType: t, Operation: json.RawMessage(js)}
}

// composite builds a MULTI_STEP_COMPOSITE of steps.
func composite(steps ...*descriptors.Descriptor) *descriptors.Descriptor {
	d := &descriptors.Descriptor{ActionType: descriptors.MultiStepComposite}
	for _, s := range steps {
		d.Steps = append(d.Steps, descriptors.Step{ActionType: s.ActionType, Operation: s.Operation, Steps: s.Steps})
	}
	return d
}

// instantiate returns d with $S and $ROOT replaced and operations decoded.
func instantiate(t *testing.T, d *descriptors.Descriptor, root string) *descriptors.Descriptor {
	t.Helper()
	sub := func(raw json.RawMessage) json.RawMessage {
		s := strings.ReplaceAll(string(raw), "$S", root+"/s")
		return json.RawMessage(strings.ReplaceAll(s, "$ROOT", root))
	}
	decode := func(at descriptors.ActionType, raw json.RawMessage) descriptors.Operation {
		if at == descriptors.MultiStepComposite {
			return nil
		}
		o, err := descriptors.DecodeOperation(at, raw)
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	var steps func([]descriptors.Step) []descriptors.Step
	steps = func(in []descriptors.Step) []descriptors.Step {
		var out []descriptors.Step
		for _, s := range in {
			s.Operation = sub(s.Operation)
			s.Op = decode(s.ActionType, s.Operation)
			s.Steps = steps(s.Steps)
			out = append(out, s)
		}
		return out
	}
	out := *d
	out.Operation = sub(d.Operation)
	out.Op = decode(d.ActionType, out.Operation)
	out.Steps = steps(d.Steps)
	return &out
}

// runOpCases runs each case on each test system, on a fresh copy of base.
func runOpCases(t *testing.T, base tree, cases []opCase) {
	t.Helper()
	for _, tc := range cases {
		for _, ts := range testSystems {
			t.Run(tc.name+"/"+ts.name, func(t *testing.T) {
				root := t.TempDir()
				start := base.with(tc.extra)
				mktree(t, root, start)
				sys := ts.new(t)
				d := instantiate(t, tc.d, root)
				scopes := tc.scope
				if scopes == nil {
					scopes = []string{"s"}
				}
				for _, s := range scopes {
					d.Scope.Filesystem.Paths = append(d.Scope.Filesystem.Paths, path.Join(root, s))
				}
				d.Scope.Filesystem.Recursive = tc.recursive

				res, err := RunOps(context.Background(), d, sys)
				var gotErr []ruleAt
				if err != nil {
					var one *OpError
					var many OpErrors
					switch {
					case errors.As(err, &many):
						for _, e := range many {
							gotErr = append(gotErr, ruleAt{e.Rule, fieldString(e.Field)})
						}
					case errors.As(err, &one):
						gotErr = []ruleAt{{one.Rule, fieldString(one.Field)}}
					default:
						t.Fatalf("RunOps() = %v, not an OpError", err)
					}
				}
				if d := cmp.Diff(tc.wantErr, gotErr); d != "" {
					t.Fatalf("RunOps() errors mismatch (-want +got):\n%s\nerror: %v", d, err)
				}
				want := start
				if err == nil {
					want = start.with(tc.want)
					var notes []ruleAt
					for _, n := range res.Notes {
						notes = append(notes, ruleAt{n.Rule, fieldString(n.Field)})
					}
					if d := cmp.Diff(tc.wantNotes, notes); d != "" {
						t.Errorf("RunOps() notes mismatch (-want +got):\n%s", d)
					}
					if tc.check != nil {
						tc.check(t, root, res)
					}
				}
				// An operation that fails changes nothing; a failed
				// composite's earlier steps have run (the plan throws the
				// layer away).
				if err == nil || tc.d.ActionType != descriptors.MultiStepComposite {
					if d := cmp.Diff(want, snapshot(t, sys, root)); d != "" {
						t.Errorf("tree mismatch (-want +got):\n%s", d)
					}
				}
				if ts.name == "layer" {
					if d := cmp.Diff(start, snapshot(t, sandbox.RealSystem{}, root)); d != "" {
						t.Errorf("the layer changed the real tree (-want +got):\n%s", d)
					}
				}
			})
		}
	}
}

func fieldString(f []string) string {
	var b strings.Builder
	for i, e := range f {
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(e)
	}
	return b.String()
}

// reportedRules returns the rule ids the operation code names: the string
// literals "op.…" and "path.…" of ops*.go.
func reportedRules(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("ops*.go")
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`"((?:op|path)\.[a-z-]+)"`)
	var ids []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range re.FindAllStringSubmatch(string(b), -1) {
			ids = append(ids, m[1])
		}
	}
	return ids
}
