package isolate

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

const marker = "_ACT_SANDBOX_FD"

// Capabilities that init needs (linux/capability.h).
const (
	capDacOverride = 1
	capSetpcap     = 8
	capNetAdmin    = 12
	capSysAdmin    = 21
	capSysResource = 24
)

// Run runs spec.Argv in a new sandbox and waits for it. A run that started
// gives a Result, whatever the command's exit; an error means the sandbox
// could not be built or the command not started (a [*SetupError], or one
// wrapping [ErrUnavailable]), or ctx ended first (ctx.Err()).
func Run(ctx context.Context, spec Spec) (*Result, error) {
	return run(ctx, spec, false)
}

func run(ctx context.Context, spec Spec, probe bool) (*Result, error) {
	if !childLinked {
		return nil, fmt.Errorf("%w: act was built without cgo, so the sandbox child is missing", ErrUnavailable)
	}
	payload, err := encode(spec, probe)
	if err != nil {
		return nil, err
	}
	l := spec.Limits
	procs := l.Procs
	if procs <= 0 {
		procs = DefaultMaxProcs
	}

	uid, gid := os.Getuid(), os.Getgid()
	// The cgroups are made while the child starts (a few mkdirs and writes
	// in cgroupfs, in parallel with the fork and exec); init joins them
	// through their tasks files, which it receives with the spec.
	cgReady := make(chan *cgroupV1, 1)
	go func() { cgReady <- newCgroupV1(l, procs) }()
	var cg *cgroupV1
	defer func() {
		if cg == nil {
			cg = <-cgReady
		}
		cg.remove()
	}()

	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("sandbox: socketpair: %w", err)
	}
	parent := os.NewFile(uintptr(fds[0]), "sandbox-spec")
	child := os.NewFile(uintptr(fds[1]), "sandbox-spec-child")
	defer parent.Close()

	flags := uintptr(syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID |
		syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS)
	if !spec.AllowNetwork {
		flags |= syscall.CLONE_NEWNET
	}
	stdout := &capped{max: orDefault(spec.MaxStdout)}
	stderr := &capped{max: orDefault(spec.MaxStderr)}
	cmd := &exec.Cmd{
		Path:       "/proc/self/exe",
		Args:       []string{"act-sandbox"},
		Env:        []string{marker + "=3"},
		Stdout:     stdout,
		Stderr:     stderr,
		ExtraFiles: []*os.File{child},
		WaitDelay:  time.Second,
		SysProcAttr: &syscall.SysProcAttr{
			Cloneflags:  flags,
			UidMappings: []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
			GidMappings: []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}},
			Pdeathsig:   syscall.SIGKILL,
		},
	}
	if uid != 0 {
		// An ordinary user loses the namespace's capabilities at execve;
		// ambient ones survive it, for init only (the command drops all).
		cmd.SysProcAttr.AmbientCaps = []uintptr{capDacOverride, capSetpcap, capNetAdmin, capSysAdmin, capSysResource}
	}
	if len(spec.Stdin) > 0 {
		cmd.Stdin = bytes.NewReader(spec.Stdin)
	}
	start := time.Now()
	err = cmd.Start()
	child.Close()
	if err != nil {
		return nil, fmt.Errorf("%w: start the sandbox (new user, mount, PID, IPC, UTS, network namespaces): %v%s",
			ErrUnavailable, err, usernsHint(err))
	}
	cg = <-cgReady
	enf := map[Cap]string{}
	var rl rlimits
	if l.WallMs > 0 {
		enf[CapWall] = "SIGKILL of the PID namespace by the parent"
	}
	if l.MemoryMB > 0 {
		if cg.memory != "" {
			enf[CapMemory] = "cgroup v1 memory.limit_in_bytes"
		} else {
			enf[CapMemory] = "RLIMIT_AS"
			rl.as = l.MemoryMB << 20
		}
	}
	if l.CPUMs > 0 {
		rl.cpuS = (l.CPUMs + 999) / 1000
		if cg.cpuacct != "" {
			enf[CapCPU] = "cgroup v1 cpuacct.usage polled by the parent, and RLIMIT_CPU per process"
		} else {
			enf[CapCPU] = "RLIMIT_CPU per process, total checked after the run"
		}
	}
	if l.DiskMB > 0 {
		enf[CapDisk] = diskMechanism(l.DiskMB) + " holding the layers' upper dirs, /tmp and /dev/shm"
	}
	if cg.pids != "" {
		enf[CapProcs] = "cgroup v1 pids.max"
	} else {
		enf[CapProcs] = "RLIMIT_NPROC"
		if uid == 0 {
			enf[CapProcs] = "none: no writable pids cgroup, and RLIMIT_NPROC does not bind root"
		}
		rl.nproc = procs
	}
	payload = rl.append(payload, l.DiskMB<<20)

	msgs := make(chan []string, 1)
	go func() {
		var out []string
		sc := bufio.NewScanner(parent)
		for sc.Scan() {
			out = append(out, sc.Text())
		}
		msgs <- out
	}()
	// The spec goes after the cgroups' tasks files, which init joins
	// before it forks the command: nothing runs outside them. A lost
	// descriptor fails the run (init checks the count).
	err = nil
	if len(cg.join) > 0 {
		rights := make([]int, len(cg.join))
		for i, f := range cg.join {
			rights[i] = int(f.Fd())
		}
		head := append(append(append([]byte("cgroups"), 0), strconv.Itoa(len(rights))...), 0)
		err = syscall.Sendmsg(fds[0], head, syscall.UnixRights(rights...), nil, 0)
	}
	cg.closeJoin()
	if err == nil {
		// A short write leaves init a truncated spec, which it refuses.
		_, _ = parent.Write(payload)
	}
	_ = syscall.Shutdown(fds[0], syscall.SHUT_WR)

	var (
		mu     sync.Mutex
		hit    *CapHit
		killed bool
	)
	kill := func(h *CapHit) {
		mu.Lock()
		defer mu.Unlock()
		if !killed {
			killed = true
			hit = h
			_ = cmd.Process.Signal(syscall.SIGKILL)
		}
	}
	done := make(chan struct{})
	go func() {
		var wall <-chan time.Time
		if l.WallMs > 0 {
			t := time.NewTimer(time.Duration(l.WallMs) * time.Millisecond)
			defer t.Stop()
			wall = t.C
		}
		var poll <-chan time.Time
		if l.CPUMs > 0 && cg.cpuacct != "" {
			every := min(max(time.Duration(l.CPUMs)*time.Millisecond/20, 10*time.Millisecond), 100*time.Millisecond)
			tk := time.NewTicker(every)
			defer tk.Stop()
			poll = tk.C
		}
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				kill(nil)
				return
			case <-wall:
				kill(&CapHit{Cap: CapWall, Limit: l.WallMs, Unit: "ms", Mechanism: enf[CapWall]})
				return
			case <-poll:
				if u, ok := cg.cpuUsage(); ok && u > time.Duration(l.CPUMs)*time.Millisecond {
					kill(&CapHit{Cap: CapCPU, Limit: l.CPUMs, Unit: "ms", Mechanism: "cgroup v1 cpuacct.usage polled by the parent"})
					return
				}
			}
		}
	}()
	waitErr := cmd.Wait()
	close(done)
	wall := time.Since(start)
	lines := <-msgs

	mu.Lock()
	defer mu.Unlock()
	if killed && hit == nil && ctx.Err() != nil {
		return nil, ctx.Err()
	}
	status := -1
	var disk *diskReport
	for _, m := range lines {
		switch {
		case strings.HasPrefix(m, "E"):
			return nil, &SetupError{Msg: m[1:]}
		case strings.HasPrefix(m, "C"):
			return nil, fmt.Errorf("sandbox: %s", m[1:])
		case strings.HasPrefix(m, "D"):
			disk = &diskReport{}
			if _, err := fmt.Sscan(m[1:], &disk.free, &disk.freeInodes, &disk.layer, &disk.over); err != nil {
				return nil, fmt.Errorf("sandbox: bad report from init: %q", m)
			}
		case strings.HasPrefix(m, "S"):
			status, _ = strconv.Atoi(m[1:])
		}
	}
	if cmd.ProcessState == nil {
		return nil, fmt.Errorf("sandbox: wait: %w", waitErr)
	}
	res := &Result{
		Stdout: stdout.buf, StdoutCut: stdout.cut,
		Stderr: stderr.buf, StderrCut: stderr.cut,
		Enforcement: enf,
		CapHit:      hit,
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		res.Usage.CPU = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		res.Usage.MaxRSSKiB = ru.Maxrss
	}
	if u, ok := cg.cpuUsage(); ok && u > res.Usage.CPU {
		res.Usage.CPU = u
	}
	res.Usage.Wall = wall
	if disk != nil {
		res.Usage.DiskBytes = disk.layer // counted by init while it copied the layers out
	} else {
		for _, s := range spec.Scopes {
			res.Usage.DiskBytes += treeBytes(s.Upper)
		}
	}

	ws := syscall.WaitStatus(status)
	switch {
	case status >= 0 && ws.Exited():
		res.ExitCode = ws.ExitStatus()
	case status >= 0 && ws.Signaled():
		res.ExitCode, res.Signal = -1, ws.Signal()
	default: // init itself was killed: by us, or from outside
		res.ExitCode, res.Signal = -1, syscall.SIGKILL
		if !killed && !(l.MemoryMB > 0 && cg.oomKills() > 0) {
			// The memory cgroup's OOM killer may pick init itself: that
			// is the memory cap, named below; anything else is an error.
			return nil, fmt.Errorf("sandbox: init ended without a status: %v", waitErr)
		}
	}
	if res.CapHit == nil {
		res.CapHit = capHitAfter(res, l, procs, cg, rl, enf, disk)
	}
	return res, nil
}

