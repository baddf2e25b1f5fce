package descriptors

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/act-project/act/internal/problem"
)

var ruleIDPattern = regexp.MustCompile(`^[a-z][a-z0-9-]*\.[a-z0-9]+(-[a-z0-9]+)*$`)

// TestRulesRegistry checks the form of the registry: unique ids of the
// form area.kebab-case, ordered by layer then id, one-line summaries.
func TestRulesRegistry(t *testing.T) {
	rs := Rules()
	seen := map[string]bool{}
	for i, r := range rs {
		if !ruleIDPattern.MatchString(r.ID) {
			t.Errorf("rule id %q is not of the form area.kebab-case", r.ID)
		}
		if seen[r.ID] {
			t.Errorf("rule id %q is listed twice", r.ID)
		}
		seen[r.ID] = true
		if r.Summary == "" || strings.HasSuffix(r.Summary, ".") || strings.Contains(r.Summary, "\n") ||
			strings.Contains(r.Summary, "|") {
			t.Errorf("rule %s: summary %q must be one line without a final period or a |", r.ID, r.Summary)
		}
		if i > 0 {
			p := rs[i-1]
			if p.Layer() > r.Layer() || p.Layer() == r.Layer() && p.ID > r.ID {
				t.Errorf("rule %s is listed after %s: order by layer, then id", r.ID, p.ID)
			}
		}
	}
}

// literalIDs returns the string literals of the Go files matched by glob
// (tests excluded) that look like rule ids with the given prefix.
func literalIDs(t *testing.T, glob, prefix string) map[string]bool {
	t.Helper()
	ids := map[string]bool{}
	inspectFiles(t, glob, func(_ *token.FileSet, af *ast.File) {
		ast.Inspect(af, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err == nil && ruleIDPattern.MatchString(s) && strings.HasPrefix(s, prefix) {
				ids[s] = true
			}
			return true
		})
	})
	return ids
}

// inspectFiles parses the Go files matched by glob, tests excluded, and
// calls f for each; no match fails t.
func inspectFiles(t *testing.T, glob string, f func(*token.FileSet, *ast.File)) {
	t.Helper()
	files, err := filepath.Glob(glob)
	if err != nil || len(files) == 0 {
		t.Fatalf("no files match %s: %v", glob, err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		f(fset, af)
	}
}

func registryIDs(l problem.Layer) map[string]bool {
	ids := map[string]bool{}
	for _, r := range Rules() {
		if r.Layer() == l {
			ids[r.ID] = true
		}
	}
	return ids
}

// emittedIDs returns the rule ids check*.go emits: the first argument of
// every call of add and the rule arguments of checkPathRules, which must be
// string literals (or, inside checkPathRules, its rule parameters).
func emittedIDs(t *testing.T) map[string]bool {
	t.Helper()
	ids := map[string]bool{}
	inspectFiles(t, "check*.go", func(fset *token.FileSet, af *ast.File) {
		ast.Inspect(af, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			var args []ast.Expr
			switch sel.Sel.Name {
			case "add":
				args = call.Args[:1]
			case "checkPathRules":
				args = call.Args[3:5]
			}
			for _, a := range args {
				switch a := a.(type) {
				case *ast.BasicLit:
					id, err := strconv.Unquote(a.Value)
					if err != nil || !ruleIDPattern.MatchString(id) {
						t.Errorf("%s: %s is not a rule id", fset.Position(a.Pos()), a.Value)
					}
					ids[id] = true
				case *ast.Ident:
					if a.Name != "absRule" && a.Name != "cleanRule" {
						t.Errorf("%s: the rule id %s is not a string literal", fset.Position(a.Pos()), a.Name)
					}
				default:
					t.Errorf("%s: the rule id is not a string literal", fset.Position(a.Pos()))
				}
			}
			return true
		})
	})
	return ids
}

// TestRulesEmitted proves that the registry and the code agree: every rule
// id check*.go emits is registered and every registered static rule is
// emitted there; the same for the parser's parse.* ids and the schema's
// schema.* ids; every registered policy.* id exists in package policy.
func TestRulesEmitted(t *testing.T) {
	for _, tt := range []struct {
		name string
		got  map[string]bool
		l    problem.Layer
	}{
		{"check*.go", emittedIDs(t), problem.Rule},
		{"internal/document", literalIDs(t, "../internal/document/*.go", "parse."), problem.Parse},
		{"schema", literalIDs(t, "../schema/*.go", "schema."), problem.Schema},
	} {
		if d := cmp.Diff(registryIDs(tt.l), tt.got); d != "" {
			t.Errorf("rule ids of Rules() (-) and of %s (+) differ:\n%s", tt.name, d)
		}
	}
	pol := literalIDs(t, "../policy/*.go", "policy.")
	for id := range registryIDs(problem.Policy) {
		if !pol[id] {
			t.Errorf("Rules() lists %s, which package policy does not emit", id)
		}
	}
}
