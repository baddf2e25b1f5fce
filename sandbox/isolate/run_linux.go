package isolate

import (
	"bufio"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/act-project/act/internal/timings"
)

// The environment of the sandbox's first process: the spec socket's
// descriptor, and whether the network namespace is kept (nsexec.h's
// MARKER …, read by nsexec.c's constructor).
const (
	marker    = "_ACT_SANDBOX_FD"
	markerNet = "_ACT_SANDBOX_NET"
	// markerEarly: a sandbox started ahead of its spec, whose init makes
	// the mounts that depend on no spec while it waits (nsexec_mounts.c's
	// act_premount).
	markerEarly = "_ACT_SANDBOX_EARLY"
)

// The messages the sandbox writes on the spec socket, one a line: the
// letter, then its text. nsexec.h names the same letters MSG_PID …
// MSG_STATUS (TestProtocolAgrees compares the two lists).
const (
	msgPID         = 'P' // the first process: init's PID
	msgUnavailable = 'U' // the first process: the namespaces could not be made
	msgSetup       = 'E' // the sandbox could not be built or the command not started
	msgCopy        = 'C' // init: the layer could not be copied out
	msgDisk        = 'D' // init: the disk cap's tmpfs after the run
	msgStatus      = 'S' // init: the command's wait status
	msgUsage       = 'R' // init: its own and its children's CPU time and peak RSS, after a run with a disk cap
	msgWrotePath   = 'w' // init: a path a run that discards its layers wrote, in hex (the first MaxWrote)
	msgWrote       = 'W' // init: how many paths a run that discards its layers wrote
	msgListener    = 'L' // init: the egress proxy's listener (SCM_RIGHTS)
	msgHomePath    = 'h' // init: a path the command made in the throwaway home, in hex (the first MaxWrote)
	msgHome        = 'H' // init: how many paths the command made in the throwaway home
	msgTimes       = 'T' // init, the command's process: the set-up's phases (marks.go)
	msgUpper       = 'V' // init: a scope's tmpfs upper as copy-out starts on it (SCM_RIGHTS; Spec.Uppers)
)

// filterArchs are the architectures nsexec_seccomp.c has a seccomp filter
// for; on any other, commands are refused (the child refuses them too).
var filterArchs = map[string]bool{"amd64": true, "arm64": true}

// archSupported says whether commands may run on the architecture goarch.
func archSupported(goarch string) error {
	if !filterArchs[goarch] {
		return fmt.Errorf("%w: no seccomp filter for %s (amd64 and arm64 only): commands are not run unfiltered", ErrUnavailable, goarch)
	}
	return nil
}

// landlockAvailable refuses to run commands on a kernel without Landlock:
// it alone keeps host FIFOs from being opened for writing
// (docs/sandbox-filesystem.md). The kernel is asked once.
var landlockAvailable = sync.OnceValue(func() error {
	// landlock_create_ruleset is 444 on every architecture; flag 1
	// (LANDLOCK_CREATE_RULESET_VERSION) asks for the ABI version.
	abi, _, errno := syscall.Syscall(444, 0, 0, 1)
	return landlockRequired(int(abi), errno)
})

func landlockRequired(abi int, errno syscall.Errno) error {
	if errno != 0 || abi < 1 {
		return fmt.Errorf("%w: the kernel has no Landlock (%v): without it a host FIFO would take the command's writes, so commands are not run; Landlock needs Linux 5.13 or later with landlock in the lsm= list", ErrUnavailable, errno)
	}
	return nil
}

// Run runs spec.Argv in a new sandbox and waits for it. A run that started
// gives a Result, whatever the command's exit; an error means the sandbox
// could not be built or the command not started (a [*SetupError], or one
// wrapping [ErrUnavailable]), or ctx ended first (ctx.Err()).
func Run(ctx context.Context, spec Spec) (*Result, error) {
	return run(ctx, spec, false)
}

