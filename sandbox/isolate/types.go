package isolate

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"time"
)

// A Spec describes one command to run in the sandbox.
type Spec struct {
	// Argv is the command and its arguments; no shell is involved. A name
	// without a slash is looked up in the PATH of Env.
	Argv []string
	// Workdir is the absolute directory the command starts in ("/" if empty).
	Workdir string
	// Env is the command's whole environment, as KEY=value strings.
	Env []string
	// Stdin is the command's standard input (empty: /dev/null).
	Stdin []byte
	// Scopes are the directories the command may change, through overlays.
	Scopes []Scope
	// AllowNetwork shares the host's network namespace.
	AllowNetwork bool
	// Loopback, without AllowNetwork, lets the command make IPv4 and IPv6
	// sockets in the sandbox's own network namespace (its loopback only:
	// a test suite's local server). Without either, socket(AF_INET or
	// AF_INET6) fails with EACCES.
	Loopback bool
	// Proxy, if not nil, is the command's only way out: it gets the
	// sandbox's own network namespace (its loopback only, IPv4 and IPv6
	// sockets allowed), in which init listens on 127.0.0.1:ProxyPort, and
	// Proxy serves that listener from the parent until the run ends (ctx
	// is then cancelled). The caller points the command at it
	// (HTTP_PROXY, HTTPS_PROXY). docs/sandbox.md, "Network".
	Proxy func(ctx context.Context, ln net.Listener)
	// Limits are the hard caps.
	Limits Limits
	// MaxStdout and MaxStderr cap the captured output, in bytes
	// (0: DefaultMaxOutput). Output past the cap is read and dropped.
	MaxStdout, MaxStderr int
	// Hide are absolute paths the command must not see: each directory
	// is masked by an empty tmpfs, each file by an empty file. Paths that
	// do not exist are skipped.
	Hide []string
	// Mask are home roots (/home, /root) the command sees as empty
	// read-only directories, but for the scopes below them and Binds
	// (docs/sandbox-filesystem.md, "What the command reads").
	Mask []string
	// Binds are paths below Mask the command sees read-only as they are:
	// what builds need (a git config, toolchains, module caches). A path
	// that is not there is skipped.
	Binds []string
	// Home, if not empty, is the home of the user the command runs for,
	// at or below a path of Mask: the command sees it writable, through
	// a throwaway directory on the disk cap's tmpfs (counted against the
	// cap, gone with the sandbox), with Binds, Files, Caches and the
	// scopes below it as always. What the command wrote there is named in
	// the Result (HomeWrote), never kept (docs/sandbox-filesystem.md, "The
	// masked home").
	Home string
	// Files are generated files the command sees read-only, each at its
	// Path: a tool's configuration with placeholders for its secrets
	// (docs/sandbox-filesystem.md, "Configurations with secrets"), over
	// what is there (under a masked home root, or in a directory Binds
	// shows), or where nothing is, in a new file the masked home's or
	// /dev's tmpfs lets be made. A path that holds anything but a regular
	// file fails the run. At most MaxFiles, MaxFileBytes each.
	Files []File
	// Caches are where tools keep their caches below Mask
	// (docs/sandbox-filesystem.md, "Caches"): each an overlay whose
	// lower is the caller's directory, read-only, and whose upper is on
	// the disk cap's tmpfs, thrown away with the sandbox. Never part of
	// a scope, never copied back.
	Caches []Cache
	// Reads, if any, are the only trees (besides the scopes, Binds and the
	// sandbox's own /tmp, /dev and /proc) beneath which the command may
	// open a file for reading, by Landlock: a host FIFO elsewhere gives it
	// nothing. Empty: reads are bounded by the mounts and permissions only.
	Reads []string
	// Warm, if not nil, is a sandbox started ahead ([Prestart]) that Run
	// uses instead of starting one, when it suits the Spec.
	Warm *Warm
	// Discard throws the scopes' changes away: the overlays' upper dirs
	// are on the disk cap's tmpfs, seeded from each Scope's Upper as
	// always, and never copied back, so Upper is only read. Instead the
	// Result names what the command changed (Wrote, WroteCount). It needs
	// a disk cap (Limits.DiskMB > 0): without one the upper dirs are used
	// in place, and Run refuses. docs/sandbox-filesystem.md.
	Discard bool
	// Uppers, if not nil, is called as init starts to copy each scope's
	// changes out of the disk cap's tmpfs (never with Discard, nor without
	// a disk cap): with the scope's index in Scopes and a read-only
	// descriptor of its tmpfs upper, which nothing writes any more (the
	// command and every process it started have ended) and which stays,
	// with the memory it holds, until the callee closes it. The caller
	// reads the changes there beside the copy, on another CPU. It is
	// called from the goroutine that reads init's messages and must not
	// block.
	Uppers func(scope int, dir *os.File)
	// Before, if not nil, is the caller's last check before the command
	// runs: Run calls it once the sandbox has what it mounts, so that
	// the mounts are made meanwhile, and sends the command only if it
	// returns nil. Its error is Run's, and nothing has run.
	Before func() error
	// Progress, if not nil, is called with the command's output as it
	// arrives (stream 1 standard output, 2 standard error), from the
	// goroutine that reads that stream: all of it, past the caps too. It
	// must not block for long, and must not keep p.
	Progress func(stream int, p []byte)
}

