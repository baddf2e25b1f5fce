package plan

import (
	"io"
	"path/filepath"
	"runtime"
	"sync"
	"weak"

	"github.com/act-project/act/diff"
	"github.com/act-project/act/internal/digest"
	"github.com/act-project/act/internal/parallel"
	"github.com/act-project/act/internal/redact"
)

// A FileDiff is the outcome of [TextDiff] for one change.
type FileDiff struct {
	Text        string
	Cut, Binary bool
	Err         error
}

// TextDiffs returns [TextDiff] of each of p's changes, in order. The diffs
// only read, so they are made on every CPU: a plan of many changed text
// files is shown sooner. A file known binary is not read again: larger
// than diff.MaxTextSize by its recorded size, or found binary when Build
// hashed it.
func TextDiffs(stateDir string, p *Plan) []FileDiff {
	out := make([]FileDiff, len(p.Changes))
	bin := extraOf(p)
	parallel.Do(len(out), parallel.CPUs(), 4, func(_, i int) {
		d, c := &out[i], p.Changes[i]
		if c.Type == diff.TypeFile && (bin.Binary(c) || tooLarge(c.SizeBefore) || tooLarge(c.SizeAfter)) {
			d.Binary = true
			return
		}
		d.Text, d.Cut, d.Binary, d.Err = TextDiff(stateDir, p, c)
		// A line of a file is text act prints: a credential in it (a
		// registry URL with a password a package manager wrote into a
		// lock file, say) is redacted like a command's output.
		d.Text = redact.String(d.Text)
	})
	return out
}

func tooLarge(size *int64) bool { return size != nil && *size > diff.MaxTextSize }

// built holds what the diff of each plan Build made in this process found
// binary (diff.Extra), for TextDiffs; a plan loaded from disk has none.
// The key is weak and the entry goes with its plan.
var built sync.Map // weak.Pointer[Plan] → diff.Extra

func rememberExtra(p *Plan, x diff.Extra) {
	k := weak.Make(p)
	built.Store(k, x)
	runtime.AddCleanup(p, func(k weak.Pointer[Plan]) { built.Delete(k) }, k)
}

func extraOf(p *Plan) diff.Extra {
	if v, ok := built.Load(weak.Make(p)); ok {
		return v.(diff.Extra)
	}
	return diff.Extra{}
}

// MaxTextDiff caps the unified diff shown for one file.
const MaxTextDiff = 16 << 10

// TextDiff returns the unified diff of a file change in the saved plan:
// the real file before, the layer's file after. binary is true when either
// side is not text; then only sizes and hashes describe the change.
func TextDiff(stateDir string, p *Plan, c diff.Change) (text string, cut, binary bool, err error) {
	if c.Type != "file" {
		return "", false, false, nil
	}
	// An absent side is a nil reader: the diff labels it /dev/null.
	open := func(name string, present bool) (io.Reader, func(), error) {
		if !present {
			return nil, func() {}, nil
		}
		f, err := digest.OpenRaw(name, 0)
		if err != nil {
			return nil, nil, err
		}
		return f, func() { f.Close() }, nil
	}
	before, closeBefore, err := open(c.Path, c.Kind != diff.Create)
	if err != nil {
		return "", false, false, err
	}
	defer closeBefore()
	after, closeAfter, err := open(filepath.Join(UpperDir(stateDir, p.ID), c.Path), c.Kind != diff.Delete)
	if err != nil {
		return "", false, false, err
	}
	defer closeAfter()
	return diff.Unified(c.Path, before, after, MaxTextDiff)
}