// run is Run, or with probe the sandbox without the command (Available).
// It goes: start the sandbox's first process, handshake (init's PID, or
// the first process's failure), enforce (choose each cap's mechanism and
// send init the spec), watch (the wall clock, the CPU, ctx) until init
// ends, and collect init's report into the Result.
func run(ctx context.Context, spec Spec, probe bool) (*Result, error) {
	if err := canRun(); err != nil {
		return nil, err
	}
	spec.Binds = existing(spec.Binds)
	parts, err := encode(spec, probe)
	if err != nil {
		return nil, err
	}
	if timings.Enabled(ctx) {
		parts.command = put(parts.command, "timings", "1") // marks.go
	}
	uppers := spec.Uppers != nil && spec.Limits.DiskMB > 0 && !spec.Discard && !probe
	if uppers {
		parts.command = put(parts.command, "uppers", "1")
	}
	l := spec.Limits
	procs := procsOf(l)

	// The cgroups are made while the child starts (a few mkdirs and writes
	// in cgroupfs, in parallel with the fork and exec); init joins them
	// through their tasks (v1) or cgroup.procs (v2) files, which it
	// receives with the spec.
	sb, initProc, warmCg := spec.Warm.take(spec, procs)
	cgReady := make(chan *cgroups, 1)
	if warmCg != nil {
		cgReady <- warmCg
	} else {
		go func() { cgReady <- makeCgroups(l, procs) }()
	}
	var cg *cgroups
	var w *watched
	defer func() {
		if cg == nil {
			cg = <-cgReady
		}
		if w != nil && w.reaped != nil {
			// init reported the run whole and is ending: it is reaped,
			// and its cgroups removed, once the kernel has torn its
			// namespaces down ([Settle]).
			settling.Add(1)
			go func() {
				defer settling.Done()
				<-w.reaped
				cg.release()
			}()
			return
		}
		cg.release()
	}()

	if sb == nil {
		if sb, err = start(spec, false); err != nil {
			return nil, err
		}
		if initProc, err = sb.handshake(); err != nil {
			sb.parent.Close()
			return nil, err
		}
	}
	defer sb.parent.Close()
	if uppers {
		sb.uppers.Store(&spec.Uppers)
	}
	end := timings.Start(ctx, "sandbox: cgroups (parent)")
	cg = <-cgReady
	end()
	enf, rl, err := enforcement(l, procs, cg, os.Getuid())
	if err != nil {
		sb.abort(initProc)
		return nil, err
	}
	// The first process has ended and been reaped before the command can
	// fork: it was in the sandbox's user namespace, whose processes
	// RLIMIT_NPROC counts.
	st := <-sb.firstDone
	sb.firstDone <- st
	parts = rl.add(parts, l.DiskMB<<20)
	var mounts []*os.File
	if sb.identity {
		end := timings.Start(ctx, "sandbox: idmapped mounts (parent)")
		mounts, err = identityMounts(initProc.Pid, spec)
		end()
		if err != nil {
			sb.abort(initProc)
			return nil, err
		}
	}
	sb.sendMounts(parts.mount, cg, mounts)
	for _, f := range mounts {
		f.Close()
	}
	if spec.Proxy != nil {
		stop := serveProxy(sb, spec.Proxy)
		defer stop()
	}
	if spec.Before != nil {
		// init mounts meanwhile; it runs nothing before the command's
		// part of the spec.
		end := timings.Start(ctx, "sandbox: wait for the gate's check")
		err := spec.Before()
		end()
		if err != nil {
			sb.abort(initProc)
			return nil, err
		}
		sb.start = time.Now() // the wall clock starts with the command
	}
	sb.sendCommand(parts.command)
	end = timings.Start(ctx, "sandbox: the run, seen from the parent")
	w = watch(ctx, sb, initProc, l, cg, enf)
	end()
	return collect(ctx, spec, w, sb, procs, cg, rl, enf)
}

// procsOf is l's process cap.
func procsOf(l Limits) int64 {
	if l.Procs <= 0 {
		return DefaultMaxProcs
	}
	return l.Procs
}