// ProxyPort is the port of Spec.Proxy's listener on the sandbox's own
// loopback.
const ProxyPort = 3128

// DefaultMaxOutput is the capture cap of each output stream when the Spec
// sets none.
const DefaultMaxOutput = 1 << 20

// DefaultMaxProcs is the process cap when Limits.Procs is 0.
const DefaultMaxProcs = 1024

// A Scope is a directory shown to the command as an overlay: reads come from
// Path, and writes land in Upper. Upper is a directory shaped like an
// overlayfs upper dir (userxattr form), empty or holding earlier changes.
// With a disk cap (Limits.DiskMB > 0) the overlay's upper and work dirs are
// on the sandbox's tmpfs, seeded from Upper and copied back to it after the
// run, and Work is unused (it may be empty). Without one, Upper and Work
// are used in place: Work is an empty directory on Upper's filesystem, and
// after a run it holds a directory "work" of mode 0 that overlayfs made:
// remove it with RemoveWorkDir. The paths given are absolute.
type Scope struct {
	Path, Upper, Work string
}

// A File is the content Data (text: no NUL byte) shown read-only at Path.
type File struct {
	Path string
	Data []byte
}

// MaxFiles and MaxFileBytes bound Spec.Files (nsexec.h's MAX_FILES).
const (
	MaxFiles     = 64
	MaxFileBytes = 1 << 20
)

// A Cache is the directory Dir of the caller's, shown to the command at
// Path under a throwaway upper layer: the command reads Dir's files and
// may write there, but Dir itself is never written. Dir is opened with no
// symbolic link followed (RESOLVE_NO_SYMLINKS): a link anywhere on its
// path refuses the run.
type Cache struct {
	Path, Dir string
	// Own, if not empty, is another directory of the caller's, shown
	// read-only over Dir (Dir may then be empty: none): act's own cache,
	// which the caller fills from Out.
	Own string
	// Out, if not empty (and Own is not), is an empty directory of the
	// caller's onto which the upper layer is copied after a run with a
	// disk cap that keeps its changes (not Discard): files, directories,
	// symbolic links, whiteouts and FIFOs as overlayfs left them, modes
	// whole. Neither Own nor Dir is written.
	Out string
}

