/* SPDX-License-Identifier: MIT */
/*
 * norseq - run a program on a "kernel without rseq".
 *
 * Installs a seccomp filter that fails the rseq syscall with ENOSYS, then
 * execs the program. glibc's own registration at start-up fails, so it
 * reports __rseq_size == 0, and cachelocal's self-registration fails too:
 * every rseq-dependent path must fall back. Used by `make check` to run the
 * test suite in that mode. With --membarrier, membarrier fails with ENOSYS
 * too (some sandboxes and old container profiles deny both; the emulated
 * machines' fault wrapper, tests/guest/fault.c, runs programs so).
 *
 * Usage: norseq [--membarrier] PROGRAM [ARGS...]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
#define NORSEQ_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define NORSEQ_ARCH AUDIT_ARCH_AARCH64
#else
#error "norseq: add this architecture's AUDIT_ARCH value"
#endif

int main(int argc, char **argv)
{
	int membarrier = argc > 1 && strcmp(argv[1], "--membarrier") == 0;
	/* with --membarrier a second number: membarrier's, else rseq's again */
	struct sock_filter filter[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NORSEQ_ARCH, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_rseq, 1, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, membarrier ? __NR_membarrier : __NR_rseq, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA)),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {
		.len = (unsigned short)(sizeof(filter) / sizeof(filter[0])),
		.filter = filter,
	};

	argc -= membarrier;
	argv += membarrier;
	if (argc < 2) {
		fprintf(stderr, "usage: norseq [--membarrier] PROGRAM [ARGS...]\n");
		return 2;
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
		perror("norseq: PR_SET_NO_NEW_PRIVS");
		return 1;
	}
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
		perror("norseq: PR_SET_SECCOMP");
		return 1;
	}
	execvp(argv[1], argv + 1);
	perror("norseq: exec");
	return 127;
}
