package configedit

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"
	"go.yaml.in/yaml/v3"
)

// FuzzEdit checks that Edit never panics and that whatever it returns
// parses and holds the key it set, with the value it was given, and no
// longer holds the key it unset.
func FuzzEdit(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.txtar")
	for _, file := range files {
		ar, err := txtar.ParseFile(file)
		if err != nil {
			f.Fatal(err)
		}
		if in := section(ar, "in"); in != nil {
			f.Add(strings.HasPrefix(filepath.Base(file), "yaml_"), in, "a.b", "c")
		}
	}
	f.Fuzz(func(t *testing.T, isYAML bool, data []byte, setKey, unsetKey string) {
		format := JSON
		if isYAML {
			format = YAML
		}
		if checkKey(setKey) != nil || checkKey(unsetKey) != nil || setKey == unsetKey ||
			len(setKey) > len(unsetKey) && setKey[:len(unsetKey)+1] == unsetKey+"." ||
			len(unsetKey) > len(setKey) && unsetKey[:len(setKey)+1] == setKey+"." {
			return
		}
		res, err := Edit(format, data, map[string]any{setKey: "fuzz"}, []string{unsetKey})
		if err != nil {
			return
		}
		var doc any
		if isYAML {
			// Keys are matched by their text: the key 00 is the int 0.
			var n yaml.Node
			if err = yaml.Unmarshal(res.Data, &n); err == nil {
				var v any
				if err = n.Decode(&v); err == nil { // no alias bombs
					doc = textKeys(&n)
				}
			}
		} else {
			err = json.Unmarshal(res.Data, &doc)
		}
		if err != nil {
			t.Fatalf("the edited file does not parse: %v\n%s", err, res.Data)
		}
		if v, ok := lookup(doc, setKey); !ok || v != "fuzz" {
			t.Fatalf("%s = %v, %v after setting it to fuzz:\n%s", setKey, v, ok, res.Data)
		}
		if _, ok := lookup(doc, unsetKey); ok {
			t.Fatalf("%s is still there after unsetting it:\n%s", unsetKey, res.Data)
		}
	})
}

func lookup(doc any, key string) (any, bool) {
	cur := doc
	for _, p := range splitKey(key) {
		var ok bool
		if m, isMap := cur.(map[string]any); isMap {
			cur, ok = m[p]
		}
		if !ok {
			return nil, false
		}
	}
	return cur, true
}

// textKeys turns a YAML node into maps keyed by the text of their keys and
// scalars holding their text.
func textKeys(n *yaml.Node) any {
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil
		}
		return textKeys(n.Content[0])
	case yaml.MappingNode:
		m := map[string]any{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			m[n.Content[i].Value] = textKeys(n.Content[i+1])
		}
		return m
	case yaml.AliasNode:
		return textKeys(n.Alias)
	case yaml.ScalarNode:
		return n.Value
	}
	return nil
}