// Limits are hard caps; a zero field means no cap of that kind.
type Limits struct {
	WallMs   int64 // wall clock, milliseconds
	CPUMs    int64 // CPU time of all processes, milliseconds
	MemoryMB int64 // memory, MiB
	DiskMB   int64 // the scopes' layers, /tmp and /dev/shm together, MiB
	Procs    int64 // processes at once (0: DefaultMaxProcs)
	// MemoryTotal demands that MemoryMB bound all the command's processes
	// together (policy resources.memory_enforcement: total): where no
	// memory cgroup is writable, Run refuses the command. Without it an
	// ordinary user's cap falls back to RLIMIT_AS per process
	// (MemoryPerProcess).
	MemoryTotal bool
}

// MemoryPerProcess is the memory cap's mechanism where no memory cgroup is
// writable and the policy does not demand a total cap: RLIMIT_AS of the
// cap in each process, RLIMIT_NPROC bounding how many; the kernel's
// buffers, page cache and tmpfs pages are outside it
// (docs/sandbox-process.md).
const MemoryPerProcess = "RLIMIT_AS per process (no memory cgroup): not a total cap"

// A Cap names a kind of limit.
type Cap string

// The caps.
const (
	CapWall   Cap = "wall clock"
	CapCPU    Cap = "cpu"
	CapMemory Cap = "memory"
	CapDisk   Cap = "disk"
	CapProcs  Cap = "processes"
)

// A CapHit says which cap stopped or rejected a run, its figure, and the
// mechanism that enforced it.
type CapHit struct {
	Cap       Cap
	Limit     int64  // the cap's figure, in Unit
	Unit      string // "ms", "MiB", "processes"
	Mechanism string // e.g. "cgroup v1 memory.limit_in_bytes", "SIGKILL by the parent"
}

func (c *CapHit) String() string {
	return fmt.Sprintf("%s cap of %d %s hit (%s)", c.Cap, c.Limit, c.Unit, c.Mechanism)
}

// Usage is what the run consumed.
type Usage struct {
	Wall      time.Duration
	CPU       time.Duration // user + system, of init and every process it reaped
	MaxRSSKiB int64         // the largest resident set of any one process
	DiskBytes int64         // bytes of regular files in the scopes' upper dirs after the run
}

// A Result is the outcome of a run that started.
type Result struct {
	// ExitCode is the command's exit status, or -1 if a signal ended it.
	ExitCode int
	// Signal is the signal that ended the command, if any.
	Signal syscall.Signal
	// Stdout and Stderr are the captured output; the Cut flags say that
	// more was written than was kept.
	Stdout, Stderr       []byte
	StdoutCut, StderrCut bool
	// CapHit is the cap that killed or rejects the run, nil if none.
	CapHit *CapHit
	Usage  Usage
	// Enforcement lists, for each cap the spec set, the mechanism in force.
	Enforcement map[Cap]string
	// With Spec.Discard: WroteCount is how many paths of the scopes the
	// command changed, and Wrote the first of them (at most MaxWrote),
	// absolute, in the order of a walk of each scope's upper dir (sorted
	// names, a directory's entries after it). A path changed is one
	// written, made, removed, or whose mode, times or extended attributes
	// changed; a new directory is named only when nothing below it is.
	// The changes themselves were thrown away.
	Wrote      []string
	WroteCount int64
	// With Spec.Home and a disk cap: HomeWroteCount is how many paths the
	// command made in the home (a new directory counted once, not what
	// it holds), and HomeWrote the first of them (at most MaxWrote),
	// absolute, sorted. They were thrown away with the sandbox.
	HomeWrote      []string
	HomeWroteCount int64
}

// MaxWrote is how many of the paths a run with Spec.Discard changed its
// Result names (nsexec_disk.c's MAX_WROTE_NAMED).
const MaxWrote = 16

// ErrUnavailable is wrapped by the errors of [Available] and [Run] when the
// sandbox cannot be built on this host.
var ErrUnavailable = errors.New("isolation unavailable")

// A SetupError is a failure to build the sandbox or to start the command in
// it (e.g. the command does not exist); the command did not run.
type SetupError struct {
	Msg string
}

func (e *SetupError) Error() string { return "sandbox: " + e.Msg }
