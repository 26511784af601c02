// SPDX-License-Identifier: MIT
/*
 * batch_cost: the loops bench/run_batch_cost.sh times to compare batched sp
 * events with per-event probes, a bare syscall and bpftrace on <sys/sdt.h>.
 *
 *   batch_cost MODE N [REPEAT [THREADS]]
 *
 *   empty     N iterations of a loop holding only a compiler barrier
 *   pair      the same loop around an SP_QUERY_BEGIN/END pair ("bench")
 *   syscall   N bare syscall(SYS_getppid)
 *   sdt       the loop around a <sys/sdt.h> bench:begin / bench:end pair
 *   func      the loop calling bench_fn(), a plain function for --func
 *   func_pair the loop around an sp pair around a call of bench_fn()
 *   alloc     the loop around an SP_ALLOC/SP_FREE pair
 *   (the last three for bench/run_event_drain_cost.sh)
 *
 * THREADS (default 1) threads run the loop at once, each REPEAT times.
 * Prints: mode=M n=N repeat=R threads=T traced=0|1 pairs=P ns_per_iter=F
 * where F is the fastest repeat's wall time per iteration of one thread
 * (CLOCK_MONOTONIC around the loop) and P the pairs the program ran in all,
 * for the script to check against the tracer's count. Only meaningful
 * when optimised.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sdt.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <sp_probe.h>

#include "bench_loops.h"

/* A function for --func: the per-event uprobe and uretprobe it gets
 * drain the thread's rings first in a batched session. */
__attribute__((noinline)) void bench_fn(void)
{
	BARRIER();
}

__attribute__((noinline)) static void loop_func(unsigned long n)
{
	unsigned long i;

	for (i = 0; i < n; i++)
		bench_fn();
}

__attribute__((noinline)) static void loop_func_pair(unsigned long n)
{
	unsigned long i;

	for (i = 0; i < n; i++) {
		SP_QUERY_BEGIN("bench");
		bench_fn();
		SP_QUERY_END("bench");
	}
}

__attribute__((noinline)) static void loop_alloc(unsigned long n)
{
	unsigned long i;

	for (i = 0; i < n; i++) {
		SP_ALLOC("bench", 8, &i);
		BARRIER();
		SP_FREE("bench", &i);
	}
}

static const struct mode {
	const char *name;
	void (*loop)(unsigned long n);
	int pairs;		/* the loop runs sp pairs */
} modes[] = {
	{ "empty", loop_empty, 0 },
	{ "pair", loop_pair, 1 },
	{ "syscall", loop_syscall, 0 },
	{ "sdt", loop_sdt, 0 },
	{ "func", loop_func, 0 },
	{ "func_pair", loop_func_pair, 1 },
	{ "alloc", loop_alloc, 0 },
};

struct worker {
	const struct mode *m;
	unsigned long n, repeat;
	double best;
	pthread_t th;
};

static void *work(void *arg)
{
	struct worker *w = arg;
	unsigned long r;

	for (r = 0; r < w->repeat; r++) {
		double t0 = now_ns(), ns;

		w->m->loop(w->n);
		ns = (now_ns() - t0) / (double)w->n;
		if (r == 0 || ns < w->best)
			w->best = ns;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	unsigned long n, repeat = 1, nthreads = 1, t;
	struct worker w[16];
	const struct mode *m = NULL;
	double best = 0;
	size_t i;

	if (argc >= 3)
		for (i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
			if (!strcmp(argv[1], modes[i].name))
				m = &modes[i];
	if (!m || argc > 5 || parse_count(argv[2], 1ul << 40, &n) ||
	    (argc >= 4 && parse_count(argv[3], 1000, &repeat)) ||
	    (argc >= 5 && parse_count(argv[4], 16, &nthreads))) {
		fprintf(stderr, "usage: batch_cost empty|pair|syscall|sdt|func|func_pair|alloc N [REPEAT [THREADS]]\n");
		return 2;
	}
#ifndef __OPTIMIZE__
	fprintf(stderr, "batch_cost: built without optimisation: the figures mean little\n");
#endif
	for (t = 0; t < nthreads; t++) {
		w[t] = (struct worker){ .m = m, .n = n, .repeat = repeat };
		if (pthread_create(&w[t].th, NULL, work, &w[t])) {
			fprintf(stderr, "batch_cost: cannot start a thread\n");
			return 1;
		}
	}
	for (t = 0; t < nthreads; t++) {
		pthread_join(w[t].th, NULL);
		if (t == 0 || w[t].best > best)
			best = w[t].best;	/* the slowest thread's best */
	}
	printf("mode=%s n=%lu repeat=%lu threads=%lu traced=%d pairs=%lu ns_per_iter=%.3f\n",
	       m->name, n, repeat, nthreads, SP_ENABLED() ? 1 : 0,
	       m->pairs ? n * repeat * nthreads : 0, best);
	return 0;
}
