// nsexec_unit tests helpers of the sandbox child that the sandbox cannot
// show from outside: the fallbacks of close_inherited (nsexec.c) and
// cloexec_all (nsexec_init.c) where the kernel has no close_range(2), and
// fail_line's cutting (nsexec.c). It includes the child's C files
// themselves, as one unit, with syscall() wrapped so that close_range can
// be made to fail (process_test.go builds and runs it). It prints one line
// per failed check and exits 1 if any.
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <sys/syscall.h>
#include <unistd.h>

static int no_close_range;

static long wrapped_syscall(long nr, ...) {
	va_list ap;
	va_start(ap, nr);
	long a[6];
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (nr == 436 && no_close_range) { // __NR_close_range
		errno = ENOSYS;
		return -1;
	}
	return syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}

#define syscall wrapped_syscall
#include "../nsexec.c"
#include "../nsexec_spec.c"
#include "../nsexec_mounts.c"
#include "../nsexec_disk.c"
#include "../nsexec_init.c"
#include "../nsexec_seccomp.c"
#include "../nsexec_landlock.c"
#include "../nsexec_times.c"
#undef syscall

static int failed;

#define CHECK(cond, ...)                              \
	do {                                          \
		if (!(cond)) {                        \
			printf("FAIL %s:%d: ", __FILE__, __LINE__); \
			printf(__VA_ARGS__);          \
			printf("\n");                 \
			failed = 1;                   \
		}                                     \
	} while (0)

// open_some opens n descriptors, not close-on-exec, and returns the last.
static int open_some(int n) {
	int fd = -1;
	for (int i = 0; i < n; i++)
		fd = open("/dev/null", O_RDONLY);
	return fd;
}

static int is_open(int fd) { return fcntl(fd, F_GETFD) >= 0; }

static void test_close_inherited(int without_close_range) {
	no_close_range = without_close_range;
	int last = open_some(20);
	int keep = last - 7;
	close_inherited(keep);
	for (int fd = 3; fd <= last + 5; fd++)
		CHECK(is_open(fd) == (fd == keep), "close_range %s: fd %d open %d, keep %d",
		      without_close_range ? "missing" : "there", fd, is_open(fd), keep);
	for (int fd = 0; fd <= 2; fd++)
		CHECK(is_open(fd), "fd %d closed", fd);
	close(keep);
}

static void test_cloexec_all(int without_close_range) {
	no_close_range = without_close_range;
	int last = open_some(10);
	cloexec_all();
	for (int fd = 3; fd <= last; fd++)
		CHECK(fcntl(fd, F_GETFD) == FD_CLOEXEC, "close_range %s: fd %d flags %d",
		      without_close_range ? "missing" : "there", fd, fcntl(fd, F_GETFD));
	for (int fd = 3; fd <= last; fd++)
		close(fd);
}

static int line(char *buf, int e, const char *fmt, ...) {
	va_list ap;
	va_start(ap, fmt);
	int n = fail_line(buf, e, fmt, ap);
	va_end(ap);
	return n;
}

static void test_fail_line(void) {
	char buf[FAIL_BUF], big[3 * FAIL_BUF];
	memset(big, 'x', sizeof big - 1);
	big[sizeof big - 1] = 0;
	act_fail_kind = MSG_SETUP;
	for (int e = 0; e <= ENAMETOOLONG; e += ENAMETOOLONG) {
		int n = line(buf, e, "exec %s", big);
		CHECK(n > 0 && n <= FAIL_BUF, "length %d", n);
		CHECK(buf[0] == MSG_SETUP && buf[n - 1] == '\n', "framing");
		CHECK(memchr(buf, 0, n) == NULL, "a NUL inside the line (errno %d)", e);
		CHECK(memchr(buf, '\n', n - 1) == NULL, "a newline inside the line");
		const char *tail = e ? ": File name too long\n" : "x\n";
		CHECK(n > (int)strlen(tail) && !memcmp(buf + n - strlen(tail), tail, strlen(tail)), "the line ends %.30s", buf + n - 30);
	}
	int n = line(buf, ENOENT, "exec %s", "a\nSb\r");
	CHECK(n == (int)strlen("Eexec a Sb : No such file or directory\n") && !memcmp(buf, "Eexec a Sb : No such file or directory\n", n),
	      "newlines: %.*s", n, buf);
	n = line(buf, 0, "short");
	CHECK(n == 7 && !memcmp(buf, "Eshort\n", 7), "short: %.*s", n, buf);
}

int main(void) {
	test_close_inherited(0);
	test_close_inherited(1);
	test_cloexec_all(0);
	test_cloexec_all(1);
	test_fail_line();
	if (!failed)
		printf("ok\n");
	return failed;
}
