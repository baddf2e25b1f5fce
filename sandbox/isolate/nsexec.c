//go:build linux && cgo

// nsexec.c is the sandbox child, in the way of runc's nsexec: a constructor
// that runs before the Go runtime when the binary is re-executed by Run with
// _ACT_SANDBOX_FD set, so the child never pays the Go (and CUE) start-up.
//
// Rules for this file:
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
//   - The message letters are the MSG_ defines below; run_linux.go names
//     the same letters (msg* constants), and TestProtocolAgrees compares
//     the two lists.
//   - The spec arrives as key NUL value NUL records (see spec.go), with the
//     sandbox's cgroups as open "tasks" files (SCM_RIGHTS, announced by the
//     record "cgroups"), which init joins before it forks anything.

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

#define MARKER "_ACT_SANDBOX_FD"
#define MARKER_NET "_ACT_SANDBOX_NET"
#define MARKER_EARLY "_ACT_SANDBOX_EARLY" // "1": started ahead of its spec: premount
#define MARKER_IDMAP "_ACT_SANDBOX_IDMAP" // act runs as root: the first host uid and gid of the sandbox's own identity
#define IDMAP_COUNT 65536
#define MAX_RIGHTS (MAX_CGROUPS + 2 * 256 + 2 * MAX_BINDS)
#define MAX_BINDS 256
#define STAGE "/dev/.act-stage"
#define SETUP_FAILED 125
#define MAX_SPEC (64 << 20)
#define MAX_ITEMS 16384
#define MAX_CGROUPS 8

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

extern char **environ;

static int sock = -1;
// fail_kind is the first byte of fail's message: MSG_SETUP (the sandbox
// could not be built or the command not started), MSG_UNAVAILABLE (the
// namespaces could not be made, or this architecture has no seccomp filter:
// isolation is unavailable) or MSG_COPY (the layer could not be copied out
// after the command ran).
static char fail_kind = MSG_SETUP;

// FAIL_BUF is the size of fail's line: the letter, the message (cut to fit),
// ": " and the errno's text, and the newline.
#define FAIL_BUF 4096

// fail_line formats fail's line into buf (FAIL_BUF bytes) and returns its
// length: the message is cut where it does not fit (the errno's text is
// always kept whole), and a newline in it becomes a space, so the line is
// one line of text without NUL.
static int fail_line(char *buf, int e, const char *fmt, va_list ap) {
	// Room for the message: what is left after the letter, ": ", the
	// errno's text (below 60 bytes in glibc) and the newline.
	const int room = FAIL_BUF - 80;
	buf[0] = fail_kind;
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

// fail reports a setup error to the parent and exits; it never returns.
__attribute__((noreturn, format(printf, 1, 2))) static void fail(const char *fmt, ...) {
	char buf[FAIL_BUF];
	int e = errno;
	va_list ap;

	va_start(ap, fmt);
	int n = fail_line(buf, e, fmt, ap);
	va_end(ap);
	if (sock >= 0) {
		ssize_t r = write(sock, buf, n);
		(void)r;
	}
	_exit(SETUP_FAILED);
}

struct scope {
	const char *path, *lower, *upper, *work;
	const char *layer; // as root: the directory whose idmapped mount holds upper (and work)
	int lowerfd, upperfd, workfd;
	int upperrw; // with a disk cap: a writable detached clone of upper's mount; with discard, upper read-only
	int index;
};

#define MAX_HIDE 256
// HIDE_EMPTY is the empty file bind-mounted over a file to hide.
#define HIDE_EMPTY "/dev/.act-hidden"

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
	int discard; // the tmpfs uppers are not copied back: what changed is reported (report_writes)
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
	const char *caches[MAX_BINDS]; // below the masked homes: read-write mounts of act's cache dirs
	const char *cachedirs[MAX_BINDS]; // the host's cache dirs (opened by init, or as root sent by the parent)
	int ncaches;
	long long cpu_s, nproc, as_bytes, disk_bytes;
	const char *hide[MAX_HIDE]; // paths to mask (docs/sandbox-filesystem.md)
	int nhide;
};

static struct spec sp;

// idmap: act runs as root, and the sandbox has an identity of its own,
// host uids and gids idmap_base … idmap_base+65535 (docs/sandbox.md): the
// parent sends the scopes and layers as idmapped mounts.
static int idmap;
static unsigned long idmap_base;

// under says whether path is dir or below it.
static int under(const char *path, const char *dir) {
	size_t n = strlen(dir);
	if (n == 1)
		return path[0] == '/';
	return !strncmp(path, dir, n) && (path[n] == 0 || path[n] == '/');
}

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

// The spec comes in two parts (docs/sandbox-process.md): the mount part
// (the cgroups' tasks files as SCM_RIGHTS, the scopes, the paths to hide,
// the network, the disk cap), ended by the key "mounts"; then the
// command's part (argv, environment, directory, per-process limits),
// ended by the end of the stream. init mounts once it has the first, and
// the parent sends the second only once its last check has passed: the
// mounts overlap that check, and nothing runs before it. A key in the
// wrong part is refused.
enum part { MOUNT_PART, COMMAND_PART };

// specbuf holds what has come of the spec, grown as needed up to MAX_SPEC
// bytes; read_spec keeps copies of the values it stores (keep), since the
// buffer may move.
static char *specbuf;
static size_t speccap, speclen, specpos;
static int speceof;

static const char *keep(const char *v) {
	char *c = strdup(v);
	if (!c)
		fail("spec: out of memory");
	return c;
}

// spec_recv reads more of the spec into specbuf; the tasks files may come
// only with the mount part.
static void spec_recv(int fd, enum part part) {
	if (speclen == speccap) {
		if (speccap == MAX_SPEC) {
			errno = 0;
			fail("spec: larger than %d bytes", MAX_SPEC);
		}
		speccap = speccap ? 2 * speccap : 1 << 16;
		if (speccap > MAX_SPEC)
			speccap = MAX_SPEC;
		if (!(specbuf = realloc(specbuf, speccap)))
			fail("spec: out of memory");
	}
	struct iovec iov = {.iov_base = specbuf + speclen, .iov_len = speccap - speclen};
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(int) * 253)]; // SCM_MAX_FD: the most one message carries
	} cm;
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.b, .msg_controllen = sizeof cm.b};
	ssize_t n;
	while ((n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR)
		;
	if (n < 0)
		fail("spec: read");
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		int k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (int j = 0; j < k; j++) {
			int cfd;
			memcpy(&cfd, CMSG_DATA(c) + j * sizeof(int), sizeof cfd);
			if (sp.nrights == MAX_RIGHTS || part != MOUNT_PART) {
				errno = 0;
				fail(part != MOUNT_PART ? "spec: descriptors after the mount part" : "spec: too many descriptors");
			}
			sp.rights[sp.nrights++] = cfd;
		}
	}
	if (msg.msg_flags & MSG_CTRUNC) {
		errno = 0;
		fail("spec: descriptors cut off");
	}
	if (n == 0)
		speceof = 1;
	speclen += n;
}

// spec_pair sets *key and *val to the next whole pair of the spec, read
// as needed; it returns 0 at the end of the stream.
static int spec_pair(int fd, enum part part, const char **key, const char **val) {
	for (;;) {
		if (!specbuf)
			spec_recv(fd, part);
		char *k = specbuf + specpos;
		char *z = memchr(k, 0, speclen - specpos);
		char *v = z ? z + 1 : NULL;
		char *zv = v ? memchr(v, 0, speclen - (v - specbuf)) : NULL;
		if (zv) {
			*key = k;
			*val = v;
			specpos = zv - specbuf + 1;
			return 1;
		}
		if (speceof) {
			if (specpos != speclen) {
				errno = 0;
				fail(z ? "spec: truncated at %s" : "spec: trailing bytes", k);
			}
			return 0;
		}
		spec_recv(fd, part);
	}
}

static int is_key(const char *key, const char *const *keys) {
	for (; *keys; keys++)
		if (!strcmp(key, *keys))
			return 1;
	return 0;
}

static const char *const mount_keys[] = {"host", "scope", "lower", "upper", "work", "layer", "hide", "mask", "bind", "read", "cache", "cachedir", "proxy", "net", "loopback", "disk", "discard", "cgroups", "mountfds", "fds", NULL};
static const char *const command_keys[] = {"arg", "env", "dir", "probe", "cpu_s", "nproc", "as", NULL};

