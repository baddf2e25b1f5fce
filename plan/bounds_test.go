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

	"golang.org/x/sys/unix"

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
	// boundsDeepFiles is how many files the deep layer holds, under the
	// default max_changes with the directories above them.
	boundsDeepFiles = 97_000
	// boundsDeepPeakMiB bounds the child's peak RSS over the deep layer:
	// half of what act may hold at most (docs/lifecycle.md).
	boundsDeepPeakMiB = 256
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
			peak, result := boundsChild(t, scope, planDir, tc.maxChanges, tc.maxDiskMB)
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

// TestDiffMemoryDeep: a command that nests its files deep makes every path
// long, while the names the disk cap counts stay short: 97,000 empty files
// at the bottom of a chain of directories about 4,000 bytes deep fit a
// 400 MiB cap and max_changes, yet their paths come to 390 MB, which act
// held several times over (the diff alone peaked at about 590 MiB, and
// took minutes: each lstat walked the whole path, and each new entry
// looked for its owner up every level). The diff counts each entry's whole
// path as it keeps it and stops past MaxLayerPaths (plan.record-too-large);
// a layer just within it is diffed and saved, as act plan saves it, in a
// small multiple of it.
func TestDiffMemoryDeep(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("makes 97,000 files")
	}
	for _, tc := range []struct {
		name  string
		files int
		want  string
	}{
		{"refused", boundsDeepFiles, RulePlanTooLarge + ": the paths of what the dry run left come to at least"},
		{"within", 2_900, "planned "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			scope := filepath.Join(t.TempDir(), "s")
			mustDo(t, os.Mkdir(scope, 0o755))
			planDir := boundsPlanDir(t)
			deep := filepath.Join(planDir, state.LayerName, "upper") + scope
			for len(deep) < 4000 {
				deep += "/d"
			}
			mustDo(t, os.MkdirAll(deep, 0o755))
			dfd, err := unix.Open(deep, unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC, 0)
			mustDo(t, err)
			defer unix.Close(dfd)
			for i := range tc.files {
				fd, err := unix.Openat(dfd, fmt.Sprintf("%05d", i), unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o644)
				mustDo(t, err)
				unix.Close(fd)
			}
			peak, result := boundsChild(t, scope, planDir, 100_000, 400)
			t.Logf("child peak RSS %d KiB, %s", peak, result)
			if !strings.HasPrefix(result, tc.want) {
				t.Errorf("the diff of %d deep files ended in %q, want %q…", tc.files, result, tc.want)
			}
			if peak > boundsDeepPeakMiB<<10 {
				t.Errorf("the child's peak RSS was %d MiB diffing %d deep files, more than %d MiB", peak>>10, tc.files, boundsDeepPeakMiB)
			}
		})
	}
}

// boundsChild runs TestDiffMemoryChild on the layer of planDir for scope
// and returns its peak RSS (KiB) and its outcome.
func boundsChild(t *testing.T, scope, planDir string, maxChanges, maxDiskMB int64) (int64, string) {
	t.Helper()
	exe, err := os.Executable()
	mustDo(t, err)
	cmd := exec.Command(exe, "-test.run=^TestDiffMemoryChild$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s|%s|%d|%d", boundsChildEnv, scope, planDir, maxChanges, maxDiskMB))
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
	return peak, result
}

// boundsPlanDir makes the plan directory of the attack, on /dev/shm where
// that is a directory it may write (making the files there takes a few
// seconds, not a few tens).
func boundsPlanDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("/dev/shm", "act-bounds-")
	if err == nil {
		t.Cleanup(func() { os.RemoveAll(dir) })
	} else {
		dir = t.TempDir()
	}
	// The child's state dir is beside it, on the same filesystem: a
	// plan saved is renamed into it.
	planDir := filepath.Join(dir, "draft")
	mustDo(t, os.Mkdir(planDir, 0o700))
	return planDir
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
	stateDir := filepath.Join(filepath.Dir(planDir), "state")
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
	dr := &Draft{d: d, opts: Options{StateDir: stateDir, Policy: pol, Now: time.Now}, tmp: planDir, id: buildID}
	err = dr.diff()
	if err == nil {
		// What passes the diff is saved as act plan saves it: its record
		// is the last and largest thing made of the changes.
		mustDo(t, os.MkdirAll(state.Dir{Root: stateDir}.Plans(), 0o700))
		_, err = dr.Save(Assessment{}, nil)
	}
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
