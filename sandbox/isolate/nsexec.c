//go:build linux && cgo

// nsexec.c is the sandbox child's entry point, in the way of runc's nsexec:
// a constructor that runs before the Go runtime when the binary is
// re-executed by Run with _ACT_SANDBOX_FD set, so the child never pays the
// Go (and CUE) start-up. This file holds the constructor, act_fail (a
// set-up error, reported to the parent), the first process, which enters
// the namespaces and maps the sandbox's identity, and init's set-up in its
// order (loopback, spec, egress listener, cgroups, mounts). The rest of
// the child is split by job, as runc's nsenter is:
//   - nsexec.h: what the files share: the protocol (the markers and the
//     message letters), the spec as init holds it, and the functions and
//     variables one file defines and another uses (prefixed act_).
//   - nsexec_spec.c: the spec read from the socket and checked
//     (act_read_spec).
//   - nsexec_mounts.c: init's mounts: /dev, /run and /proc, the idmapped
//     mounts staged as root, the masked homes, the scopes' overlays, the
//     hidden paths, and the tree made read-only (act_setup_mounts).
//   - nsexec_disk.c: the disk cap: the layers on a sized tmpfs, seeded
//     before the run, and after it copied out or, with discard, compared
//     with the layers and reported.
//   - nsexec_init.c: init as PID 1: it forks the command, confines it
//     (limits, capabilities, descriptors, keyring, Landlock, seccomp) and
//     execs it, reaps every process, and reports the command's status.
//   - nsexec_seccomp.c: the command's seccomp filters.
//   - nsexec_landlock.c: where the command may open files (Landlock).
//   - nsexec_times.c: the set-up's phases, stamped and, for --timings,
//     reported (MSG_TIMES).
//
// Rules for the child:
//   - Without the marker, or when it does not name a socket, the constructor
//     returns at once and the program starts as usual.
//   - With it, the process never returns to Go. Run starts it with no
//     namespaces of its own (a vfork, for the Go parent); it unshares the
//     user, mount, PID, IPC, UTS and (unless _ACT_SANDBOX_NET=1) network
//     namespaces, maps its uid and gid, clones init with CLONE_PARENT (a
//     child of Run's process, which waits for it and kills it), writes
//     "P<init's pid>\n" and exits 0 — or writes "U<message>\n" (no
//     namespaces here: isolation is unavailable) and exits 125.
//   - init sets up the mounts, then acts as the namespace's init (forks the
//     command, reaps every orphan, and exits when the command's main process
//     ends) or writes "E<message>\n" on the spec socket and exits 125.
//   - The parent reads the socket to EOF: "S<wait status>\n" from init is the
//     command's status; no message means init was killed.
//   - The message letters are the MSG_ defines in nsexec.h; run_linux.go
//     names the same letters (msg* constants), and TestProtocolAgrees
//     compares the two lists.
//   - The spec arrives as key NUL value NUL records (see spec_linux.go),
//     with the sandbox's cgroups as open "tasks" files (SCM_RIGHTS,
//     announced by the record "cgroups"), which init joins before it forks
//     anything.

#include "nsexec.h"

int act_sock = -1;
// act_fail_kind is the first byte of act_fail's message: MSG_SETUP (the sandbox
// could not be built or the command not started), MSG_UNAVAILABLE (the
// namespaces could not be made, or this architecture has no seccomp filter:
// isolation is unavailable) or MSG_COPY (the layer could not be copied out
// after the command ran).
char act_fail_kind = MSG_SETUP;

// FAIL_BUF is the size of act_fail's line: the letter, the message (cut to
// fit), ": " and the errno's text, and the newline.
#define FAIL_BUF 4096

