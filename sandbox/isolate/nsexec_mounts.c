//go:build linux && cgo

// nsexec_mounts.c makes init's mounts (docs/sandbox-filesystem.md): / made
// private, a minimal /dev, an empty /run and a /proc of the sandbox's own
// (before the spec comes, in a sandbox started ahead: act_premount), the
// mounts the parent sends as root staged, the homes masked with only what
// builds need shown, the user's home writable through a throwaway
// directory, the caches as overlays with throwaway uppers, /tmp and
// /dev/shm (on the sandbox's tmpfs, the disk cap's where there is one,
// nsexec_disk.c), each scope's overlay at its real
// path, the paths to hide, and then the whole tree read-only but what is
// the sandbox's own (act_setup_mounts).

#include "nsexec.h"

#define STAGE "/dev/.act-stage"
// HIDE_EMPTY is the empty file bind-mounted over a file to hide.
#define HIDE_EMPTY "/dev/.act-hidden"

static int is_dir(const char *path) {
	struct stat st;
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static void mkdir_p(const char *path) {
	char buf[4096];
	size_t n = strlen(path);
	if (n >= sizeof buf) {
		errno = ENAMETOOLONG;
		act_fail("mkdir %s", path);
	}
	memcpy(buf, path, n + 1);
	for (char *p = buf + 1;; p++) {
		if (*p == '/' || *p == 0) {
			char c = *p;
			*p = 0;
			if (mkdir(buf, 0755) < 0 && errno != EEXIST)
				act_fail("mkdir %s", buf);
			*p = c;
			if (c == 0)
				break;
		}
	}
}

static const char *devices[] = {"null", "zero", "full", "random", "urandom", "tty"};
#define NDEV (sizeof devices / sizeof devices[0])

// under_scope says whether path is a scope's path or lies below one.
static int under_scope(const char *path) {
	for (int k = 0; k < act_sp.nscopes; k++) {
		const char *sp = act_sp.scopes[k].path;
		size_t n = strlen(sp);
		if (n == 1 || (!strncmp(path, sp, n) && (path[n] == 0 || path[n] == '/')))
			return 1;
	}
	return 0;
}

static void make_writable(const char *path) {
	struct mount_attr attr = {.attr_clr = MOUNT_ATTR_RDONLY};
	if (mount_setattr(AT_FDCWD, path, 0, &attr, sizeof attr) < 0)
		act_fail("make %s writable", path);
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
	for (int i = 0; i < act_sp.nhide; i++) {
		const char *p = act_sp.hide[i];
		struct stat st;
		if (stat(p, &st) < 0) {
			if (errno == ENOENT || errno == ENOTDIR || errno == EACCES || errno == ELOOP)
				continue;
			act_fail("stat %s (to hide it)", p);
		}
		if (S_ISDIR(st.st_mode)) {
			if (mount("tmpfs", p, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0755,size=4k,nr_inodes=2") < 0)
				act_fail("hide %s", p);
			continue;
		}
		if (!made) {
			int fd = open(HIDE_EMPTY, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0444);
			if (fd < 0)
				act_fail("create %s", HIDE_EMPTY);
			close(fd);
			made = 1;
		}
		if (mount(HIDE_EMPTY, p, NULL, MS_BIND, NULL) < 0)
			act_fail("hide %s", p);
	}
}

// FILES is where show_files writes the generated files, on a tmpfs of
// their own that is detached once each is bound at its path.
#define FILES "/dev/.act-files"

// make_file creates an empty file at path, and its missing directories,
// where the tmpfs below it lets them be made (a masked home, /dev): 0 if
// it did, -1 where nothing can be made (a read-only view, a directory
// the sandbox's identity may not write).
static int make_file(const char *path) {
	char buf[PATH_MAX];
	size_t n = strlen(path);
	if (n >= sizeof buf)
		return -1;
	memcpy(buf, path, n + 1);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		int r = mkdir(buf, 0755);
		*p = '/';
		if (r < 0 && errno != EEXIST)
			return -1;
	}
	int fd = open(path, O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0444);
	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

// show_files shows each generated file of the spec (act_sp.files: a
// tool's configuration with placeholders for its secrets) read-only at
// its path: written to a tmpfs of their own, then bound over what is at
// the path, found without following a final symbolic link. A path where
// nothing is and nothing can be made shows nothing; one that holds
// anything but a regular file fails the sandbox rather than leave it
// visible. After hide_paths, so that a hidden path may show its copy.
static void show_files(void) {
	if (!act_sp.nfiles)
		return;
	size_t total = 0;
	for (int i = 0; i < act_sp.nfiles; i++)
		total += strlen(act_sp.filedata[i]) + 4096;
	char opts[64];
	snprintf(opts, sizeof opts, "mode=0755,size=%zu,nr_inodes=%d", total + 4096, MAX_FILES + 2);
	if (mkdir(FILES, 0755) < 0 || mount("tmpfs", FILES, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, opts) < 0)
		act_fail("mount the tmpfs of generated files");
	for (int i = 0; i < act_sp.nfiles; i++) {
		const char *path = act_sp.files[i], *data = act_sp.filedata[i];
		char src[64];
		snprintf(src, sizeof src, "%s/%d", FILES, i);
		int fd = open(src, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0444);
		if (fd < 0)
			act_fail("create %s", src);
		for (size_t off = 0, len = strlen(data); off < len;) {
			ssize_t w = write(fd, data + off, len - off);
			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0)
				act_fail("write %s", src);
			off += w;
		}
		close(fd);
		int t = open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (t < 0 && errno == ENOENT && make_file(path) == 0)
			t = open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (t < 0) {
			if (errno != ENOENT && errno != ENOTDIR && errno != EACCES && errno != EROFS)
				act_fail("open %s (to show its copy)", path);
			act_sp.files[i] = NULL; // nothing shown there: nothing for Landlock either
			continue;
		}
		struct stat st;
		if (fstat(t, &st) < 0)
			act_fail("stat %s", path);
		if (!S_ISREG(st.st_mode)) {
			errno = 0;
			act_fail("%s is not a regular file: its copy with placeholders cannot be shown over it", path);
		}
		char target[64];
		snprintf(target, sizeof target, "/proc/self/fd/%d", t);
		if (mount(src, target, NULL, MS_BIND, NULL) < 0)
			act_fail("show the copy of %s", path);
		close(t);
	}
	if (umount2(FILES, MNT_DETACH) < 0 || rmdir(FILES) < 0)
		act_fail("detach the tmpfs of generated files");
}

// premounted: the mounts that depend on no spec (mount_host_views) were
// made before the spec came, in a sandbox started ahead.
static int premounted;

static void mount_private(void) {
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		act_fail("make / private");
}

// mount_host_views makes the mounts that depend on no spec: a minimal
// /dev (the host's device nodes bound into a tmpfs), an empty /run, and a
// /proc for the sandbox's PID namespace with the host's kernel settings
// behind read-only binds. /dev/shm is left to act_setup_mounts (it may be the
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
			act_fail("clone %s", p);
	}
	if (mount("tmpfs", "/dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755,size=1m") < 0)
		act_fail("mount tmpfs on /dev");
	for (size_t i = 0; i < NDEV; i++) {
		char p[64];
		if (devfd[i] < 0)
			continue;
		snprintf(p, sizeof p, "/dev/%s", devices[i]);
		int fd = open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0666);
		if (fd < 0)
			act_fail("create %s", p);
		close(fd);
		if (move_mount(devfd[i], "", AT_FDCWD, p, MOVE_MOUNT_F_EMPTY_PATH) < 0)
			act_fail("bind %s", p);
		close(devfd[i]);
	}
	if (symlink("/proc/self/fd", "/dev/fd") < 0 ||
	    symlink("/proc/self/fd/0", "/dev/stdin") < 0 ||
	    symlink("/proc/self/fd/1", "/dev/stdout") < 0 ||
	    symlink("/proc/self/fd/2", "/dev/stderr") < 0)
		act_fail("symlinks in /dev");
	if (mkdir("/dev/shm", 01777) < 0 || mkdir("/dev/pts", 0755) < 0)
		act_fail("mkdir in /dev");

	// The host's /run holds Unix sockets (D-Bus, systemd, container
	// engines) that a path reaches whatever the network namespace: hide it
	// behind an empty tmpfs, read-only like the rest.
	if (is_dir("/run") && mount("tmpfs", "/run", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0755,size=16k") < 0)
		act_fail("mount tmpfs on /run");

	// A /proc for this PID namespace.
	if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		act_fail("mount /proc");
	// No nested user namespaces: they are the way to regain capabilities
	// over new mounts. The sysctl is this namespace's own.
	int fd = open("/proc/sys/user/max_user_namespaces", O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, "0", 1) != 1)
		act_fail("limit user namespaces to 0");
	close(fd);
	// The host's kernel settings stay out of reach: uid 0 may write
	// /proc/sys by ownership alone, without capabilities. Each of these
	// becomes its own mount, so the recursive read-only of act_setup_mounts
	// covers it while /proc itself is made writable again (not
	// recursively).
	static const char *const proc_ro[] = {"/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs"};
	for (size_t i = 0; i < sizeof proc_ro / sizeof proc_ro[0]; i++) {
		if (mount(proc_ro[i], proc_ro[i], NULL, MS_BIND | MS_REC, NULL) < 0 && errno != ENOENT)
			act_fail("bind %s", proc_ro[i]);
	}
}

