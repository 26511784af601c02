// SPDX-License-Identifier: MIT
/*
 * Ground-truth host: a fixed pattern of nested and recursive queries, cache
 * hits, blocked and incremental-load intervals and a query in a shared
 * library, on two threads. Every count is known in advance; every duration
 * is a busy-wait whose real length the host measures and prints as JSON, so
 * the tests compare sptrace's figures with what really happened.
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
static const char *const tnames[T__MAX] = {
	"outer", "inner", "shared", "codegen", "lib_query", "recurse",
};

struct truth {
	uint64_t spin[T__MAX];	/* ns spent spinning directly in each */
};

static int iterations;
static struct truth totals;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static void inner(struct truth *t)
{
	SP_QUERY_BEGIN("inner");
	t->spin[T_INNER] += gt_spin(1 * MS);
	SP_QUERY_END("inner");
}

static void recurse(struct truth *t, int depth)
{
	SP_SCOPE("recurse");
	t->spin[T_RECURSE] += gt_spin(MS / 2);
	if (depth > 1)
		recurse(t, depth - 1);
}

static void outer(struct truth *t)
{
	int i;

	SP_QUERY_BEGIN("outer");
	t->spin[T_OUTER] += gt_spin(2 * MS);
	inner(t);
	inner(t);
	SP_BLOCKED_BEGIN("shared");
	t->spin[T_SHARED] += gt_spin(1 * MS);
	SP_BLOCKED_END("shared");
	SP_INCR_LOAD_BEGIN("codegen");
	t->spin[T_CODEGEN] += gt_spin(MS / 2);
	SP_INCR_LOAD_END("codegen");
	for (i = 0; i < 3; i++)
		SP_CACHE_HIT("inner");
	gt_lib_query(1 * MS, &t->spin[T_LIB]);
	SP_QUERY_END("outer");
}

static void *worker(void *arg)
{
	struct truth t;
	int i, k;

	(void)arg;
	memset(&t, 0, sizeof(t));
	SP_THREAD_NAME("gt-worker");
	for (i = 0; i < iterations; i++) {
		outer(&t);
		recurse(&t, 3);
	}
	pthread_mutex_lock(&lock);
	for (k = 0; k < T__MAX; k++)
		totals.spin[k] += t.spin[k];
	pthread_mutex_unlock(&lock);
	return NULL;
}

int main(int argc, char **argv)
{
	int nthreads = 2, wait = 0, i, k;
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

	printf("{\"threads\": %d, \"iterations\": %d, \"spin_ns\": {", nthreads,
	       iterations);
	for (k = 0; k < T__MAX; k++)
		printf("%s\"%s\": %llu", k ? ", " : "", tnames[k],
		       (unsigned long long)totals.spin[k]);
	printf("}}\n");
	return 0;
}
