// SPDX-License-Identifier: MIT
/*
 * A host with an adjustable event rate that reports its own throughput
 * (issue 27's test and bench/run_overhead_bench.sh): one thread runs work
 * items, each `iters` rounds of integer arithmetic inside one query pair,
 * for `seconds`. Throughput is per second of the process's CPU time, so
 * that other load on the machine slows it without changing it: a traced
 * run's loss against an untraced one is the share of its CPU that went to
 * the probes, which is what sptrace estimates.
 *
 *   rate_host ITERS SECONDS [func]
 *
 * With "func", each item also calls rate_func(), a plain function for
 * --func (once per item: its count is the items').
 *
 * Every 100 ms: "tick ITEMS CPU_NS"; at the end:
 *   "done items=N cpu_ns=C wall_ns=W per_cpu_s=R"
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "sp_probe.h"

static uint64_t clock_ns(clockid_t id)
{
	struct timespec t;

	clock_gettime(id, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static volatile uint64_t sink;

/* Not inlined, and in the symbol table: a --func target. */
__attribute__((noinline)) uint64_t rate_func(uint64_t x);
__attribute__((noinline)) uint64_t rate_func(uint64_t x)
{
	__asm__ volatile("" : "+r"(x));
	return x + 1;
}

int main(int argc, char **argv)
{
	uint64_t iters, ns, t0, c0, next, items = 0, now, cpu, x = 1, i;
	char *end;
	int func;

	if (argc != 3 && !(argc == 4 && !strcmp(argv[3], "func"))) {
		fprintf(stderr, "usage: rate_host ITERS SECONDS [func]\n");
		return 2;
	}
	iters = strtoull(argv[1], &end, 10);
	if (*end || !iters)
		return 2;
	ns = (uint64_t)(strtod(argv[2], &end) * 1e9);
	if (*end || !ns)
		return 2;
	func = argc == 4;
	setvbuf(stdout, NULL, _IOLBF, 0);
	t0 = clock_ns(CLOCK_MONOTONIC);
	c0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	next = t0 + 100000000ull;
	for (;;) {
		SP_QUERY_BEGIN("item");
		for (i = 0; i < iters; i++)
			x = x * 6364136223846793005ull + 1442695040888963407ull;
		if (func)
			x = rate_func(x);
		sink = x;
		SP_QUERY_END("item");
		items++;
		if (items & 63)
			continue;
		now = clock_ns(CLOCK_MONOTONIC);
		if (now < next)
			continue;
		cpu = clock_ns(CLOCK_PROCESS_CPUTIME_ID) - c0;
		printf("tick %llu %llu\n", (unsigned long long)items,
		       (unsigned long long)cpu);
		next += 100000000ull;
		if (now - t0 >= ns)
			break;
	}
	cpu = clock_ns(CLOCK_PROCESS_CPUTIME_ID) - c0;
	printf("done items=%llu cpu_ns=%llu wall_ns=%llu per_cpu_s=%.1f\n",
	       (unsigned long long)items, (unsigned long long)cpu,
	       (unsigned long long)(now - t0), (double)items * 1e9 / (double)cpu);
	return 0;
}