// read_spec reads one part of the spec into sp.
static void read_spec(int fd, enum part part) {
	const char *key, *val;
	int ended = 0;
	while (!ended && spec_pair(fd, part, &key, &val)) {
		if (part == MOUNT_PART && !strcmp(key, "mounts")) {
			ended = 1;
			continue;
		}
		if (!is_key(key, part == MOUNT_PART ? mount_keys : command_keys)) {
			errno = 0;
			fail(is_key(key, part == MOUNT_PART ? command_keys : mount_keys) ? "spec: %s in the wrong part" : "spec: unknown key %s", key);
		}
		struct scope *s = sp.nscopes ? &sp.scopes[sp.nscopes - 1] : NULL;
		if ((!strcmp(key, "arg") && sp.argc == MAX_ITEMS) || (!strcmp(key, "env") && sp.envc == MAX_ITEMS)) {
			errno = 0;
			fail("spec: more than %d %s entries", MAX_ITEMS, key);
		}
		if (!strcmp(key, "arg"))
			sp.argv[sp.argc++] = keep(val);
		else if (!strcmp(key, "env"))
			sp.env[sp.envc++] = keep(val);
		else if (!strcmp(key, "dir"))
			sp.dir = keep(val);
		else if (!strcmp(key, "host"))
			sp.hostname = keep(val);
		else if (!strcmp(key, "scope")) {
			if (sp.nscopes == 256) {
				errno = 0;
				fail("spec: too many scopes");
			}
			s = &sp.scopes[sp.nscopes++];
			s->path = keep(val);
		} else if (!strcmp(key, "lower") && s)
			s->lower = keep(val);
		else if (!strcmp(key, "upper") && s)
			s->upper = keep(val);
		else if (!strcmp(key, "work") && s)
			s->work = keep(val);
		else if (!strcmp(key, "layer") && s)
			s->layer = keep(val);
		else if (!strcmp(key, "bind") || !strcmp(key, "mask") || !strcmp(key, "read")) {
			int bind = key[0] == 'b', rd = key[0] == 'r';
			if (bind ? sp.nbinds == MAX_BINDS : rd ? sp.nreads == MAX_BINDS : sp.nmask == 16) {
				errno = 0;
				fail("spec: too many %s paths", key);
			}
			if (val[0] != '/') {
				errno = 0;
				fail("spec: %s %s: not absolute", key, val);
			}
			if (bind)
				sp.binds[sp.nbinds++] = keep(val);
			else if (rd)
				sp.reads[sp.nreads++] = keep(val);
			else
				sp.mask[sp.nmask++] = keep(val);
		} else if (!strcmp(key, "cache") || !strcmp(key, "cachedir")) {
			int dir = strlen(key) > 5;
			if (val[0] != '/' || (dir ? sp.ncaches == 0 || sp.cachedirs[sp.ncaches - 1] : sp.ncaches == MAX_BINDS)) {
				errno = 0;
				fail("spec: bad %s %s", key, val);
			}
			if (dir)
				sp.cachedirs[sp.ncaches - 1] = keep(val);
			else
				sp.caches[sp.ncaches++] = keep(val);
		} else if (!strcmp(key, "fds"))
			; // a message that carries descriptors (counted as they come)
		else if (!strcmp(key, "hide")) {
			if (sp.nhide == MAX_HIDE) {
				errno = 0;
				fail("spec: more than %d paths to hide", MAX_HIDE);
			}
			if (val[0] != '/') {
				errno = 0;
				fail("spec: hide %s: not absolute", val);
			}
			sp.hide[sp.nhide++] = keep(val);
		} else if (!strcmp(key, "net"))
			sp.net = 1;
		else if (!strcmp(key, "loopback"))
			sp.loopback = 1;
		else if (!strcmp(key, "proxy")) {
			long long port = num(key, val);
			if (port < 1 || port > 65535) {
				errno = 0;
				fail("spec: bad proxy port %s", val);
			}
			sp.proxy = (int)port;
		}
		else if (!strcmp(key, "discard"))
			sp.discard = 1;
		else if (!strcmp(key, "probe"))
			sp.probe = 1;
		else if (!strcmp(key, "cpu_s"))
			sp.cpu_s = num(key, val);
		else if (!strcmp(key, "nproc"))
			sp.nproc = num(key, val);
		else if (!strcmp(key, "as"))
			sp.as_bytes = num(key, val);
		else if (!strcmp(key, "disk"))
			sp.disk_bytes = num(key, val);
		else if (!strcmp(key, "cgroups"))
			sp.want_cgroups = num(key, val);
		else if (!strcmp(key, "mountfds"))
			sp.want_mounts = num(key, val);
		else {
			errno = 0;
			fail("spec: %s before a scope", key);
		}
	}
	if (part == MOUNT_PART) {
		if (!ended) {
			// The parent ended the sandbox before its spec was whole:
			// nothing is mounted, nothing runs.
			errno = 0;
			fail("spec: no mount part");
		}
		if (sp.discard && !sp.disk_bytes) {
			errno = 0;
			fail("spec: discard without a disk cap");
		}
		// The descriptors: the cgroups' tasks files, then, as root, per
		// scope its lower and its layer as idmapped mounts, then one
		// mount per bind.
		long long want_mounts = idmap ? 2 * sp.nscopes + sp.nbinds + sp.ncaches : 0;
		for (int i = 0; i < sp.ncaches; i++)
			if (!sp.cachedirs[i]) {
				errno = 0;
				fail("spec: cache %s without its directory", sp.caches[i]);
			}
		if (sp.want_cgroups > MAX_CGROUPS || sp.want_cgroups + sp.want_mounts != sp.nrights || sp.want_mounts != want_mounts) {
			errno = 0;
			fail("spec: %lld cgroups and %lld mounts announced (%lld mounts expected), %d descriptors received",
			     sp.want_cgroups, sp.want_mounts, want_mounts, sp.nrights);
		}
		sp.ncgroups = (int)sp.want_cgroups;
		memcpy(sp.cgroups, sp.rights, sizeof(int) * sp.ncgroups);
		for (int k = 0; k < sp.nscopes; k++) {
			struct scope *s = &sp.scopes[k];
			s->index = k;
			if (!s->lower || !s->upper || (!s->work && !sp.disk_bytes) || s->path[0] != '/' ||
			    (idmap && !(s->layer && under(s->upper, s->layer) && (sp.disk_bytes || under(s->work, s->layer))))) {
				errno = 0;
				fail("spec: incomplete scope %s", s->path);
			}
		}
		return;
	}
	if (sp.argc == 0 && !sp.probe) {
		errno = 0;
		fail("spec: empty argv");
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

// ---- The disk cap: the layers on a sized tmpfs -------------------------
//
// With a disk cap, the scopes' upper and work dirs, /tmp and /dev/shm all
// live on one tmpfs of that size, mounted by init: a write past the cap
// fails with ENOSPC, whatever file it goes to. The tmpfs upper of each scope
// is seeded with what the caller's layer (Scope.upper, on disk) already
// holds, and after the command and everything it started have ended, init
// copies the result back: the layer on disk then holds exactly what
// overlayfs wrote (files with content, mode and times; directories with
// mode; symlinks; whiteouts; and the user.* xattrs, user.overlay.opaque and
// the like). A file seeded and not touched since is not copied back: its
// inode and ctime are unchanged (see seed_barrier).

#define FNV_OFFSET 14695981039346656037ULL
#define FNV_PRIME 1099511628211ULL
#define MAX_DEPTH 2048

static int diskfd = -1; // the tmpfs root

struct seeded {
	ino_t ino;
	uint64_t hash; // of the scope index and the path below the scope
	struct timespec ctime;
};
static struct seeded *seeded;
static size_t nseeded, capseeded;
static struct timespec seed_max_ctime;

// SEED: into an empty directory, recording what is copied; OUT: onto the
// layer from before; FRESH: on the way out, into a new empty directory.
enum copy_mode { SEED, OUT, FRESH };

// What copy-out counted: the apparent size of the layers' regular files (as
// the plan counts them), and whether it passed the cap (copy-out stops).
static long long out_bytes;
static int out_over;

static uint64_t hash_name(uint64_t h, const char *name) {
	h ^= '/';
	h *= FNV_PRIME;
	for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
		h ^= *p;
		h *= FNV_PRIME;
	}
	return h;
}

static int ts_cmp(const struct timespec *a, const struct timespec *b) {
	if (a->tv_sec != b->tv_sec)
		return a->tv_sec < b->tv_sec ? -1 : 1;
	if (a->tv_nsec != b->tv_nsec)
		return a->tv_nsec < b->tv_nsec ? -1 : 1;
	return 0;
}

static int seeded_cmp(const void *a, const void *b) {
	const struct seeded *x = a, *y = b;
	return x->ino < y->ino ? -1 : x->ino > y->ino;
}

static void seed_record(int fd, uint64_t h, const char *name) {
	struct stat st;
	if (fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		fail("seed: stat %s", name);
	if (nseeded == capseeded) {
		capseeded = capseeded ? 2 * capseeded : 256;
		seeded = realloc(seeded, capseeded * sizeof *seeded);
		if (!seeded)
			fail("seed: out of memory");
	}
	seeded[nseeded++] = (struct seeded){.ino = st.st_ino, .hash = h, .ctime = st.st_ctim};
	if (ts_cmp(&st.st_ctim, &seed_max_ctime) > 0)
		seed_max_ctime = st.st_ctim;
}

// untouched reports whether st, found at the path hashed h, is an inode
// that seeding put there and nothing changed since: any write, chmod,
// utimes, link, rename or xattr change sets the ctime to a later time (see
// seed_barrier).
static int untouched(const struct stat *st, uint64_t h) {
	size_t lo = 0, hi = nseeded;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (seeded[mid].ino < st->st_ino)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < nseeded && seeded[lo].ino == st->st_ino && seeded[lo].hash == h &&
	       ts_cmp(&seeded[lo].ctime, &st->st_ctim) == 0;
}

// seed_barrier waits until the coarse clock, which stamps ctimes, is past
// every seeded entry's ctime, so that a change the command makes gives a
// different ctime. It costs at most a clock tick, and only when files were
// seeded.
static void seed_barrier(void) {
	if (!nseeded)
		return;
	qsort(seeded, nseeded, sizeof *seeded, seeded_cmp);
	for (;;) {
		struct timespec now;
		clock_gettime(CLOCK_REALTIME_COARSE, &now);
		if (ts_cmp(&now, &seed_max_ctime) > 0)
			return;
		struct timespec d = {0, 500000};
		nanosleep(&d, NULL);
	}
}

struct names {
	char **v;
	size_t n, cap;
};

static int name_cmp(const void *a, const void *b) {
	return strcmp(*(char *const *)a, *(char *const *)b);
}

// read_names lists the directory dfd, sorted.
static void read_names(int dfd, struct names *ns, const char *what) {
	int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		fail("%s: open a directory", what);
	DIR *d = fdopendir(fd);
	if (!d)
		fail("%s: fdopendir", what);
	ns->v = NULL;
	ns->n = ns->cap = 0;
	for (;;) {
		errno = 0;
		struct dirent *e = readdir(d);
		if (!e) {
			if (errno)
				fail("%s: read a directory", what);
			break;
		}
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (ns->n == ns->cap) {
			ns->cap = ns->cap ? 2 * ns->cap : 16;
			ns->v = realloc(ns->v, ns->cap * sizeof *ns->v);
			if (!ns->v)
				fail("%s: out of memory", what);
		}
		if (!(ns->v[ns->n++] = strdup(e->d_name)))
			fail("%s: out of memory", what);
	}
	closedir(d);
	if (ns->n > 1)
		qsort(ns->v, ns->n, sizeof *ns->v, name_cmp);
}

static int has_name(const struct names *ns, const char *name) {
	return ns->n && bsearch(&name, ns->v, ns->n, sizeof *ns->v, name_cmp) != NULL;
}

static void free_names(struct names *ns) {
	for (size_t i = 0; i < ns->n; i++)
		free(ns->v[i]);
	free(ns->v);
}

// remove_entry removes name from dfd, a directory with all it holds.
static void remove_entry(int dfd, const char *name, int depth) {
	if (unlinkat(dfd, name, 0) == 0 || errno == ENOENT)
		return;
	if (errno != EISDIR)
		fail("copy the layer out: remove %s", name);
	if (depth > MAX_DEPTH) {
		errno = 0;
		fail("copy the layer out: more than %d nested directories", MAX_DEPTH);
	}
	int sub = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (sub < 0)
		fail("copy the layer out: open %s", name);
	struct names ns;
	read_names(sub, &ns, "copy the layer out");
	for (size_t i = 0; i < ns.n; i++)
		remove_entry(sub, ns.v[i], depth + 1);
	free_names(&ns);
	close(sub);
	if (unlinkat(dfd, name, AT_REMOVEDIR) < 0)
		fail("copy the layer out: remove %s", name);
}

// The xattrs copied: every user.* one (user.overlay.* included) and POSIX
// ACLs. Others (trusted.*, security.*) cannot be set in a user namespace.
static int xattr_copied(const char *name) {
	return !strncmp(name, "user.", 5) || !strncmp(name, "system.posix_acl_", 17);
}

static char *list_xattrs(int fd, ssize_t *len, const char *what) {
	for (;;) {
		ssize_t n = flistxattr(fd, NULL, 0);
		if (n < 0 && (errno == ENOTSUP || errno == EOPNOTSUPP)) {
			*len = 0;
			return NULL;
		}
		if (n < 0)
			fail("%s: list xattrs", what);
		if (n == 0) {
			*len = 0;
			return NULL;
		}
		char *buf = malloc(n);
		if (!buf)
			fail("%s: out of memory", what);
		ssize_t m = flistxattr(fd, buf, n);
		if (m >= 0) {
			*len = m;
			return buf;
		}
		free(buf);
		if (errno != ERANGE)
			fail("%s: list xattrs", what);
	}
}

// copy_xattrs gives dst the xattrs of src; with clear, it first removes
// dst's copied kinds that src lacks (dst existed before).
static void copy_xattrs(int src, int dst, int clear, const char *what) {
	ssize_t slen, dlen;
	char *sl = list_xattrs(src, &slen, what);
	if (clear) {
		char *dl = list_xattrs(dst, &dlen, what);
		for (ssize_t i = 0; i < dlen; i += strlen(dl + i) + 1) {
			const char *name = dl + i;
			int found = 0;
			for (ssize_t j = 0; j < slen && !found; j += strlen(sl + j) + 1)
				found = !strcmp(sl + j, name);
			if (!found && xattr_copied(name) && fremovexattr(dst, name) < 0 && errno != ENODATA)
				fail("%s: remove xattr %s", what, name);
		}
		free(dl);
	}
	char val[65536];
	for (ssize_t i = 0; i < slen; i += strlen(sl + i) + 1) {
		const char *name = sl + i;
		if (!xattr_copied(name))
			continue;
		ssize_t n = fgetxattr(src, name, val, sizeof val);
		if (n < 0)
			fail("%s: get xattr %s", what, name);
		if (fsetxattr(dst, name, val, n, 0) < 0 && !strncmp(name, "user.", 5))
			fail("%s: set xattr %s", what, name);
	}
	free(sl);
}

static void copy_data(int in, int out, off_t size, const char *what, const char *name) {
	off_t left = size;
	while (left > 0) {
		ssize_t n = sendfile(out, in, NULL, left > (1 << 30) ? (1 << 30) : left);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			fail("%s: copy %s", what, name);
		if (n == 0)
			break; // the file is shorter than it was: nothing writes to it now
		left -= n;
	}
}

static void copy_dir(int sfd, int dfd, uint64_t h, enum copy_mode mode, int depth, const char *what);

// copy_entry copies the entry name, of stat st, from sfd to dfd.
static void copy_entry(int sfd, int dfd, const char *name, const struct stat *st, uint64_t h,
		       enum copy_mode mode, int depth, const char *what) {
	struct stat dst;
	int exists = 0;
	if (mode == OUT) {
		if (fstatat(dfd, name, &dst, AT_SYMLINK_NOFOLLOW) == 0)
			exists = 1;
		else if (errno != ENOENT)
			fail("%s: stat %s", what, name);
	}
	if (S_ISREG(st->st_mode)) {
		if (mode != SEED) {
			if (st->st_size > sp.disk_bytes - out_bytes) {
				out_over = 1;
				return;
			}
			out_bytes += st->st_size;
		}
	}
	if (S_ISDIR(st->st_mode)) {
		if (exists && !S_ISDIR(dst.st_mode)) {
			remove_entry(dfd, name, depth);
			exists = 0;
		}
		if (!exists && mkdirat(dfd, name, 0700) < 0)
			fail("%s: mkdir %s", what, name);
		int s = openat(sfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		int d = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (s < 0 || d < 0)
			fail("%s: open %s", what, name);
		copy_dir(s, d, h, mode == SEED ? SEED : exists ? OUT : FRESH, depth + 1, what);
		copy_xattrs(s, d, exists, what);
		if ((!exists || (dst.st_mode & 07777) != (st->st_mode & 07777)) && fchmod(d, st->st_mode & 07777) < 0)
			fail("%s: chmod %s", what, name);
		close(s);
		close(d);
		return;
	}
	if (mode == OUT && exists && untouched(st, h) && (dst.st_mode & S_IFMT) == (st->st_mode & S_IFMT))
		return;
	if (exists)
		remove_entry(dfd, name, depth);
	struct timespec times[2] = {st->st_atim, st->st_mtim};
	if (S_ISREG(st->st_mode)) {
		int in = openat(sfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		if (in < 0)
			fail("%s: open %s", what, name);
		int out = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (out < 0)
			fail("%s: create %s", what, name);
		copy_data(in, out, st->st_size, what, name);
		copy_xattrs(in, out, 0, what);
		if (fchmod(out, st->st_mode & 07777) < 0 || futimens(out, times) < 0)
			fail("%s: set the mode and times of %s", what, name);
		close(in);
		close(out);
	} else if (S_ISLNK(st->st_mode)) {
		// On the heap: copy_entry is a frame of the recursion, which
		// MAX_DEPTH levels of must fit init's stack.
		char *target = malloc(PATH_MAX + 1);
		if (!target)
			fail("%s: out of memory", what);
		ssize_t n = readlinkat(sfd, name, target, PATH_MAX + 1);
		if (n < 0 || n > PATH_MAX)
			fail("%s: readlink %s", what, name);
		target[n] = 0;
		if (symlinkat(target, dfd, name) < 0)
			fail("%s: symlink %s", what, name);
		free(target);
		utimensat(dfd, name, times, AT_SYMLINK_NOFOLLOW);
	} else if ((S_ISCHR(st->st_mode) && st->st_rdev == 0) || S_ISFIFO(st->st_mode)) {
		// A whiteout (character device 0/0), or a FIFO the command made.
		if (mknodat(dfd, name, st->st_mode & (S_IFMT | 07777), 0) < 0)
			fail("%s: mknod %s", what, name);
		if (fchmodat(dfd, name, st->st_mode & 07777, 0) < 0)
			fail("%s: chmod %s", what, name);
	} else {
		errno = 0;
		fail("%s: %s is of a type the layer cannot hold (mode %o)", what, name, st->st_mode);
	}
	if (mode == SEED)
		seed_record(dfd, h, name);
}

// copy_dir makes dfd's content that of sfd. SEED: dfd is empty, and the
// copies are recorded (seed_record). OUT: dfd holds the layer from before,
// whose entries that sfd lacks are removed and whose untouched seeded ones
// are kept.
static void copy_dir(int sfd, int dfd, uint64_t h, enum copy_mode mode, int depth, const char *what) {
	if (depth > MAX_DEPTH) {
		errno = 0;
		fail("%s: more than %d nested directories", what, MAX_DEPTH);
	}
	struct names src;
	read_names(sfd, &src, what);
	if (mode == OUT) {
		struct names dst;
		read_names(dfd, &dst, what);
		for (size_t i = 0; i < dst.n; i++)
			if (!has_name(&src, dst.v[i]))
				remove_entry(dfd, dst.v[i], depth);
		free_names(&dst);
	}
	for (size_t i = 0; i < src.n && !out_over; i++) {
		struct stat st;
		if (fstatat(sfd, src.v[i], &st, AT_SYMLINK_NOFOLLOW) < 0)
			fail("%s: stat %s", what, src.v[i]);
		copy_entry(sfd, dfd, src.v[i], &st, hash_name(h, src.v[i]), mode, depth, what);
	}
	free_names(&src);
}

// copy_root copies the directory src onto the directory dst, its own mode
// and xattrs included.
static void copy_root(int src, int dst, uint64_t h, enum copy_mode mode, const char *what) {
	struct stat st, dt;
	if (fstat(src, &st) < 0 || fstat(dst, &dt) < 0)
		fail("%s: stat", what);
	copy_dir(src, dst, h, mode, 0, what);
	copy_xattrs(src, dst, mode == OUT, what);
	if ((st.st_mode & 07777) != (dt.st_mode & 07777) && fchmod(dst, st.st_mode & 07777) < 0)
		fail("%s: chmod", what);
}

static struct rlimit nofile;

// more_files raises the open files limit for a copy, which holds two
// descriptors per level of depth; less_files puts it back.
static void more_files(void) {
	getrlimit(RLIMIT_NOFILE, &nofile);
	struct rlimit rl = nofile;
	rl.rlim_cur = rl.rlim_max;
	if (rl.rlim_cur > 2 * MAX_DEPTH + 64)
		rl.rlim_cur = 2 * MAX_DEPTH + 64;
	if (rl.rlim_cur > nofile.rlim_cur)
		setrlimit(RLIMIT_NOFILE, &rl);
}

static void less_files(void) {
	setrlimit(RLIMIT_NOFILE, &nofile);
}

static uint64_t scope_hash(const struct scope *s) {
	return (FNV_OFFSET ^ (uint64_t)s->index) * FNV_PRIME;
}

// setup_disk mounts the tmpfs on /tmp, lays it out (l/<k>/u and l/<k>/w
// for scope k, t for /tmp, shm for /dev/shm), seeds each scope's upper and
// binds t over /tmp.
static void setup_disk(void) {
	char opts[128], p[64];
	// Inodes count too: every file, however empty, costs the host an inode
	// and a directory entry when the layer is copied back. One inode per
	// KiB of the cap (at least 1024): 30,000 empty files do not fit in 1 MiB.
	long long inodes = sp.disk_bytes / 1024;
	if (inodes < 1024)
		inodes = 1024;
	snprintf(opts, sizeof opts, "mode=0755,size=%lld,nr_inodes=%lld", sp.disk_bytes, inodes);
	if (mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0)
		fail("mount a tmpfs of %lld bytes (the disk cap)", sp.disk_bytes);
	if ((diskfd = open("/tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		fail("open the tmpfs");
	mode_t um = umask(0);
	if (mkdirat(diskfd, "t", 01777) < 0 || mkdirat(diskfd, "shm", 01777) < 0 || mkdirat(diskfd, "l", 0700) < 0)
		fail("mkdir in the tmpfs");
	int l = openat(diskfd, "l", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (l < 0)
		fail("open the tmpfs");
	more_files();
	for (int k = 0; k < sp.nscopes; k++) {
		struct scope *s = &sp.scopes[k];
		snprintf(p, sizeof p, "%d", k);
		if (mkdirat(l, p, 0700) < 0)
			fail("mkdir in the tmpfs");
		int d = openat(l, p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (d < 0 || mkdirat(d, "u", 0755) < 0 || mkdirat(d, "w", 0700) < 0)
			fail("mkdir in the tmpfs");
		int u = openat(d, "u", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (u < 0)
			fail("open the tmpfs");
		copy_root(s->upperfd, u, scope_hash(s), SEED, "seed the layer");
		close(u);
		close(d);
		close(s->upperfd);
		s->upperfd = -1;
	}
	less_files();
	umask(um);
	close(l);
	seed_barrier();
	snprintf(p, sizeof p, "/proc/self/fd/%d/t", diskfd);
	if (mount(p, "/tmp", NULL, MS_BIND, NULL) < 0)
		fail("bind the tmpfs on /tmp");
}

static int scope_depth_cmp(const void *a, const void *b) {
	const struct scope *x = a, *y = b;
	size_t lx = strlen(x->path), ly = strlen(y->path);
	return lx < ly ? -1 : lx > ly;
}

// copy_out copies each scope's tmpfs upper back to the layer on disk, the
// outer scopes first (a nested scope's upper lies inside its parent's).
// Nothing else runs in the namespace now.
static void copy_out(void) {
	char p[64];
	fail_kind = MSG_COPY;
	umask(0);
	more_files();
	qsort(sp.scopes, sp.nscopes, sizeof sp.scopes[0], scope_depth_cmp);
	for (int k = 0; k < sp.nscopes && !out_over; k++) {
		struct scope *s = &sp.scopes[k];
		snprintf(p, sizeof p, "l/%d/u", s->index);
		int u = openat(diskfd, p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		int d = openat(s->upperrw, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (u < 0 || d < 0)
			fail("copy the layer of %s out: open", s->path);
		copy_root(u, d, scope_hash(s), OUT, "copy the layer out");
		close(u);
		close(d);
	}
	fail_kind = MSG_SETUP;
}

// ---- Discard: what a run wrote, reported and thrown away ----------------
//
// With discard, the tmpfs uppers vanish with the sandbox: the layer on
// disk is never written. report_writes compares each scope's tmpfs upper
// with the layer it was seeded from and reports what differs: an entry
// written, made, changed (content, mode, times, xattrs: see untouched) or
// removed (a whiteout, or a layer entry gone), a directory whose mode or
// opacity changed, a new opaque directory, and a new directory with
// nothing reported below it.
// Each is counted once; the first MAX_WROTE_NAMED are named.

#define MAX_WROTE_NAMED 16

static long long wrote_count;

// wrote counts the path rel (of length len: 0 for the scope itself, -1
// for a path too long to name) below the scope s, and names it if it is
// among the first.
static void wrote(const struct scope *s, const char *rel, ssize_t len) {
	static const char hexdigits[] = "0123456789abcdef";
	if (wrote_count++ >= MAX_WROTE_NAMED || len < 0)
		return;
	size_t pl = strlen(s->path);
	char *line = malloc(2 * (pl + 1 + len) + 3);
	if (!line)
		fail("report what the command wrote: out of memory");
	size_t n = 0;
	line[n++] = MSG_WROTE_PATH;
	for (int part = 0; part < 2; part++) {
		const unsigned char *p = (const unsigned char *)(part ? rel : s->path);
		size_t m = part ? (size_t)len : pl;
		if (part && len && !(pl == 1 && s->path[0] == '/')) {
			line[n++] = hexdigits['/' >> 4];
			line[n++] = hexdigits['/' & 15];
		}
		for (size_t i = 0; i < m; i++) {
			line[n++] = hexdigits[p[i] >> 4];
			line[n++] = hexdigits[p[i] & 15];
		}
	}
	line[n++] = '\n';
	ssize_t r = write(sock, line, n);
	(void)r;
	free(line);
}

// opaque reports whether the directory fd is an opaque overlay directory.
static int opaque(int fd) {
	char v[2];
	ssize_t n = fgetxattr(fd, "user.overlay.opaque", v, sizeof v);
	return n == 1 && v[0] == 'y';
}

// diff_dir reports what differs between sfd, a directory of a tmpfs upper,
// and dfd, its twin in the layer (-1: none), and returns how many entries
// it reported. rel holds the directory's path below the scope (length len:
// 0 for the scope itself; past PATH_MAX, too long to name).
static long long diff_dir(const struct scope *s, int sfd, int dfd, uint64_t h, int depth, char *rel, size_t len) {
	const char *what = "report what the command wrote";
	if (depth > MAX_DEPTH) {
		errno = 0;
		fail("%s: more than %d nested directories", what, MAX_DEPTH);
	}
	long long before = wrote_count;
	struct names src, dst = {0};
	read_names(sfd, &src, what);
	if (dfd >= 0)
		read_names(dfd, &dst, what);
	size_t i = 0, j = 0;
	while (i < src.n || j < dst.n) {
		int c = i == src.n ? 1 : j == dst.n ? -1 : strcmp(src.v[i], dst.v[j]);
		const char *name = c <= 0 ? src.v[i] : dst.v[j];
		size_t nl = strlen(name), sub = len + (len ? 1 : 0) + nl;
		if (len <= PATH_MAX && sub <= PATH_MAX) {
			if (len)
				rel[len] = '/';
			memcpy(rel + len + (len ? 1 : 0), name, nl + 1);
		} else
			sub = PATH_MAX + 1;
		ssize_t named = sub <= PATH_MAX ? (ssize_t)sub : -1;
		if (c > 0) { // in the layer only: removed
			wrote(s, rel, named);
			j++;
			continue;
		}
		struct stat st, dt;
		int exists = c == 0;
		if (fstatat(sfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			fail("%s: stat %s", what, name);
		if (exists && fstatat(dfd, name, &dt, AT_SYMLINK_NOFOLLOW) < 0)
			fail("%s: stat %s", what, name);
		uint64_t hn = hash_name(h, name);
		if (S_ISREG(st.st_mode)) {
			out_bytes += st.st_size;
			if (out_bytes > sp.disk_bytes)
				out_over = 1;
		}
		if (S_ISDIR(st.st_mode)) {
			int twin = exists && S_ISDIR(dt.st_mode);
			int sd = openat(sfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			int dd = twin ? openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
			if (sd < 0 || (twin && dd < 0))
				fail("%s: open %s", what, name);
			// Named before what is below it: a directory whose mode or
			// opacity changed, or a new opaque one (it hides the lower's);
			// after, a new directory with nothing reported below it.
			int changed = twin ? (st.st_mode & 07777) != (dt.st_mode & 07777) || opaque(sd) != opaque(dd) : opaque(sd);
			if (changed)
				wrote(s, rel, named);
			long long below = diff_dir(s, sd, dd, hn, depth + 1, rel, sub);
			if (!changed && !twin && below == 0)
				wrote(s, rel, named);
			close(sd);
			if (dd >= 0)
				close(dd);
		} else if (!(exists && untouched(&st, hn) && (dt.st_mode & S_IFMT) == (st.st_mode & S_IFMT)))
			wrote(s, rel, named);
		i++;
		if (c == 0)
			j++;
	}
	if (len <= PATH_MAX)
		rel[len] = 0;
	free_names(&src);
	if (dfd >= 0)
		free_names(&dst);
	return wrote_count - before;
}

// report_writes reports what the command wrote in each scope's tmpfs
// upper (diff_dir), and how many paths that is. Nothing else runs in the
// namespace now.
static void report_writes(void) {
	char p[64], msg[64];
	fail_kind = MSG_COPY;
	more_files();
	char *rel = malloc(PATH_MAX + 1);
	if (!rel)
		fail("report what the command wrote: out of memory");
	for (int k = 0; k < sp.nscopes; k++) {
		struct scope *s = &sp.scopes[k];
		snprintf(p, sizeof p, "l/%d/u", s->index);
		int u = openat(diskfd, p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (u < 0)
			fail("report what the command wrote in %s: open", s->path);
		rel[0] = 0;
		diff_dir(s, u, s->upperrw, scope_hash(s), 0, rel, 0);
		struct stat st, dt;
		if (fstat(u, &st) < 0 || fstat(s->upperrw, &dt) < 0)
			fail("report what the command wrote in %s: stat", s->path);
		if ((st.st_mode & 07777) != (dt.st_mode & 07777) || opaque(u) != opaque(s->upperrw))
			wrote(s, "", 0);
		close(u);
	}
	free(rel);
	int n = snprintf(msg, sizeof msg, "%c%lld\n", MSG_WROTE, wrote_count);
	ssize_t r = write(sock, msg, n);
	(void)r;
	fail_kind = MSG_SETUP;
}

static const char *devices[] = {"null", "zero", "full", "random", "urandom", "tty"};
#define NDEV (sizeof devices / sizeof devices[0])

static void make_writable(const char *path) {
	struct mount_attr attr = {.attr_clr = MOUNT_ATTR_RDONLY};
	if (mount_setattr(AT_FDCWD, path, 0, &attr, sizeof attr) < 0)
		fail("make %s writable", path);
}

// hide_paths masks what the command must not read: act's state dir, the
// usual credential stores, the policy's sandbox.hide_paths (the parent
// sends the list, scopes left out). A directory gets an empty tmpfs over
// it, a file an empty file (bind-mounted from /dev's tmpfs); both end up
// read-only with everything else, and the command, without capabilities,
// cannot unmount them. A path that is not there, or not reachable, has
// nothing to hide.
static void hide_paths(void) {
	int made = 0;
	for (int i = 0; i < sp.nhide; i++) {
		const char *p = sp.hide[i];
		struct stat st;
		if (stat(p, &st) < 0) {
			if (errno == ENOENT || errno == ENOTDIR || errno == EACCES || errno == ELOOP)
				continue;
			fail("stat %s (to hide it)", p);
		}
		if (S_ISDIR(st.st_mode)) {
			if (mount("tmpfs", p, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0755,size=4k,nr_inodes=2") < 0)
				fail("hide %s", p);
			continue;
		}
		if (!made) {
			int fd = open(HIDE_EMPTY, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0444);
			if (fd < 0)
				fail("create %s", HIDE_EMPTY);
			close(fd);
			made = 1;
		}
		if (mount(HIDE_EMPTY, p, NULL, MS_BIND, NULL) < 0)
			fail("hide %s", p);
	}
}

// premounted: the mounts that depend on no spec (mount_host_views) were
// made before the spec came, in a sandbox started ahead.
static int premounted;

static void mount_private(void) {
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		fail("make / private");
}

// mount_host_views makes the mounts that depend on no spec: a minimal
// /dev (the host's device nodes bound into a tmpfs), an empty /run, and a
// /proc for the sandbox's PID namespace with the host's kernel settings
// behind read-only binds. /dev/shm is left to setup_mounts (it may be the
// disk cap's).
static void mount_host_views(void) {
	int devfd[NDEV];
	// The host's device nodes are opened before the /dev they are in is
	// replaced.
	for (size_t i = 0; i < NDEV; i++) {
		char p[64];
		snprintf(p, sizeof p, "/dev/%s", devices[i]);
		devfd[i] = open_tree(AT_FDCWD, p, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
		if (devfd[i] < 0 && errno != ENOENT)
			fail("clone %s", p);
	}
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

	// The host's /run holds Unix sockets (D-Bus, systemd, container
	// engines) that a path reaches whatever the network namespace: hide it
	// behind an empty tmpfs, read-only like the rest.
	if (is_dir("/run") && mount("tmpfs", "/run", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0755,size=16k") < 0)
		fail("mount tmpfs on /run");

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
	// becomes its own mount, so the recursive read-only of setup_mounts
	// covers it while /proc itself is made writable again (not
	// recursively).
	static const char *const proc_ro[] = {"/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs"};
	for (size_t i = 0; i < sizeof proc_ro / sizeof proc_ro[0]; i++) {
		if (mount(proc_ro[i], proc_ro[i], NULL, MS_BIND | MS_REC, NULL) < 0 && errno != ENOENT)
			fail("bind %s", proc_ro[i]);
	}
}

// premount makes the mounts of mount_host_views in a sandbox started
// ahead, while it waits for its spec. Its parent gives it no spec whose
// scopes, layers or work dirs lie under /dev, /run or /proc, which these
// mounts hide (Warm.take starts a fresh sandbox for one).
static void premount(void) {
	mount_private();
	mount_host_views();
	premounted = 1;
}

// bindfd are the mounts of sp.binds: clones made here, or as root sent by
// the parent (-1: not there).
static int bindfd[MAX_BINDS];
// cachefd are the mounts of sp.cachedirs, the same way.
static int cachefd[MAX_BINDS];

// stage_path is the staged form of path, which lies under dir, whose
// mount is staged at the directory stage.
static const char *stage_path(const char *stage, const char *path, const char *dir) {
	char buf[PATH_MAX];
	const char *rel = strlen(dir) == 1 ? path : path + strlen(dir);
	if (snprintf(buf, sizeof buf, "%s%s", stage, rel) >= (int)sizeof buf) {
		errno = ENAMETOOLONG;
		fail("stage %s", path);
	}
	return keep(buf);
}

// stage_mounts attaches the mounts the parent sent, as root, where
// setup_mounts opens them: each scope's lower and the directory that
// holds its layer, idmapped (host uid and gid k is k inside, so the
// sandbox's root owns what host root owns there and nowhere else), under
// STAGE on /dev's tmpfs. The overlays keep private clones of them, and
// the stage is detached once they are mounted (unstage). The command
// reaches no host path by name that its own identity could not.
static void stage_mounts(void) {
	char dir[64];
	if (mkdir(STAGE, 0700) < 0)
		fail("mkdir %s", STAGE);
	int *m = sp.rights + sp.ncgroups;
	for (int k = 0; k < sp.nscopes; k++) {
		struct scope *s = &sp.scopes[k];
		for (int j = 0; j < 2; j++) {
			snprintf(dir, sizeof dir, "%s/%d%c", STAGE, k, j ? 'u' : 'l');
			if (mkdir(dir, 0700) < 0)
				fail("mkdir %s", dir);
			if (move_mount(m[2 * k + j], "", AT_FDCWD, dir, MOVE_MOUNT_F_EMPTY_PATH) < 0)
				fail("attach the idmapped mount of %s", j ? s->layer : s->lower);
			close(m[2 * k + j]);
		}
		snprintf(dir, sizeof dir, "%s/%dl", STAGE, k);
		s->lower = keep(dir);
		snprintf(dir, sizeof dir, "%s/%du", STAGE, k);
		s->upper = stage_path(dir, s->upper, s->layer);
		if (!sp.disk_bytes)
			s->work = stage_path(dir, s->work, s->layer);
	}
	for (int i = 0; i < sp.nbinds; i++)
		bindfd[i] = m[2 * sp.nscopes + i];
	for (int i = 0; i < sp.ncaches; i++)
		cachefd[i] = m[2 * sp.nscopes + sp.nbinds + i];
}

static void unstage(void) {
	char dir[64];
	for (int k = 0; k < sp.nscopes; k++)
		for (int j = 0; j < 2; j++) {
			snprintf(dir, sizeof dir, "%s/%d%c", STAGE, k, j ? 'u' : 'l');
			if (umount2(dir, MNT_DETACH) < 0 || rmdir(dir) < 0)
				fail("detach %s", dir);
		}
	if (rmdir(STAGE) < 0)
		fail("rmdir %s", STAGE);
}

// mask_homes hides the home roots (sp.mask) behind empty tmpfs mounts
// and shows in them only the read-only views of what builds need
// (sp.binds); the scopes below them are mounted after, on directories
// made here. docs/sandbox-filesystem.md.
static void mask_homes(void) {
	for (int i = 0; i < sp.nmask; i++) {
		if (!is_dir(sp.mask[i]))
			continue;
		if (mount("tmpfs", sp.mask[i], "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=256k,nr_inodes=8192") < 0)
			fail("mask %s", sp.mask[i]);
	}
	for (int i = 0; i < sp.nbinds; i++) {
		if (bindfd[i] < 0)
			continue;
		struct stat st;
		if (fstat(bindfd[i], &st) < 0)
			fail("stat %s", sp.binds[i]);
		if (S_ISDIR(st.st_mode))
			mkdir_p(sp.binds[i]);
		else {
			char *parent = strdup(sp.binds[i]);
			if (!parent)
				fail("out of memory");
			*strrchr(parent, '/') = 0;
			if (*parent)
				mkdir_p(parent);
			free(parent);
			int fd = open(sp.binds[i], O_CREAT | O_WRONLY | O_CLOEXEC, 0444);
			if (fd < 0)
				fail("create %s", sp.binds[i]);
			close(fd);
		}
		struct mount_attr ro = {.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV};
		if (mount_setattr(bindfd[i], "", AT_EMPTY_PATH, &ro, sizeof ro) < 0)
			fail("make %s read-only", sp.binds[i]);
		if (move_mount(bindfd[i], "", AT_FDCWD, sp.binds[i], MOVE_MOUNT_F_EMPTY_PATH) < 0)
			fail("show %s", sp.binds[i]);
		close(bindfd[i]);
	}
	// The caches, read-write (setup_mounts makes them writable again
	// after the recursive read-only), over whatever is there.
	for (int i = 0; i < sp.ncaches; i++) {
		mkdir_p(sp.caches[i]);
		if (move_mount(cachefd[i], "", AT_FDCWD, sp.caches[i], MOVE_MOUNT_F_EMPTY_PATH) < 0)
			fail("mount the cache on %s", sp.caches[i]);
		close(cachefd[i]);
	}
}

// open_closed makes path reachable, as root, where a directory above it
// is closed to the sandbox's identity (it may not search it: /var/tmp's
// 0700 directories, say): the highest such directory is masked by an
// empty tmpfs, as a home is, and the path is rebuilt below it for its
// scope's overlay. Nothing of the closed directory was readable to the
// command before, and nothing is now.
static void open_closed(const char *path) {
	char buf[PATH_MAX];
	size_t n = strlen(path);
	if (n >= sizeof buf) {
		errno = ENAMETOOLONG;
		fail("scope %s", path);
	}
	memcpy(buf, path, n + 1);
	for (char *p = buf + 1;; p++) {
		if (*p != '/' && *p != 0)
			continue;
		char c = *p;
		*p = 0;
		if (faccessat(AT_FDCWD, buf, X_OK, AT_EACCESS) < 0) {
			if (errno != EACCES)
				fail("scope %s: %s", path, buf);
			if (mount("tmpfs", buf, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=64k,nr_inodes=4096") < 0)
				fail("scope %s: mask %s, which is closed to the sandbox's identity", path, buf);
			return;
		}
		*p = c;
		if (c == 0)
			return;
	}
}

static void setup_mounts(void) {
	char opts[512];

	if (!premounted)
		mount_private();
	if (idmap) {
		if (!premounted)
			mount_host_views();
		stage_mounts();
	} else {
		// What builds need under the homes, cloned before they are
		// masked.
		for (int i = 0; i < sp.nbinds; i++)
			if ((bindfd[i] = open_tree(AT_FDCWD, sp.binds[i], OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC)) < 0 &&
			    errno != ENOENT && errno != EACCES)
				fail("clone %s", sp.binds[i]);
		for (int i = 0; i < sp.ncaches; i++)
			if ((cachefd[i] = open_tree(AT_FDCWD, sp.cachedirs[i], OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_SYMLINK_NOFOLLOW)) < 0)
				fail("clone the cache %s", sp.cachedirs[i]);
	}
	// Everything that a later mount may hide is opened first: the scope's
	// lower, upper and work dirs (they may sit under /tmp, or, without
	// premount, under /dev or /run).
	for (int k = 0; k < sp.nscopes; k++) {
		struct scope *s = &sp.scopes[k];
		if ((s->lowerfd = open(s->lower, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
			fail("open scope %s", s->lower);
		// With a disk cap the layer is read (seeded into the tmpfs) and,
		// after the run, written through a clone of its mount that the
		// read-only remount below does not reach.
		if ((s->upperfd = open(s->upper, (sp.disk_bytes ? O_RDONLY : O_PATH) | O_DIRECTORY | O_CLOEXEC)) < 0)
			fail("open layer %s", s->upper);
		s->upperrw = s->workfd = -1;
		if (sp.discard) {
			// Read after the run, never written (report_writes).
			if ((s->upperrw = fcntl(s->upperfd, F_DUPFD_CLOEXEC, 0)) < 0)
				fail("open layer %s", s->upper);
		} else if (sp.disk_bytes) {
			s->upperrw = open_tree(s->upperfd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
			if (s->upperrw < 0)
				fail("clone the mount of layer %s", s->upper);
		} else if ((s->workfd = open(s->work, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
			fail("open work dir %s", s->work);
	}
	if (!premounted && !idmap)
		mount_host_views();

	// Private /tmp: with a disk cap, a directory of the sized tmpfs that
	// also holds the layers; else a tmpfs of its own.
	if (sp.disk_bytes)
		setup_disk();
	else if (mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777") < 0)
		fail("mount tmpfs on /tmp");

	// /dev/shm is on the disk cap's tmpfs too: it counts against the cap.
	if (sp.disk_bytes) {
		char p[64];
		snprintf(p, sizeof p, "/proc/self/fd/%d/shm", diskfd);
		if (mount(p, "/dev/shm", NULL, MS_BIND, NULL) < 0)
			fail("bind the tmpfs on /dev/shm");
	} else if (mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777") < 0)
		fail("mount tmpfs on /dev/shm");

	mask_homes();

	// Scopes: overlays at their real paths, after /tmp and the masked
	// homes so that a scope under them shows. The paths are given as
	// /proc/self/fd links because the tmpfs may hide them (and the links
	// need no escaping).
	for (int k = 0; k < sp.nscopes; k++) {
		struct scope *s = &sp.scopes[k];
		struct stat st;
		if (stat(s->path, &st) < 0 && errno == EACCES && idmap)
			open_closed(s->path);
		if (stat(s->path, &st) < 0) {
			if (errno != ENOENT)
				fail("stat %s", s->path);
			mkdir_p(s->path); // only possible in a fresh tmpfs: /tmp, /dev, /run, a masked home
		}
		if (sp.disk_bytes)
			snprintf(opts, sizeof opts,
				 "lowerdir=/proc/self/fd/%d,upperdir=/proc/self/fd/%d/l/%d/u,workdir=/proc/self/fd/%d/l/%d/w,userxattr,volatile",
				 s->lowerfd, diskfd, k, diskfd, k);
		else
			snprintf(opts, sizeof opts,
				 "lowerdir=/proc/self/fd/%d,upperdir=/proc/self/fd/%d,workdir=/proc/self/fd/%d,userxattr,volatile",
				 s->lowerfd, s->upperfd, s->workfd);
		if (mount("overlay", s->path, "overlay", MS_NOSUID | MS_NODEV, opts) < 0)
			fail("mount overlay on %s", s->path);
		close(s->lowerfd);
		if (s->upperfd >= 0)
			close(s->upperfd);
		if (s->workfd >= 0)
			close(s->workfd);
	}

	if (idmap)
		unstage();
	hide_paths();

	// Then everything read-only, recursively (a remount would not be),
	// and writable again only what is the sandbox's own. The overlays keep
	// private clones of their upper dirs' mounts, which stay writable.
	// NODEV too: read-only does not stop writes to a block device, and a
	// device node anywhere on the host tree (a chroot, a container's root)
	// would otherwise open. Only the minimal /dev's own nodes keep it.
	struct mount_attr attr = {.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV};
	if (mount_setattr(AT_FDCWD, "/", AT_RECURSIVE, &attr, sizeof attr) < 0)
		fail("make / read-only (mount_setattr)");
	for (size_t i = 0; i < NDEV; i++) {
		char p[64];
		struct mount_attr dev = {.attr_clr = MOUNT_ATTR_NODEV};
		snprintf(p, sizeof p, "/dev/%s", devices[i]);
		if (mount_setattr(AT_FDCWD, p, 0, &dev, sizeof dev) < 0 && errno != ENOENT)
			fail("let %s be a device", p);
	}
	make_writable("/tmp");
	make_writable("/dev/shm");
	make_writable("/proc");
	for (int k = 0; k < sp.nscopes; k++)
		make_writable(sp.scopes[k].path);
	for (int i = 0; i < sp.ncaches; i++)
		make_writable(sp.caches[i]);
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

// ---- The seccomp filter ------------------------------------------------
//
// The command runs under a small seccomp filter (docs/sandbox-process.md):
//   - a syscall of another ABI than the native one (i386 through int 0x80,
//     x32, arm32 compat) kills the process: their numbers differ, and i386
//     multiplexes sockets through socketcall, which the rules below would
//     not see;
//   - socket() is an allow-list of families: AF_INET and AF_INET6 (with
//     the network; without it only where the policy opens the sandbox's
//     own loopback, else install_inet_filter refuses them) and AF_NETLINK
//     of protocol NETLINK_ROUTE (routing queries)
//     are allowed, AF_UNIX fails with EACCES (a socket bound to a path, a
//     host daemon's, is reachable whatever the network namespace), a
//     netlink protocol other than NETLINK_ROUTE with EPROTONOSUPPORT, and
//     every other family (AF_VSOCK, AF_PACKET, AF_ALG …) with EAFNOSUPPORT;
//   - socketpair() only as AF_UNIX SOCK_STREAM (SOCK_CLOEXEC and
//     SOCK_NONBLOCK aside), a connected pair that cannot address a path
//     (sendto or sendmsg with an address fails with EISCONN); a datagram
//     pair, which can send to any path, fails with EACCES;
//   - io_uring_setup, io_uring_enter and io_uring_register fail with ENOSYS
//     (as if the kernel had no io_uring): its operations (IORING_OP_SOCKET,
//     connect …) are not syscalls, so no rule here would see them;
//   - add_key, request_key and keyctl fail with EPERM (Docker's and
//     Flatpak's choice): keys are not namespaced, and the command has a
//     fresh session keyring of its own anyway (join_session_keyring).
// Everything else is allowed. The syscall numbers come from the kernel
// headers of the architecture built for; an architecture without a filter
// here is refused (MSG_UNAVAILABLE), so commands are not run unfiltered.

#if defined(__x86_64__)
#define FILTER_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__) && !defined(__AARCH64EB__)
#define FILTER_ARCH AUDIT_ARCH_AARCH64
#endif
// (LD_ARG reads an argument's low 32 bits at its offset: little-endian.)

#ifndef __NR_io_uring_setup
#define __NR_io_uring_setup 425 // the same on x86_64 and aarch64
#define __NR_io_uring_enter 426
#define __NR_io_uring_register 427
#endif
// x32 syscalls are the native numbers with this bit; no native number has it.
#define X32_SYSCALL_BIT 0x40000000

#define LD_ARG(i) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[i])) // the low 32 bits
#define RET_ERRNO(e) BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (e))

static void install_seccomp(void) {
#ifdef FILTER_ARCH
	_Static_assert(__NR_add_key + 1 == __NR_request_key && __NR_request_key + 1 == __NR_keyctl,
		       "the key syscalls are one range");
	_Static_assert(__NR_io_uring_setup + 1 == __NR_io_uring_enter && __NR_io_uring_enter + 1 == __NR_io_uring_register,
		       "the io_uring syscalls are one range");
	_Static_assert(__NR_keyctl < __NR_io_uring_setup, "the key range is below io_uring's (the jumps assume it)");
	struct sock_filter filter[] = {
		/*  0 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		/*  1 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, FILTER_ARCH, 1, 0),
		/*  2 */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		/*  3 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		/*  4 */ BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, X32_SYSCALL_BIT, 0, 2), // -> 7
		/*  5 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)-1, 1, 0),    // -> 7: syscall(-1), ENOSYS
		/*  6 */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		/*  7 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_socket, 8, 0),       // -> 16
		/*  8 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_socketpair, 17, 0),  // -> 26
		/*  9 */ BPF_JUMP(BPF_JMP | BPF_JGT | BPF_K, __NR_io_uring_register, 5, 0), // -> 15
		/* 10 */ BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, __NR_io_uring_setup, 0, 1),
		/* 11 */ RET_ERRNO(ENOSYS),
		/* 12 */ BPF_JUMP(BPF_JMP | BPF_JGT | BPF_K, __NR_keyctl, 2, 0),    // -> 15
		/* 13 */ BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, __NR_add_key, 0, 1),   // -> 15
		/* 14 */ RET_ERRNO(EPERM),
		/* 15 */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		// socket(family, type, protocol)
		/* 16 */ LD_ARG(0),
		/* 17 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_INET, 7, 0),    // -> 25
		/* 18 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_INET6, 6, 0),   // -> 25
		/* 19 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_UNIX, 12, 0),   // -> 32
		/* 20 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_NETLINK, 1, 0), // -> 22
		/* 21 */ RET_ERRNO(EAFNOSUPPORT),
		/* 22 */ LD_ARG(2),
		/* 23 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NETLINK_ROUTE, 1, 0), // -> 25
		/* 24 */ RET_ERRNO(EPROTONOSUPPORT),
		/* 25 */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		// socketpair(family, type, protocol, sv)
		/* 26 */ LD_ARG(0),
		/* 27 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_UNIX, 1, 0), // -> 29
		/* 28 */ RET_ERRNO(EAFNOSUPPORT),
		/* 29 */ LD_ARG(1),
		/* 30 */ BPF_STMT(BPF_ALU | BPF_AND | BPF_K, ~(uint32_t)(SOCK_CLOEXEC | SOCK_NONBLOCK)),
		/* 31 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SOCK_STREAM, 1, 0), // -> 33
		/* 32 */ RET_ERRNO(EACCES),
		/* 33 */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {.len = sizeof filter / sizeof filter[0], .filter = filter};
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) < 0)
		fail("install the seccomp filter");
#else
	errno = 0;
	fail_kind = MSG_UNAVAILABLE;
	fail("no seccomp filter for this architecture (x86_64 and aarch64 only): commands are not run unfiltered");
#endif
}

// install_inet_filter is a second filter, installed where the network is
// not allowed and the host policy does not open the sandbox's own loopback
// (sandbox.loopback; docs/sandbox-process.md): socket(AF_INET or AF_INET6)
// fails with EACCES, so the socket families are AF_NETLINK (routing) and
// connected AF_UNIX stream pairs only. A filter of its own keeps the main
// filter's jumps as they are; the kernel runs both and the stricter answer
// wins (a foreign ABI is killed by the first, so here it is let through).
static void install_inet_filter(void) {
#ifdef FILTER_ARCH
	struct sock_filter filter[] = {
		/* 0 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		/* 1 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, FILTER_ARCH, 0, 6), // -> 8
		/* 2 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		/* 3 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_socket, 0, 4), // -> 8
		/* 4 */ LD_ARG(0),
		/* 5 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_INET, 1, 0),  // -> 7
		/* 6 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_INET6, 0, 1), // -> 7, else 8
		/* 7 */ RET_ERRNO(EACCES),
		/* 8 */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {.len = sizeof filter / sizeof filter[0], .filter = filter};
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) < 0)
		fail("install the network filter");
#endif
}

// ---- Writes and reads only where the command may ----------------------
//
// The read-only mounts stop writes to regular files and directories
// outside the scopes, but a FIFO (or a socket file) is opened for writing
// whatever the mount says: a host FIFO anywhere in the tree would carry
// the command's bytes to its reader. A Landlock ruleset allows opening a
// file for writing only beneath the scopes, /tmp, /dev (its own minimal
// nodes, /dev/shm) and /proc. Where the spec names what may be read
// (sp.reads: the system trees), it allows opening a file for reading only
// beneath those, the scopes, the binds and the sandbox's own /tmp, /dev
// and /proc too: a host FIFO elsewhere (/var/tmp, /srv) gives the command
// nothing, whatever its mode (docs/sandbox-filesystem.md). Without Landlock
// the parent refuses to start a sandbox at all.

static void allow_beneath(int rs, const char *p, __u64 access) {
	int fd = open(p, O_PATH | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			return;
		fail("open %s (to allow access beneath it)", p);
	}
	struct landlock_path_beneath_attr pb = {.allowed_access = access, .parent_fd = fd};
	if (syscall(SYS_landlock_add_rule, rs, LANDLOCK_RULE_PATH_BENEATH, &pb, 0) < 0)
		fail("landlock: allow access beneath %s", p);
	close(fd);
}

static void restrict_access(void) {
	__u64 rw = LANDLOCK_ACCESS_FS_WRITE_FILE | (sp.nreads ? LANDLOCK_ACCESS_FS_READ_FILE : 0);
	struct landlock_ruleset_attr ra = {.handled_access_fs = rw};
	int rs = syscall(SYS_landlock_create_ruleset, &ra, sizeof ra, 0);
	if (rs < 0)
		fail("landlock: create a ruleset");
	allow_beneath(rs, "/tmp", rw);
	allow_beneath(rs, "/dev", rw);
	allow_beneath(rs, "/proc", rw);
	for (int k = 0; k < sp.nscopes; k++)
		allow_beneath(rs, sp.scopes[k].path, rw);
	for (int i = 0; i < sp.ncaches; i++)
		allow_beneath(rs, sp.caches[i], rw);
	if (sp.nreads) {
		for (int i = 0; i < sp.nreads; i++)
			allow_beneath(rs, sp.reads[i], LANDLOCK_ACCESS_FS_READ_FILE);
		for (int i = 0; i < sp.nbinds; i++)
			allow_beneath(rs, sp.binds[i], LANDLOCK_ACCESS_FS_READ_FILE);
	}
	if (syscall(SYS_landlock_restrict_self, rs, 0) < 0)
		fail("landlock: restrict the command");
	close(rs);
}

// join_session_keyring gives the command a new, empty session keyring
// instead of the caller's (keys are not namespaced): with the filter's
// refusal of keyctl it cannot read, change or plant the caller's keys.
static void join_session_keyring(void) {
	if (syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, NULL) < 0 && errno != ENOSYS)
		fail("join a new session keyring");
}

#ifndef __NR_close_range
#define __NR_close_range 436 // the same on x86_64 and aarch64
#endif
#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

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

// cloexec_all marks every descriptor above 2 close-on-exec, for the
// command's exec: nothing of init's (the spec socket, the tmpfs, the
// layers' mounts) reaches the command, and fail can still report an exec
// failure. close_range(CLOSE_RANGE_CLOEXEC) (5.11), else fcntl on each
// descriptor /proc/self/fd lists.
static void cloexec_all(void) {
	if (syscall(__NR_close_range, 3u, ~0u, CLOSE_RANGE_CLOEXEC) == 0)
		return;
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		fail("list the open descriptors");
	struct dirent *e;
	while ((e = readdir(d))) {
		int fd = atoi(e->d_name);
		if (fd > 2 && fd != dirfd(d) && fcntl(fd, F_SETFD, FD_CLOEXEC) < 0)
			fail("close-on-exec descriptor %d", fd);
	}
	closedir(d);
}

// run_command is the forked command process: limits, privileges, exec.
__attribute__((noreturn)) static void run_command(void) {
	sigset_t all;
	sigemptyset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
	for (int s = 1; s < NSIG; s++)
		signal(s, SIG_DFL);
	setsid();

	set_rlimit(RLIMIT_CPU, "RLIMIT_CPU", sp.cpu_s);
	set_rlimit(RLIMIT_NPROC, "RLIMIT_NPROC", sp.nproc);
	// Only where no memory cgroup holds the memory cap: each process's
	// address space, not a total (docs/sandbox-process.md).
	set_rlimit(RLIMIT_AS, "RLIMIT_AS", sp.as_bytes);
	struct rlimit zero = {0, 0};
	setrlimit(RLIMIT_CORE, &zero);

	if (sp.dir && chdir(sp.dir) < 0)
		fail("chdir %s", sp.dir);
	cloexec_all();
	join_session_keyring();
	drop_privileges();
	restrict_access();
	install_seccomp();
	if (!sp.net && !sp.loopback && !sp.proxy)
		install_inet_filter();
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
		char msg[128];
		ssize_t r;
		if (sp.disk_bytes) {
			// Everything the command left ends before the copy: kill(-1)
			// reaches every process of the namespace but init, and when
			// none is left to reap, none is left at all.
			kill(-1, SIGKILL);
			while (waitpid(-1, NULL, __WALL) > 0 || errno == EINTR)
				;
			struct statfs fs;
			if (fstatfs(diskfd, &fs) < 0)
				fail("statfs the tmpfs");
			if (sp.discard)
				report_writes();
			else
				copy_out();
			int n = snprintf(msg, sizeof msg, "%c%lld %lld %lld %d\n", MSG_DISK, (long long)fs.f_bfree * fs.f_bsize,
					 (long long)fs.f_ffree, out_bytes, out_over);
			r = write(sock, msg, n);
			// Nothing of the run is left but init's exit: what its
			// reaping would tell the parent (its rusage: its own and its
			// reaped children's), now, so that the parent need not wait
			// for the kernel to tear the namespaces down.
			struct rusage self, kids;
			getrusage(RUSAGE_SELF, &self);
			getrusage(RUSAGE_CHILDREN, &kids);
			long long us = (long long)(self.ru_utime.tv_sec + self.ru_stime.tv_sec + kids.ru_utime.tv_sec + kids.ru_stime.tv_sec) * 1000000 +
				       self.ru_utime.tv_usec + self.ru_stime.tv_usec + kids.ru_utime.tv_usec + kids.ru_stime.tv_usec;
			long rss = self.ru_maxrss > kids.ru_maxrss ? self.ru_maxrss : kids.ru_maxrss;
			n = snprintf(msg, sizeof msg, "%c%lld %ld\n", MSG_USAGE, us, rss);
			r = write(sock, msg, n);
		}
		int n = snprintf(msg, sizeof msg, "%c%d\n", MSG_STATUS, st);
		r = write(sock, msg, n);
		(void)r;
		if (sp.disk_bytes) {
			// The report is whole and init holds the last ends of the
			// output pipes and of the socket (every other process is
			// gone): closing them now lets the parent read its EOFs
			// without waiting for the exit below, which tears down
			// this process and its namespaces first.
			close(0);
			close(1);
			close(2);
			close(sock);
		}
		if (WIFEXITED(st))
			_exit(WEXITSTATUS(st));
		_exit(128 + WTERMSIG(st));
	}
}

// send_listener listens on 127.0.0.1:sp.proxy in the sandbox's own
// network namespace, whose only interface is its loopback, and sends the
// socket to the parent, which serves the egress proxy on it
// (docs/sandbox.md, "Network"). A connection made before the parent
// accepts waits in the backlog.
static void send_listener(void) {
	if (sp.net) {
		errno = 0;
		fail("spec: the egress proxy needs the sandbox's own network namespace");
	}
	int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(sp.proxy), .sin_addr = {htonl(INADDR_LOOPBACK)}};
	if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof a) < 0 || listen(l, 128) < 0)
		fail("listen on 127.0.0.1:%d for the egress proxy", sp.proxy);
	char line[2] = {MSG_LISTENER, '\n'};
	struct iovec iov = {.iov_base = line, .iov_len = 2};
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
	memcpy(CMSG_DATA(c), &l, sizeof l);
	if (sendmsg(sock, &msg, 0) != 2)
		fail("send the egress proxy's listener");
	close(l);
}

// write_proc writes s to the /proc file path, for the namespace's ID maps.
static void write_proc(const char *path, const char *s) {
	size_t n = strlen(s);
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, s, n) != (ssize_t)n)
		fail("write %s", path);
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
		fail("pipe");
	pid_t pid = (pid_t)syscall(SYS_clone, CLONE_PARENT | flags | SIGCHLD, NULL, NULL, NULL, NULL);
	if (pid < 0)
		fail("start the sandbox (new user, mount, PID, IPC, UTS, network namespaces)");
	if (pid == 0) {
		fail_kind = MSG_SETUP;
		close(p[1]);
		if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
			fail("set the parent-death signal");
		char c;
		while (read(p[0], &c, 1) < 0 && errno == EINTR)
			;
		close(p[0]);
		// Without the maps (the first process failed) these fail.
		if (setresgid(0, 0, 0) < 0 || setgroups(0, NULL) < 0 || setresuid(0, 0, 0) < 0)
			fail("take the sandbox's own identity");
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
	fail_kind = MSG_SETUP;
	int n = snprintf(map, sizeof map, "%c%d\n", MSG_PID, (int)pid);
	if (write(sock, map, n) != n)
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
	fail_kind = MSG_UNAVAILABLE;
	if (idmap) {
		enter_namespaces_idmap(flags); // returns in init
		return;
	}
	if (unshare(flags) < 0)
		fail("start the sandbox (new user, mount, PID, IPC, UTS, network namespaces)");
	int fd = open("/proc/self/setgroups", O_WRONLY | O_CLOEXEC);
	if (fd >= 0) {
		if (write(fd, "deny", 4) != 4)
			fail("write /proc/self/setgroups");
		close(fd);
	} else if (errno != ENOENT)
		fail("open /proc/self/setgroups");
	snprintf(map, sizeof map, "%u %u 1", (unsigned)uid, (unsigned)uid);
	write_proc("/proc/self/uid_map", map);
	snprintf(map, sizeof map, "%u %u 1", (unsigned)gid, (unsigned)gid);
	write_proc("/proc/self/gid_map", map);
	fail_kind = MSG_SETUP;
	pid_t pid = (pid_t)syscall(SYS_clone, CLONE_PARENT | SIGCHLD, NULL, NULL, NULL, NULL);
	if (pid < 0)
		fail("clone the sandbox's init");
	if (pid == 0) {
		// init: killed with the parent. The parent reaps it, so its PID
		// cannot be reused before the parent has seen it end.
		if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
			fail("set the parent-death signal");
		return;
	}
	int n = snprintf(map, sizeof map, "%c%d\n", MSG_PID, (int)pid);
	if (write(sock, map, n) != n)
		_exit(SETUP_FAILED); // the parent is gone; init's spec read fails
	_exit(0);
}

__attribute__((constructor)) static void act_nsexec(void) {
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
		idmap = !errno && !*e && idmap_base >= IDMAP_COUNT && idmap_base <= 0xFFFFFFFEUL - IDMAP_COUNT;
		if (!idmap)
			idmap = -1; // refused once the socket is known
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
	sock = (int)fd;
	close_inherited(sock);
	if (fcntl(sock, F_SETFD, FD_CLOEXEC) < 0)
		fail("spec socket");
	if (idmap < 0) {
		errno = 0;
		fail("bad %s", MARKER_IDMAP);
	}
	enter_namespaces(keep_net);
	if (getpid() != 1) {
		errno = 0;
		fail("init is not PID 1");
	}

	// The namespace's own loopback does not depend on the spec: brought up
	// while the spec is still to come (a sandbox started ahead waits here),
	// and, in a sandbox started ahead, the mounts that depend on none.
	if (!keep_net)
		loopback_up();
	if (ahead)
		premount();
	read_spec(sock, MOUNT_PART);
	if (sp.net != keep_net) {
		errno = 0;
		fail("spec: the network setting differs from the namespaces'");
	}
	if (sp.proxy)
		send_listener();
	join_cgroups();
	setup_mounts();
	read_spec(sock, COMMAND_PART);
	if (sp.hostname && sethostname(sp.hostname, strlen(sp.hostname)) < 0)
		fail("sethostname");
	init();
}
