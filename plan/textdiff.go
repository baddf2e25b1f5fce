package plan

import (
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/act-project/act/diff"
)

// MaxTextDiff caps the unified diff shown for one file.
const MaxTextDiff = 16 << 10

// TextDiff returns the unified diff of a file change in the saved plan:
// the real file before, the layer's file after. binary is true when either
// side is not text; then only sizes and hashes describe the change.
func TextDiff(stateDir string, p *Plan, c diff.Change) (text string, cut, binary bool, err error) {
	if c.Type != "file" {
		return "", false, false, nil
	}
	open := func(name string, present bool) (io.ReadCloser, error) {
		if !present {
			return io.NopCloser(strings.NewReader("")), nil
		}
		return os.Open(name)
	}
	before, err := open(c.Path, c.Kind != diff.Create)
	if err != nil {
		return "", false, false, err
	}
	defer before.Close()
	after, err := open(filepath.Join(LayerDir(stateDir, p.ID), "upper", c.Path), c.Kind != diff.Delete)
	if err != nil {
		return "", false, false, err
	}
	defer after.Close()
	return diff.Unified(c.Path, before, after, MaxTextDiff)
}
