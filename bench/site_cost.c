// SPDX-License-Identifier: MIT
/*
 * site_cost: one probe kind per loop, for bench/run_site_cost.sh, which runs
 * each under sptrace with per-event sites, guarded (pinned to the trap
 * path, live/site_guard.c) and not (the kernel's optimized call: today's
 * cost, unsafe across fork), beside a bare getppid in the same run.
 *
 *   site_cost KIND N [REPEAT]
 *
 *   syscall      N bare syscall(SYS_getppid)
 *   pair         SP_QUERY_BEGIN/END          (2 sites an iteration)
 *   cache_hit    SP_CACHE_HIT                (1)
 *   mark         SP_MARK twice: from and to  (2)
 *   alloc        SP_ALLOC and SP_FREE        (2)
 *   thread_name  SP_THREAD_NAME              (1)
 *
 * Prints: kind=K n=N sites=S traced=0|1 ns_per_iter=F (fastest of REPEAT).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <string.h>
#include <sys/sdt.h>
#include <sp_probe.h>

#include "bench_loops.h"

__attribute__((noinline)) static void loop_hit(unsigned long n)
{
	unsigned long i;

	for (i = 0; i < n; i++) {
		SP_CACHE_HIT("bench");
		BARRIER();
	}
}

__attribute__((noinline)) static void loop_mark(unsigned long n)
{
	unsigned long i;

	for (i = 0; i < n; i++) {
		SP_MARK("bench_from", i);
		BARRIER();
		SP_MARK("bench_to", i);
	}
}

__attribute__((noinline)) static void loop_alloc(unsigned long n)
{
	static char obj[16];
	unsigned long i;

	for (i = 0; i < n; i++) {
		SP_ALLOC("bench_obj", sizeof(obj), obj);
		BARRIER();
		SP_FREE("bench_obj", obj);
	}
}

__attribute__((noinline)) static void loop_thread_name(unsigned long n)
{
	unsigned long i;

	for (i = 0; i < n; i++) {
		SP_THREAD_NAME("bench");
		BARRIER();
	}
}

static const struct kind {
	const char *name;
	void (*loop)(unsigned long n);
	int sites;
} kinds[] = {
	{ "syscall", loop_syscall, 0 },
	{ "pair", loop_pair, 2 },
	{ "cache_hit", loop_hit, 1 },
	{ "mark", loop_mark, 2 },
	{ "alloc", loop_alloc, 2 },
	{ "thread_name", loop_thread_name, 1 },
};

int main(int argc, char **argv)
{
	const struct kind *k = NULL;
	unsigned long n, repeat = 1, r;
	double best = 0;
	size_t i;

	for (i = 0; argc >= 3 && i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (!strcmp(argv[1], kinds[i].name))
			k = &kinds[i];
	if (!k || argc > 4 || parse_count(argv[2], 1ul << 40, &n) ||
	    (argc == 4 && parse_count(argv[3], 1000, &repeat))) {
		fprintf(stderr, "usage: site_cost syscall|pair|cache_hit|mark|alloc|thread_name N [REPEAT]\n");
		return 2;
	}
	for (r = 0; r < repeat; r++) {
		double t0 = now_ns(), ns;

		k->loop(n);
		ns = (now_ns() - t0) / (double)n;
		if (r == 0 || ns < best)
			best = ns;
	}
	printf("kind=%s n=%lu sites=%d traced=%d ns_per_iter=%.3f\n", k->name,
	       n, k->sites, SP_ENABLED() ? 1 : 0, best);
	return 0;
}