// settling counts the runs whose init is still ending after Run returned.
var settling sync.WaitGroup

// Settle waits until every sandbox a Run has returned from has ended: its
// init reaped and its cgroups removed (the pooled ones too). Run returns
// once init has reported a run with a disk cap whole (every other process of the sandbox killed
// and reaped, the layer copied out), before the kernel has torn down its
// namespaces; a process that exits soon after must call Settle first, or
// the cgroups would be left behind.
func Settle() {
	settling.Wait()
	drainPool()
}

// canRun says why no sandbox may be started here, if so: the child is
// missing, the architecture has no seccomp filter, or the kernel has no
// Landlock.
func canRun() error {
	if !childLinked {
		return fmt.Errorf("%w: act was built without cgo, so the sandbox child is missing", ErrUnavailable)
	}
	if err := archSupported(runtime.GOARCH); err != nil {
		return err
	}
	return landlockAvailable()
}

// started is a started sandbox, seen from the parent: its first process,
// the parent's end of the spec socket, and what reads them.
type started struct {
	first          *os.Process
	parent         *os.File
	parentFD       int
	start          time.Time
	launched       time.Time // when the first process was started (start moves to the command's start)
	stdout, stderr *capped
	copies         sync.WaitGroup // the output copies, done at EOF
	firstDone      chan *os.ProcessState
	pidCh          chan int                            // init's PID, from msgPID
	listener       chan *os.File                       // the egress proxy's listener, from msgListener
	uppers         atomic.Pointer[func(int, *os.File)] // the run's Spec.Uppers, for msgUpper's
	identity       bool                                // the sandbox has an identity of its own (act runs as root)
	msgs           chan []string                       // every other line, at EOF
}

// start starts the sandbox's first process and the goroutines that read
// its output, its messages and its end.
func start(spec Spec, early bool) (*started, error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("sandbox: socketpair: %w", err)
	}
	// This process's end is non-blocking, so that os.NewFile gives it to
	// the runtime's poller: a goroutine waiting for the sandbox's messages
	// then parks, rather than holding a thread and its processor in a
	// blocking read, which left the goroutines queued behind it (the
	// sandbox's cgroups, made beside its start) waiting until the runtime
	// noticed, up to 10 ms later. init's end stays blocking.
	if err := syscall.SetNonblock(fds[0], true); err != nil {
		syscall.Close(fds[0])
		syscall.Close(fds[1])
		return nil, fmt.Errorf("sandbox: socketpair: %w", err)
	}
	sb := &started{
		parent:    os.NewFile(uintptr(fds[0]), "sandbox-spec"),
		parentFD:  fds[0],
		stdout:    &capped{max: orDefault(spec.MaxStdout), progress: progressOf(spec, 1)},
		stderr:    &capped{max: orDefault(spec.MaxStderr), progress: progressOf(spec, 2)},
		firstDone: make(chan *os.ProcessState, 1),
		pidCh:     make(chan int, 1),
		listener:  make(chan *os.File, 1),
		msgs:      make(chan []string, 1),
	}
	child := os.NewFile(uintptr(fds[1]), "sandbox-spec-child")

	// The first process is started without namespaces, which lets the
	// runtime vfork it (for a new user namespace it forks: a copy of the
	// page tables, and copy-on-write faults in this process afterwards).
	// Its constructor (nsexec.c) closes every descriptor it inherited but
	// these four, unshares the namespaces, maps its IDs and clones init as
	// a child of this process, tells us init's PID and exits. The output
	// goes to pipes read here until every writer has ended: init and all
	// it started, or the first process if it failed.
	files, err := childFiles(spec.Stdin)
	if err != nil {
		child.Close()
		sb.parent.Close()
		return nil, err
	}
	env := []string{marker + "=3"}
	if spec.AllowNetwork {
		env = append(env, markerNet+"=1")
	}
	if early {
		env = append(env, markerEarly+"=1")
	}
	if ownIdentity() {
		env = append(env, markerIdmap+"="+strconv.Itoa(IdentityBase))
		sb.identity = true
	}
	sb.start = time.Now()
	sb.launched = sb.start
	sb.first, err = os.StartProcess("/proc/self/exe", []string{"act-sandbox"}, &os.ProcAttr{
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
		sb.parent.Close()
		return nil, fmt.Errorf("%w: start the sandbox: %v", ErrUnavailable, err)
	}
	for _, c := range []struct {
		w *capped
		r *os.File
	}{{sb.stdout, files.outR}, {sb.stderr, files.errR}} {
		sb.copies.Add(1)
		go func() {
			defer sb.copies.Done()
			_, _ = io.Copy(c.w, c.r)
			c.r.Close()
		}()
	}
	go func() {
		st, _ := sb.first.Wait()
		sb.firstDone <- st
	}()
	go func() {
		var out []string
		rr := &rightsReader{f: sb.parent}
		sc := bufio.NewScanner(rr)
		for sc.Scan() {
			m := sc.Text()
			if kind, text := message(m); kind == msgPID && len(sb.pidCh) == 0 {
				if pid, err := strconv.Atoi(text); err == nil && pid > 0 {
					sb.pidCh <- pid
					continue
				}
			} else if kind == msgListener && len(rr.files) > 0 && len(sb.listener) == 0 {
				sb.listener <- rr.files[0]
				rr.files = rr.files[1:]
				continue
			} else if kind == msgUpper && len(rr.files) > 0 {
				f := rr.files[0]
				rr.files = rr.files[1:]
				k, err := strconv.Atoi(text)
				if fn := sb.uppers.Load(); fn != nil && err == nil {
					(*fn)(k, f)
				} else {
					f.Close()
				}
				continue
			}
			out = append(out, m)
		}
		for _, f := range rr.files {
			f.Close()
		}
		sb.msgs <- out
	}()
	return sb, nil
}

