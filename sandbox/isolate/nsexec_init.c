//go:build linux && cgo

// nsexec_init.c is init once its mounts are made: PID 1 of the sandbox,
// which forks the command, reaps every process, and reports the command's
// status (after the disk cap's copy-out or report); and the command's
// process, which takes its limits, drops its capabilities, closes what it
// must not inherit, joins a keyring of its own, is confined by Landlock
// (nsexec_landlock.c) and seccomp (nsexec_seccomp.c), and execs.

#include "nsexec.h"

extern char **environ;

static void set_rlimit(int res, const char *name, long long v) {
	struct rlimit rl = {.rlim_cur = v, .rlim_max = v};
	if (v <= 0)
		return;
	if (setrlimit(res, &rl) < 0)
		act_fail("setrlimit %s", name);
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
			act_fail("drop capability %d from the bounding set", c);
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0)
		act_fail("clear ambient capabilities");
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
	struct __user_cap_data_struct d[2];
	memset(d, 0, sizeof d);
	if (syscall(SYS_capset, &h, d) < 0)
		act_fail("clear capabilities");
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		act_fail("set no_new_privs");
}

// join_session_keyring gives the command a new, empty session keyring
// instead of the caller's (keys are not namespaced): with the filter's
// refusal of keyctl it cannot read, change or plant the caller's keys.
static void join_session_keyring(void) {
	if (syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, NULL) < 0 && errno != ENOSYS)
		act_fail("join a new session keyring");
}

// cloexec_all marks every descriptor above 2 close-on-exec, for the
// command's exec: nothing of init's (the spec socket, the tmpfs, the
// layers' mounts) reaches the command, and act_fail can still report an exec
// failure. close_range(CLOSE_RANGE_CLOEXEC) (5.11), else fcntl on each
// descriptor /proc/self/fd lists.
static void cloexec_all(void) {
	if (syscall(__NR_close_range, 3u, ~0u, CLOSE_RANGE_CLOEXEC) == 0)
		return;
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		act_fail("list the open descriptors");
	struct dirent *e;
	while ((e = readdir(d))) {
		int fd = atoi(e->d_name);
		if (fd > 2 && fd != dirfd(d) && fcntl(fd, F_SETFD, FD_CLOEXEC) < 0)
			act_fail("close-on-exec descriptor %d", fd);
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

	set_rlimit(RLIMIT_CPU, "RLIMIT_CPU", act_sp.cpu_s);
	set_rlimit(RLIMIT_NPROC, "RLIMIT_NPROC", act_sp.nproc);
	// Only where no memory cgroup holds the memory cap: each process's
	// address space, not a total (docs/sandbox-process.md).
	set_rlimit(RLIMIT_AS, "RLIMIT_AS", act_sp.as_bytes);
	struct rlimit zero = {0, 0};
	setrlimit(RLIMIT_CORE, &zero);

	if (act_sp.dir && chdir(act_sp.dir) < 0)
		act_fail("chdir %s", act_sp.dir);
	act_mark("limits");
	cloexec_all();
	join_session_keyring();
	act_mark("descriptors-keyring");
	drop_privileges();
	act_mark("privileges");
	act_restrict_access();
	act_mark("landlock");
	act_install_seccomp();
	if (!act_sp.net && !act_sp.loopback && !act_sp.proxy)
		act_install_inet_filter();
	act_mark("seccomp");
	act_send_marks("command");
	if (act_sp.probe)
		_exit(0);

	act_sp.argv[act_sp.argc] = NULL;
	act_sp.env[act_sp.envc] = NULL;
	environ = (char **)act_sp.env; // execvp searches the command's own PATH
	execvp(act_sp.argv[0], (char *const *)act_sp.argv);
	act_fail("exec %s", act_sp.argv[0]);
}

// command_entry is the command process's start, on its own stack.
static int command_entry(void *arg) {
	(void)arg;
	act_marks_forked();
	run_command();
}

// spawn_command starts the command's process as posix_spawn does: with
// CLONE_VM and CLONE_VFORK, init's memory shared and init suspended until
// the command execs (or fails and exits). A fork would copy init's page
// tables and then take a copy-on-write fault on every page either process
// writes, where a page fault is dear (a virtual machine's: docs/timings.md).
// What the child changes in the memory it shares with init is left
// consistent or put back: libc's heap (fopen and opendir free what they
// take), environ (restored here), the marks it sends before exec (which
// init then forgets), errno; init is single-threaded and suspended
// meanwhile, so no lock of init's is held across the call. Everything else
// is the child's own: its stack, and what is per process without
// CLONE_SIGHAND, CLONE_FILES, CLONE_FS and CLONE_THREAD (signal
// dispositions, descriptors, limits, credentials, the working directory,
// Landlock and seccomp).
static pid_t spawn_command(void) {
	static char stack[512 << 10] __attribute__((aligned(16)));
	char **env = environ;
	long marks = act_marks_save();
	pid_t pid = clone(command_entry, stack + sizeof stack, CLONE_VM | CLONE_VFORK | SIGCHLD, NULL);
	int err = errno;
	environ = env;
	act_marks_restore(marks);
	if (pid < 0) {
		errno = err;
		act_fail("fork");
	}
	return pid;
}

// init is PID 1: it reaps every process and exits with the status of the
// command's main process, which ends the namespace and all that is left in it.
__attribute__((noreturn)) void act_init(void) {
	sigset_t all;
	sigfillset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);

	act_mark("fork");
	pid_t cmd = spawn_command();

	for (;;) {
		int st;
		pid_t p = waitpid(-1, &st, __WALL);
		if (p < 0) {
			if (errno == EINTR)
				continue;
			act_fail("wait");
		}
		if (p != cmd)
			continue;
		act_mark("run");
		char msg[128];
		ssize_t r;
		if (act_sp.disk_bytes) {
			// Everything the command left ends before the copy: kill(-1)
			// reaches every process of the namespace but init, and when
			// none is left to reap, none is left at all.
			kill(-1, SIGKILL);
			while (waitpid(-1, NULL, __WALL) > 0 || errno == EINTR)
				;
			act_mark("reap");
			struct statfs fs;
			if (fstatfs(act_diskfd, &fs) < 0)
				act_fail("statfs the tmpfs");
			if (act_sp.discard)
				act_report_writes();
			else {
				act_copy_out();
				act_copy_caches();
			}
			if (act_sp.home)
				act_report_home();
			act_mark(act_sp.discard ? "report-writes" : "copy-out");
			act_send_marks("init");
			int n = snprintf(msg, sizeof msg, "%c%lld %lld %lld %d\n", MSG_DISK, (long long)fs.f_bfree * fs.f_bsize,
					 (long long)fs.f_ffree, act_out_bytes, act_out_over);
			r = write(act_sock, msg, n);
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
			r = write(act_sock, msg, n);
		}
		if (!act_sp.disk_bytes)
			act_send_marks("init");
		int n = snprintf(msg, sizeof msg, "%c%d\n", MSG_STATUS, st);
		r = write(act_sock, msg, n);
		(void)r;
		if (act_sp.disk_bytes) {
			// The report is whole and init holds the last ends of the
			// output pipes and of the socket (every other process is
			// gone): closing them now lets the parent read its EOFs
			// without waiting for the exit below, which tears down
			// this process and its namespaces first.
			close(0);
			close(1);
			close(2);
			close(act_sock);
		}
		if (WIFEXITED(st))
			_exit(WEXITSTATUS(st));
		_exit(128 + WTERMSIG(st));
	}
}