// fail_line formats act_fail's line into buf (FAIL_BUF bytes) and returns its
// length: the message is cut where it does not fit (the errno's text is
// always kept whole), and a newline in it becomes a space, so the line is
// one line of text without NUL.
static int fail_line(char *buf, int e, const char *fmt, va_list ap) {
	// Room for the message: what is left after the letter, ": ", the
	// errno's text (below 60 bytes in glibc) and the newline.
	const int room = FAIL_BUF - 80;
	buf[0] = act_fail_kind;
	int n = vsnprintf(buf + 1, room, fmt, ap);
	if (n < 0)
		n = 0;
	if (n > room - 1)
		n = room - 1; // what vsnprintf wrote, its NUL excluded
	n += 1;
	if (e) {
		int m = snprintf(buf + n, FAIL_BUF - n - 1, ": %s", strerror(e));
		if (m > 0)
			n += m < FAIL_BUF - n - 2 ? m : FAIL_BUF - n - 2;
	}
	for (int i = 1; i < n; i++)
		if (buf[i] == '\n' || buf[i] == '\r' || buf[i] == 0)
			buf[i] = ' ';
	buf[n++] = '\n';
	return n;
}

// act_fail reports a setup error to the parent and exits; it never returns.
__attribute__((noreturn, format(printf, 1, 2))) void act_fail(const char *fmt, ...) {
	char buf[FAIL_BUF];
	int e = errno;
	va_list ap;

	va_start(ap, fmt);
	int n = fail_line(buf, e, fmt, ap);
	va_end(ap);
	if (act_sock >= 0) {
		ssize_t r = write(act_sock, buf, n);
		(void)r;
	}
	_exit(SETUP_FAILED);
}

// act_idmap: act runs as root, and the sandbox has an identity of its own,
// host uids and gids idmap_base … idmap_base+65535 (docs/sandbox.md): the
// parent sends the scopes and layers as idmapped mounts.
int act_idmap;
static unsigned long idmap_base;

// close_inherited closes every descriptor above 2 but keep (-1: none):
// what act inherited from its own parent (a directory, a terminal …) would
// reach past the sandbox's mounts. close_range(2) where the kernel has it
// (5.9), else close() of each descriptor /proc/self/fd lists, else of each
// one below the descriptor limit.
static void close_inherited(int keep) {
	unsigned lo = 3;
	if (keep >= 3) {
		if (keep > 3 && syscall(__NR_close_range, 3u, (unsigned)keep - 1, 0u) < 0)
			goto fallback;
		lo = keep + 1;
	}
	if (syscall(__NR_close_range, lo, ~0u, 0u) == 0)
		return;
fallback:;
	DIR *d = opendir("/proc/self/fd");
	if (d) {
		// Closing while listing: collect first, in rounds, until a
		// listing finds nothing left to close.
		for (int again = 1; again;) {
			again = 0;
			rewinddir(d);
			struct dirent *e;
			while ((e = readdir(d))) {
				int fd = atoi(e->d_name);
				if (fd > 2 && fd != keep && fd != dirfd(d)) {
					close(fd);
					again = 1;
				}
			}
		}
		closedir(d);
		return;
	}
	struct rlimit rl;
	long max = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY ? (long)rl.rlim_cur : 65536;
	for (long fd = 3; fd < max; fd++)
		if (fd != keep)
			close((int)fd);
}

// write_proc writes s to the /proc file path, for the namespace's ID maps.
static void write_proc(const char *path, const char *s) {
	size_t n = strlen(s);
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, s, n) != (ssize_t)n)
		act_fail("write %s", path);
	close(fd);
}

