package plan

// The bounds of act itself (docs/lifecycle.md, "Limits of a dry run"): a
// command that leaves a huge layer — here 200,000 empty files with
// 240-byte names, which a sandboxed `seq … | xargs touch` makes — must not
// make act hold memory in proportion to it before refusing the plan. The
// parent makes the layer (on a tmpfs where it can: it is the slow part),
// then runs the plan's diff stage (Draft.diff, as act plan runs it after
// the command) in a child process and reads the child's peak RSS (VmHWM).
// Before the diff stopped at the limits the child's peak was about
// 400 MiB for max_changes and 390 MiB for the disk cap (which then did not
// count names, and let the plan through); now it is about 26–29 MiB.

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/act-project/act/internal/problem"
	"github.com/act-project/act/internal/state"
	"github.com/act-project/act/policy"
)

const (
	// boundsChildEnv carries, to the child, "scope|plan dir|max_changes|max_disk_mb".
	boundsChildEnv = "_ACT_TEST_BOUNDS_CHILD"
	// boundsFiles is how many files the attack's layer holds.
	boundsFiles = 200_000
	// boundsPeakMiB bounds the child's peak RSS: generous against the
	// ~26–29 MiB it needs, far below the ~400 it took before.
	boundsPeakMiB = 128
)

// TestDiffMemoryBounded: the huge layer is refused by the rule of the
// limit it passes first, by a child whose peak RSS stays under
// boundsPeakMiB, for max_changes and for the disk cap (which counts the
// entries' names: the files are empty).
func TestDiffMemoryBounded(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("makes 200,000 files")
	}
	scope := filepath.Join(t.TempDir(), "s")
	mustDo(t, os.Mkdir(scope, 0o755))
	planDir := boundsPlanDir(t)
	upper := filepath.Join(planDir, state.LayerName, "upper") + scope
	mustDo(t, os.MkdirAll(upper, 0o755))
	name := strings.Repeat("x", 240)
	for i := range boundsFiles {
		fd, err := syscall.Open(fmt.Sprintf("%s/%s%06d", upper, name, i), syscall.O_CREAT|syscall.O_WRONLY|syscall.O_CLOEXEC, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		syscall.Close(fd)
	}
	for _, tc := range []struct {
		name                  string
		maxChanges, maxDiskMB int64
		want                  string
	}{
		{"max-changes", 1000, 10240, RuleTooManyChanges + ": the dry run made at least 1001 changes"},
		{"disk-cap", 10_000_000, 1, "resources.disk-cap-exceeded: the dry run wrote at least 1048"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			exe, err := os.Executable()
			mustDo(t, err)
			cmd := exec.Command(exe, "-test.run=^TestDiffMemoryChild$", "-test.count=1", "-test.v")
			cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s|%s|%d|%d", boundsChildEnv, scope, planDir, tc.maxChanges, tc.maxDiskMB))
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("the child: %v\n%s", err, out)
			}
			var peak int64 = -1
			var result string
			sc := bufio.NewScanner(bytes.NewReader(out))
			for sc.Scan() {
				line := strings.TrimSpace(sc.Text())
				if v, ok := strings.CutPrefix(line, "peak-kib "); ok {
					peak, _ = strconv.ParseInt(v, 10, 64)
				}
				if v, ok := strings.CutPrefix(line, "result "); ok {
					result = v
				}
			}
			if peak < 0 {
				t.Fatalf("the child printed no peak:\n%s", out)
			}
			t.Logf("child peak RSS %d KiB, %s", peak, result)
			if !strings.HasPrefix(result, tc.want) {
				t.Errorf("the diff of %d files ended in %q, want %q…", boundsFiles, result, tc.want)
			}
			if peak > boundsPeakMiB<<10 {
				t.Errorf("the child's peak RSS was %d MiB diffing a layer of %d files, more than %d MiB", peak>>10, boundsFiles, boundsPeakMiB)
			}
		})
	}
}

// boundsPlanDir makes the plan directory of the attack, on /dev/shm where
// that is a directory it may write (making the files there takes a few
// seconds, not a few tens).
func boundsPlanDir(t *testing.T) string {
	t.Helper()
	if dir, err := os.MkdirTemp("/dev/shm", "act-bounds-"); err == nil {
		t.Cleanup(func() { os.RemoveAll(dir) })
		return dir
	}
	return t.TempDir()
}

// TestDiffMemoryChild is the child of TestDiffMemoryBounded: it runs
// Draft.diff over the plan directory it is given and prints its outcome
// and its peak RSS.
func TestDiffMemoryChild(t *testing.T) {
	arg := os.Getenv(boundsChildEnv)
	if arg == "" {
		t.Skip("the child of TestDiffMemoryBounded")
	}
	f := strings.Split(arg, "|")
	scope, planDir := f[0], f[1]
	maxChanges, _ := strconv.ParseInt(f[2], 10, 64)
	pol, err := policy.Default("")
	mustDo(t, err)
	pol.AllowedRoots = append(pol.AllowedRoots, filepath.Dir(scope))
	pol.MaxChanges = maxChanges
	stateDir := t.TempDir()
	d := buildDescriptor(t, scope, stateDir, `action_type: COMMAND_EXECUTION
scope:
  filesystem: {paths: [$S], recursive: true}
  network: {required: false}
  ui: {required: false}
resources: {max_cpu_ms: 1000, max_memory_mb: 64, max_disk_mb: `+f[3]+`, max_duration_ms: 2000}
preconditions: {network_available: false, user_idle: false, paths_exist: [$S]}
effects: {filesystem: {create: ["$S/**"], modify: [], delete: []}, network: false, system_state_change: false}
operation: {argv: ["true"], workdir: $S}
`)
	dr := &Draft{d: d, opts: Options{StateDir: stateDir, Policy: pol, Now: time.Now}, tmp: planDir}
	err = dr.diff()
	var probs problem.List
	switch {
	case err == nil:
		fmt.Printf("result planned %d changes\n", len(dr.Changes))
	case errors.As(err, &probs):
		for _, p := range probs {
			fmt.Printf("result %s: %s\n", p.Rule, p.Message)
		}
	default:
		fmt.Printf("result error %v\n", err)
	}
	fmt.Printf("peak-kib %d\n", vmHWM(t))
}

// vmHWM is this process's peak resident set size, in KiB.
func vmHWM(t *testing.T) int64 {
	b, err := os.ReadFile("/proc/self/status")
	mustDo(t, err)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			mustDo(t, err)
			return n
		}
	}
	t.Fatal("no VmHWM in /proc/self/status")
	return 0
}
