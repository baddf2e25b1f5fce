// sysprobe makes one system call (or a short sequence) named by its
// arguments and prints "ok" or the errno's name: the seccomp tests run it
// inside and outside the sandbox (process_test.go). A syscall the filter
// kills the process for prints nothing.
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>
#include <linux/io_uring.h>
#include <linux/keyctl.h>

static int report(long r) {
	if (r < 0) {
		const char *n = strerrorname_np(errno);
		printf("%s\n", n ? n : "?");
		return 1;
	}
	printf("ok\n");
	return 0;
}

static struct sockaddr_un unix_addr(const char *path, socklen_t *len) {
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	strncpy(a.sun_path, path, sizeof a.sun_path - 1);
	*len = offsetof(struct sockaddr_un, sun_path) + strlen(a.sun_path) + 1;
	return a;
}

// uring_connect is the io_uring bypass: IORING_OP_SOCKET makes an AF_UNIX
// socket without the socket syscall, IORING_OP_CONNECT connects it to path,
// and the message is written to it.
static int uring_connect(const char *path, const char *msg) {
	struct io_uring_params p;
	memset(&p, 0, sizeof p);
	int ring = syscall(__NR_io_uring_setup, 4, &p);
	if (ring < 0)
		return report(-1);
	size_t sqsz = p.sq_off.array + p.sq_entries * sizeof(unsigned);
	size_t cqsz = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
	char *sq = mmap(NULL, sqsz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring, IORING_OFF_SQ_RING);
	char *cq = mmap(NULL, cqsz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring, IORING_OFF_CQ_RING);
	struct io_uring_sqe *sqes = mmap(NULL, p.sq_entries * sizeof(struct io_uring_sqe), PROT_READ | PROT_WRITE,
					 MAP_SHARED | MAP_POPULATE, ring, IORING_OFF_SQES);
	if (sq == MAP_FAILED || cq == MAP_FAILED || sqes == MAP_FAILED)
		return report(-1);
	unsigned *sq_tail = (unsigned *)(sq + p.sq_off.tail), *sq_mask = (unsigned *)(sq + p.sq_off.ring_mask);
	unsigned *sq_array = (unsigned *)(sq + p.sq_off.array);
	unsigned *cq_head = (unsigned *)(cq + p.cq_off.head), *cq_mask = (unsigned *)(cq + p.cq_off.ring_mask);
	struct io_uring_cqe *cqes = (struct io_uring_cqe *)(cq + p.cq_off.cqes);
	socklen_t alen;
	struct sockaddr_un addr = unix_addr(path, &alen);
	int fd = -1;
	for (int step = 0; step < 2; step++) {
		unsigned tail = *sq_tail, i = tail & *sq_mask;
		struct io_uring_sqe *e = &sqes[i];
		memset(e, 0, sizeof *e);
		if (step == 0) {
			e->opcode = IORING_OP_SOCKET;
			e->fd = AF_UNIX;
			e->off = SOCK_STREAM;
		} else {
			e->opcode = IORING_OP_CONNECT;
			e->fd = fd;
			e->addr = (uintptr_t)&addr;
			e->off = alen;
		}
		sq_array[i] = i;
		__atomic_store_n(sq_tail, tail + 1, __ATOMIC_RELEASE);
		if (syscall(__NR_io_uring_enter, ring, 1, 1, IORING_ENTER_GETEVENTS, NULL, 0) < 0)
			return report(-1);
		unsigned head = __atomic_load_n(cq_head, __ATOMIC_ACQUIRE);
		int res = cqes[head & *cq_mask].res;
		__atomic_store_n(cq_head, head + 1, __ATOMIC_RELEASE);
		if (res < 0) {
			errno = -res;
			return report(-1);
		}
		if (step == 0)
			fd = res;
	}
	return report(write(fd, msg, strlen(msg)));
}

int main(int argc, char **argv) {
	if (argc < 2)
		return 2;
	const char *op = argv[1];
	long a = argc > 2 ? strtol(argv[2], NULL, 0) : 0, b = argc > 3 ? strtol(argv[3], NULL, 0) : 0,
	     c = argc > 4 ? strtol(argv[4], NULL, 0) : 0;
	int sv[2];
	if (!strcmp(op, "socket")) // family type protocol
		return report(socket(a, b, c));
	if (!strcmp(op, "socketpair")) // family type
		return report(socketpair(a, b, 0, sv));
	if (!strcmp(op, "pair-sendto")) { // type path message: a pair, then sendto the path
		if (socketpair(AF_UNIX, a, 0, sv) < 0)
			return report(-1);
		socklen_t alen;
		struct sockaddr_un addr = unix_addr(argv[3], &alen);
		return report(sendto(sv[0], argv[4], strlen(argv[4]), 0, (struct sockaddr *)&addr, alen));
	}
	if (!strcmp(op, "io_uring_setup")) {
		struct io_uring_params p;
		memset(&p, 0, sizeof p);
		return report(syscall(__NR_io_uring_setup, 1, &p));
	}
	if (!strcmp(op, "io_uring_enter")) // EBADF if allowed
		return report(syscall(__NR_io_uring_enter, -1, 0, 0, 0, NULL, 0));
	if (!strcmp(op, "io_uring_register")) // EBADF if allowed
		return report(syscall(__NR_io_uring_register, -1, 0, NULL, 0));
	if (!strcmp(op, "uring-connect")) // path message
		return uring_connect(argv[2], argv[3]);
	if (!strcmp(op, "key-read")) { // key id: prints its payload
		char buf[256];
		long n = syscall(__NR_keyctl, KEYCTL_READ, a, buf, sizeof buf - 1);
		if (n < 0)
			return report(-1);
		buf[n < (long)sizeof buf - 1 ? n : (long)sizeof buf - 1] = 0;
		printf("read %s\n", buf);
		return 0;
	}
	if (!strcmp(op, "key-update")) // key id, new payload
		return report(syscall(__NR_keyctl, KEYCTL_UPDATE, a, argv[3], strlen(argv[3])));
	if (!strcmp(op, "key-session")) // the session keyring's id
		return report(syscall(__NR_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0));
	if (!strcmp(op, "add_key")) // keyring id: plants a key there
		return report(syscall(__NR_add_key, "user", "act-planted", "x", 1, a));
	if (!strcmp(op, "request_key"))
		return report(syscall(__NR_request_key, "user", "act-test", NULL, 0));
	if (!strcmp(op, "write-fd")) // fd: creates "pwned" in the directory fd
		return report(openat(a, "pwned", O_WRONLY | O_CREAT, 0644));
	if (!strcmp(op, "syscall-minus-one"))
		return report(syscall(-1));
#if defined(__x86_64__)
	if (!strcmp(op, "x32")) // getpid through the x32 ABI
		return report(syscall(0x40000000 | __NR_getpid));
	if (!strcmp(op, "i386")) { // getpid (20) through int 0x80, the i386 ABI
		long r;
		__asm__ volatile("int $0x80" : "=a"(r) : "a"(20L) : "memory");
		printf("%s\n", r > 0 ? "ok" : "failed");
		return 0;
	}
#endif
	fprintf(stderr, "unknown op %s\n", op);
	return 2;
}
