package schema

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/parser"
)

// TestSchemaBuiltins: the schemas import only the CUE builtins schema.go
// registers (Context is made without cuecontext, which would register them
// all), and what they import works.
func TestSchemaBuiltins(t *testing.T) {
	registered := []string{"list", "strings"}
	files, _ := filepath.Glob("*.cue")
	if len(files) == 0 {
		t.Fatal("no schemas")
	}
	for _, name := range files {
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(name, src, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for im := range f.ImportSpecs() {
			p, _ := strconv.Unquote(im.Path.Value)
			if !slices.Contains(registered, p) {
				t.Errorf("%s imports the builtin %q, which schema.go does not register (add its blank import there)", name, p)
			}
		}
	}
	v := Context().CompileString(`import ("list", "strings")
a: strings.ToUpper("x")
b: list.Sum([1, 2])`)
	if err := v.Err(); err != nil {
		t.Fatal(err)
	}
	if s, _ := v.LookupPath(cue.ParsePath("a")).String(); s != "X" {
		t.Errorf("strings.ToUpper: %q", s)
	}
	if n, _ := v.LookupPath(cue.ParsePath("b")).Int64(); n != 3 {
		t.Errorf("list.Sum: %d", n)
	}
}
