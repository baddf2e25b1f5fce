// Package isolate runs one command in a throw-away sandbox built from kernel
// namespaces, so that the command can change nothing but the layers of its
// scopes, reach no network, and outlive nothing (SPEC §3.3).
//
// # How it runs
//
// [Run] re-executes the current binary (/proc/self/exe) in new user, mount,
// PID, IPC, UTS and (unless [Spec.AllowNetwork]) network namespaces, with
// _ACT_SANDBOX_FD naming a socket that carries the spec and, as SCM_RIGHTS,
// the "tasks" files of the sandbox's cgroups (made while the child starts),
// through which init moves itself into them before it forks the command (a
// thread moving itself skips the kernel's global threadgroup lock, whose
// writer waits for an RCU grace period). A C constructor
// (nsexec.c, the pattern of runc's nsexec) runs before the Go runtime, so the
// sandbox child never pays Go's or CUE's start-up. It makes the inherited
// tree read-only recursively (mount_setattr), mounts a private /tmp, a
// minimal /dev with a private /dev/shm, each scope as an overlay (lower = the
// real directory, upper = the caller's layer, mounted userxattr and volatile)
// at its real path, and a fresh /proc. It then stays as PID 1: it forks the
// command (no capabilities, no_new_privs, rlimits), reaps every orphan and
// exits when the command's main process ends — which kills whatever the
// command left behind, so nothing runs in the background.
//
// # Caps
//
// Each cap in [Limits] is enforced by the kernel where it can be, and the
// [Result] names the mechanism:
//
//   - wall clock: SIGKILL of the namespace's init from the parent, which
//     takes the whole PID namespace with it;
//   - memory: cgroup v1 memory.limit_in_bytes where the hierarchy is
//     writable (OOM kill), else RLIMIT_AS;
//   - CPU: cgroup v1 cpuacct polled by the parent (kill on excess) where
//     writable, plus RLIMIT_CPU per process always;
//   - disk: RLIMIT_FSIZE per file and a sized /tmp; the layer's total is
//     measured after the run;
//   - processes: cgroup v1 pids.max where writable, else RLIMIT_NPROC.
//
// [Available] probes once whether all of this works here, and says what is
// missing when it does not: callers refuse commands then (fail closed).
package isolate
