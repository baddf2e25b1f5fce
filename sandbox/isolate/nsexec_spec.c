//go:build linux && cgo

// nsexec_spec.c reads the spec that init receives on the socket: key NUL
// value NUL records in two parts (nsexec.h's enum part), with the cgroups'
// tasks files and, as root, the mounts as SCM_RIGHTS; it checks them and
// keeps them in act_sp (act_read_spec).

#include "nsexec.h"

#define MAX_SPEC (64 << 20)

struct spec act_sp;

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
		act_fail("spec: bad number for %s: %s", key, v);
	}
	return n;
}

// specbuf holds what has come of the spec, grown as needed up to MAX_SPEC
// bytes; act_read_spec keeps copies of the values it stores (act_keep),
// since the buffer may move.
static char *specbuf;
static size_t speccap, speclen, specpos;
static int speceof;

const char *act_keep(const char *v) {
	char *c = strdup(v);
	if (!c)
		act_fail("spec: out of memory");
	return c;
}

// spec_recv reads more of the spec into specbuf; the tasks files may come
// only with the mount part.
static void spec_recv(int fd, enum part part) {
	if (speclen == speccap) {
		if (speccap == MAX_SPEC) {
			errno = 0;
			act_fail("spec: larger than %d bytes", MAX_SPEC);
		}
		speccap = speccap ? 2 * speccap : 1 << 16;
		if (speccap > MAX_SPEC)
			speccap = MAX_SPEC;
		if (!(specbuf = realloc(specbuf, speccap)))
			act_fail("spec: out of memory");
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
		act_fail("spec: read");
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		int k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (int j = 0; j < k; j++) {
			int cfd;
			memcpy(&cfd, CMSG_DATA(c) + j * sizeof(int), sizeof cfd);
			if (act_sp.nrights == MAX_RIGHTS || part != MOUNT_PART) {
				errno = 0;
				act_fail(part != MOUNT_PART ? "spec: descriptors after the mount part" : "spec: too many descriptors");
			}
			act_sp.rights[act_sp.nrights++] = cfd;
		}
	}
	if (msg.msg_flags & MSG_CTRUNC) {
		errno = 0;
		act_fail("spec: descriptors cut off");
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
				act_fail(z ? "spec: truncated at %s" : "spec: trailing bytes", k);
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

static const char *const mount_keys[] = {"host", "scope", "lower", "upper", "work", "layer", "hide", "file", "filedata", "mask", "bind", "read", "home", "cache", "cachedir", "cacheown", "cacheout", "proxy", "net", "loopback", "disk", "discard", "cgroups", "mountfds", "fds", NULL};
static const char *const command_keys[] = {"arg", "env", "dir", "probe", "cpu_s", "nproc", "as", "timings", "uppers", NULL};

// act_read_spec reads one part of the spec into act_sp.
void act_read_spec(int fd, enum part part) {
	const char *key, *val;
	int ended = 0;
	while (!ended && spec_pair(fd, part, &key, &val)) {
		if (part == MOUNT_PART && !strcmp(key, "mounts")) {
			ended = 1;
			continue;
		}
		if (!is_key(key, part == MOUNT_PART ? mount_keys : command_keys)) {
			errno = 0;
			act_fail(is_key(key, part == MOUNT_PART ? command_keys : mount_keys) ? "spec: %s in the wrong part" : "spec: unknown key %s", key);
		}
		struct scope *s = act_sp.nscopes ? &act_sp.scopes[act_sp.nscopes - 1] : NULL;
		if ((!strcmp(key, "arg") && act_sp.argc == MAX_ITEMS) || (!strcmp(key, "env") && act_sp.envc == MAX_ITEMS)) {
			errno = 0;
			act_fail("spec: more than %d %s entries", MAX_ITEMS, key);
		}
		if (!strcmp(key, "arg"))
			act_sp.argv[act_sp.argc++] = act_keep(val);
		else if (!strcmp(key, "env"))
			act_sp.env[act_sp.envc++] = act_keep(val);
		else if (!strcmp(key, "dir"))
			act_sp.dir = act_keep(val);
		else if (!strcmp(key, "host"))
			act_sp.hostname = act_keep(val);
		else if (!strcmp(key, "scope")) {
			if (act_sp.nscopes == 256) {
				errno = 0;
				act_fail("spec: too many scopes");
			}
			s = &act_sp.scopes[act_sp.nscopes++];
			s->path = act_keep(val);
		} else if (!strcmp(key, "lower") && s)
			s->lower = act_keep(val);
		else if (!strcmp(key, "upper") && s)
			s->upper = act_keep(val);
		else if (!strcmp(key, "work") && s)
			s->work = act_keep(val);
		else if (!strcmp(key, "layer") && s)
			s->layer = act_keep(val);
		else if (!strcmp(key, "bind") || !strcmp(key, "mask") || !strcmp(key, "read")) {
			int bind = key[0] == 'b', rd = key[0] == 'r';
			if (bind ? act_sp.nbinds == MAX_BINDS : rd ? act_sp.nreads == MAX_BINDS : act_sp.nmask == 16) {
				errno = 0;
				act_fail("spec: too many %s paths", key);
			}
			if (val[0] != '/') {
				errno = 0;
				act_fail("spec: %s %s: not absolute", key, val);
			}
			if (bind)
				act_sp.binds[act_sp.nbinds++] = act_keep(val);
			else if (rd)
				act_sp.reads[act_sp.nreads++] = act_keep(val);
			else
				act_sp.mask[act_sp.nmask++] = act_keep(val);
		} else if (!strcmp(key, "home")) {
			if (val[0] != '/' || act_sp.home) {
				errno = 0;
				act_fail("spec: bad home %s", val);
			}
			act_sp.home = act_keep(val);
		} else if (!strcmp(key, "cache")) {
			if (val[0] != '/' || act_sp.ncaches == MAX_BINDS) {
				errno = 0;
				act_fail("spec: bad %s %s", key, val);
			}
			act_sp.caches[act_sp.ncaches++] = act_keep(val);
		} else if (!strcmp(key, "cachedir") || !strcmp(key, "cacheown") || !strcmp(key, "cacheout")) {
			const char **slot = key[5] == 'd' ? act_sp.cachedirs : key[6] == 'w' ? act_sp.cacheowns : act_sp.cacheouts;
			if (val[0] != '/' || act_sp.ncaches == 0 || slot[act_sp.ncaches - 1]) {
				errno = 0;
				act_fail("spec: bad %s %s", key, val);
			}
			slot[act_sp.ncaches - 1] = act_keep(val);
		} else if (!strcmp(key, "fds"))
			; // a message that carries descriptors (counted as they come)
		else if (!strcmp(key, "hide")) {
			if (act_sp.nhide == MAX_HIDE) {
				errno = 0;
				act_fail("spec: more than %d paths to hide", MAX_HIDE);
			}
			if (val[0] != '/') {
				errno = 0;
				act_fail("spec: hide %s: not absolute", val);
			}
			act_sp.hide[act_sp.nhide++] = act_keep(val);
		} else if (!strcmp(key, "file")) {
			if (act_sp.nfiles == MAX_FILES || val[0] != '/') {
				errno = 0;
				act_fail("spec: bad file %s (at most %d, absolute)", val, MAX_FILES);
			}
			act_sp.files[act_sp.nfiles++] = act_keep(val);
		} else if (!strcmp(key, "filedata")) {
			if (!act_sp.nfiles || act_sp.filedata[act_sp.nfiles - 1]) {
				errno = 0;
				act_fail("spec: file data without its file");
			}
			act_sp.filedata[act_sp.nfiles - 1] = act_keep(val);
		} else if (!strcmp(key, "net"))
			act_sp.net = 1;
		else if (!strcmp(key, "loopback"))
			act_sp.loopback = 1;
		else if (!strcmp(key, "proxy")) {
			long long port = num(key, val);
			if (port < 1 || port > 65535) {
				errno = 0;
				act_fail("spec: bad proxy port %s", val);
			}
			act_sp.proxy = (int)port;
		}
		else if (!strcmp(key, "discard"))
			act_sp.discard = 1;
		else if (!strcmp(key, "probe"))
			act_sp.probe = 1;
		else if (!strcmp(key, "timings"))
			act_sp.timings = 1;
		else if (!strcmp(key, "uppers"))
			act_sp.uppers = 1;
		else if (!strcmp(key, "cpu_s"))
			act_sp.cpu_s = num(key, val);
		else if (!strcmp(key, "nproc"))
			act_sp.nproc = num(key, val);
		else if (!strcmp(key, "as"))
			act_sp.as_bytes = num(key, val);
		else if (!strcmp(key, "disk"))
			act_sp.disk_bytes = num(key, val);
		else if (!strcmp(key, "cgroups"))
			act_sp.want_cgroups = num(key, val);
		else if (!strcmp(key, "mountfds"))
			act_sp.want_mounts = num(key, val);
		else {
			errno = 0;
			act_fail("spec: %s before a scope", key);
		}
	}
	if (part == MOUNT_PART) {
		if (!ended) {
			// The parent ended the sandbox before its spec was whole:
			// nothing is mounted, nothing runs.
			errno = 0;
			act_fail("spec: no mount part");
		}
		if (act_sp.discard && !act_sp.disk_bytes) {
			errno = 0;
			act_fail("spec: discard without a disk cap");
		}
		// The descriptors: the cgroups' tasks files, then, as root, per
		// scope its lower and its layer as idmapped mounts, then one
		// mount per bind.
		// As root, per cache: its user's directory, act's own, the
		// copy-out directory, each where the spec names one.
		long long want_mounts = 0;
		for (int i = 0; i < act_sp.nfiles; i++)
			if (!act_sp.filedata[i]) {
				errno = 0;
				act_fail("spec: file %s without its data", act_sp.files[i]);
			}
		for (int i = 0; i < act_sp.ncaches; i++) {
			if ((!act_sp.cachedirs[i] && !act_sp.cacheowns[i]) || (act_sp.cacheouts[i] && !act_sp.cacheowns[i])) {
				errno = 0;
				act_fail("spec: cache %s without a directory, or copied out without act's own", act_sp.caches[i]);
			}
			want_mounts += !!act_sp.cachedirs[i] + !!act_sp.cacheowns[i] + !!act_sp.cacheouts[i];
		}
		want_mounts = act_idmap ? 2 * act_sp.nscopes + act_sp.nbinds + want_mounts : 0;
		if (act_sp.want_cgroups > MAX_CGROUPS || act_sp.want_cgroups + act_sp.want_mounts != act_sp.nrights || act_sp.want_mounts != want_mounts) {
			errno = 0;
			act_fail("spec: %lld cgroups and %lld mounts announced (%lld mounts expected), %d descriptors received",
			     act_sp.want_cgroups, act_sp.want_mounts, want_mounts, act_sp.nrights);
		}
		if (act_sp.home) {
			int masked = 0;
			for (int i = 0; i < act_sp.nmask; i++)
				masked |= under(act_sp.home, act_sp.mask[i]) && strcmp(act_sp.mask[i], "/");
			if (!masked) {
				errno = 0;
				act_fail("spec: home %s is not at or below a masked home root", act_sp.home);
			}
		}
		act_sp.ncgroups = (int)act_sp.want_cgroups;
		memcpy(act_sp.cgroups, act_sp.rights, sizeof(int) * act_sp.ncgroups);
		for (int k = 0; k < act_sp.nscopes; k++) {
			struct scope *s = &act_sp.scopes[k];
			s->index = k;
			if (!s->lower || !s->upper || (!s->work && !act_sp.disk_bytes) || s->path[0] != '/' ||
			    (act_idmap && !(s->layer && under(s->upper, s->layer) && (act_sp.disk_bytes || under(s->work, s->layer))))) {
				errno = 0;
				act_fail("spec: incomplete scope %s", s->path);
			}
		}
		return;
	}
	if (act_sp.argc == 0 && !act_sp.probe) {
		errno = 0;
		act_fail("spec: empty argv");
	}
}
