// SPDX-License-Identifier: MIT
/*
 * Ground-truth host: a fixed pattern of nested and recursive queries, cache
 * hits, blocked and incremental-load intervals and a query in a shared
 * library, on several threads. Every count is known in advance. Every
 * duration is a busy-wait, and the host times each interval itself with
 * its own clock right inside the probes, computing total and self time the
 * way the documentation defines them; it prints that truth as JSON.
 *
 * A first round runs the same sites under "warm_" names, so the kernel's
 * one-time cost of a site's first hit (the int3 that turns the nop into a
 * call) is not in the measured rows. It is timed too, apart: the sum of
 * every self time, warm-up included, is "total_self_ns" (the table's
 * Total and the base of its % column).
 *
 *   groundtruth [--wait] [--threads N] ITERATIONS
 *
 * --wait: print "ready <pid>" and wait for SIGUSR1 before working (for -p).
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sp_probe.h>
#include "gt_spin.h"

#define MS 1000000ull

enum { T_OUTER, T_INNER, T_SHARED, T_CODEGEN, T_LIB, T_RECURSE, T__MAX };
static const char *const names[2][T__MAX] = {
	{ "outer", "inner", "shared", "codegen", "lib_query", "recurse" },
	{ "warm_outer", "warm_inner", "warm_shared", "warm_codegen",
	  "warm_lib_query", "warm_recurse" },
};

struct truth {
	uint64_t total[T__MAX];
	uint64_t self[T__MAX];
};

static int iterations;
static struct truth totals, warm_totals;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* Accounts one interval of query q: `d` long, `child` of it in children. */
static uint64_t account(struct truth *t, int q, uint64_t d, uint64_t child)
{
	t->total[q] += d;
	t->self[q] += d - child;
	return d;
}

static uint64_t inner(struct truth *t, const char *const *n)
{
	uint64_t t0, t1;

	SP_QUERY_BEGIN(n[T_INNER]);
	t0 = gt_now();
	gt_spin(1 * MS);
	t1 = gt_now();
	SP_QUERY_END(n[T_INNER]);
	return account(t, T_INNER, t1 - t0, 0);
}

static uint64_t recurse(struct truth *t, const char *const *n, int depth)
{
	uint64_t t0, t1, child = 0;

	SP_QUERY_BEGIN(n[T_RECURSE]);
	t0 = gt_now();
	gt_spin(MS / 2);
	if (depth > 1)
		child = recurse(t, n, depth - 1);
	t1 = gt_now();
	SP_QUERY_END(n[T_RECURSE]);
	return account(t, T_RECURSE, t1 - t0, child);
}

static uint64_t outer(struct truth *t, const char *const *n)
{
	uint64_t t0, t1, a, b, child = 0;
	int i;

	SP_QUERY_BEGIN(n[T_OUTER]);
	t0 = gt_now();
	gt_spin(2 * MS);
	child += inner(t, n);
	child += inner(t, n);

	SP_BLOCKED_BEGIN(n[T_SHARED]);
	a = gt_now();
	gt_spin(1 * MS);
	b = gt_now();
	SP_BLOCKED_END(n[T_SHARED]);
	child += account(t, T_SHARED, b - a, 0);

	SP_INCR_LOAD_BEGIN(n[T_CODEGEN]);
	a = gt_now();
	gt_spin(MS / 2);
	b = gt_now();
	SP_INCR_LOAD_END(n[T_CODEGEN]);
	child += account(t, T_CODEGEN, b - a, 0);

	for (i = 0; i < 3; i++)
		SP_CACHE_HIT(n[T_INNER]);
	child += account(t, T_LIB, gt_lib_query(n[T_LIB], 1 * MS), 0);
	t1 = gt_now();
	SP_QUERY_END(n[T_OUTER]);
	return account(t, T_OUTER, t1 - t0, child);
}

static void *worker(void *arg)
{
	struct truth t, warm;
	int i, k;

	(void)arg;
	memset(&t, 0, sizeof(t));
	memset(&warm, 0, sizeof(warm));
	SP_THREAD_NAME("gt-worker");
	outer(&warm, names[1]);
	recurse(&warm, names[1], 3);
	for (i = 0; i < iterations; i++) {
		outer(&t, names[0]);
		recurse(&t, names[0], 3);
	}
	pthread_mutex_lock(&lock);
	for (k = 0; k < T__MAX; k++) {
		totals.total[k] += t.total[k];
		totals.self[k] += t.self[k];
		warm_totals.self[k] += warm.self[k];
	}
	pthread_mutex_unlock(&lock);
	return NULL;
}

static void print_map(const char *key, const uint64_t *v, int warm)
{
	int k;

	printf("\"%s\": {", key);
	for (k = 0; k < T__MAX; k++)
		printf("%s\"%s\": %llu", k ? ", " : "", names[warm][k],
		       (unsigned long long)v[k]);
	printf("}");
}

int main(int argc, char **argv)
{
	int nthreads = 2, wait = 0, i;
	uint64_t all_self;
	pthread_t th[64];

	for (i = 1; i < argc - 1; i++) {
		if (!strcmp(argv[i], "--wait"))
			wait = 1;
		else if (!strcmp(argv[i], "--threads") && i + 1 < argc - 1)
			nthreads = atoi(argv[++i]);
	}
	if (argc < 2 || (iterations = atoi(argv[argc - 1])) <= 0 ||
	    nthreads < 1 || nthreads > 64) {
		fprintf(stderr, "usage: groundtruth [--wait] [--threads N] ITERATIONS\n");
		return 2;
	}
	if (wait) {
		sigset_t set;
		int sig;

		sigemptyset(&set);
		sigaddset(&set, SIGUSR1);
		sigprocmask(SIG_BLOCK, &set, NULL);
		printf("ready %d\n", (int)getpid());
		fflush(stdout);
		sigwait(&set, &sig);
	}
	for (i = 0; i < nthreads; i++)
		pthread_create(&th[i], NULL, worker, NULL);
	for (i = 0; i < nthreads; i++)
		pthread_join(th[i], NULL);

	printf("{\"threads\": %d, \"iterations\": %d, ", nthreads, iterations);
	print_map("total_ns", totals.total, 0);
	printf(", ");
	print_map("self_ns", totals.self, 0);
	printf(", ");
	print_map("warm_self_ns", warm_totals.self, 1);
	for (i = 0, all_self = 0; i < T__MAX; i++)
		all_self += totals.self[i] + warm_totals.self[i];
	printf(", \"total_self_ns\": %llu}\n", (unsigned long long)all_self);
	return 0;
}
