//go:build linux && cgo

// nsexec_disk.c is the disk cap: the layers, /tmp and /dev/shm on a tmpfs
// of the cap's size, each scope's upper seeded from its layer before the
// run (act_setup_disk) and, after it, copied back onto the layer
// (act_copy_out) or, with discard, compared with it and reported
// (act_report_writes).

#include "nsexec.h"

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

int act_diskfd = -1; // the tmpfs root

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
long long act_out_bytes;
int act_out_over;

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
		act_fail("seed: stat %s", name);
	if (nseeded == capseeded) {
		capseeded = capseeded ? 2 * capseeded : 256;
		seeded = realloc(seeded, capseeded * sizeof *seeded);
		if (!seeded)
			act_fail("seed: out of memory");
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
		act_fail("%s: open a directory", what);
	DIR *d = fdopendir(fd);
	if (!d)
		act_fail("%s: fdopendir", what);
	ns->v = NULL;
	ns->n = ns->cap = 0;
	for (;;) {
		errno = 0;
		struct dirent *e = readdir(d);
		if (!e) {
			if (errno)
				act_fail("%s: read a directory", what);
			break;
		}
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (ns->n == ns->cap) {
			ns->cap = ns->cap ? 2 * ns->cap : 16;
			ns->v = realloc(ns->v, ns->cap * sizeof *ns->v);
			if (!ns->v)
				act_fail("%s: out of memory", what);
		}
		if (!(ns->v[ns->n++] = strdup(e->d_name)))
			act_fail("%s: out of memory", what);
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
		act_fail("copy the layer out: remove %s", name);
	if (depth > MAX_DEPTH) {
		errno = 0;
		act_fail("copy the layer out: more than %d nested directories", MAX_DEPTH);
	}
	int sub = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (sub < 0)
		act_fail("copy the layer out: open %s", name);
	struct names ns;
	read_names(sub, &ns, "copy the layer out");
	for (size_t i = 0; i < ns.n; i++)
		remove_entry(sub, ns.v[i], depth + 1);
	free_names(&ns);
	close(sub);
	if (unlinkat(dfd, name, AT_REMOVEDIR) < 0)
		act_fail("copy the layer out: remove %s", name);
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
			act_fail("%s: list xattrs", what);
		if (n == 0) {
			*len = 0;
			return NULL;
		}
		char *buf = malloc(n);
		if (!buf)
			act_fail("%s: out of memory", what);
		ssize_t m = flistxattr(fd, buf, n);
		if (m >= 0) {
			*len = m;
			return buf;
		}
		free(buf);
		if (errno != ERANGE)
			act_fail("%s: list xattrs", what);
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
				act_fail("%s: remove xattr %s", what, name);
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
			act_fail("%s: get xattr %s", what, name);
		if (fsetxattr(dst, name, val, n, 0) < 0 && !strncmp(name, "user.", 5))
			act_fail("%s: set xattr %s", what, name);
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
			act_fail("%s: copy %s", what, name);
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
			act_fail("%s: stat %s", what, name);
	}
	if (S_ISREG(st->st_mode)) {
		if (mode != SEED) {
			if (st->st_size > act_sp.disk_bytes - act_out_bytes) {
				act_out_over = 1;
				return;
			}
			act_out_bytes += st->st_size;
		}
	}
	if (S_ISDIR(st->st_mode)) {
		if (exists && !S_ISDIR(dst.st_mode)) {
			remove_entry(dfd, name, depth);
			exists = 0;
		}
		if (!exists && mkdirat(dfd, name, 0700) < 0)
			act_fail("%s: mkdir %s", what, name);
		int s = openat(sfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		int d = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (s < 0 || d < 0)
			act_fail("%s: open %s", what, name);
		copy_dir(s, d, h, mode == SEED ? SEED : exists ? OUT : FRESH, depth + 1, what);
		copy_xattrs(s, d, exists, what);
		if ((!exists || (dst.st_mode & 07777) != (st->st_mode & 07777)) && fchmod(d, st->st_mode & 07777) < 0)
			act_fail("%s: chmod %s", what, name);
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
			act_fail("%s: open %s", what, name);
		int out = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (out < 0)
			act_fail("%s: create %s", what, name);
		copy_data(in, out, st->st_size, what, name);
		copy_xattrs(in, out, 0, what);
		if (fchmod(out, st->st_mode & 07777) < 0 || futimens(out, times) < 0)
			act_fail("%s: set the mode and times of %s", what, name);
		close(in);
		close(out);
	} else if (S_ISLNK(st->st_mode)) {
		// On the heap: copy_entry is a frame of the recursion, which
		// MAX_DEPTH levels of must fit init's stack.
		char *target = malloc(PATH_MAX + 1);
		if (!target)
			act_fail("%s: out of memory", what);
		ssize_t n = readlinkat(sfd, name, target, PATH_MAX + 1);
		if (n < 0 || n > PATH_MAX)
			act_fail("%s: readlink %s", what, name);
		target[n] = 0;
		if (symlinkat(target, dfd, name) < 0)
			act_fail("%s: symlink %s", what, name);
		free(target);
		utimensat(dfd, name, times, AT_SYMLINK_NOFOLLOW);
	} else if ((S_ISCHR(st->st_mode) && st->st_rdev == 0) || S_ISFIFO(st->st_mode)) {
		// A whiteout (character device 0/0), or a FIFO the command made.
		if (mknodat(dfd, name, st->st_mode & (S_IFMT | 07777), 0) < 0)
			act_fail("%s: mknod %s", what, name);
		if (fchmodat(dfd, name, st->st_mode & 07777, 0) < 0)
			act_fail("%s: chmod %s", what, name);
	} else {
		errno = 0;
		act_fail("%s: %s is of a type the layer cannot hold (mode %o)", what, name, st->st_mode);
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
		act_fail("%s: more than %d nested directories", what, MAX_DEPTH);
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
	for (size_t i = 0; i < src.n && !act_out_over; i++) {
		struct stat st;
		if (fstatat(sfd, src.v[i], &st, AT_SYMLINK_NOFOLLOW) < 0)
			act_fail("%s: stat %s", what, src.v[i]);
		copy_entry(sfd, dfd, src.v[i], &st, hash_name(h, src.v[i]), mode, depth, what);
	}
	free_names(&src);
}

// copy_root copies the directory src onto the directory dst, its own mode
// and xattrs included.
static void copy_root(int src, int dst, uint64_t h, enum copy_mode mode, const char *what) {
	struct stat st, dt;
	if (fstat(src, &st) < 0 || fstat(dst, &dt) < 0)
		act_fail("%s: stat", what);
	copy_dir(src, dst, h, mode, 0, what);
	copy_xattrs(src, dst, mode == OUT, what);
	if ((st.st_mode & 07777) != (dt.st_mode & 07777) && fchmod(dst, st.st_mode & 07777) < 0)
		act_fail("%s: chmod", what);
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

// act_setup_disk mounts the sandbox's tmpfs on /tmp — of the disk cap's
// size where there is one, else unsized — lays it out (t for /tmp, c for
// the caches' uppers and h for the home, mask_homes; with a disk cap also
// l/<k>/u and l/<k>/w for scope k and shm for /dev/shm), seeds each
// scope's upper and binds t over /tmp. What lies in the tmpfs outside t is
// reached through act_diskfd only.
void act_setup_disk(void) {
	char opts[128], p[64];
	int disk = act_sp.disk_bytes > 0;
	// Inodes count too: every file, however empty, costs the host an inode
	// and a directory entry when the layer is copied back. One inode per
	// KiB of the cap (at least 1024): 30,000 empty files do not fit in 1 MiB.
	long long inodes = act_sp.disk_bytes / 1024;
	if (inodes < 1024)
		inodes = 1024;
	if (disk)
		snprintf(opts, sizeof opts, "mode=0755,size=%lld,nr_inodes=%lld", act_sp.disk_bytes, inodes);
	else
		snprintf(opts, sizeof opts, "mode=0755");
	if (mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0) {
		if (disk)
			act_fail("mount a tmpfs of %lld bytes (the disk cap)", act_sp.disk_bytes);
		act_fail("mount a tmpfs on /tmp");
	}
	if ((act_diskfd = open("/tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		act_fail("open the tmpfs");
	mode_t um = umask(0);
	if (mkdirat(act_diskfd, "t", 01777) < 0 || mkdirat(act_diskfd, "c", 0700) < 0 ||
	    (disk && (mkdirat(act_diskfd, "shm", 01777) < 0 || mkdirat(act_diskfd, "l", 0700) < 0)))
		act_fail("mkdir in the tmpfs");
	if (disk) {
		int l = openat(act_diskfd, "l", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (l < 0)
			act_fail("open the tmpfs");
		more_files();
		for (int k = 0; k < act_sp.nscopes; k++) {
			struct scope *s = &act_sp.scopes[k];
			snprintf(p, sizeof p, "%d", k);
			if (mkdirat(l, p, 0700) < 0)
				act_fail("mkdir in the tmpfs");
			int d = openat(l, p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			if (d < 0 || mkdirat(d, "u", 0755) < 0 || mkdirat(d, "w", 0700) < 0)
				act_fail("mkdir in the tmpfs");
			int u = openat(d, "u", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			if (u < 0)
				act_fail("open the tmpfs");
			copy_root(s->upperfd, u, scope_hash(s), SEED, "seed the layer");
			close(u);
			close(d);
			close(s->upperfd);
			s->upperfd = -1;
		}
		less_files();
		close(l);
		seed_barrier();
	}
	umask(um);
	snprintf(p, sizeof p, "/proc/self/fd/%d/t", act_diskfd);
	if (mount(p, "/tmp", NULL, MS_BIND, NULL) < 0)
		act_fail("bind the tmpfs on /tmp");
}

static int scope_depth_cmp(const void *a, const void *b) {
	const struct scope *x = a, *y = b;
	size_t lx = strlen(x->path), ly = strlen(y->path);
	return lx < ly ? -1 : lx > ly;
}

// act_copy_out copies each scope's tmpfs upper back to the layer on disk, the
// outer scopes first (a nested scope's upper lies inside its parent's).
// Nothing else runs in the namespace now.
void act_copy_out(void) {
	char p[64];
	act_fail_kind = MSG_COPY;
	umask(0);
	more_files();
	qsort(act_sp.scopes, act_sp.nscopes, sizeof act_sp.scopes[0], scope_depth_cmp);
	for (int k = 0; k < act_sp.nscopes && !act_out_over; k++) {
		struct scope *s = &act_sp.scopes[k];
		snprintf(p, sizeof p, "l/%d/u", s->index);
		int u = openat(act_diskfd, p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		int d = openat(s->upperrw, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (u < 0 || d < 0)
			act_fail("copy the layer of %s out: open", s->path);
		if (act_sp.uppers) {
			// The parent reads the upper beside the copy (the sha256 of
			// each file, on the other CPU); the tmpfs stays while it holds
			// the descriptor. Nothing writes it now.
			char line[32];
			int n = snprintf(line, sizeof line, "%c%d\n", MSG_UPPER, s->index);
			if (act_send_fd(line, (size_t)n, u) < 0)
				act_fail("send the upper of %s", s->path);
		}
		copy_root(u, d, scope_hash(s), OUT, "copy the layer out");
		close(u);
		close(d);
	}
	act_fail_kind = MSG_SETUP;
}

// ---- Discard: what a run wrote, reported and thrown away ----------------
//
// With discard, the tmpfs uppers vanish with the sandbox: the layer on
// disk is never written. act_report_writes compares each scope's tmpfs upper
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
		act_fail("report what the command wrote: out of memory");
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
	ssize_t r = write(act_sock, line, n);
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
		act_fail("%s: more than %d nested directories", what, MAX_DEPTH);
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
			act_fail("%s: stat %s", what, name);
		if (exists && fstatat(dfd, name, &dt, AT_SYMLINK_NOFOLLOW) < 0)
			act_fail("%s: stat %s", what, name);
		uint64_t hn = hash_name(h, name);
		if (S_ISREG(st.st_mode)) {
			act_out_bytes += st.st_size;
			if (act_out_bytes > act_sp.disk_bytes)
				act_out_over = 1;
		}
		if (S_ISDIR(st.st_mode)) {
			int twin = exists && S_ISDIR(dt.st_mode);
			int sd = openat(sfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			int dd = twin ? openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
			if (sd < 0 || (twin && dd < 0))
				act_fail("%s: open %s", what, name);
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

// act_report_writes reports what the command wrote in each scope's tmpfs
// upper (diff_dir), and how many paths that is. Nothing else runs in the
// namespace now.
void act_report_writes(void) {
	char p[64], msg[64];
	act_fail_kind = MSG_COPY;
	more_files();
	char *rel = malloc(PATH_MAX + 1);
	if (!rel)
		act_fail("report what the command wrote: out of memory");
	for (int k = 0; k < act_sp.nscopes; k++) {
		struct scope *s = &act_sp.scopes[k];
		snprintf(p, sizeof p, "l/%d/u", s->index);
		int u = openat(act_diskfd, p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (u < 0)
			act_fail("report what the command wrote in %s: open", s->path);
		rel[0] = 0;
		diff_dir(s, u, s->upperrw, scope_hash(s), 0, rel, 0);
		struct stat st, dt;
		if (fstat(u, &st) < 0 || fstat(s->upperrw, &dt) < 0)
			act_fail("report what the command wrote in %s: stat", s->path);
		if ((st.st_mode & 07777) != (dt.st_mode & 07777) || opaque(u) != opaque(s->upperrw))
			wrote(s, "", 0);
		close(u);
	}
	free(rel);
	int n = snprintf(msg, sizeof msg, "%c%lld\n", MSG_WROTE, wrote_count);
	ssize_t r = write(act_sock, msg, n);
	(void)r;
	act_fail_kind = MSG_SETUP;
}

// ---- The home: what the command made there, named and thrown away ------
//
// The home (act_sp.home) is the directory h of the tmpfs, bound there by
// mask_homes, in which act made only what the binds, caches and scopes
// below the home are mounted on (and the directories above them).
// Everything else in h the command made: act_report_home names it in the
// order of a walk (sorted names; a new directory once, not what it holds)
// and counts it. Nothing of h is kept: it goes with the tmpfs.

static long long home_count;

// home_wrote counts path (len bytes; -1: too long to name) and names it if
// it is among the first.
static void home_wrote(const char *path, ssize_t len) {
	static const char hexdigits[] = "0123456789abcdef";
	if (home_count++ >= MAX_WROTE_NAMED || len < 0)
		return;
	char *line = malloc(2 * (size_t)len + 3);
	if (!line)
		act_fail("report what the command made in the home: out of memory");
	size_t n = 0;
	line[n++] = MSG_HOME_PATH;
	for (ssize_t i = 0; i < len; i++) {
		line[n++] = hexdigits[(unsigned char)path[i] >> 4];
		line[n++] = hexdigits[(unsigned char)path[i] & 15];
	}
	line[n++] = '\n';
	ssize_t r = write(act_sock, line, n);
	(void)r;
	free(line);
}

// home_mount reports how path relates to what act mounted over the home
// or below it: 2, one of them (a bind, a generated file, a cache or a
// scope) or below one (a scope that holds the home: the command never saw
// h); 1, above one; 0, neither.
static int home_mount(const char *path, size_t len) {
	int above = 0;
	for (int j = 0; j < 4; j++) {
		int n = j == 0 ? act_sp.nbinds : j == 1 ? act_sp.ncaches : j == 2 ? act_sp.nscopes : act_sp.nfiles;
		for (int i = 0; i < n; i++) {
			const char *m = j == 0 ? act_sp.binds[i] : j == 1 ? act_sp.caches[i] : j == 2 ? act_sp.scopes[i].path : act_sp.files[i];
			if (!m)
				continue; // a file show_files found no place for
			size_t ml = strlen(m);
			if (ml <= len && !strncmp(m, path, ml) && (path[ml] == 0 || path[ml] == '/' || ml == 1))
				return 2;
			if (ml > len && !strncmp(m, path, len) && m[len] == '/')
				above = 1;
		}
	}
	return above;
}

// walk_home names what the command made in the directory dfd of h, whose
// path (len bytes, or more than PATH_MAX: too long to name) is in path.
static void walk_home(int dfd, char *path, size_t len, int depth) {
	const char *what = "report what the command made in the home";
	if (depth > MAX_DEPTH) {
		errno = 0;
		act_fail("%s: more than %d nested directories", what, MAX_DEPTH);
	}
	struct names ns;
	read_names(dfd, &ns, what);
	for (size_t i = 0; i < ns.n; i++) {
		size_t nl = strlen(ns.v[i]);
		if (len > PATH_MAX || len + 1 + nl > PATH_MAX) {
			home_wrote(NULL, -1);
			continue;
		}
		path[len] = '/';
		memcpy(path + len + 1, ns.v[i], nl + 1);
		size_t sub = len + 1 + nl;
		switch (home_mount(path, sub)) {
		case 2:
			break; // act's, under its mount
		case 1: {
			// Above a mount: a directory act made, unless the command
			// put something else in its place.
			int fd = openat(dfd, ns.v[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (fd < 0) {
				home_wrote(path, (ssize_t)sub);
				break;
			}
			walk_home(fd, path, sub, depth + 1);
			close(fd);
			break;
		}
		default:
			home_wrote(path, (ssize_t)sub);
		}
		path[len] = 0;
	}
	free_names(&ns);
}

// act_report_home reports what the command made in the home (walk_home),
// and how many paths that is. Nothing else runs in the namespace now.
void act_report_home(void) {
	char msg[64];
	act_fail_kind = MSG_COPY;
	more_files();
	char *path = malloc(PATH_MAX + 2);
	if (!path)
		act_fail("report what the command made in the home: out of memory");
	size_t len = strlen(act_sp.home);
	if (len > PATH_MAX) {
		errno = ENAMETOOLONG;
		act_fail("report what the command made in the home");
	}
	memcpy(path, act_sp.home, len + 1);
	int h = openat(act_diskfd, "h", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (h < 0)
		act_fail("report what the command made in the home: open");
	walk_home(h, path, len, 0);
	close(h);
	free(path);
	less_files();
	int n = snprintf(msg, sizeof msg, "%c%lld\n", MSG_HOME, home_count);
	ssize_t r = write(act_sock, msg, n);
	(void)r;
	act_fail_kind = MSG_SETUP;
}

// act_copy_caches copies the upper of each cache that has act's own
// (the policy's persistent caches) to its copy-out directory, whole, for
// the parent to check and merge (plan/caches.go): nothing of it reaches
// act's own cache here. Nothing else runs in the namespace now.
void act_copy_caches(void) {
	char p[64];
	act_fail_kind = MSG_COPY;
	umask(0);
	more_files();
	for (int i = 0; i < act_sp.ncaches && !act_out_over; i++) {
		if (act_cacheoutfd[i] < 0)
			continue;
		snprintf(p, sizeof p, "c/%d/u", i);
		int u = openat(act_diskfd, p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		int d = openat(act_cacheoutfd[i], ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (u < 0 || d < 0)
			act_fail("copy the cache %s out: open", act_sp.caches[i]);
		copy_root(u, d, FNV_OFFSET, FRESH, "copy the cache out");
		close(u);
		close(d);
	}
	act_fail_kind = MSG_SETUP;
}
