//go:build linux && cgo

// nsexec.h declares what the files of the sandbox child (nsexec.c lists
// them) share: the system headers, the protocol with run_linux.go (the
// environment markers, the messages on the spec socket, the exit status of
// a failed set-up), the spec as init holds it, and what one file defines
// and another uses. That is linked into the whole binary, so its names
// carry the prefix act_; everything else is static to its file.

#ifndef ACT_NSEXEC_H
#define ACT_NSEXEC_H

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <net/if.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/capability.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <linux/keyctl.h>
#include <linux/landlock.h>
#include <linux/netlink.h>
#include <stddef.h>
#include <dirent.h>
#include <stdint.h>
#include <time.h>
#include <sys/sendfile.h>
#include <sys/statfs.h>
#include <sys/xattr.h>
#include <grp.h>

// The environment of the first process (run_linux.go's marker …).
#define MARKER "_ACT_SANDBOX_FD"
#define MARKER_NET "_ACT_SANDBOX_NET"
#define MARKER_EARLY "_ACT_SANDBOX_EARLY" // "1": started ahead of its spec: act_premount
#define MARKER_IDMAP "_ACT_SANDBOX_IDMAP" // act runs as root: the first host uid and gid of the sandbox's own identity
#define IDMAP_COUNT 65536
#define SETUP_FAILED 125 // the exit status of a set-up that failed

// The messages on the spec socket, one a line: the letter, then its text.
#define MSG_PID 'P'         // first process: init's PID
#define MSG_UNAVAILABLE 'U' // first process: the namespaces could not be made
#define MSG_SETUP 'E'       // the sandbox could not be built or the command not started
#define MSG_COPY 'C'        // init: the layer could not be copied out
#define MSG_DISK 'D'        // init: the disk cap's tmpfs after the run
#define MSG_STATUS 'S'      // init: the command's wait status
#define MSG_USAGE 'R'       // init: its own and its children's CPU time and peak RSS, after a run with a disk cap
#define MSG_WROTE_PATH 'w'  // init: a path a run that discards its layers wrote, in hex (the first MAX_WROTE_NAMED)
#define MSG_WROTE 'W'       // init: how many paths a run that discards its layers wrote
#define MSG_LISTENER 'L'    // init: the egress proxy's listener in the sandbox's network namespace (SCM_RIGHTS)
#define MSG_HOME_PATH 'h'   // init: a path the command made in the throwaway home, in hex (the first MAX_WROTE_NAMED)
#define MSG_HOME 'H'        // init: how many paths the command made in the throwaway home
#define MSG_TIMES 'T'       // init, the command's process: the set-up's phases (act_send_marks), when the spec asks
#define MSG_UPPER 'V'       // init: a scope's tmpfs upper, read-only, as copy-out starts on it (SCM_RIGHTS), when the spec asks

// What one spec holds at most.
#define MAX_RIGHTS (MAX_CGROUPS + 2 * 256 + 4 * MAX_BINDS)
#define MAX_BINDS 256
#define MAX_ITEMS 16384
#define MAX_CGROUPS 8
#define MAX_HIDE 256
#define MAX_FILES 64

struct scope {
	const char *path, *lower, *upper, *work;
	const char *layer; // as root: the directory whose idmapped mount holds upper (and work)
	int lowerfd, upperfd, workfd;
	int upperrw; // with a disk cap: a writable detached clone of upper's mount; with discard, upper read-only
	int index;
};

