//go:build linux && cgo

// nsexec.c is the sandbox child, in the way of runc's nsexec: a constructor
// that runs before the Go runtime when the binary is re-executed by Run with
// _ACT_SANDBOX_FD set, so the child never pays the Go (and CUE) start-up.
//
// Rules for this file:
//   - Without the marker, or when not PID 1 of a fresh PID namespace, the
//     constructor returns at once and the program starts as usual.
//   - With it, the process never returns to Go: it sets up the mounts, then
//     acts as the namespace's init (forks the command, reaps every orphan, and
//     exits when the command's main process ends) or writes "E<message>\n" on
//     the spec socket and exits 125.
//   - The parent reads the socket to EOF: "S<wait status>\n" from init is the
//     command's status; no message means init was killed.
//   - The spec arrives as key NUL value NUL records (see spec.go), with the
//     sandbox's cgroups as open "tasks" files (SCM_RIGHTS, announced by the
//     record "cgroups"), which init joins before it forks anything.

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
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
#include <stddef.h>

#define MARKER "_ACT_SANDBOX_FD"
#define SETUP_FAILED 125
#define MAX_SPEC (64 << 20)
#define MAX_ITEMS 16384
#define MAX_CGROUPS 8

extern char **environ;

static int sock = -1;

// fail reports a setup error to the parent and exits; it never returns.
__attribute__((noreturn, format(printf, 1, 2))) static void fail(const char *fmt, ...) {
	char buf[4096];
	int n, e = errno;
	va_list ap;

	buf[0] = 'E';
	va_start(ap, fmt);
	n = vsnprintf(buf + 1, sizeof buf - 64, fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	if (n > (int)sizeof buf - 64)
		n = sizeof buf - 64;
	n += 1;
	if (e)
		n += snprintf(buf + n, sizeof buf - n, ": %s", strerror(e));
	buf[n++] = '\n';
	if (sock >= 0) {
		ssize_t r = write(sock, buf, n);
		(void)r;
	}
	_exit(SETUP_FAILED);
}

struct scope {
	const char *path, *lower, *upper, *work;
	int lowerfd, upperfd, workfd;
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
	int net, probe;
	int cgroups[MAX_CGROUPS]; // tasks files received with the spec
	int ncgroups;
	long long want_cgroups;
	long long cpu_s, as_bytes, fsize_bytes, nproc, tmp_bytes;
};

static struct spec sp;

static long long num(const char *key, const char *v) {
	char *end;
	errno = 0;
	long long n = strtoll(v, &end, 10);
	if (errno || *end || n < 0) {
		errno = 0;
		fail("spec: bad number for %s: %s", key, v);
	}
	return n;
}

static void read_spec(int fd) {
	size_t cap = 1 << 16, len = 0;
	char *buf = malloc(cap);
	for (;;) {
		if (!buf)
			fail("spec: out of memory");
		if (len == cap) {
			if (cap >= MAX_SPEC) {
				errno = 0;
				fail("spec: larger than %d bytes", MAX_SPEC);
			}
			cap *= 2;
			buf = realloc(buf, cap);
			continue;
		}
		// recvmsg, for the cgroups' tasks files that come as SCM_RIGHTS.
		struct iovec iov = {.iov_base = buf + len, .iov_len = cap - len};
		union {
			struct cmsghdr h;
			char b[CMSG_SPACE(sizeof(int) * MAX_CGROUPS)];
		} cm;
		struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.b, .msg_controllen = sizeof cm.b};
		ssize_t n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			fail("spec: read");
		for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
			if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
				continue;
			int k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
			for (int j = 0; j < k; j++) {
				int cfd;
				memcpy(&cfd, CMSG_DATA(c) + j * sizeof(int), sizeof cfd);
				if (sp.ncgroups == MAX_CGROUPS) {
					errno = 0;
					fail("spec: too many cgroups");
				}
				sp.cgroups[sp.ncgroups++] = cfd;
			}
		}
		if (msg.msg_flags & MSG_CTRUNC) {
			errno = 0;
			fail("spec: descriptors cut off");
		}
		if (n == 0)
			break;
		len += n;
	}
	size_t i = 0;
	while (i < len) {
		const char *key = buf + i;
		char *z = memchr(buf + i, 0, len - i);
		if (!z)
			break;
		i = z - buf + 1;
		const char *val = buf + i;
		z = memchr(buf + i, 0, len - i);
		if (!z) {
			errno = 0;
			fail("spec: truncated at %s", key);
		}
		i = z - buf + 1;

		struct scope *s = sp.nscopes ? &sp.scopes[sp.nscopes - 1] : NULL;
		if ((!strcmp(key, "arg") && sp.argc == MAX_ITEMS) || (!strcmp(key, "env") && sp.envc == MAX_ITEMS)) {
			errno = 0;
			fail("spec: more than %d %s entries", MAX_ITEMS, key);
		}
		if (!strcmp(key, "arg"))
			sp.argv[sp.argc++] = val;
		else if (!strcmp(key, "env"))
			sp.env[sp.envc++] = val;
		else if (!strcmp(key, "dir"))
			sp.dir = val;
		else if (!strcmp(key, "host"))
			sp.hostname = val;
		else if (!strcmp(key, "scope")) {
			if (sp.nscopes == 256) {
				errno = 0;
				fail("spec: too many scopes");
			}
			s = &sp.scopes[sp.nscopes++];
			s->path = val;
		} else if (!strcmp(key, "lower") && s)
			s->lower = val;
		else if (!strcmp(key, "upper") && s)
			s->upper = val;
		else if (!strcmp(key, "work") && s)
			s->work = val;
		else if (!strcmp(key, "net"))
			sp.net = 1;
		else if (!strcmp(key, "probe"))
			sp.probe = 1;
		else if (!strcmp(key, "cpu_s"))
			sp.cpu_s = num(key, val);
		else if (!strcmp(key, "as"))
			sp.as_bytes = num(key, val);
		else if (!strcmp(key, "fsize"))
			sp.fsize_bytes = num(key, val);
		else if (!strcmp(key, "nproc"))
			sp.nproc = num(key, val);
		else if (!strcmp(key, "tmp"))
			sp.tmp_bytes = num(key, val);
		else if (!strcmp(key, "cgroups"))
			sp.want_cgroups = num(key, val);
		else {
			errno = 0;
			fail("spec: unknown key %s", key);
		}
	}
	if (i != len) {
		errno = 0;
		fail("spec: trailing bytes");
	}
	if (sp.want_cgroups != sp.ncgroups) {
		errno = 0;
		fail("spec: %lld cgroups announced, %d received", sp.want_cgroups, sp.ncgroups);
	}
	if (sp.argc == 0 && !sp.probe) {
		errno = 0;
		fail("spec: empty argv");
	}
	for (int k = 0; k < sp.nscopes; k++) {
		struct scope *s = &sp.scopes[k];
		if (!s->lower || !s->upper || !s->work || s->path[0] != '/') {
			errno = 0;
			fail("spec: incomplete scope %s", s->path);
		}
	}
}

