package isolate

import (
	"strings"
	"sync"
	"testing"
	"time"
)

// TestProgress: Spec.Progress sees a command's output as it comes, before
// the run ends, on the stream it was written to.
func TestProgress(t *testing.T) {
	if err := Available(); err != nil {
		t.Skipf("no sandbox here: %v", err)
	}
	var (
		mu   sync.Mutex
		got  = map[int]string{}
		seen = make(chan struct{}, 1)
	)
	start := time.Now()
	var firstAt time.Duration
	res, err := Run(t.Context(), Spec{
		Argv: []string{"sh", "-c", "echo first; echo oops >&2; sleep 1; echo last"}, Env: pathEnv,
		Limits: Limits{WallMs: 10_000},
		Progress: func(stream int, p []byte) {
			mu.Lock()
			defer mu.Unlock()
			if got[1] == "" && stream == 1 {
				firstAt = time.Since(start)
			}
			got[stream] += string(p)
			select {
			case seen <- struct{}{}:
			default:
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	total := time.Since(start)
	mu.Lock()
	defer mu.Unlock()
	if got[1] != "first\nlast\n" || got[2] != "oops\n" {
		t.Errorf("progress saw %q on stdout and %q on stderr", got[1], got[2])
	}
	if !strings.Contains(string(res.Stdout), "last") {
		t.Errorf("the result lost the output: %q", res.Stdout)
	}
	if total-firstAt < 500*time.Millisecond {
		t.Errorf("the first line came %v into a run of %v: not as it was written", firstAt, total)
	}
}
