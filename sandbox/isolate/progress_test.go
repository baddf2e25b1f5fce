package isolate

import (
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestProgress: Spec.Progress sees a command's output as it comes, before
// the run ends, on the stream it was written to. The command prints its
// first line, then sleeps far longer than the test waits; only the test,
// once Progress has shown it that line, kills the sleep (the shell's note
// of it goes to /dev/null), and the command's last line follows. Output held back until the end would leave the sleep
// to the wall clock cap.
func TestProgress(t *testing.T) {
	if err := Available(); err != nil {
		t.Skipf("no sandbox here: %v", err)
	}
	token := fmt.Sprintf("%d.%06d", 3600+time.Now().UnixNano()%1000, time.Now().UnixNano()%1_000_000)
	var (
		mu    sync.Mutex
		got   = map[int]string{}
		woken = make(chan bool, 1)
		once  sync.Once
	)
	// wake ends the command's sleep, once it is there.
	wake := func() {
		for deadline := time.Now().Add(hangGuard); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if pids := processesWithArg(token); len(pids) > 0 {
				for _, p := range pids {
					syscall.Kill(p, syscall.SIGKILL)
				}
				woken <- true
				return
			}
		}
		woken <- false
	}
	res, err := Run(t.Context(), Spec{
		Argv: []string{"sh", "-c", "echo first; echo oops >&2; { sleep " + token + "; } 2>/dev/null; echo last"}, Env: pathEnv,
		Limits: Limits{WallMs: hangGuard.Milliseconds()},
		Progress: func(stream int, p []byte) {
			mu.Lock()
			defer mu.Unlock()
			got[stream] += string(p)
			if stream == 1 && strings.HasPrefix(got[1], "first\n") {
				once.Do(func() { go wake() })
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if res.CapHit != nil {
		t.Fatalf("the command ran into the %v: Progress never showed its first line while it ran (stdout %q)", res.CapHit, got[1])
	}
	if !<-woken {
		t.Fatalf("the command's sleep was never there to end (stdout %q)", got[1])
	}
	if got[1] != "first\nlast\n" || got[2] != "oops\n" {
		t.Errorf("progress saw %q on stdout and %q on stderr", got[1], got[2])
	}
	if !strings.Contains(string(res.Stdout), "last") {
		t.Errorf("the result lost the output: %q", res.Stdout)
	}
}