// message splits a line of the sandbox into its letter and its text.
func message(line string) (byte, string) {
	if line == "" {
		return 0, ""
	}
	return line[0], line[1:]
}

// handshake waits for init's PID, or for the first process to fail.
func (sb *started) handshake() (*os.Process, error) {
	var initPID int
	select {
	case initPID = <-sb.pidCh:
	case st := <-sb.firstDone:
		if st == nil || !st.Success() {
			return nil, sb.setupFailed(st)
		}
		sb.firstDone <- st
		initPID = <-sb.pidCh // written before it exited
	}
	// init is our child and we reap it: its PID is not reused before.
	initProc, err := os.FindProcess(initPID)
	if err != nil {
		return nil, sb.setupFailed(<-sb.firstDone)
	}
	return initProc, nil
}

// setupFailed ends a run whose first process failed before it cloned
// init or told us of it: an init, if there is one, gets no spec, ends
// and is reaped.
func (sb *started) setupFailed(st *os.ProcessState) error {
	_ = syscall.Shutdown(sb.parentFD, syscall.SHUT_WR)
	lines := <-sb.msgs
	select {
	case pid := <-sb.pidCh:
		if p, err := os.FindProcess(pid); err == nil {
			_, _ = p.Wait()
		}
	default:
	}
	sb.copies.Wait()
	for _, m := range lines {
		switch kind, text := message(m); kind {
		case msgUnavailable:
			return fmt.Errorf("%w: %s%s", ErrUnavailable, text, usernsHint(text))
		case msgSetup:
			return &SetupError{Msg: text}
		}
	}
	return fmt.Errorf("%w: the sandbox's first process ended: %v", ErrUnavailable, st)
}

// makeCgroups makes a sandbox's cgroups (a variable: a test runs without).
var makeCgroups = newCgroups