struct spec {
	const char *argv[MAX_ITEMS + 1];
	int argc;
	const char *env[MAX_ITEMS + 1];
	int envc;
	struct scope scopes[256];
	int nscopes;
	const char *dir;
	const char *hostname;
	int net, loopback, probe;
	int proxy; // the port of the egress proxy's listener on the sandbox's own loopback (0: none)
	int discard; // the tmpfs uppers are not copied back: what changed is reported (act_report_writes)
	int timings; // the set-up's phases are reported (act_send_marks)
	int uppers; // each scope's tmpfs upper is sent to the parent as copy-out starts on it (MSG_UPPER)
	int rights[MAX_RIGHTS]; // descriptors received with the spec: the cgroups' tasks files, then (as root) the mounts
	int nrights;
	int cgroups[MAX_CGROUPS]; // tasks files received with the spec
	int ncgroups;
	long long want_cgroups, want_mounts;
	const char *binds[MAX_BINDS]; // read-only views of what builds need, under the masked homes
	int nbinds;
	const char *mask[16]; // the home roots masked by an empty tmpfs (docs/sandbox-filesystem.md)
	int nmask;
	const char *reads[MAX_BINDS]; // with any: files open for reading only beneath these (and the sandbox's own)
	int nreads;
	const char *caches[MAX_BINDS]; // below the masked homes: overlays of the caches, their uppers thrown away
	const char *cachedirs[MAX_BINDS]; // each cache's user's directory, its lower, read-only (NULL: none; cloned by init, or as root sent by the parent)
	const char *cacheowns[MAX_BINDS]; // act's own cache, a read-only lower over it (NULL: none; the policy's persistent caches)
	const char *cacheouts[MAX_BINDS]; // with act's own: where the upper is copied after a run that keeps its changes (act_copy_caches)
	int ncaches;
	const char *home; // the user's home, writable through a throwaway directory of the tmpfs (NULL: none)
	long long cpu_s, nproc, as_bytes, disk_bytes;
	const char *hide[MAX_HIDE]; // paths to mask (docs/sandbox-filesystem.md)
	int nhide;
	// generated files shown read-only at a path: a tool's configuration
	// with placeholders for its secrets (docs/sandbox-filesystem.md)
	const char *files[MAX_FILES]; // NULL once show_files found no place for it
	const char *filedata[MAX_FILES];
	int nfiles;
};

// The spec comes in two parts (docs/sandbox-process.md): the mount part
// (the cgroups' tasks files as SCM_RIGHTS, the scopes, the paths to hide,
// the network, the disk cap), ended by the key "mounts"; then the
// command's part (argv, environment, directory, per-process limits),
// ended by the end of the stream. init mounts once it has the first, and
// the parent sends the second only once its last check has passed: the
// mounts overlap that check, and nothing runs before it. A key in the
// wrong part is refused.
enum part { MOUNT_PART, COMMAND_PART };

// nsexec.c: the spec socket, act_fail and the kind of its message, and
// whether act runs as root, with an identity of its own for the sandbox.
extern int act_sock;
extern char act_fail_kind;
__attribute__((noreturn, format(printf, 1, 2))) void act_fail(const char *fmt, ...);
extern int act_idmap;

// nsexec_spec.c: the spec, read from the socket.
extern struct spec act_sp;
const char *act_keep(const char *v);
void act_read_spec(int fd, enum part part);
int act_send_fd(const char *line, size_t len, int fd); // nsexec.c

// nsexec_mounts.c: init's mounts, and the detached writable clones of the
// caches' copy-out directories (-1: none).
void act_premount(void);
void act_setup_mounts(void);
extern int act_cacheoutfd[MAX_BINDS];

// nsexec_disk.c: the sandbox's tmpfs (the disk cap's, where there is one),
// and what was copied out or reported.
extern int act_diskfd;
extern long long act_out_bytes;
extern int act_out_over;
void act_setup_disk(void);
void act_copy_out(void);
void act_report_writes(void);
void act_report_home(void);
void act_copy_caches(void);

// nsexec_init.c: init as PID 1, and the command it forks.
__attribute__((noreturn)) void act_init(void);

// nsexec_seccomp.c: the command's seccomp filters.
void act_install_seccomp(void);
void act_install_inet_filter(void);

// nsexec_landlock.c: where the command may open files.
void act_restrict_access(void);

// nsexec_times.c: the set-up's phases, stamped and reported (docs/timings.md).
extern long long act_start_ns; // the constructor's first act, in every act process
long long act_now_ns(void);
void act_mark(const char *phase); // the phase that ended now
void act_marks_forked(void);      // in the command's process: only its own marks are its to send
long act_marks_save(void);
void act_marks_restore(long saved); // in init, after spawn_command: the command's marks are not its own
void act_send_marks(const char *who);

// close_range(2), for close_inherited (nsexec.c) and cloexec_all
// (nsexec_init.c), where the headers lack it.
#ifndef __NR_close_range
#define __NR_close_range 436 // the same on x86_64 and aarch64
#endif
#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

#endif