// diskReport is what init reports of the disk cap's tmpfs after the run:
// its free bytes and inodes, and the apparent size of the layers it copied
// out (over: more than the cap, and the copy stopped).
type diskReport struct {
	free, freeInodes, layer int64
	over                    int
}

// diskFullSlack is how little room a tmpfs may have left and be full: a
// write fails once no page is free.
const diskFullSlack = 16 << 10

func diskMechanism(mb int64) string { return fmt.Sprintf("a tmpfs of %d MiB", mb) }

// allocFailure matches the ways programs report a refused allocation.
var allocFailure = regexp.MustCompile(`(?i)memory exhausted|cannot allocate memory|out of memory|MemoryError|bad_alloc|ENOMEM|allocation failed|failed to allocate|heap out of memory`)

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// capHitAfter names the cap that ended or rejects a finished run, if any.
func capHitAfter(res *Result, l Limits, procs int64, cg *cgroupV1, rl rlimits, enf map[Cap]string, disk *diskReport) *CapHit {
	diskHit := func(why string) *CapHit {
		return &CapHit{Cap: CapDisk, Limit: l.DiskMB, Unit: "MiB", Mechanism: diskMechanism(l.DiskMB) + ", " + why}
	}
	switch {
	case l.MemoryMB > 0 && cg.oomKills() > 0:
		return &CapHit{Cap: CapMemory, Limit: l.MemoryMB, Unit: "MiB", Mechanism: enf[CapMemory]}
	case l.MemoryMB > 0 && cg.memory == "" && res.ExitCode != 0 && allocFailure.Match(tail(res.Stderr, 4096)):
		// RLIMIT_AS refuses an allocation rather than killing: the
		// command fails, saying so in its own words.
		return &CapHit{Cap: CapMemory, Limit: l.MemoryMB, Unit: "MiB", Mechanism: "RLIMIT_AS (the command reported a failed allocation)"}
	case l.CPUMs > 0 && (res.Signal == syscall.SIGXCPU || res.Signal == syscall.SIGKILL) &&
		res.Usage.CPU >= time.Duration(rl.cpuS)*time.Second:
		return &CapHit{Cap: CapCPU, Limit: l.CPUMs, Unit: "ms", Mechanism: "RLIMIT_CPU"}
	case l.CPUMs > 0 && res.Usage.CPU > time.Duration(l.CPUMs)*time.Millisecond:
		return &CapHit{Cap: CapCPU, Limit: l.CPUMs, Unit: "ms", Mechanism: "total CPU time measured after the run"}
	case disk != nil && disk.over != 0:
		return diskHit("and the layers' files add up to more (sparse files and hard links counted at their size)")
	case disk != nil && (disk.free < diskFullSlack || disk.freeInodes == 0):
		return diskHit("full after the run")
	// Not named: a request larger than the room left (fallocate), which
	// fails without filling the tmpfs, nor a tmpfs full during the run and
	// emptied before its end. The command's own ENOSPC error tells those,
	// and ENOSPC has other causes (unshare past max_user_namespaces).
	case l.DiskMB > 0 && res.Usage.DiskBytes > l.DiskMB<<20:
		return &CapHit{Cap: CapDisk, Limit: l.DiskMB, Unit: "MiB", Mechanism: "layer size measured after the run"}
	case cg.pidsMaxHits() > 0:
		return &CapHit{Cap: CapProcs, Limit: procs, Unit: "processes", Mechanism: enf[CapProcs]}
	}
	return nil
}