// errNoMemoryCgroup refuses a memory cap where no memory cgroup is
// writable and the policy demands a total cap (Limits.MemoryTotal):
// RLIMIT_AS bounds each process's address space, not the processes
// together nor the kernel's buffers they hold (socket buffers held 454 MiB
// under a cap of 64 MiB), and RLIMIT_NPROC does not bind uid 0
// (docs/sandbox-process.md).
var errNoMemoryCgroup = fmt.Errorf("%w: the memory cap cannot be enforced: no writable memory cgroup, "+
	"and the policy demands a total memory cap (resources.memory_enforcement: total); "+
	"run as root or in a delegated cgroup (systemd-run --user --scope -p Delegate=yes act …, "+
	"or a cgroup v1 memory cgroup whose directory is the user's): rlimits would not count the kernel's "+
	"socket and pipe buffers, so commands with a memory cap are not run without one", ErrUnavailable)

// errMemoryRoot is errNoMemoryCgroup for root, which has no delegated
// cgroup to be given but a hierarchy to make writable.
var errMemoryRoot = fmt.Errorf("%w: the memory cap cannot be enforced: no writable memory cgroup, "+
	"and RLIMIT_NPROC does not bind root (uid 0 on the host); run act in a cgroup whose memory controller "+
	"it can write (a cgroup v1 memory hierarchy, or a delegated cgroup v2: systemd-run --scope -p Delegate=yes act …)", ErrUnavailable)

