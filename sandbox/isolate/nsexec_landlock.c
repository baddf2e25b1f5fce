//go:build linux && cgo

// nsexec_landlock.c confines where the command may open files, with a
// Landlock ruleset: for writing, beneath what is the sandbox's own; for
// reading, where the spec says so, beneath what it names.

#include "nsexec.h"

// ---- Writes and reads only where the command may ----------------------
//
// The read-only mounts stop writes to regular files and directories
// outside the scopes, but a FIFO (or a socket file) is opened for writing
// whatever the mount says: a host FIFO anywhere in the tree would carry
// the command's bytes to its reader. A Landlock ruleset allows opening a
// file for writing only beneath the scopes, /tmp, /dev (its own minimal
// nodes, /dev/shm), /proc, the throwaway home and the caches. Where the spec names what may be read
// (act_sp.reads: the system trees), it allows opening a file for reading only
// beneath those, the scopes, the binds, the generated files and the sandbox's own /tmp, /dev
// and /proc too: a host FIFO elsewhere (/var/tmp, /srv) gives the command
// nothing, whatever its mode (docs/sandbox-filesystem.md). Without Landlock
// the parent refuses to start a sandbox at all.

static void allow_beneath(int rs, const char *p, __u64 access) {
	int fd = open(p, O_PATH | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			return;
		act_fail("open %s (to allow access beneath it)", p);
	}
	struct landlock_path_beneath_attr pb = {.allowed_access = access, .parent_fd = fd};
	if (syscall(SYS_landlock_add_rule, rs, LANDLOCK_RULE_PATH_BENEATH, &pb, 0) < 0)
		act_fail("landlock: allow access beneath %s", p);
	close(fd);
}

void act_restrict_access(void) {
	__u64 rw = LANDLOCK_ACCESS_FS_WRITE_FILE | (act_sp.nreads ? LANDLOCK_ACCESS_FS_READ_FILE : 0);
	struct landlock_ruleset_attr ra = {.handled_access_fs = rw};
	int rs = syscall(SYS_landlock_create_ruleset, &ra, sizeof ra, 0);
	if (rs < 0)
		act_fail("landlock: create a ruleset");
	allow_beneath(rs, "/tmp", rw);
	allow_beneath(rs, "/dev", rw);
	allow_beneath(rs, "/proc", rw);
	for (int k = 0; k < act_sp.nscopes; k++)
		allow_beneath(rs, act_sp.scopes[k].path, rw);
	if (act_sp.home)
		allow_beneath(rs, act_sp.home, rw);
	for (int i = 0; i < act_sp.ncaches; i++)
		allow_beneath(rs, act_sp.caches[i], rw);
	if (act_sp.nreads) {
		for (int i = 0; i < act_sp.nreads; i++)
			allow_beneath(rs, act_sp.reads[i], LANDLOCK_ACCESS_FS_READ_FILE);
		for (int i = 0; i < act_sp.nbinds; i++)
			allow_beneath(rs, act_sp.binds[i], LANDLOCK_ACCESS_FS_READ_FILE);
		for (int i = 0; i < act_sp.nfiles; i++)
			if (act_sp.files[i])
				allow_beneath(rs, act_sp.files[i], LANDLOCK_ACCESS_FS_READ_FILE);
	}
	if (syscall(SYS_landlock_restrict_self, rs, 0) < 0)
		act_fail("landlock: restrict the command");
	close(rs);
}
