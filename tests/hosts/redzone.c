// SPDX-License-Identifier: MIT
/*
 * Red-zone host. A leaf function keeps more values live across its probes
 * than there are free registers, so the compiler spills them below %rsp into
 * the red zone. A uprobe on a 5-byte nop is a call on Linux 6.18+, which
 * pushes onto the stack: with the sp probe site (%rsp stepped down 128
 * bytes around the nop) the red zone survives; with a naive nop5 site (the
 * negative control, "naive" mode) it is overwritten and results go wrong.
 * rz_flat keeps nothing in its red zone: the control of the test's check
 * that the other two really do.
 *
 *   redzone safe|naive CALLS      prints "wrong=K calls=N"
 *   redzone phases CALLS P        one process, P rounds of CALLS safe calls:
 *                                 prints "ready PID", then each round on
 *                                 SIGUSR1, printing "wrong=K calls=N" (for a
 *                                 tracer attached and detached in between)
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sp_probe.h>

/* A query_begin/query_end site with a plain nop5 and no %rsp adjustment:
 * exactly what sp_probe.h must not do. Test-only. */
#if defined(__x86_64__)
#define NAIVE_SITE(probe, q)                                                   \
	do {                                                                   \
		if (__builtin_expect(SP__SEMA(probe) != 0, 0))                 \
			__asm__ __volatile__(                                  \
				"990: .byte 0x0f, 0x1f, 0x44, 0x00, 0x00\n"    \
				SP__NOTE(probe, SP__ARGFMT1)                   \
				: : "r"((long long)(q)) : "memory");          \
	} while (0)
#else
#define NAIVE_SITE(probe, q) SP_QUERY_BEGIN(q)
#endif

/* Sixteen values live across both probes: more than the free registers, so
 * some are spilled to the stack, and a leaf function spills into its red
 * zone. The caller checks the result against rz_expected(). */
#define RZ_BODY(BEGIN, END)                                                    \
	unsigned long a0 = x * 3, a1 = x * 5 + 1, a2 = x * 7 + 2,              \
		a3 = x * 11 + 3, a4 = x * 13 + 4, a5 = x * 17 + 5,             \
		a6 = x * 19 + 6, a7 = x * 23 + 7, a8 = x * 29 + 8,             \
		a9 = x * 31 + 9, a10 = x * 37 + 10, a11 = x * 41 + 11,         \
		a12 = x * 43 + 12, a13 = x * 47 + 13, a14 = x * 53 + 14,       \
		a15 = x * 59 + 15;                                             \
	/* Computed before the probes, whatever the compiler: without this   \
	 * clang sinks the arithmetic past them and keeps nothing live. */   \
	__asm__ __volatile__("" : "+rm"(a0), "+rm"(a1), "+rm"(a2),         \
			     "+rm"(a3), "+rm"(a4), "+rm"(a5), "+rm"(a6),      \
			     "+rm"(a7));                                      \
	__asm__ __volatile__("" : "+rm"(a8), "+rm"(a9), "+rm"(a10),        \
			     "+rm"(a11), "+rm"(a12), "+rm"(a13), "+rm"(a14),  \
			     "+rm"(a15));                                     \
	BEGIN;                                                                 \
	__asm__ __volatile__("" : "+r"(a0), "+r"(a1), "+r"(a2), "+r"(a3));     \
	END;                                                                   \
	return ((a0 ^ a1) + (a2 ^ a3)) * 3 + ((a4 ^ a5) + (a6 ^ a7)) * 5 +     \
	       ((a8 ^ a9) + (a10 ^ a11)) * 7 + ((a12 ^ a13) + (a14 ^ a15)) * 11

__attribute__((noinline)) unsigned long rz_safe(unsigned long x)
{
	RZ_BODY(SP_QUERY_BEGIN("rz"), SP_QUERY_END("rz"));
}

__attribute__((noinline)) unsigned long rz_naive(unsigned long x)
{
	RZ_BODY(NAIVE_SITE(query_begin, "rz"), NAIVE_SITE(query_end, "rz"));
}

/* Probes around two values that fit in registers: nothing is kept in the
 * red zone. Never called; the test's red-zone precondition must reject it,
 * or that precondition could not fail. */
__attribute__((noinline, used)) unsigned long rz_flat(unsigned long x)
{
	unsigned long a = x * 3, b = x * 5 + 1;

	SP_QUERY_BEGIN("rz_flat");
	__asm__ __volatile__("" : "+r"(a), "+r"(b));
	SP_QUERY_END("rz_flat");
	return a ^ b;
}

__attribute__((noinline)) unsigned long rz_expected(unsigned long x)
{
	RZ_BODY((void)0, (void)0);
}

static int phases(unsigned long calls, int rounds)
{
	unsigned long i, wrong;
	sigset_t set;
	int r, sig;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, NULL);
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	for (r = 0; r < rounds; r++) {
		do
			sig = sigwaitinfo(&set, NULL);
		while (sig < 0 && errno == EINTR);
		for (i = 0, wrong = 0; i < calls; i++)
			if (rz_safe(i * 2654435761ul) != rz_expected(i * 2654435761ul))
				wrong++;
		printf("wrong=%lu calls=%lu\n", wrong, calls);
		fflush(stdout);
	}
	return 0;
}

int main(int argc, char **argv)
{
	unsigned long (*fn)(unsigned long);
	unsigned long i, calls, wrong = 0;

	if (argc == 4 && !strcmp(argv[1], "phases"))
		return phases(strtoul(argv[2], NULL, 10), atoi(argv[3]));

	if (argc != 3 || (strcmp(argv[1], "safe") && strcmp(argv[1], "naive"))) {
		fprintf(stderr, "usage: redzone safe|naive CALLS | phases CALLS ROUNDS\n");
		return 2;
	}
	fn = strcmp(argv[1], "safe") ? rz_naive : rz_safe;
	calls = strtoul(argv[2], NULL, 10);
	for (i = 0; i < calls; i++)
		if (fn(i * 2654435761ul) != rz_expected(i * 2654435761ul))
			wrong++;
	printf("wrong=%lu calls=%lu\n", wrong, calls);
	return 0;
}