// enter_namespaces is the first stage: the process that Run started, with
// no namespaces of its own (so the parent could vfork it, which a Go
// parent does not do for a new user namespace). It unshares the user,
// mount, PID, IPC, UTS and (unless the network is kept) network namespaces,
// maps its own uid and gid into the new user namespace, and clones init
// (PID 1 of the new PID namespace) as a child of the parent (CLONE_PARENT):
// the parent waits for init, and kills it, directly. It tells the parent
// init's PID ("P<pid>") and exits; init returns.
// enter_namespaces_idmap is enter_namespaces as root: the first process
// clones init into the new namespaces straight away, stays in the host's
// user namespace, and maps init's uids and gids 0 … 65535 to the host's
// idmap_base … idmap_base+65535 (a privileged writer may map a range). init
// waits for the maps, then takes uid and gid 0 of its namespace — host uid
// idmap_base, no supplementary groups — before it touches anything: from
// there on it is root only over what is mapped (the idmapped scopes and
// layers, its own mounts), and like any other user elsewhere.
static void enter_namespaces_idmap(int flags) {
	char map[64];
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		act_fail("pipe");
	pid_t pid = (pid_t)syscall(SYS_clone, CLONE_PARENT | flags | SIGCHLD, NULL, NULL, NULL, NULL);
	if (pid < 0)
		act_fail("start the sandbox (new user, mount, PID, IPC, UTS, network namespaces)");
	if (pid == 0) {
		act_fail_kind = MSG_SETUP;
		close(p[1]);
		if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
			act_fail("set the parent-death signal");
		char c;
		while (read(p[0], &c, 1) < 0 && errno == EINTR)
			;
		close(p[0]);
		// Without the maps (the first process failed) these fail.
		if (setresgid(0, 0, 0) < 0 || setgroups(0, NULL) < 0 || setresuid(0, 0, 0) < 0)
			act_fail("take the sandbox's own identity");
		return;
	}
	close(p[0]);
	static const char *const files[] = {"uid_map", "gid_map"};
	for (int i = 0; i < 2; i++) {
		char path[64];
		snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, files[i]);
		snprintf(map, sizeof map, "0 %lu %d", idmap_base, IDMAP_COUNT);
		write_proc(path, map);
	}
	close(p[1]);
	act_fail_kind = MSG_SETUP;
	int n = snprintf(map, sizeof map, "%c%d\n", MSG_PID, (int)pid);
	if (write(act_sock, map, n) != n)
		_exit(SETUP_FAILED);
	_exit(0);
}

static void enter_namespaces(int keep_net) {
	char map[64];
	uid_t uid = getuid();
	gid_t gid = getgid();
	int flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS;
	if (!keep_net)
		flags |= CLONE_NEWNET;
	// MSG_UNAVAILABLE: isolation is unavailable here (user namespaces refused, …).
	act_fail_kind = MSG_UNAVAILABLE;
	if (act_idmap) {
		enter_namespaces_idmap(flags); // returns in init
		return;
	}
	if (unshare(flags) < 0)
		act_fail("start the sandbox (new user, mount, PID, IPC, UTS, network namespaces)");
	int fd = open("/proc/self/setgroups", O_WRONLY | O_CLOEXEC);
	if (fd >= 0) {
		if (write(fd, "deny", 4) != 4)
			act_fail("write /proc/self/setgroups");
		close(fd);
	} else if (errno != ENOENT)
		act_fail("open /proc/self/setgroups");
	snprintf(map, sizeof map, "%u %u 1", (unsigned)uid, (unsigned)uid);
	write_proc("/proc/self/uid_map", map);
	snprintf(map, sizeof map, "%u %u 1", (unsigned)gid, (unsigned)gid);
	write_proc("/proc/self/gid_map", map);
	act_fail_kind = MSG_SETUP;
	pid_t pid = (pid_t)syscall(SYS_clone, CLONE_PARENT | SIGCHLD, NULL, NULL, NULL, NULL);
	if (pid < 0)
		act_fail("clone the sandbox's init");
	if (pid == 0) {
		// init: killed with the parent. The parent reaps it, so its PID
		// cannot be reused before the parent has seen it end.
		if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
			act_fail("set the parent-death signal");
		return;
	}
	int n = snprintf(map, sizeof map, "%c%d\n", MSG_PID, (int)pid);
	if (write(act_sock, map, n) != n)
		_exit(SETUP_FAILED); // the parent is gone; init's spec read fails
	_exit(0);
}

static void loopback_up(void) {
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct ifreq ifr;
	if (fd < 0)
		act_fail("socket");
	memset(&ifr, 0, sizeof ifr);
	strcpy(ifr.ifr_name, "lo");
	if (ioctl(fd, SIOCGIFFLAGS, &ifr) < 0)
		act_fail("get lo flags");
	ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
	if (ioctl(fd, SIOCSIFFLAGS, &ifr) < 0)
		act_fail("bring lo up");
	close(fd);
}

// send_listener listens on 127.0.0.1:act_sp.proxy in the sandbox's own
// network namespace, whose only interface is its loopback, and sends the
// socket to the parent, which serves the egress proxy on it
// (docs/sandbox.md, "Network"). A connection made before the parent
// accepts waits in the backlog.
static void send_listener(void) {
	if (act_sp.net) {
		errno = 0;
		act_fail("spec: the egress proxy needs the sandbox's own network namespace");
	}
	int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(act_sp.proxy), .sin_addr = {htonl(INADDR_LOOPBACK)}};
	if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof a) < 0 || listen(l, 128) < 0)
		act_fail("listen on 127.0.0.1:%d for the egress proxy", act_sp.proxy);
	char line[2] = {MSG_LISTENER, '\n'};
	if (act_send_fd(line, sizeof line, l) < 0)
		act_fail("send the egress proxy's listener");
	close(l);
}