// enforcement chooses the mechanism of each cap of l (the Result's
// Enforcement) and the rlimits init sets where no cgroup holds a cap. A
// memory cap no cgroup holds is RLIMIT_AS per process for an ordinary
// user (MemoryPerProcess), and an error (the command is not run) where
// l.MemoryTotal demands a total cap, or for root, whom RLIMIT_NPROC does
// not bind.
func enforcement(l Limits, procs int64, cg *cgroups, uid int) (map[Cap]string, rlimits, error) {
	enf := map[Cap]string{}
	var rl rlimits
	if l.WallMs > 0 {
		enf[CapWall] = "SIGKILL of the PID namespace by the parent"
	}
	if l.MemoryMB > 0 {
		if cg.memory != "" && cg.v2 {
			enf[CapMemory] = "cgroup v2 memory.max (a delegated cgroup)"
		} else if cg.memory != "" {
			enf[CapMemory] = "cgroup v1 memory.limit_in_bytes"
		} else if uid == 0 {
			return nil, rl, errMemoryRoot
		} else if l.MemoryTotal {
			return nil, rl, errNoMemoryCgroup
		} else {
			enf[CapMemory] = MemoryPerProcess
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
	switch {
	case cg.pids != "" && cg.v2:
		enf[CapProcs] = "cgroup v2 pids.max (a delegated cgroup)"
	case cg.pids != "":
		enf[CapProcs] = "cgroup v1 pids.max"
	default:
		enf[CapProcs] = "RLIMIT_NPROC"
		if uid == 0 {
			enf[CapProcs] = "none: no writable pids cgroup, and RLIMIT_NPROC does not bind root"
		}
		rl.nproc = procs
	}
	return enf, rl, nil
}

// abort ends a sandbox whose command is not to run: init gets no spec,
// fails to read one and ends; it and the first process are reaped.
func (sb *started) abort(initProc *os.Process) {
	_ = syscall.Shutdown(sb.parentFD, syscall.SHUT_WR)
	_, _ = initProc.Wait()
	<-sb.firstDone
	sb.copies.Wait()
	<-sb.msgs
}

// sendMounts sends init the cgroups' tasks files, which it joins before it
// forks the command (nothing runs outside them), as root the mounts it
// attaches (identityMounts), then the mount part of
// the spec (the parent keeps its copies of the files until the cgroups
// are removed: a pooled cgroup's are sent again). A lost
// descriptor fails the run (init checks the count); so does a short write
// (init refuses a truncated spec, or a key in the wrong part).
func (sb *started) sendMounts(mount []byte, cg *cgroups, mounts []*os.File) {
	err := sb.sendRights("cgroups", cg.join)
	if err == nil {
		err = sb.sendRights("mountfds", mounts)
	}
	if err == nil {
		_, _ = sb.parent.Write(append(mount, endMounts...))
	}
}

// sendCommand sends init the command's part of the spec and ends it.
func (sb *started) sendCommand(command []byte) {
	_, _ = sb.parent.Write(command)
	_ = syscall.Shutdown(sb.parentFD, syscall.SHUT_WR)
}

// watched is how init ended, and whether the parent killed it (hit: the
// cap that did; none with killed: ctx ended). state is nil where init
// reported the run whole (reportedWhole) before it was reaped: reaped is
// then closed once it has been.
type watched struct {
	state   *os.ProcessState
	waitErr error
	reaped  chan struct{}
	lines   []string // init's messages
	wall    time.Duration
	hit     *CapHit
	killed  bool
}

// reportedWhole says whether init's messages report a run whole: a wait
// status and a usage, written only after a run with a disk cap once every
// other process of the sandbox was killed and reaped and the layer copied
// out. What is left then is init's own exit.
func reportedWhole(lines []string) bool {
	var status, usage bool
	for _, m := range lines {
		switch kind, _ := message(m); kind {
		case msgStatus:
			status = true
		case msgUsage:
			usage = true
		case msgUnavailable, msgSetup, msgCopy:
			return false
		}
	}
	return status && usage
}

// watch enforces the wall clock, the polled CPU cap and ctx by killing
// init (and so the PID namespace), and waits for init to end: to be
// reaped, or to report the run whole and close its end of the socket and
// the output pipes (its last acts before it exits).
func watch(ctx context.Context, sb *started, initProc *os.Process, l Limits, cg *cgroups, enf map[Cap]string) *watched {
	start := sb.start
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
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
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
	w := &watched{}
	reaped := make(chan struct{})
	var state *os.ProcessState
	var waitErr error
	go func() {
		state, waitErr = initProc.Wait()
		close(reaped)
	}()
	report := make(chan []string, 1)
	go func() {
		<-sb.firstDone
		sb.copies.Wait()
		report <- <-sb.msgs
	}()
	select {
	case <-reaped:
		w.state, w.waitErr = state, waitErr
		w.lines = <-report
	case w.lines = <-report:
		if reportedWhole(w.lines) {
			w.reaped = reaped
			break
		}
		<-reaped
		w.state, w.waitErr = state, waitErr
	}
	close(done)
	w.wall = time.Since(start)
	<-stopped
	mu.Lock()
	defer mu.Unlock()
	w.hit, w.killed = hit, killed
	return w
}

// collect reads init's report (lines) and makes the Result.
func collect(ctx context.Context, spec Spec, w *watched, sb *started, procs int64, cg *cgroups, rl rlimits, enf map[Cap]string) (*Result, error) {
	l := spec.Limits
	if w.killed && w.hit == nil && ctx.Err() != nil {
		return nil, ctx.Err()
	}
	status := -1
	var disk *diskReport
	var usage *Usage
	var wrote, home []string
	wroteCount, homeCount := int64(-1), int64(-1)
	var marks []markLine
	defer func() {
		if marksSeen != nil {
			marksSeen(len(marks))
		}
		recordMarks(ctx, sb.launched, marks)
	}()
	for _, m := range w.lines {
		switch kind, text := message(m); kind {
		case msgTimes:
			if ml, ok := parseMarks(text); ok && len(marks) < maxMarkLines {
				marks = append(marks, ml)
			}
		case msgUnavailable: // no seccomp filter here (nsexec_seccomp.c)
			return nil, fmt.Errorf("%w: %s", ErrUnavailable, text)
		case msgSetup:
			return nil, &SetupError{Msg: text}
		case msgCopy:
			return nil, fmt.Errorf("sandbox: %s", text)
		case msgDisk:
			disk = &diskReport{}
			if _, err := fmt.Sscan(text, &disk.free, &disk.freeInodes, &disk.layer, &disk.over); err != nil {
				return nil, fmt.Errorf("sandbox: bad report from init: %q", m)
			}
		case msgWrotePath:
			b, err := hex.DecodeString(text)
			if err != nil || len(wrote) == MaxWrote {
				return nil, fmt.Errorf("sandbox: bad report from init: %q", m)
			}
			wrote = append(wrote, string(b))
		case msgWrote:
			n, err := strconv.ParseInt(text, 10, 64)
			if err != nil || n < int64(len(wrote)) {
				return nil, fmt.Errorf("sandbox: bad report from init: %q", m)
			}
			wroteCount = n
		case msgHomePath:
			b, err := hex.DecodeString(text)
			if err != nil || len(home) == MaxWrote {
				return nil, fmt.Errorf("sandbox: bad report from init: %q", m)
			}
			home = append(home, string(b))
		case msgHome:
			n, err := strconv.ParseInt(text, 10, 64)
			if err != nil || n < int64(len(home)) {
				return nil, fmt.Errorf("sandbox: bad report from init: %q", m)
			}
			homeCount = n
		case msgStatus:
			status, _ = strconv.Atoi(text)
		case msgUsage:
			var us, rss int64
			if _, err := fmt.Sscan(text, &us, &rss); err != nil {
				return nil, fmt.Errorf("sandbox: bad report from init: %q", m)
			}
			usage = &Usage{CPU: time.Duration(us) * time.Microsecond, MaxRSSKiB: rss}
		}
	}
	if w.state == nil && w.reaped == nil {
		return nil, fmt.Errorf("sandbox: wait: %w", w.waitErr)
	}
	res := &Result{
		Stdout: sb.stdout.buf, StdoutCut: sb.stdout.cut,
		Stderr: sb.stderr.buf, StderrCut: sb.stderr.cut,
		Enforcement: enf,
		CapHit:      w.hit,
	}
	if spec.Discard && status >= 0 {
		// init reports what was written before the status.
		if wroteCount < 0 {
			return nil, errors.New("sandbox: init did not report what the command wrote")
		}
		res.Wrote, res.WroteCount = wrote, wroteCount
	}
	if spec.Home != "" && spec.Limits.DiskMB > 0 && status >= 0 {
		// init reports what the command made in the home before the
		// status.
		if homeCount < 0 {
			return nil, errors.New("sandbox: init did not report what the command made in the home")
		}
		res.HomeWrote, res.HomeWroteCount = home, homeCount
	}
	if w.state == nil {
		res.Usage.CPU, res.Usage.MaxRSSKiB = usage.CPU, usage.MaxRSSKiB // reportedWhole
	} else if ru, ok := w.state.SysUsage().(*syscall.Rusage); ok {
		res.Usage.CPU = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		res.Usage.MaxRSSKiB = ru.Maxrss
	}
	if u, ok := cg.cpuUsage(); ok && u > res.Usage.CPU {
		res.Usage.CPU = u
	}
	res.Usage.Wall = w.wall
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
		if !w.killed && !(l.MemoryMB > 0 && cg.oomKills() > 0) {
			// The memory cgroup's OOM killer may pick init itself: that
			// is the memory cap, named below; anything else is an error.
			return nil, fmt.Errorf("sandbox: init ended without a status: %v", w.waitErr)
		}
	}
	res.CapHit = memoryFirst(res.CapHit, l, cg, enf)
	if res.CapHit == nil {
		res.CapHit = capHitAfter(res, l, procs, cg, rl, enf, disk)
	}
	return res, nil
}

// memoryFirst names the memory cap instead of the wall clock's hit h where
// the memory cgroup killed first and what was left then waited for the
// dead (a parent blocked on a killed child) until the wall clock.
func memoryFirst(h *CapHit, l Limits, cg *cgroups, enf map[Cap]string) *CapHit {
	if h == nil || h.Cap != CapWall || l.MemoryMB <= 0 {
		return h
	}
	n := cg.oomKills()
	if n <= 0 {
		return h
	}
	return &CapHit{Cap: CapMemory, Limit: l.MemoryMB, Unit: "MiB", Mechanism: fmt.Sprintf(
		"%s: %d processes killed by the OOM killer, then the wall clock cap of %d ms ended the run", enf[CapMemory], n, l.WallMs)}
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
// A Go program's runtime reports it as a fatal error at the head of a
// stack dump that may be longer than the tail looked at ("failed to
// reserve page summary memory", "cannot reserve arena virtual address
// space", or "failed to create new OS thread … errno=12").
// (Compiled on first use, not in every act process's start-up.)
var allocFailure = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)memory exhausted|cannot allocate memory|out of memory|MemoryError|bad_alloc|ENOMEM|allocation failed|failed to allocate|heap out of memory|failed to map segment|fatal error: failed to reserve|cannot reserve arena|errno=12\b`)
})

// forkFailure matches what shells and runtimes print when fork fails.
var forkFailure = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)cannot fork|fork: (retry: )?resource temporarily unavailable|can't fork|BlockingIOError|EAGAIN`)
})