// treeBytes sums the sizes of the regular files under dir.
func treeBytes(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

func usernsHint(err error) string {
	if !errors.Is(err, syscall.EPERM) && !errors.Is(err, syscall.EACCES) && !errors.Is(err, syscall.ENOSPC) &&
		!errors.Is(err, syscall.EINVAL) {
		return ""
	}
	for _, f := range []string{"/proc/sys/kernel/unprivileged_userns_clone", "/proc/sys/user/max_user_namespaces"} {
		if b, err := os.ReadFile(f); err == nil && strings.TrimSpace(string(b)) == "0" {
			return fmt.Sprintf(" (%s is 0: user namespaces are disabled)", f)
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/apparmor_restrict_unprivileged_userns"); err == nil && strings.TrimSpace(string(b)) == "1" {
		return " (AppArmor restricts unprivileged user namespaces)"
	}
	return ""
}

func orDefault(n int) int {
	if n <= 0 {
		return DefaultMaxOutput
	}
	return n
}

// capped keeps the first max bytes written and drops the rest.
type capped struct {
	buf []byte
	max int
	cut bool
}

func (c *capped) Write(p []byte) (int, error) {
	room := c.max - len(c.buf)
	if len(p) > room {
		c.cut = true
		c.buf = append(c.buf, p[:max(room, 0)]...)
	} else {
		c.buf = append(c.buf, p...)
	}
	return len(p), nil
}

var _ io.Writer = (*capped)(nil)

var (
	availOnce sync.Once
	availErr  error
)

// Available reports whether commands can be isolated here; the error says
// what is missing. It builds a whole sandbox once (a scope overlay included,
// the command left out) and remembers the answer.
func Available() error {
	availOnce.Do(func() { availErr = probe() })
	return availErr
}

func probe() error {
	dir, err := os.MkdirTemp("", "act-isolate-probe-")
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	defer RemoveWorkDir(dir)
	sc := Scope{Path: filepath.Join(dir, "scope"), Upper: filepath.Join(dir, "upper"), Work: filepath.Join(dir, "work")}
	for _, d := range []string{sc.Path, sc.Upper, sc.Work} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return fmt.Errorf("%w: %v", ErrUnavailable, err)
		}
	}
	res, err := run(context.Background(), Spec{Scopes: []Scope{sc}, Limits: Limits{WallMs: 10_000, DiskMB: 1}}, true)
	if err != nil {
		if errors.Is(err, ErrUnavailable) {
			return err
		}
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	if res.ExitCode != 0 {
		return fmt.Errorf("%w: the probe sandbox ended with status %d, signal %v", ErrUnavailable, res.ExitCode, res.Signal)
	}
	return nil
}
