package isolate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

var pathEnv = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "LC_ALL=C"}

// requireIsolation skips the test where the sandbox cannot be built, with
// the reason Available gives.
func requireIsolation(t testing.TB) {
	t.Helper()
	if err := Available(); err != nil {
		t.Skipf("no isolation here: %v", err)
	}
}

// lookPathEnv finds name in pathEnv's PATH, the command's, not the test's
// own (a toolchain under root's home is closed to the sandbox's identity),
// and skips the test where it is not there.
func lookPathEnv(t testing.TB, name string) string {
	t.Helper()
	for _, d := range filepath.SplitList(strings.TrimPrefix(pathEnv[0], "PATH=")) {
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	t.Skipf("%s is not installed in %s", name, pathEnv[0])
	return ""
}

// newScope makes a scope dir holding the given files, and its empty upper
// and work dirs, under base.
func newScope(t testing.TB, base string, files map[string]string) Scope {
	t.Helper()
	s := Scope{Path: filepath.Join(base, "scope"), Upper: filepath.Join(base, "upper"), Work: filepath.Join(base, "work")}
	for _, d := range []string{s.Path, s.Upper, s.Work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		// 0755 whatever the umask: act makes a scope's upper with its
		// lower's mode (sandbox.LayerSystem.CopyUpDir), and a test that
		// changes the scope's mode must change it from this one.
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		if err := RemoveWorkDir(s.Work); err != nil {
			t.Error(err)
		}
	})
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(s.Path, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// hangGuard is how long a test waits for what must end before it fails
// as hung: a liveness bound, not a speed one.
const hangGuard = 2 * time.Minute

func sh(t testing.TB, script string, scopes []Scope, l Limits) *Result {
	t.Helper()
	if l.WallMs == 0 {
		l.WallMs = 20_000
	}
	res, err := Run(context.Background(), Spec{Argv: []string{"sh", "-c", script}, Env: pathEnv, Scopes: scopes, Limits: l})
	if err != nil {
		t.Fatalf("Run(%q): %v", script, err)
	}
	return res
}

func mustExit(t testing.TB, res *Result, code int) {
	t.Helper()
	if res.ExitCode != code {
		t.Fatalf("exit %d (signal %v, cap %v), want %d\nstdout: %s\nstderr: %s",
			res.ExitCode, res.Signal, res.CapHit, code, res.Stdout, res.Stderr)
	}
}

func readFile(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestScopeWritesLandInUpper: changes inside a scope go to the layer
// (creations, modifications, whiteouts for deletions) and the real
// directory is unchanged. The scope is under /tmp, so this also proves the
// overlay is mounted after the private /tmp.
func TestScopeWritesLandInUpper(t *testing.T) {
	requireIsolation(t)
	s := newScope(t, t.TempDir(), map[string]string{"a.txt": "old\n", "gone.txt": "x"})
	res := sh(t, fmt.Sprintf(`cd %s && cat a.txt && echo new > a.txt && echo created > b.txt && rm gone.txt && mkdir d && echo in > d/f && pwd`, s.Path),
		[]Scope{s}, Limits{})
	mustExit(t, res, 0)
	if got, want := string(res.Stdout), "old\n"+s.Path+"\n"; got != want {
		t.Errorf("stdout %q, want %q", got, want)
	}
	if got := readFile(t, filepath.Join(s.Upper, "a.txt")); got != "new\n" {
		t.Errorf("upper a.txt = %q", got)
	}
	if got := readFile(t, filepath.Join(s.Upper, "d/f")); got != "in\n" {
		t.Errorf("upper d/f = %q", got)
	}
	fi, err := os.Lstat(filepath.Join(s.Upper, "gone.txt"))
	if err != nil || fi.Mode()&os.ModeCharDevice == 0 || fi.Sys().(*syscall.Stat_t).Rdev != 0 {
		t.Errorf("upper gone.txt is not a whiteout: %v %v", fi, err)
	}
	// The real tree is unchanged.
	if got := readFile(t, filepath.Join(s.Path, "a.txt")); got != "old\n" {
		t.Errorf("real a.txt = %q", got)
	}
	for _, n := range []string{"b.txt", "d"} {
		if _, err := os.Lstat(filepath.Join(s.Path, n)); !os.IsNotExist(err) {
			t.Errorf("real %s exists: %v", n, err)
		}
	}
	if got := readFile(t, filepath.Join(s.Path, "gone.txt")); got != "x" {
		t.Errorf("real gone.txt = %q", got)
	}
	if res.Usage.DiskBytes == 0 || res.Usage.Wall <= 0 {
		t.Errorf("usage not measured: %+v", res.Usage)
	}
}

// TestScopeOutsideTmp: a scope on the root filesystem (not under /tmp).
func TestScopeOutsideTmp(t *testing.T) {
	requireIsolation(t)
	base, err := os.MkdirTemp("/var/tmp", "act-isolate-test-")
	if err != nil {
		t.Skipf("no writable /var/tmp: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	s := newScope(t, base, map[string]string{"a": "1"})
	mustExit(t, sh(t, "echo 2 > "+s.Path+"/a && touch "+base+"/beside", []Scope{s}, Limits{}), 1)
	if got := readFile(t, filepath.Join(s.Upper, "a")); got != "2\n" {
		t.Errorf("upper a = %q", got)
	}
	if _, err := os.Lstat(filepath.Join(base, "beside")); !os.IsNotExist(err) {
		t.Errorf("a file beside the scope was created: %v", err)
	}
}

// TestWriteOutsideScopeFails: everything but the scopes, /tmp and /dev/shm
// is read-only, submounts included.
func TestWriteOutsideScopeFails(t *testing.T) {
	requireIsolation(t)
	home, _ := os.UserHomeDir()
	target := filepath.Join(home, fmt.Sprintf(".act-isolate-escape-%d", time.Now().UnixNano()))
	for _, p := range []string{"/etc/act-isolate-escape", "/var/tmp/act-isolate-escape", target, "/sys/fs/cgroup/memory/act-escape", "/dev/act-escape"} {
		t.Run(p, func(t *testing.T) {
			res := sh(t, "mkdir "+p+" || exit 3", nil, Limits{})
			mustExit(t, res, 3)
			if _, err := os.Lstat(p); !os.IsNotExist(err) {
				os.Remove(p)
				t.Fatalf("%s was created on the host", p)
			}
		})
	}
	res := sh(t, "echo x > /tmp/ok && echo y > /dev/shm/ok && echo z > /dev/null && cat /tmp/ok /dev/shm/ok", nil, Limits{})
	mustExit(t, res, 0)
	if string(res.Stdout) != "x\ny\n" {
		t.Errorf("stdout %q", res.Stdout)
	}
}

// TestTmpIsPrivate: the host's /tmp is not visible, and what the command
// writes there is gone.
func TestTmpIsPrivate(t *testing.T) {
	requireIsolation(t)
	f, err := os.CreateTemp("", "act-isolate-host-")
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	defer os.Remove(f.Name())
	inside := fmt.Sprintf("/tmp/act-isolate-inside-%d", time.Now().UnixNano())
	res := sh(t, fmt.Sprintf("test ! -e %s && test -z \"$(ls -A /tmp)\" && touch %s", f.Name(), inside), nil, Limits{})
	mustExit(t, res, 0)
	if _, err := os.Lstat(inside); !os.IsNotExist(err) {
		os.Remove(inside)
		t.Fatalf("%s leaked to the host", inside)
	}
}

// TestNoNetwork: a port the test listens on is unreachable from inside,
// and reachable with AllowNetwork (the control).
func TestNoNetwork(t *testing.T) {
	requireIsolation(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	argv := []string{"bash", "-c", fmt.Sprintf("exec 3<>/dev/tcp/127.0.0.1/%d", port)}
	for _, allow := range []bool{false, true} {
		res, err := Run(context.Background(), Spec{Argv: argv, Env: pathEnv, AllowNetwork: allow, Limits: Limits{WallMs: 10_000}})
		if err != nil {
			t.Fatal(err)
		}
		if connected := res.ExitCode == 0; connected != allow {
			t.Errorf("AllowNetwork=%v: connected=%v (stderr %s)", allow, connected, res.Stderr)
		}
	}
}

// TestNoBackgroundExecution: a double-forked daemon in its own session does
// not survive the command's main process.
func TestNoBackgroundExecution(t *testing.T) {
	requireIsolation(t)
	token := fmt.Sprintf("%d.%d", 3000+time.Now().UnixNano()%1000, time.Now().UnixNano()%1_000_000)
	s := newScope(t, t.TempDir(), nil)
	res := sh(t, fmt.Sprintf(`sh -c 'setsid sleep %s </dev/null >/dev/null 2>&1 & echo $! > %s/pid'; sleep 0.2; kill -0 $(cat %s/pid) && echo alive`, token, s.Path, s.Path),
		[]Scope{s}, Limits{})
	mustExit(t, res, 0)
	if string(res.Stdout) != "alive\n" {
		t.Fatalf("the daemon was not running while the command ran: %q %s", res.Stdout, res.Stderr)
	}
	if _, err := os.Stat(filepath.Join(s.Upper, "pid")); err != nil {
		t.Fatalf("no pid file in the layer: %v", err)
	}
	if pids := processesWithArg(token); len(pids) > 0 {
		for _, p := range pids {
			syscall.Kill(p, syscall.SIGKILL)
		}
		t.Fatalf("the daemon survived: pids %v", pids)
	}
}

// processesWithArg lists host processes that have arg in their command line.
func processesWithArg(arg string) []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		var pid int
		if _, err := fmt.Sscan(e.Name(), &pid); err != nil {
			continue
		}
		b, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		for _, a := range bytes.Split(b, []byte{0}) {
			if string(a) == arg {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

// TestWallClockCap: a sleeper past the wall clock is killed by the cap,
// with everything it started, and the cap is named. The sleeps are far
// longer than the test may hang: Run returning at all means it did not
// wait for them.
func TestWallClockCap(t *testing.T) {
	requireIsolation(t)
	token := fmt.Sprintf("%d.%06d", 3600+time.Now().UnixNano()%1000, time.Now().UnixNano()%1_000_000)
	script := "sleep " + token + " & sleep " + token
	type ran struct {
		res *Result
		err error
	}
	done := make(chan ran, 1)
	go func() {
		res, err := Run(context.Background(), Spec{Argv: []string{"sh", "-c", script}, Env: pathEnv, Limits: Limits{WallMs: 300}})
		done <- ran{res, err}
	}()
	var res *Result
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatalf("Run(%q): %v", script, r.err)
		}
		res = r.res
	case <-time.After(hangGuard):
		t.Fatalf("Run hung: no result %v into a run with a wall clock cap of 300 ms", hangGuard)
	}
	if res.CapHit == nil || res.CapHit.Cap != CapWall || res.CapHit.Limit != 300 || res.Signal != syscall.SIGKILL {
		t.Fatalf("cap %v, signal %v, exit %d", res.CapHit, res.Signal, res.ExitCode)
	}
	if pids := processesWithArg(token); len(pids) > 0 {
		for _, p := range pids {
			syscall.Kill(p, syscall.SIGKILL)
		}
		t.Fatalf("sleeps the command started outlived the cap: pids %v", pids)
	}
	t.Log(res.CapHit)
}

// TestMemoryCap: a memory hog is killed and the cap named.
func TestMemoryCap(t *testing.T) {
	requireIsolation(t)
	res := sh(t, "tail /dev/zero", nil, Limits{MemoryMB: 32, WallMs: 20_000})
	if res.CapHit == nil || res.CapHit.Cap != CapMemory || res.CapHit.Limit != 32 {
		t.Fatalf("cap %v, signal %v, exit %d, usage %+v, enforcement %v\nstderr %s", res.CapHit, res.Signal, res.ExitCode, res.Usage, res.Enforcement, res.Stderr)
	}
	if res.ExitCode == 0 {
		t.Errorf("the hog succeeded")
	}
	t.Log(res.CapHit, res.Usage)
}

// TestCPUCap: a CPU spinner is killed and the cap named: the CPU cap,
// long before the wall clock's.
func TestCPUCap(t *testing.T) {
	requireIsolation(t)
	res := sh(t, "while :; do :; done", nil, Limits{CPUMs: 300, WallMs: 120_000})
	if res.CapHit == nil || res.CapHit.Cap != CapCPU || res.CapHit.Limit != 300 {
		t.Fatalf("cap %v, signal %v, exit %d, usage %+v", res.CapHit, res.Signal, res.ExitCode, res.Usage)
	}
	t.Log(res.CapHit, res.Usage)
}

// TestDiskCap: a file bigger than the disk cap is stopped and named.
func TestDiskCap(t *testing.T) {
	requireIsolation(t)
	s := newScope(t, t.TempDir(), nil)
	res := sh(t, "head -c 8388608 /dev/zero > "+s.Path+"/big", []Scope{s}, Limits{DiskMB: 1})
	if res.CapHit == nil || res.CapHit.Cap != CapDisk || res.ExitCode == 0 {
		t.Fatalf("cap %v, signal %v, exit %d, usage %+v", res.CapHit, res.Signal, res.ExitCode, res.Usage)
	}
	if res.Usage.DiskBytes > 1<<20 {
		t.Errorf("layer holds %d bytes", res.Usage.DiskBytes)
	}
	t.Log(res.CapHit)
}

// TestNoPrivilegeInside: mount, umount, remount, unshare and the like fail;
// the command has no capabilities and no_new_privs.
func TestNoPrivilegeInside(t *testing.T) {
	requireIsolation(t)
	for _, cmd := range []string{
		"mount -t tmpfs none /tmp",
		"mount -o remount,rw /",
		"mount --bind /tmp /etc",
		"umount /tmp",
		"umount -l /proc",
		"unshare -m true",
		"unshare -U true",
		"unshare -Ur true",
		"unshare -n true",
		"chroot / true",
		"hostname evil",
	} {
		t.Run(cmd, func(t *testing.T) {
			res := sh(t, cmd+" 2>/dev/null && echo ESCAPED", nil, Limits{})
			if strings.Contains(string(res.Stdout), "ESCAPED") {
				t.Fatalf("%q succeeded", cmd)
			}
		})
	}
	res := sh(t, "grep -E '^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs)' /proc/self/status", nil, Limits{})
	mustExit(t, res, 0)
	for _, line := range strings.Split(strings.TrimSpace(string(res.Stdout)), "\n") {
		k, v, _ := strings.Cut(line, ":")
		v = strings.TrimSpace(v)
		if (k == "NoNewPrivs" && v != "1") || (k != "NoNewPrivs" && v != "0000000000000000") {
			t.Errorf("%s: %s", k, v)
		}
	}
}

// TestPIDNamespace: the command sees only its own processes, with init as 1.
func TestPIDNamespace(t *testing.T) {
	requireIsolation(t)
	res := sh(t, "ls /proc | grep -E '^[0-9]+$' | sort -n | tr '\\n' ' '; echo; echo $$", nil, Limits{})
	mustExit(t, res, 0)
	lines := strings.Split(strings.TrimSpace(string(res.Stdout)), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "1 2 ") || lines[1] != "2" {
		t.Errorf("processes: %q", res.Stdout)
	}
}

// TestRunDetails: exit codes, signals, stdin, env, workdir, output caps and
// setup errors.
func TestRunDetails(t *testing.T) {
	requireIsolation(t)
	ctx := context.Background()
	res, err := Run(ctx, Spec{Argv: []string{"sh", "-c", `cat; echo "$FOO"; pwd; exit 7`}, Env: append(pathEnv, "FOO=bar"),
		Workdir: "/usr", Stdin: []byte("in\n"), Limits: Limits{WallMs: 10_000}})
	if err != nil {
		t.Fatal(err)
	}
	mustExit(t, res, 7)
	if string(res.Stdout) != "in\nbar\n/usr\n" {
		t.Errorf("stdout %q", res.Stdout)
	}

	res, err = Run(ctx, Spec{Argv: []string{"sh", "-c", "kill -TERM $$"}, Env: pathEnv, Limits: Limits{WallMs: 10_000}})
	if err != nil || res.Signal != syscall.SIGTERM || res.ExitCode != -1 {
		t.Errorf("signal: %+v %v", res, err)
	}

	res, err = Run(ctx, Spec{Argv: []string{"sh", "-c", "head -c 100000 /dev/zero; head -c 10 /dev/zero >&2"}, Env: pathEnv,
		MaxStdout: 1000, MaxStderr: 10, Limits: Limits{WallMs: 10_000}})
	if err != nil || len(res.Stdout) != 1000 || !res.StdoutCut || len(res.Stderr) != 10 || res.StderrCut {
		t.Errorf("caps: %d %v %d %v %v", len(res.Stdout), res.StdoutCut, len(res.Stderr), res.StderrCut, err)
	}

	_, err = Run(ctx, Spec{Argv: []string{"no-such-command-xyz"}, Env: pathEnv, Limits: Limits{WallMs: 10_000}})
	var se *SetupError
	if !errors.As(err, &se) || !strings.Contains(se.Msg, "exec no-such-command-xyz") {
		t.Errorf("missing command: %v", err)
	}

	_, err = Run(ctx, Spec{Argv: []string{"true"}, Scopes: []Scope{{Path: "/nonexistent-act", Upper: "/x", Work: "/y"}}, Limits: Limits{WallMs: 10_000}})
	if !errors.As(err, &se) {
		t.Errorf("bad scope: %v", err)
	}

	if _, err = Run(ctx, Spec{Argv: []string{"true"}, Workdir: "rel"}); err == nil {
		t.Errorf("relative workdir accepted")
	}

	cctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if _, err = Run(cctx, Spec{Argv: []string{"sleep", "10"}, Env: pathEnv}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("ctx: %v", err)
	}
}

// TestAsNobody re-runs the basic tests as uid 65534 (unprivileged user
// namespaces, no writable cgroups: the rlimit fallbacks).
func TestAsNobody(t *testing.T) {
	t.Parallel() // a child process: beside TestProcessAsNobody's
	if os.Getenv("ACT_ISOLATE_TEST_NOBODY") != "" {
		t.Skip("already nobody")
	}
	out := asNobody(t, nil, "ACT_ISOLATE_TEST_NOBODY=1",
		"^(TestNobodyEnforcement|TestMemoryAttack|TestScopeWritesLandInUpper|TestDiskCap|TestDiskCapManySmallFiles|TestDiskCapCountsTmpAndSparse|TestDiskCapLayerAsInPlace|TestWriteOutsideScopeFails|TestTmpIsPrivate|TestNoNetwork|TestNoBackgroundExecution|TestWallClockCap|TestNoPrivilegeInside|TestPIDNamespace|TestWarm|TestBefore|TestReadAllowList|TestProxy|TestCaches|TestCachesOwn|TestUppers)$")
	if bytes.Contains(out, []byte("--- SKIP")) {
		t.Errorf("tests skipped as uid 65534")
	}
}

// asNobody runs the tests matching run in a copy of this test binary as uid
// 65534, its argv after prefix (a command that execs the rest), with env
// added, and returns the output; a failing child fails t. It skips t
// unless it runs as root with setpriv(1).
func asNobody(t *testing.T, prefix []string, env, run string) []byte {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("needs root to switch to uid 65534")
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("setpriv not found")
	}
	requireIsolation(t)
	// A copy of this test binary that uid 65534 can execute.
	dir, err := os.MkdirTemp("", "act-isolate-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755)
	self, _ := os.Executable()
	bin := filepath.Join(dir, "isolate.test")
	// A hard link where it can be: a copy written here while another
	// test's goroutine forks may still be open for writing in that child
	// when it is run ("text file busy").
	if os.Link(self, bin) != nil {
		data, err := os.ReadFile(self)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(bin, data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// 0755 whatever the umask: go test wrote the binary, and WriteFile
	// the copy, with the umask's mode (0700 under umask 077), and the
	// sandbox re-executes it as uid 65534.
	if err := os.Chmod(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	args := append(append([]string{"--reuid=65534", "--regid=65534", "--clear-groups"}, prefix...), bin, "-test.run="+run, "-test.v")
	cmd := exec.Command(setpriv, args...)
	cmd.Env = []string{env, "PATH=/usr/bin:/bin", "HOME=/nonexistent", "TMPDIR=/tmp"}
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	t.Logf("as uid 65534:\n%s", out)
	if err != nil {
		t.Fatalf("as uid 65534: %v", err)
	}
	return out
}

// TestNobodyEnforcement checks, as uid 65534 without a writable cgroup,
// that the fallbacks are named: a memory cap is RLIMIT_AS per process,
// and refused where a total cap is demanded.
func TestNobodyEnforcement(t *testing.T) {
	if os.Getenv("ACT_ISOLATE_TEST_NOBODY") == "" {
		t.Skip("run by TestAsNobody")
	}
	requireIsolation(t)
	res := sh(t, "id -u", nil, Limits{CPUMs: 1000, DiskMB: 10})
	mustExit(t, res, 0)
	if string(res.Stdout) != "65534\n" {
		t.Errorf("uid %q", res.Stdout)
	}
	t.Log(res.Enforcement)
	if res.Enforcement[CapProcs] != "RLIMIT_NPROC" || res.Enforcement[CapCPU] != "RLIMIT_CPU per process, total checked after the run" {
		t.Errorf("enforcement %v", res.Enforcement)
	}
	res = sh(t, "true", nil, Limits{MemoryMB: 64, WallMs: 5000})
	mustExit(t, res, 0)
	if res.Enforcement[CapMemory] != MemoryPerProcess {
		t.Errorf("a memory cap without a memory cgroup: %q", res.Enforcement[CapMemory])
	}
	_, err := Run(context.Background(), Spec{Argv: []string{"true"}, Env: pathEnv, Limits: Limits{MemoryMB: 64, WallMs: 5000, MemoryTotal: true}})
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "no writable memory cgroup, and the policy demands a total memory cap (resources.memory_enforcement: total); run as root or in a delegated cgroup (systemd-run --user --scope -p Delegate=yes") {
		t.Errorf("a total memory cap without a memory cgroup: %v", err)
	}
}

func BenchmarkRunTrueVsUnshare(b *testing.B) {
	requireIsolation(b)
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		b.Skip("unshare not found")
	}
	ctx := context.Background()
	spec := Spec{Argv: []string{"/bin/true"}, Limits: Limits{WallMs: 10_000, MemoryMB: 256, CPUMs: 10_000, DiskMB: 100}}
	var tRun, tUnshare time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		res, err := Run(ctx, spec)
		if err != nil || res.ExitCode != 0 {
			b.Fatal(res, err)
		}
		t1 := time.Now()
		if err := exec.Command(unshare, "-U", "-m", "-p", "-n", "--fork", "true").Run(); err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		tRun += t1.Sub(t0)
		tUnshare += t2.Sub(t1)
	}
	b.ReportMetric(float64(tRun.Microseconds())/float64(b.N), "run-µs/op")
	b.ReportMetric(float64(tUnshare.Microseconds())/float64(b.N), "unshare-µs/op")
	b.ReportMetric(float64(tRun)/float64(tUnshare), "run/unshare")
}

// TestProcsCap: a fork loop stops at the process cap and the cap is named
// where a pids cgroup enforces it.
func TestProcsCap(t *testing.T) {
	requireIsolation(t)
	res := sh(t, "i=0; while [ $i -lt 100 ]; do sleep 1 & i=$((i+1)); done; wait", nil, Limits{Procs: 20, WallMs: 20_000})
	if res.Enforcement[CapProcs] != "cgroup v1 pids.max" {
		t.Skipf("process cap enforced by %s, not detectable", res.Enforcement[CapProcs])
	}
	if res.CapHit == nil || res.CapHit.Cap != CapProcs || res.CapHit.Limit != 20 {
		t.Fatalf("cap %v, exit %d, stderr %.200s", res.CapHit, res.ExitCode, res.Stderr)
	}
	t.Log(res.CapHit)
}

// TestCommandInCgroups: where a cap is enforced by a cgroup, the command
// runs in the sandbox's own cgroup of that controller (init joins them
// itself, through the tasks files sent with the spec, before the fork).
func TestCommandInCgroups(t *testing.T) {
	requireIsolation(t)
	res := sh(t, "cat /proc/self/cgroup", nil, Limits{MemoryMB: 64, CPUMs: 1000})
	mustExit(t, res, 0)
	n := 0
	for ctl, c := range map[string]Cap{"memory": CapMemory, "pids": CapProcs, "cpuacct": CapCPU} {
		if !strings.HasPrefix(res.Enforcement[c], "cgroup v1") {
			continue
		}
		n++
		in := false
		for _, line := range strings.Split(string(res.Stdout), "\n") {
			parts := strings.SplitN(line, ":", 3)
			if len(parts) == 3 && strings.Contains(","+parts[1]+",", ","+ctl+",") &&
				strings.Contains(filepath.Base(parts[2]), "act-sandbox-") {
				in = true
			}
		}
		if !in {
			t.Errorf("%s (%s): the command is not in the sandbox's cgroup:\n%s", ctl, res.Enforcement[c], res.Stdout)
		}
	}
	t.Logf("%d cgroup controllers checked", n)
}

// TestDiskCapManySmallFiles: files each far below the cap, adding up to more
// than it, are stopped by the tmpfs (ENOSPC, no per-file limit involved)
// and the disk cap is named; the layer keeps what fitted.
func TestDiskCapManySmallFiles(t *testing.T) {
	requireIsolation(t)
	s := newScope(t, t.TempDir(), nil)
	res := sh(t, `cd `+s.Path+` && i=0; while [ $i -lt 400 ]; do i=$((i+1)); head -c 8192 /dev/zero > f$i || exit 1; done`,
		[]Scope{{Path: s.Path, Upper: s.Upper}}, Limits{DiskMB: 1})
	if res.CapHit == nil || res.CapHit.Cap != CapDisk || res.CapHit.Limit != 1 || !strings.Contains(res.CapHit.Mechanism, "tmpfs of 1 MiB") {
		t.Fatalf("cap %v, signal %v, exit %d, usage %+v\nstderr %s", res.CapHit, res.Signal, res.ExitCode, res.Usage, res.Stderr)
	}
	if res.ExitCode != 1 || !strings.Contains(string(res.Stderr), "No space left on device") {
		t.Errorf("exit %d, stderr %q: want the command's own ENOSPC failure", res.ExitCode, res.Stderr)
	}
	ents, err := os.ReadDir(s.Upper)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) < 100 || len(ents) >= 400 {
		t.Errorf("the layer holds %d files", len(ents))
	}
	if n := treeBytes(s.Upper); n > 1<<20 || n != res.Usage.DiskBytes {
		t.Errorf("the layer holds %d bytes, usage says %d", n, res.Usage.DiskBytes)
	}
	t.Log(res.CapHit, len(ents), "files")
}

// TestDiskCapCountsTmpAndSparse: /tmp and /dev/shm share the cap with the
// layers, and a sparse file, which takes no room in the tmpfs, is counted
// at its size when the layer is copied out.
func TestDiskCapCountsTmpAndSparse(t *testing.T) {
	requireIsolation(t)
	s := newScope(t, t.TempDir(), nil)
	sc := []Scope{{Path: s.Path, Upper: s.Upper}}
	res := sh(t, `head -c 700000 /dev/zero > /tmp/a && head -c 700000 /dev/zero > /dev/shm/b`, sc, Limits{DiskMB: 1})
	if res.CapHit == nil || res.CapHit.Cap != CapDisk || res.ExitCode == 0 {
		t.Errorf("/tmp and /dev/shm: cap %v, exit %d, stderr %s", res.CapHit, res.ExitCode, res.Stderr)
	}
	res = sh(t, `cd `+s.Path+` && head -c 300000 /dev/zero > a && cd /tmp && head -c 300000 /dev/zero > b`, sc, Limits{DiskMB: 1})
	mustExit(t, res, 0)
	if res.CapHit != nil || res.Usage.DiskBytes != 300000 {
		t.Errorf("within the cap: cap %v, usage %+v", res.CapHit, res.Usage)
	}
	res = sh(t, `truncate -s 100M `+s.Path+`/sparse`, sc, Limits{DiskMB: 1})
	if res.CapHit == nil || res.CapHit.Cap != CapDisk || !strings.Contains(res.CapHit.Mechanism, "add up") {
		t.Errorf("sparse: cap %v, exit %d, stderr %s", res.CapHit, res.ExitCode, res.Stderr)
	}
	if fi, err := os.Stat(filepath.Join(s.Upper, "sparse")); err == nil {
		t.Errorf("the sparse file was copied out: %d bytes", fi.Size())
	}
}

// layerEntries describes every entry below dir: type, mode, size, content
// digest, symlink target, device number and user.* xattrs, and the mtime
// of regular files when mtimes is set. user.overlay.uuid, which each
// overlay mount makes anew, is left out.
func layerEntries(t *testing.T, dir string, mtimes bool) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		st := fi.Sys().(*syscall.Stat_t)
		desc := fmt.Sprintf("%v", fi.Mode())
		switch {
		case fi.Mode().IsRegular():
			desc += fmt.Sprintf(" %q", readFile(t, p))
			if mtimes {
				desc += " " + fi.ModTime().UTC().Format(time.RFC3339Nano)
			}
		case fi.Mode()&os.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			desc += " -> " + target
		case fi.Mode()&os.ModeDevice != 0:
			desc += fmt.Sprintf(" rdev %d", st.Rdev)
		}
		if fi.Mode().IsRegular() || fi.IsDir() {
			buf := make([]byte, 4096)
			n, _ := syscall.Listxattr(p, buf)
			for _, name := range strings.Split(string(buf[:n]), "\x00") {
				if strings.HasPrefix(name, "user.") && name != "user.overlay.uuid" {
					v := make([]byte, 4096)
					m, _ := syscall.Getxattr(p, name, v)
					desc += fmt.Sprintf(" %s=%q", name, v[:max(m, 0)])
				}
			}
		}
		out[rel] = desc
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