static int is_dir(const char *path) {
	struct stat st;
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static void mkdir_p(const char *path) {
	char buf[4096];
	size_t n = strlen(path);
	if (n >= sizeof buf) {
		errno = ENAMETOOLONG;
		fail("mkdir %s", path);
	}
	memcpy(buf, path, n + 1);
	for (char *p = buf + 1;; p++) {
		if (*p == '/' || *p == 0) {
			char c = *p;
			*p = 0;
			if (mkdir(buf, 0755) < 0 && errno != EEXIST)
				fail("mkdir %s", buf);
			*p = c;
			if (c == 0)
				break;
		}
	}
}

static const char *devices[] = {"null", "zero", "full", "random", "urandom", "tty"};
#define NDEV (sizeof devices / sizeof devices[0])

static void make_writable(const char *path) {
	struct mount_attr attr = {.attr_clr = MOUNT_ATTR_RDONLY};
	if (mount_setattr(AT_FDCWD, path, 0, &attr, sizeof attr) < 0)
		fail("make %s writable", path);
}

static void setup_mounts(void) {
	int devfd[NDEV];
	char opts[512];

	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		fail("make / private");

	// Everything that a later mount may hide is opened first: the scope's
	// lower, upper and work dirs (they may sit under /tmp) and the host's
	// device nodes (under the /dev we replace).
	for (int k = 0; k < sp.nscopes; k++) {
		struct scope *s = &sp.scopes[k];
		if ((s->lowerfd = open(s->lower, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
			fail("open scope %s", s->lower);
		if ((s->upperfd = open(s->upper, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
			fail("open layer %s", s->upper);
		if ((s->workfd = open(s->work, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
			fail("open work dir %s", s->work);
	}
	for (size_t i = 0; i < NDEV; i++) {
		char p[64];
		snprintf(p, sizeof p, "/dev/%s", devices[i]);
		devfd[i] = open_tree(AT_FDCWD, p, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
		if (devfd[i] < 0 && errno != ENOENT)
			fail("clone %s", p);
	}

	// Private /tmp.
	char opts_tmp[128];
	if (sp.tmp_bytes > 0)
		snprintf(opts_tmp, sizeof opts_tmp, "mode=1777,size=%lld", sp.tmp_bytes);
	else
		snprintf(opts_tmp, sizeof opts_tmp, "mode=1777");
	if (mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, opts_tmp) < 0)
		fail("mount tmpfs on /tmp");

	// Minimal /dev.
	if (mount("tmpfs", "/dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755,size=1m") < 0)
		fail("mount tmpfs on /dev");
	for (size_t i = 0; i < NDEV; i++) {
		char p[64];
		if (devfd[i] < 0)
			continue;
		snprintf(p, sizeof p, "/dev/%s", devices[i]);
		int fd = open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0666);
		if (fd < 0)
			fail("create %s", p);
		close(fd);
		if (move_mount(devfd[i], "", AT_FDCWD, p, MOVE_MOUNT_F_EMPTY_PATH) < 0)
			fail("bind %s", p);
		close(devfd[i]);
	}
	if (symlink("/proc/self/fd", "/dev/fd") < 0 ||
	    symlink("/proc/self/fd/0", "/dev/stdin") < 0 ||
	    symlink("/proc/self/fd/1", "/dev/stdout") < 0 ||
	    symlink("/proc/self/fd/2", "/dev/stderr") < 0)
		fail("symlinks in /dev");
	if (mkdir("/dev/shm", 01777) < 0 || mkdir("/dev/pts", 0755) < 0)
		fail("mkdir in /dev");
	// /dev/shm is sized like /tmp: it counts against the disk cap, and its
	// pages would otherwise escape RLIMIT_AS.
	if (mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, opts_tmp) < 0)
		fail("mount tmpfs on /dev/shm");

	// The host's /run holds Unix sockets (D-Bus, systemd, container
	// engines) that a path reaches whatever the network namespace: hide it
	// behind an empty tmpfs, read-only like the rest.
	if (is_dir("/run") && mount("tmpfs", "/run", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0755,size=16k") < 0)
		fail("mount tmpfs on /run");

	// Scopes: overlays at their real paths, after /tmp so that a scope under
	// /tmp shows. The paths are given as /proc/self/fd links because the
	// tmpfs may hide them (and the links need no escaping).
	for (int k = 0; k < sp.nscopes; k++) {
		struct scope *s = &sp.scopes[k];
		struct stat st;
		if (stat(s->path, &st) < 0) {
			if (errno != ENOENT)
				fail("stat %s", s->path);
			mkdir_p(s->path); // only possible in a fresh tmpfs: /tmp
		}
		snprintf(opts, sizeof opts,
			 "lowerdir=/proc/self/fd/%d,upperdir=/proc/self/fd/%d,workdir=/proc/self/fd/%d,userxattr,volatile",
			 s->lowerfd, s->upperfd, s->workfd);
		if (mount("overlay", s->path, "overlay", MS_NOSUID | MS_NODEV, opts) < 0)
			fail("mount overlay on %s", s->path);
		close(s->lowerfd);
		close(s->upperfd);
		close(s->workfd);
	}

	// A /proc for this PID namespace.
	if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		fail("mount /proc");
	// No nested user namespaces: they are the way to regain capabilities
	// over new mounts. The sysctl is this namespace's own.
	int fd = open("/proc/sys/user/max_user_namespaces", O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, "0", 1) != 1)
		fail("limit user namespaces to 0");
	close(fd);
	// The host's kernel settings stay out of reach: uid 0 may write
	// /proc/sys by ownership alone, without capabilities. Each of these
	// becomes its own mount, so the recursive read-only below covers it
	// while /proc itself is made writable again (not recursively).
	static const char *const proc_ro[] = {"/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs"};
	for (size_t i = 0; i < sizeof proc_ro / sizeof proc_ro[0]; i++) {
		if (mount(proc_ro[i], proc_ro[i], NULL, MS_BIND | MS_REC, NULL) < 0 && errno != ENOENT)
			fail("bind %s", proc_ro[i]);
	}

	// Then everything read-only, recursively (a remount would not be),
	// and writable again only what is the sandbox's own. The overlays keep
	// private clones of their upper dirs' mounts, which stay writable.
	struct mount_attr attr = {.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID};
	if (mount_setattr(AT_FDCWD, "/", AT_RECURSIVE, &attr, sizeof attr) < 0)
		fail("make / read-only (mount_setattr)");
	make_writable("/tmp");
	make_writable("/dev/shm");
	make_writable("/proc");
	for (int k = 0; k < sp.nscopes; k++)
		make_writable(sp.scopes[k].path);
}

// join_cgroups moves init into the sandbox's cgroups, before anything is
// forked: it writes "0" (itself) to each "tasks" file it received. A single
// thread moving itself skips the kernel's global threadgroup lock, whose
// writer waits for an RCU grace period (the cost of writing a pid to
// cgroup.procs from the parent).
static void join_cgroups(void) {
	for (int i = 0; i < sp.ncgroups; i++) {
		if (write(sp.cgroups[i], "0", 1) != 1)
			fail("join cgroup (fd %d)", sp.cgroups[i]);
		close(sp.cgroups[i]);
	}
}

static void loopback_up(void) {
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct ifreq ifr;
	if (fd < 0)
		fail("socket");
	memset(&ifr, 0, sizeof ifr);
	strcpy(ifr.ifr_name, "lo");
	if (ioctl(fd, SIOCGIFFLAGS, &ifr) < 0)
		fail("get lo flags");
	ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
	if (ioctl(fd, SIOCSIFFLAGS, &ifr) < 0)
		fail("bring lo up");
	close(fd);
}

static void set_rlimit(int res, const char *name, long long v) {
	struct rlimit rl = {.rlim_cur = v, .rlim_max = v};
	if (v <= 0)
		return;
	if (setrlimit(res, &rl) < 0)
		fail("setrlimit %s", name);
}

static void drop_privileges(void) {
	int last = CAP_LAST_CAP;
	FILE *f = fopen("/proc/sys/kernel/cap_last_cap", "re");
	if (f) {
		if (fscanf(f, "%d", &last) != 1)
			last = CAP_LAST_CAP;
		fclose(f);
	}
	for (int c = 0; c <= last; c++)
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 && errno != EINVAL)
			fail("drop capability %d from the bounding set", c);
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0)
		fail("clear ambient capabilities");
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
	struct __user_cap_data_struct d[2];
	memset(d, 0, sizeof d);
	if (syscall(SYS_capset, &h, d) < 0)
		fail("clear capabilities");
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		fail("set no_new_privs");
}

// run_command is the forked command process: limits, privileges, exec.
// deny_unix_sockets installs a seccomp filter that refuses socket(AF_UNIX):
// a Unix socket bound to a path (a host daemon's, anywhere the command can
// see) is reachable whatever the network namespace, so the command may not
// make one. socketpair(2), which reaches nothing outside, stays allowed.
// A syscall of another architecture (the 32-bit entry points, which have
// their own numbers) is refused the same way so the filter cannot be
// sidestepped.
static void deny_unix_sockets(void) {
#if defined(__x86_64__)
	struct sock_filter filter[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000, 0, 1), // x32 ABI
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_socket, 0, 3),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_UNIX, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EACCES),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {.len = sizeof filter / sizeof filter[0], .filter = filter};
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) < 0)
		fail("install the seccomp filter");
#endif
}

__attribute__((noreturn)) static void run_command(void) {
	sigset_t all;
	sigemptyset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
	for (int s = 1; s < NSIG; s++)
		signal(s, SIG_DFL);
	setsid();

	set_rlimit(RLIMIT_CPU, "RLIMIT_CPU", sp.cpu_s);
	set_rlimit(RLIMIT_AS, "RLIMIT_AS", sp.as_bytes);
	set_rlimit(RLIMIT_FSIZE, "RLIMIT_FSIZE", sp.fsize_bytes);
	set_rlimit(RLIMIT_NPROC, "RLIMIT_NPROC", sp.nproc);
	struct rlimit zero = {0, 0};
	setrlimit(RLIMIT_CORE, &zero);

	if (sp.dir && chdir(sp.dir) < 0)
		fail("chdir %s", sp.dir);
	drop_privileges();
	deny_unix_sockets();
	if (sp.probe)
		_exit(0);

	sp.argv[sp.argc] = NULL;
	sp.env[sp.envc] = NULL;
	environ = (char **)sp.env; // execvp searches the command's own PATH
	execvp(sp.argv[0], (char *const *)sp.argv);
	fail("exec %s", sp.argv[0]);
}

// init is PID 1: it reaps every process and exits with the status of the
// command's main process, which ends the namespace and all that is left in it.
__attribute__((noreturn)) static void init(void) {
	sigset_t all;
	sigfillset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);

	pid_t cmd = fork();
	if (cmd < 0)
		fail("fork");
	if (cmd == 0)
		run_command();

	for (;;) {
		int st;
		pid_t p = waitpid(-1, &st, __WALL);
		if (p < 0) {
			if (errno == EINTR)
				continue;
			fail("wait");
		}
		if (p != cmd)
			continue;
		char msg[32];
		int n = snprintf(msg, sizeof msg, "S%d\n", st);
		ssize_t r = write(sock, msg, n);
		(void)r;
		if (WIFEXITED(st))
			_exit(WEXITSTATUS(st));
		_exit(128 + WTERMSIG(st));
	}
}

__attribute__((constructor)) static void act_nsexec(void) {
	const char *m = getenv(MARKER);
	if (!m)
		return;
	unsetenv(MARKER);
	if (getpid() != 1)
		return; // not started by Run: ignore a stray marker

	char *end;
	long fd = strtol(m, &end, 10);
	if (*end || fd < 3 || fd > 1024)
		return;
	sock = (int)fd;
	if (fcntl(sock, F_SETFD, FD_CLOEXEC) < 0)
		fail("spec socket");

	read_spec(sock);
	join_cgroups();
	setup_mounts();
	if (!sp.net)
		loopback_up();
	if (sp.hostname && sethostname(sp.hostname, strlen(sp.hostname)) < 0)
		fail("sethostname");
	init();
}