// act_premount makes the mounts of mount_host_views in a sandbox started
// ahead, while it waits for its spec. Its parent gives it no spec whose
// scopes, layers or work dirs lie under /dev, /run or /proc, which these
// mounts hide (Warm.take starts a fresh sandbox for one).
void act_premount(void) {
	mount_private();
	mount_host_views();
	premounted = 1;
}

// bindfd are the mounts of act_sp.binds: clones made here, or as root sent by
// the parent (-1: not there).
static int bindfd[MAX_BINDS];
// cachefd and ownfd are the mounts of act_sp.cachedirs and act_sp.cacheowns,
// the caches' lowers, the same way (-1: none); act_cacheoutfd those of
// act_sp.cacheouts, kept writable and detached for act_copy_caches.
static int cachefd[MAX_BINDS], ownfd[MAX_BINDS];
int act_cacheoutfd[MAX_BINDS];

#ifndef SYS_openat2
#define SYS_openat2 437 // the same on x86_64 and aarch64
#endif
#ifndef RESOLVE_NO_SYMLINKS
#define RESOLVE_NO_SYMLINKS 0x04
#endif

// clone_nofollow clones the mount of the directory path, reached with no
// symbolic link followed anywhere on the way (RESOLVE_NO_SYMLINKS): a
// cache's lower is shown where the tool expects its cache, and a link
// planted on its path must not put another directory there.
static int clone_nofollow(const char *path) {
	struct {
		__u64 flags, mode, resolve;
	} how = {.flags = O_PATH | O_DIRECTORY | O_CLOEXEC, .resolve = RESOLVE_NO_SYMLINKS};
	int fd = syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof how);
	if (fd < 0)
		return -1;
	int m = open_tree(fd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
	int e = errno;
	close(fd);
	errno = e;
	return m;
}

