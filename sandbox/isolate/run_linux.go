package isolate

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The environment of the sandbox's first process: the spec socket's
// descriptor, and whether the network namespace is kept (nsexec.c).
const (
	marker    = "_ACT_SANDBOX_FD"
	markerNet = "_ACT_SANDBOX_NET"
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

	uid := os.Getuid()
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

	// The first process is started without namespaces, which lets the
	// runtime vfork it (for a new user namespace it forks: a copy of the
	// page tables, and copy-on-write faults in this process afterwards).
	// Its constructor (nsexec.c) unshares the namespaces, maps its IDs and
	// clones init as a child of this process, tells us init's PID and
	// exits. The output goes to pipes read here until every writer has
	// ended: init and all it started, or the first process if it failed.
	stdout := &capped{max: orDefault(spec.MaxStdout)}
	stderr := &capped{max: orDefault(spec.MaxStderr)}
	files, err := childFiles(spec.Stdin)
	if err != nil {
		child.Close()
		return nil, err
	}
	env := []string{marker + "=3"}
	if spec.AllowNetwork {
		env = append(env, markerNet+"=1")
	}
	start := time.Now()
	first, err := os.StartProcess("/proc/self/exe", []string{"act-sandbox"}, &os.ProcAttr{
		Env:   env,
		Files: []*os.File{files.in, files.outW, files.errW, child},
		Sys:   &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL},
	})
	for _, f := range []*os.File{files.in, files.outW, files.errW, child} {
		f.Close()
	}
	if err != nil {
		files.outR.Close()
		files.errR.Close()
		return nil, fmt.Errorf("%w: start the sandbox: %v", ErrUnavailable, err)
	}
	var copies sync.WaitGroup
	for _, c := range []struct {
		w *capped
		r *os.File
	}{{stdout, files.outR}, {stderr, files.errR}} {
		copies.Add(1)
		go func() {
			defer copies.Done()
			_, _ = io.Copy(c.w, c.r)
			c.r.Close()
		}()
	}
	firstDone := make(chan *os.ProcessState, 1)
	go func() {
		st, _ := first.Wait()
		firstDone <- st
	}()
	pidCh := make(chan int, 1)
	msgs := make(chan []string, 1)
	go func() {
		var out []string
		sc := bufio.NewScanner(parent)
		for sc.Scan() {
			m := sc.Text()
			if pid, err := strconv.Atoi(strings.TrimPrefix(m, "P")); err == nil && strings.HasPrefix(m, "P") && pid > 0 && len(pidCh) == 0 {
				pidCh <- pid
				continue
			}
			out = append(out, m)
		}
		msgs <- out
	}()
	// setupFailed ends a run whose first process failed before it cloned
	// init or told us of it: an init, if there is one, gets no spec, ends
	// and is reaped.
	setupFailed := func(st *os.ProcessState) (*Result, error) {
		_ = syscall.Shutdown(fds[0], syscall.SHUT_WR)
		lines := <-msgs
		select {
		case pid := <-pidCh:
			if p, err := os.FindProcess(pid); err == nil {
				_, _ = p.Wait()
			}
		default:
		}
		copies.Wait()
		for _, m := range lines {
			switch {
			case strings.HasPrefix(m, "U"):
				return nil, fmt.Errorf("%w: %s%s", ErrUnavailable, m[1:], usernsHint(m[1:]))
			case strings.HasPrefix(m, "E"):
				return nil, &SetupError{Msg: m[1:]}
			}
		}
		return nil, fmt.Errorf("%w: the sandbox's first process ended: %v", ErrUnavailable, st)
	}
	var initPID int
	select {
	case initPID = <-pidCh:
	case st := <-firstDone:
		if st == nil || !st.Success() {
			return setupFailed(st)
		}
		firstDone <- st
		initPID = <-pidCh // written before it exited
	}
	// init is our child and we reap it: its PID is not reused before.
	initProc, err := os.FindProcess(initPID)
	if err != nil {
		return setupFailed(<-firstDone)
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
			_ = initProc.Signal(syscall.SIGKILL)
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
	initState, waitErr := initProc.Wait()
	close(done)
	wall := time.Since(start)
	<-firstDone
	copies.Wait()
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
	if initState == nil {
		return nil, fmt.Errorf("sandbox: wait: %w", waitErr)
	}
	res := &Result{
		Stdout: stdout.buf, StdoutCut: stdout.cut,
		Stderr: stderr.buf, StderrCut: stderr.cut,
		Enforcement: enf,
		CapHit:      hit,
	}
	if ru, ok := initState.SysUsage().(*syscall.Rusage); ok {
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

// usernsHint says why unshare failed, for its message msg, where a sysctl
// or AppArmor disables user namespaces.
func usernsHint(msg string) string {
	known := false
	for _, e := range []error{syscall.EPERM, syscall.EACCES, syscall.ENOSPC, syscall.EINVAL} {
		known = known || strings.HasSuffix(strings.ToLower(msg), e.Error()) // C strerror capitalises
	}
	if !known {
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

// sandboxFiles are the standard streams of the sandbox's first process
// (and so of init and the command) and the parent's ends of its output
// pipes.
type sandboxFiles struct {
	in, outW, errW, outR, errR *os.File
}

// childFiles makes the output pipes and the standard input: /dev/null, or
// a pipe fed stdin by a goroutine (which ends with EPIPE once nothing in
// the sandbox can read it).
func childFiles(stdin []byte) (*sandboxFiles, error) {
	var f sandboxFiles
	var err error
	closeAll := func() {
		for _, x := range []*os.File{f.in, f.outW, f.errW, f.outR, f.errR} {
			if x != nil {
				x.Close()
			}
		}
	}
	if f.outR, f.outW, err = os.Pipe(); err == nil {
		f.errR, f.errW, err = os.Pipe()
	}
	if err == nil && len(stdin) > 0 {
		var w *os.File
		if f.in, w, err = os.Pipe(); err == nil {
			go func() {
				_, _ = w.Write(stdin)
				w.Close()
			}()
		}
	} else if err == nil {
		f.in, err = os.Open(os.DevNull)
	}
	if err != nil {
		closeAll()
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	return &f, nil
}
