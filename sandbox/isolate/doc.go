// Package isolate runs one command in a throw-away sandbox built from kernel
// namespaces, so that the command can change nothing but the layers of its
// scopes, reach no network, and outlive nothing (docs/sandbox.md).
//
// # How it runs
//
// [Run] re-executes the current binary (/proc/self/exe), whose constructor
// enters new user, mount, PID, IPC, UTS and (unless [Spec.AllowNetwork])
// network namespaces and clones their init as a child of Run's process
// (unshare, then clone with CLONE_PARENT: the re-exec itself needs no
// namespaces, so the Go runtime can vfork it instead of copying its address
// space), with _ACT_SANDBOX_FD naming a socket that carries the spec and, as SCM_RIGHTS,
// the "tasks" files of the sandbox's cgroups (made while the child starts),
// through which init moves itself into them before it forks the command (a
// thread moving itself skips the kernel's global threadgroup lock, whose
// writer waits for an RCU grace period). A C constructor
// (nsexec.c, the pattern of runc's nsexec) runs before the Go runtime, so the
// sandbox child never pays Go's or CUE's start-up; the rest of the child is
// in C files beside it, split by job as runc's nsenter is (nsexec_spec.c,
// nsexec_mounts.c, nsexec_disk.c, nsexec_init.c, nsexec_seccomp.c,
// nsexec_landlock.c, and nsexec.h for what they share). It makes the inherited
// tree read-only recursively (mount_setattr), mounts a private /tmp, a
// minimal /dev with a private /dev/shm, each scope as an overlay (lower = the
// real directory, mounted userxattr and volatile) at its real path, and a
// fresh /proc. It then stays as PID 1: it forks the command (no
// capabilities, no_new_privs, rlimits, no descriptor but 0–2, a session
// keyring of its own and the seccomp filter of docs/sandbox-process.md),
// reaps every orphan and exits when the command's main process ends —
// which kills whatever the command left behind, so nothing runs in the
// background.
//
// # The layers and the disk cap
//
// Without a disk cap the overlays' upper dirs are the caller's layers
// (Scope.Upper) themselves. With one, init mounts a tmpfs of that size and
// puts on it every scope's upper and work dir, and /tmp and /dev/shm as
// directories of it: the layers, /tmp and /dev/shm together cannot grow
// past the cap, and a write past it fails with ENOSPC. Each tmpfs upper is
// first seeded with what the layer already holds (file operations of earlier
// steps, earlier commands), so the command sees it. When the command's main
// process has ended, init kills what is left in the namespace (kill -1) and
// reaps until nothing is, and only then copies each tmpfs upper back onto
// the layer, through a clone of its mount made before the tree went
// read-only: files (content, mode, times), directories (mode), symlinks,
// whiteouts and user.* xattrs (user.overlay.opaque …) as overlayfs wrote
// them; entries the command removed are removed; a seeded file the command
// did not touch (same inode, same ctime) is left as it is. Init does the
// copy, not the parent, because it holds the namespace's capabilities
// (an ordinary user's parent could not read a file the command made mode
// 000) and nothing else runs by then. The layer on disk is the same as if
// the overlays had written it in place (TestDiskCapLayerAsInPlace).
//
// With Spec.Discard (a verification command) nothing is copied back: the
// tmpfs uppers vanish with the sandbox and the layer is only read. Where
// the copy would be, init compares each tmpfs upper with the layer it was
// seeded from and reports the paths that differ, the first MaxWrote named
// and all counted (Result.Wrote, Result.WroteCount; TestDiscard).
//
// # Caps
//
// Each cap in [Limits] is enforced by the kernel where it can be, and the
// [Result] names the mechanism:
//
//   - wall clock: SIGKILL of the namespace's init from the parent, which
//     takes the whole PID namespace with it;
//   - memory: cgroup v1 memory.limit_in_bytes where the hierarchy is
//     writable, else cgroup v2 memory.max in a delegated cgroup (OOM
//     kill; [EnterUserScope] puts an ordinary user's act in a delegated
//     systemd user scope where a user manager runs); without either,
//     for an ordinary user, RLIMIT_AS of the cap per process
//     ([MemoryPerProcess]: not a total cap, the kernel's buffers, memfd
//     and tmpfs pages escape it), unless [Limits.MemoryTotal] demands a
//     total cap: then, and always for root, the run is refused
//     (docs/sandbox-process.md);
//   - CPU: cgroup v1 cpuacct polled by the parent (kill on excess) where
//     writable, plus RLIMIT_CPU per process always;
//   - disk: the tmpfs above. The cap is named when the tmpfs is full after
//     the run (init reports its free space), or when the layers' files add
//     up to more than the cap at their apparent size (sparse files and hard
//     links, counted by init as it copies; the copy stops there). Pages of
//     the tmpfs are memory: where a memory cgroup enforces the memory cap
//     they count against it too;
//   - processes: cgroup v1 pids.max where writable, else RLIMIT_NPROC;
//     under the memory cap's rlimits, RLIMIT_NPROC of its share count.
//
// [Available] probes once whether all of this works here, and says what is
// missing when it does not: callers refuse commands then (fail closed).
package isolate