// stage_path is the staged form of path, which lies under dir, whose
// mount is staged at the directory stage.
static const char *stage_path(const char *stage, const char *path, const char *dir) {
	char buf[PATH_MAX];
	const char *rel = strlen(dir) == 1 ? path : path + strlen(dir);
	if (snprintf(buf, sizeof buf, "%s%s", stage, rel) >= (int)sizeof buf) {
		errno = ENAMETOOLONG;
		act_fail("stage %s", path);
	}
	return act_keep(buf);
}

// stage_mounts attaches the mounts the parent sent, as root, where
// act_setup_mounts opens them: each scope's lower and the directory that
// holds its layer, idmapped (host uid and gid k is k inside, so the
// sandbox's root owns what host root owns there and nowhere else), under
// STAGE on /dev's tmpfs. The overlays keep private clones of them, and
// the stage is detached once they are mounted (unstage). The command
// reaches no host path by name that its own identity could not.
static void stage_mounts(void) {
	char dir[64];
	if (mkdir(STAGE, 0700) < 0)
		act_fail("mkdir %s", STAGE);
	int *m = act_sp.rights + act_sp.ncgroups;
	for (int k = 0; k < act_sp.nscopes; k++) {
		struct scope *s = &act_sp.scopes[k];
		for (int j = 0; j < 2; j++) {
			snprintf(dir, sizeof dir, "%s/%d%c", STAGE, k, j ? 'u' : 'l');
			if (mkdir(dir, 0700) < 0)
				act_fail("mkdir %s", dir);
			if (move_mount(m[2 * k + j], "", AT_FDCWD, dir, MOVE_MOUNT_F_EMPTY_PATH) < 0)
				act_fail("attach the idmapped mount of %s", j ? s->layer : s->lower);
			close(m[2 * k + j]);
		}
		snprintf(dir, sizeof dir, "%s/%dl", STAGE, k);
		s->lower = act_keep(dir);
		snprintf(dir, sizeof dir, "%s/%du", STAGE, k);
		s->upper = stage_path(dir, s->upper, s->layer);
		if (!act_sp.disk_bytes)
			s->work = stage_path(dir, s->work, s->layer);
	}
	for (int i = 0; i < act_sp.nbinds; i++)
		bindfd[i] = m[2 * act_sp.nscopes + i];
	int *c = m + 2 * act_sp.nscopes + act_sp.nbinds;
	for (int i = 0; i < act_sp.ncaches; i++) {
		cachefd[i] = act_sp.cachedirs[i] ? *c++ : -1;
		ownfd[i] = act_sp.cacheowns[i] ? *c++ : -1;
		act_cacheoutfd[i] = act_sp.cacheouts[i] ? *c++ : -1;
	}
}

