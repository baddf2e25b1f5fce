package gate

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"

	"github.com/act-project/act/internal/digest"
	"github.com/act-project/act/internal/problem"
	"github.com/act-project/act/plan"
	"github.com/act-project/act/rollback"
)

// A ReadOut is what a FILE_READ gives at apply: the file's content as it
// is now, which is what the plan recorded.
type ReadOut struct {
	Path      string `json:"path"`
	Content   []byte `json:"content"`
	Truncated bool   `json:"truncated"`
}

// ReadBack reads again the files p's FILE_READ operations read at plan
// time: the plan keeps only their digests, never their content. A file
// changed since is a conflict (exit 8, apply.stale).
func (g *Gate) ReadBack(p *plan.Plan) ([]ReadOut, error) {
	var out []ReadOut
	for _, r := range p.Read {
		// The file read is where the named path leads now, never what
		// plan.json says it led to.
		if now, err := filepath.EvalSymlinks(r.Path); err == nil && now != r.Resolved {
			return nil, problem.List{{Rule: rollback.RuleStale, Field: r.Path, Layer: problem.Conflict,
				Message: fmt.Sprintf("%s leads to %s now, not to %s as when the plan read it; plan again", r.Path, now, r.Resolved)}}
		}
		data, sum, err := readBack(r.Resolved)
		if err != nil {
			return nil, problem.List{{Rule: rollback.RuleStale, Field: r.Path, Layer: problem.Conflict,
				Message: fmt.Sprintf("%s cannot be read now: %v; plan again", r.Path, err)}}
		}
		if sum != r.SHA256 {
			return nil, problem.List{{Rule: rollback.RuleStale, Field: r.Path, Layer: problem.Conflict,
				Message: fmt.Sprintf("%s changed since the plan read it (sha256 %.12s, not %.12s); plan again", r.Path, sum, r.SHA256)}}
		}
		o := ReadOut{Path: r.Path, Content: data}
		if len(data) > plan.MaxReadContent {
			o.Content, o.Truncated = data[:plan.MaxReadContent], true
		}
		out = append(out, o)
	}
	return out, nil
}

// readBack reads the file at name again: a regular file only (opened
// without blocking, so that a FIFO put there since cannot hang apply), its
// sha256 over all of it and its first MaxReadContent+1 bytes kept.
func readBack(name string) ([]byte, string, error) {
	f, err := os.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, "", err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil {
		return nil, "", err
	} else if !fi.Mode().IsRegular() {
		return nil, "", fmt.Errorf("it is no longer a regular file (%s)", fi.Mode().Type())
	}
	var head bytes.Buffer
	sum, _, err := digest.Reader(io.TeeReader(f, &capped{&head, plan.MaxReadContent + 1}))
	return head.Bytes(), sum, err
}

// capped is a writer that keeps at most n bytes and drops the rest.
type capped struct {
	b *bytes.Buffer
	n int
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.n - c.b.Len(); room > 0 {
		c.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}
