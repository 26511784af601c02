/* SPDX-License-Identifier: MIT */
/*
 * The loops the probe benchmarks time (probe_cost.c, batch_cost.c), in one
 * place so that every benchmark times the same code: an empty loop, an sp
 * BEGIN/END pair, a bare getppid syscall and a <sys/sdt.h> pair. Each loop
 * is its own non-inlined function, so every mode gets the same code around
 * it; BARRIER() keeps the compiler from merging, hoisting or deleting
 * iterations. Include once, after <sys/sdt.h> and <sp_probe.h>.
 */
#ifndef SPTRACE_BENCH_LOOPS_H
#define SPTRACE_BENCH_LOOPS_H

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define BARRIER() __asm__ __volatile__("" ::: "memory")

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

__attribute__((noinline, unused)) static void loop_empty(unsigned long n)
{
	unsigned long i;

	for (i = 0; i < n; i++)
		BARRIER();
}

__attribute__((noinline, unused)) static void loop_pair(unsigned long n)
{
	unsigned long i;

	for (i = 0; i < n; i++) {
		SP_QUERY_BEGIN("bench");
		BARRIER();
		SP_QUERY_END("bench");
	}
}

/* The pair named by run-time text (SP_QUERY_BEGIN_STR): a buffer the
 * compiler cannot see through, not NUL-terminated, interned at each probe
 * while traced (a hash and a compare of its 8 bytes). */
__attribute__((noinline, unused)) static void loop_strpair(unsigned long n)
{
	char name[16];
	volatile size_t len = 8;
	unsigned long i;

	memcpy(name, "bench_rt#", 9);
	BARRIER();
	for (i = 0; i < n; i++) {
		SP_QUERY_BEGIN_STR(name, len);
		BARRIER();
		SP_QUERY_END_STR(name, len);
	}
}

__attribute__((noinline, unused)) static void loop_syscall(unsigned long n)
{
	unsigned long i;

	for (i = 0; i < n; i++)
		syscall(SYS_getppid);
}

__attribute__((noinline, unused)) static void loop_sdt(unsigned long n)
{
	static const char name[] = "bench";
	unsigned long i;

	for (i = 0; i < n; i++) {
		DTRACE_PROBE1(bench, begin, name);
		BARRIER();
		DTRACE_PROBE1(bench, end, name);
	}
}

static int parse_count(const char *arg, unsigned long max, unsigned long *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(arg, &end, 10);
	if (errno || end == arg || *end || arg[0] == '-' || v == 0 || v > max)
		return -1;
	*out = (unsigned long)v;
	return 0;
}

#endif /* SPTRACE_BENCH_LOOPS_H */