static void unstage(void) {
	char dir[64];
	for (int k = 0; k < act_sp.nscopes; k++)
		for (int j = 0; j < 2; j++) {
			snprintf(dir, sizeof dir, "%s/%d%c", STAGE, k, j ? 'u' : 'l');
			if (umount2(dir, MNT_DETACH) < 0 || rmdir(dir) < 0)
				act_fail("detach %s", dir);
		}
	if (rmdir(STAGE) < 0)
		act_fail("rmdir %s", STAGE);
}

// mask_homes hides the home roots (act_sp.mask) behind empty tmpfs mounts,
// shows the user's home (act_sp.home) as the directory h of the sandbox's
// tmpfs, writable and thrown away with it (act_report_home names what the
// command made there), and in them only the read-only views of what builds
// need (act_sp.binds) and the caches; the scopes below them are mounted
// after, on directories made here. docs/sandbox-filesystem.md.
static void mask_homes(void) {
	char p[64], opts[512];
	for (int i = 0; i < act_sp.nmask; i++) {
		if (!is_dir(act_sp.mask[i]))
			continue;
		if (mount("tmpfs", act_sp.mask[i], "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=256k,nr_inodes=8192") < 0)
			act_fail("mask %s", act_sp.mask[i]);
	}
	if (act_sp.home) {
		mkdir_p(act_sp.home);
		if (mkdirat(act_diskfd, "h", 0700) < 0)
			act_fail("mkdir in the tmpfs");
		snprintf(p, sizeof p, "/proc/self/fd/%d/h", act_diskfd);
		if (mount(p, act_sp.home, NULL, MS_BIND, NULL) < 0)
			act_fail("show the home %s", act_sp.home);
	}
	for (int i = 0; i < act_sp.nbinds; i++) {
		if (bindfd[i] < 0)
			continue;
		struct stat st;
		if (fstat(bindfd[i], &st) < 0)
			act_fail("stat %s", act_sp.binds[i]);
		if (S_ISDIR(st.st_mode))
			mkdir_p(act_sp.binds[i]);
		else {
			char *parent = strdup(act_sp.binds[i]);
			if (!parent)
				act_fail("out of memory");
			*strrchr(parent, '/') = 0;
			if (*parent)
				mkdir_p(parent);
			free(parent);
			int fd = open(act_sp.binds[i], O_CREAT | O_WRONLY | O_CLOEXEC, 0444);
			if (fd < 0)
				act_fail("create %s", act_sp.binds[i]);
			close(fd);
		}
		struct mount_attr ro = {.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV};
		if (mount_setattr(bindfd[i], "", AT_EMPTY_PATH, &ro, sizeof ro) < 0)
			act_fail("make %s read-only", act_sp.binds[i]);
		if (move_mount(bindfd[i], "", AT_FDCWD, act_sp.binds[i], MOVE_MOUNT_F_EMPTY_PATH) < 0)
			act_fail("show %s", act_sp.binds[i]);
		close(bindfd[i]);
	}
	// The caches: each an overlay whose lower is the caller's directory,
	// read-only, under act's own cache where there is one, and whose
	// upper and work dirs are c/<i>/u and c/<i>/w of the sandbox's tmpfs
	// (counted against the disk cap, gone with it); act_setup_mounts makes
	// them writable again after the recursive read-only. The upper's root
	// takes the lower's mode, as the tool left it.
	for (int i = 0; i < act_sp.ncaches; i++) {
		struct stat st;
		if (fstat(cachefd[i] >= 0 ? cachefd[i] : ownfd[i], &st) < 0)
			act_fail("stat the cache %s", act_sp.caches[i]);
		snprintf(p, sizeof p, "c/%d", i);
		mode_t um = umask(0);
		if (mkdirat(act_diskfd, p, 0700) < 0)
			act_fail("mkdir in the tmpfs");
		int c = openat(act_diskfd, p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (c < 0 || mkdirat(c, "u", st.st_mode & 0777) < 0 || mkdirat(c, "w", 0700) < 0)
			act_fail("mkdir in the tmpfs");
		umask(um);
		close(c);
		// overlayfs takes no detached mount for a lower: each clone is
		// attached at the cache's path (act's own over the user's), and
		// the overlay mounted over them.
		mkdir_p(act_sp.caches[i]);
		int lower[2] = {-1, -1};
		for (int j = 0; j < 2; j++) {
			int fd = j ? ownfd[i] : cachefd[i];
			if (fd < 0)
				continue;
			struct mount_attr ro = {.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV};
			if (mount_setattr(fd, "", AT_EMPTY_PATH, &ro, sizeof ro) < 0)
				act_fail("make the cache %s read-only", act_sp.caches[i]);
			if (move_mount(fd, "", AT_FDCWD, act_sp.caches[i], MOVE_MOUNT_F_EMPTY_PATH) < 0)
				act_fail("attach the cache %s", act_sp.caches[i]);
			close(fd);
			if ((lower[j] = open(act_sp.caches[i], O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
				act_fail("open the cache %s", act_sp.caches[i]);
		}
		char lowers[64];
		if (lower[0] >= 0 && lower[1] >= 0)
			snprintf(lowers, sizeof lowers, "/proc/self/fd/%d:/proc/self/fd/%d", lower[1], lower[0]);
		else
			snprintf(lowers, sizeof lowers, "/proc/self/fd/%d", lower[0] >= 0 ? lower[0] : lower[1]);
		snprintf(opts, sizeof opts,
			 "lowerdir=%s,upperdir=/proc/self/fd/%d/c/%d/u,workdir=/proc/self/fd/%d/c/%d/w,userxattr,volatile",
			 lowers, act_diskfd, i, act_diskfd, i);
		if (mount("overlay", act_sp.caches[i], "overlay", MS_NOSUID | MS_NODEV, opts) < 0)
			act_fail("mount the cache's overlay on %s", act_sp.caches[i]);
		for (int j = 0; j < 2; j++)
			if (lower[j] >= 0)
				close(lower[j]);
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
		act_fail("scope %s", path);
	}
	memcpy(buf, path, n + 1);
	for (char *p = buf + 1;; p++) {
		if (*p != '/' && *p != 0)
			continue;
		char c = *p;
		*p = 0;
		if (faccessat(AT_FDCWD, buf, X_OK, AT_EACCESS) < 0) {
			if (errno != EACCES)
				act_fail("scope %s: %s", path, buf);
			if (mount("tmpfs", buf, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=64k,nr_inodes=4096") < 0)
				act_fail("scope %s: mask %s, which is closed to the sandbox's identity", path, buf);
			return;
		}
		*p = c;
		if (c == 0)
			return;
	}
}

void act_setup_mounts(void) {
	char opts[512];

	if (!premounted)
		mount_private();
	if (act_idmap) {
		if (!premounted)
			mount_host_views();
		stage_mounts();
		act_mark("mounts/idmapped");
	} else {
		// What builds need under the homes, cloned before they are
		// masked.
		for (int i = 0; i < act_sp.nbinds; i++)
			if ((bindfd[i] = open_tree(AT_FDCWD, act_sp.binds[i], OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC)) < 0 &&
			    errno != ENOENT && errno != EACCES)
				act_fail("clone %s", act_sp.binds[i]);
		for (int i = 0; i < act_sp.ncaches; i++) {
			const char *p[3] = {act_sp.cachedirs[i], act_sp.cacheowns[i], act_sp.cacheouts[i]};
			int *fd[3] = {&cachefd[i], &ownfd[i], &act_cacheoutfd[i]};
			for (int j = 0; j < 3; j++)
				if ((*fd[j] = p[j] ? clone_nofollow(p[j]) : -1) < 0 && p[j])
					act_fail("clone the cache %s (no symbolic link followed)", p[j]);
		}
		act_mark("mounts/clone-binds-caches");
	}
	// Everything that a later mount may hide is opened first: the scope's
	// lower, upper and work dirs (they may sit under /tmp, or, without
	// act_premount, under /dev or /run).
	for (int k = 0; k < act_sp.nscopes; k++) {
		struct scope *s = &act_sp.scopes[k];
		if ((s->lowerfd = open(s->lower, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
			act_fail("open scope %s", s->lower);
		// With a disk cap the layer is read (seeded into the tmpfs) and,
		// after the run, written through a clone of its mount that the
		// read-only remount below does not reach.
		if ((s->upperfd = open(s->upper, (act_sp.disk_bytes ? O_RDONLY : O_PATH) | O_DIRECTORY | O_CLOEXEC)) < 0)
			act_fail("open layer %s", s->upper);
		s->upperrw = s->workfd = -1;
		if (act_sp.discard) {
			// Read after the run, never written (act_report_writes).
			if ((s->upperrw = fcntl(s->upperfd, F_DUPFD_CLOEXEC, 0)) < 0)
				act_fail("open layer %s", s->upper);
		} else if (act_sp.disk_bytes) {
			s->upperrw = open_tree(s->upperfd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
			if (s->upperrw < 0)
				act_fail("clone the mount of layer %s", s->upper);
		} else if ((s->workfd = open(s->work, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
			act_fail("open work dir %s", s->work);
	}
	act_mark("mounts/open-layers");
	if (!premounted && !act_idmap)
		mount_host_views();

	// Private /tmp: a directory of the sandbox's tmpfs, which also holds
	// the home and the caches' uppers and, with a disk cap (its size
	// then), the layers.
	act_setup_disk();

	// /dev/shm is on the disk cap's tmpfs too: it counts against the cap.
	if (act_sp.disk_bytes) {
		char p[64];
		snprintf(p, sizeof p, "/proc/self/fd/%d/shm", act_diskfd);
		if (mount(p, "/dev/shm", NULL, MS_BIND, NULL) < 0)
			act_fail("bind the tmpfs on /dev/shm");
	} else if (mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777") < 0)
		act_fail("mount tmpfs on /dev/shm");

	act_mark("mounts/views-tmp");
	mask_homes();
	act_mark("mounts/homes-binds-caches");

	// Scopes: overlays at their real paths, after /tmp and the masked
	// homes so that a scope under them shows. The paths are given as
	// /proc/self/fd links because the tmpfs may hide them (and the links
	// need no escaping).
	for (int k = 0; k < act_sp.nscopes; k++) {
		struct scope *s = &act_sp.scopes[k];
		struct stat st;
		if (stat(s->path, &st) < 0 && errno == EACCES && act_idmap)
			open_closed(s->path);
		if (stat(s->path, &st) < 0) {
			if (errno != ENOENT)
				act_fail("stat %s", s->path);
			mkdir_p(s->path); // only possible in a fresh tmpfs: /tmp, /dev, /run, a masked home
		}
		if (act_sp.disk_bytes)
			snprintf(opts, sizeof opts,
				 "lowerdir=/proc/self/fd/%d,upperdir=/proc/self/fd/%d/l/%d/u,workdir=/proc/self/fd/%d/l/%d/w,userxattr,volatile",
				 s->lowerfd, act_diskfd, k, act_diskfd, k);
		else
			snprintf(opts, sizeof opts,
				 "lowerdir=/proc/self/fd/%d,upperdir=/proc/self/fd/%d,workdir=/proc/self/fd/%d,userxattr,volatile",
				 s->lowerfd, s->upperfd, s->workfd);
		if (mount("overlay", s->path, "overlay", MS_NOSUID | MS_NODEV, opts) < 0)
			act_fail("mount overlay on %s", s->path);
		close(s->lowerfd);
		if (s->upperfd >= 0)
			close(s->upperfd);
		if (s->workfd >= 0)
			close(s->workfd);
	}

	act_mark("mounts/overlays");
	if (act_idmap)
		unstage();
	hide_paths();
	show_files();
	act_mark("mounts/hide");

	// Then everything read-only, recursively (a remount would not be),
	// and writable again only what is the sandbox's own. The overlays keep
	// private clones of their upper dirs' mounts, which stay writable.
	// NODEV too: read-only does not stop writes to a block device, and a
	// device node anywhere on the host tree (a chroot, a container's root)
	// would otherwise open. Only the minimal /dev's own nodes keep it.
	struct mount_attr attr = {.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV};
	if (mount_setattr(AT_FDCWD, "/", AT_RECURSIVE, &attr, sizeof attr) < 0)
		act_fail("make / read-only (mount_setattr)");
	for (size_t i = 0; i < NDEV; i++) {
		char p[64];
		struct mount_attr dev = {.attr_clr = MOUNT_ATTR_NODEV};
		snprintf(p, sizeof p, "/dev/%s", devices[i]);
		if (mount_setattr(AT_FDCWD, p, 0, &dev, sizeof dev) < 0 && errno != ENOENT)
			act_fail("let %s be a device", p);
	}
	make_writable("/tmp");
	make_writable("/dev/shm");
	make_writable("/proc");
	for (int k = 0; k < act_sp.nscopes; k++)
		make_writable(act_sp.scopes[k].path);
	// The home and the caches, but where a scope's overlay covers them
	// (mounted after: the path is the scope's then, made writable above).
	if (act_sp.home && !under_scope(act_sp.home))
		make_writable(act_sp.home);
	for (int i = 0; i < act_sp.ncaches; i++)
		if (!under_scope(act_sp.caches[i]))
			make_writable(act_sp.caches[i]);
	act_mark("mounts/read-only");
}