// act_send_fd sends the parent the message line (len bytes, its newline
// included) with the descriptor fd (SCM_RIGHTS), whole or not at all.
int act_send_fd(const char *line, size_t len, int fd) {
	struct iovec iov = {.iov_base = (void *)line, .iov_len = len};
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(int))];
	} cm;
	memset(&cm, 0, sizeof cm);
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.b, .msg_controllen = sizeof cm.b};
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof fd);
	return sendmsg(act_sock, &msg, 0) == (ssize_t)len ? 0 : -1;
}

// join_cgroups moves init into the sandbox's cgroups, before anything is
// forked: it writes "0" (itself) to each "tasks" file it received. A single
// thread moving itself skips the kernel's global threadgroup lock, whose
// writer waits for an RCU grace period (the cost of writing a pid to
// cgroup.procs from the parent).
static void join_cgroups(void) {
	for (int i = 0; i < act_sp.ncgroups; i++) {
		if (write(act_sp.cgroups[i], "0", 1) != 1)
			act_fail("join cgroup (fd %d)", act_sp.cgroups[i]);
		close(act_sp.cgroups[i]);
	}
}

__attribute__((constructor)) static void act_nsexec(void) {
	act_start_ns = act_now_ns(); // every act process: the start --timings counts from
	const char *m = getenv(MARKER);
	if (!m)
		return;
	const char *net = getenv(MARKER_NET);
	int keep_net = net && !strcmp(net, "1");
	const char *early = getenv(MARKER_EARLY);
	int ahead = early && !strcmp(early, "1");
	const char *base = getenv(MARKER_IDMAP);
	if (base) {
		char *e;
		errno = 0;
		idmap_base = strtoul(base, &e, 10);
		act_idmap = !errno && !*e && idmap_base >= IDMAP_COUNT && idmap_base <= 0xFFFFFFFEUL - IDMAP_COUNT;
		if (!act_idmap)
			act_idmap = -1; // refused once the socket is known
	}
	unsetenv(MARKER);
	unsetenv(MARKER_NET);
	unsetenv(MARKER_EARLY);
	unsetenv(MARKER_IDMAP);

	char *end;
	long fd = strtol(m, &end, 10);
	struct stat st;
	if (*end || fd < 3 || fd > 1024 || fstat((int)fd, &st) < 0 || !S_ISSOCK(st.st_mode))
		return; // not started by Run: ignore a stray marker
	act_sock = (int)fd;
	close_inherited(act_sock);
	if (fcntl(act_sock, F_SETFD, FD_CLOEXEC) < 0)
		act_fail("spec socket");
	if (act_idmap < 0) {
		errno = 0;
		act_fail("bad %s", MARKER_IDMAP);
	}
	enter_namespaces(keep_net);
	act_mark("namespaces");
	if (getpid() != 1) {
		errno = 0;
		act_fail("init is not PID 1");
	}

	// The namespace's own loopback does not depend on the spec: brought up
	// while the spec is still to come (a sandbox started ahead waits here),
	// and, in a sandbox started ahead, the mounts that depend on none.
	if (!keep_net)
		loopback_up();
	act_mark("loopback");
	if (ahead) {
		act_premount();
		act_mark("premount");
	}
	act_read_spec(act_sock, MOUNT_PART);
	act_mark("wait-mount-spec");
	if (act_sp.net != keep_net) {
		errno = 0;
		act_fail("spec: the network setting differs from the namespaces'");
	}
	if (act_sp.proxy) {
		send_listener();
		act_mark("proxy-listener");
	}
	join_cgroups();
	act_mark("cgroups");
	act_setup_mounts();
	act_read_spec(act_sock, COMMAND_PART);
	act_mark("wait-command-spec");
	if (act_sp.hostname && sethostname(act_sp.hostname, strlen(act_sp.hostname)) < 0)
		act_fail("sethostname");
	act_init();
}