func head(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// capHitAfter names the cap that ended or rejects a finished run, if any.
func capHitAfter(res *Result, l Limits, procs int64, cg *cgroups, rl rlimits, enf map[Cap]string, disk *diskReport) *CapHit {
	diskHit := func(why string) *CapHit {
		return &CapHit{Cap: CapDisk, Limit: l.DiskMB, Unit: "MiB", Mechanism: diskMechanism(l.DiskMB) + ", " + why}
	}
	switch {
	case l.MemoryMB > 0 && cg.oomKills() > 0:
		return &CapHit{Cap: CapMemory, Limit: l.MemoryMB, Unit: "MiB", Mechanism: enf[CapMemory]}
	case rl.as > 0 && res.ExitCode != 0 && (allocFailure().Match(tail(res.Stderr, 4096)) || allocFailure().Match(head(res.Stderr, 4096))):
		// RLIMIT_AS refuses an allocation rather than killing: the
		// command fails, saying so in its own words.
		return &CapHit{Cap: CapMemory, Limit: l.MemoryMB, Unit: "MiB", Mechanism: MemoryPerProcess + ", the command reported a failed allocation"}
	case l.CPUMs > 0 && (res.Signal == syscall.SIGXCPU || res.Signal == syscall.SIGKILL) &&
		res.Usage.CPU >= time.Duration(rl.cpuS)*time.Second*3/4:
		// The kernel kills at RLIMIT_CPU by its tick-sampled CPU time,
		// which may run ahead of the exact time the rusage reports (a
		// process killed at 1 s reported 0.91 s): what else kills with
		// SIGKILL (the OOM killer, act's own caps) is named above or
		// before, so a killed command near the limit met this cap.
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
	case procs > 0 && cg.pids == "" && res.ExitCode != 0 && forkFailure().Match(tail(res.Stderr, 4096)):
		// RLIMIT_NPROC refuses a fork (EAGAIN) rather than killing: the
		// command may give up on its own, saying so in its own words.
		return &CapHit{Cap: CapProcs, Limit: procs, Unit: "processes", Mechanism: "RLIMIT_NPROC (the command reported a failed fork)"}
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

// capped keeps the first max bytes written and drops the rest; progress,
// if not nil, sees every write (Spec.Progress).
type capped struct {
	mu       sync.Mutex // max and progress are set by a Warm's take while the copy waits
	buf      []byte
	max      int
	cut      bool
	progress func([]byte)
}

func (c *capped) setMax(n int) {
	c.mu.Lock()
	c.max = n
	c.mu.Unlock()
}

func (c *capped) setProgress(f func([]byte)) {
	c.mu.Lock()
	c.progress = f
	c.mu.Unlock()
}

// progressOf is spec's Progress for stream, or nil.
func progressOf(spec Spec, stream int) func([]byte) {
	if spec.Progress == nil {
		return nil
	}
	return func(p []byte) { spec.Progress(stream, p) }
}

func (c *capped) Write(p []byte) (int, error) {
	c.mu.Lock()
	if f := c.progress; f != nil {
		c.mu.Unlock()
		f(p)
		c.mu.Lock()
	}
	defer c.mu.Unlock()
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
