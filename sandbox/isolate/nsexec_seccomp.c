//go:build linux && cgo

// nsexec_seccomp.c holds the command's seccomp filters: the main one, and
// the one that refuses AF_INET and AF_INET6 sockets where the sandbox has
// no network.

#include "nsexec.h"

// ---- The seccomp filter ------------------------------------------------
//
// The command runs under a small seccomp filter (docs/sandbox-process.md):
//   - a syscall of another ABI than the native one (i386 through int 0x80,
//     x32, arm32 compat) kills the process: their numbers differ, and i386
//     multiplexes sockets through socketcall, which the rules below would
//     not see;
//   - socket() is an allow-list of families: AF_INET and AF_INET6 (with
//     the network; without it only where the policy opens the sandbox's
//     own loopback, else act_install_inet_filter refuses them) and AF_NETLINK
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

void act_install_seccomp(void) {
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
		act_fail("install the seccomp filter");
#else
	errno = 0;
	act_fail_kind = MSG_UNAVAILABLE;
	act_fail("no seccomp filter for this architecture (x86_64 and aarch64 only): commands are not run unfiltered");
#endif
}

// act_install_inet_filter is a second filter, installed where the network is
// not allowed and the host policy does not open the sandbox's own loopback
// (sandbox.loopback; docs/sandbox-process.md): socket(AF_INET or AF_INET6)
// fails with EACCES, so the socket families are AF_NETLINK (routing) and
// connected AF_UNIX stream pairs only. A filter of its own keeps the main
// filter's jumps as they are; the kernel runs both and the stricter answer
// wins (a foreign ABI is killed by the first, so here it is let through).
void act_install_inet_filter(void) {
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
		act_fail("install the network filter");
#endif
}
