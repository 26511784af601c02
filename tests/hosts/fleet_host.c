// SPDX-License-Identifier: MIT
/*
 * Host of the continuous-mode and `sptrace serve` tests: rounds of queries
 * with known counts and latencies, over as many distinct names as asked.
 *
 *   fleet_host [--names N] [--rounds K] [--pause-ms M] [--spin-us U]
 *              [--slow-every S --slow-us V] [--wait] [--times FILE]
 *              [--vm-child-ms C] [--spin-factor F] [--steps]
 *
 * One round: for each of the N names (heap strings "q00000", "q00001",
 * ...) one query of U us (busy-wait) and one cache hit. Every S-th round
 * the query of name q00000 takes V us instead. M ms pause between rounds.
 * Runs K rounds (0: until SIGTERM/SIGINT, checked between rounds only, so
 * every query begun is ended). --wait: print "ready PID" and start on
 * SIGUSR1. At the end it prints one JSON line: rounds, names, per-name
 * invocations and cache hits, the latency of every query of q00000 and
 * the time the rounds took. --spin-factor F: name i spins U x F^i us (self
 * times far apart, so their order is known); the JSON line then also has
 * per name the sums of INNER_NS and OUTER_NS (below) over its queries.
 * --times FILE: one line per query of q00000,
 * written at the end, bracketing each probe with clock readings on both
 * sides so that a tracer's interval is known to lie between two of them:
 *
 *   INNER_NS OUTER_NS PRE_END_REALTIME_NS POST_END_REALTIME_NS
 *
 * INNER_NS is the latency on CLOCK_MONOTONIC read after BEGIN and before
 * END (inside the probes), OUTER_NS read before BEGIN and after END
 * (outside them): the BEGIN-to-END time a tracer measures lies in
 * [INNER_NS, OUTER_NS]. The two CLOCK_REALTIME readings are taken just
 * before and just after the END probe: the END happened between them
 * (what a scrape's timestamp is compared with).
 *
 * --steps: no rounds; commands from stdin, one a line, each answered by
 * one JSON line once done (so a test changes the figures between two
 * scrapes and knows by how much):
 *
 *   q I US N   N queries of name I, each a busy-wait of US us; answers
 *              {"inner_ns":[...],"outer_ns":[...]}, the latencies as above
 *   h I N      N cache hits of name I; answers {"hits":N}
 *
 * End of input ends it (no JSON summary).
 */
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include <sp_probe.h>
#include "gt_spin.h"

/* A compiler barrier: volatile asms keep their order among themselves,
 * and no call moves across a memory clobber. */
#define BARRIER() __asm__ __volatile__("" ::: "memory")

static volatile sig_atomic_t stop, go;

static uint64_t ts_ns(const struct timespec *ts)
{
	return (uint64_t)ts->tv_sec * 1000000000ull + (uint64_t)ts->tv_nsec;
}

static void on_stop(int sig)
{
	(void)sig;
	stop = 1;
}

static void on_go(int sig)
{
	(void)sig;
	go = 1;
}

/* --steps: see the top of the file. */
static int steps(char **v, long names)
{
	uint64_t inner[256], outer[256];
	char line[128];
	long i, us, n, k;

	while (fgets(line, sizeof(line), stdin)) {
		if (sscanf(line, "q %ld %ld %ld", &i, &us, &n) == 3 &&
		    i >= 0 && i < names && n > 0 && n <= 256 && us >= 0) {
			for (k = 0; k < n; k++) {
				uint64_t o0, t0, t1, o1;

				o0 = gt_now();
				BARRIER();
				SP_QUERY_BEGIN(v[i]);
				BARRIER();
				t0 = gt_now();
				gt_spin((uint64_t)us * 1000);
				t1 = gt_now();
				BARRIER();
				SP_QUERY_END(v[i]);
				BARRIER();
				o1 = gt_now();
				inner[k] = t1 - t0;
				outer[k] = o1 - o0;
			}
			printf("{\"inner_ns\":[");
			for (k = 0; k < n; k++)
				printf("%s%llu", k ? "," : "",
				       (unsigned long long)inner[k]);
			printf("],\"outer_ns\":[");
			for (k = 0; k < n; k++)
				printf("%s%llu", k ? "," : "",
				       (unsigned long long)outer[k]);
			printf("]}\n");
		} else if (sscanf(line, "h %ld %ld", &i, &n) == 2 && i >= 0 &&
			   i < names && n > 0) {
			for (k = 0; k < n; k++)
				SP_CACHE_HIT(v[i]);
			printf("{\"hits\":%ld}\n", n);
		} else {
			fprintf(stderr, "fleet_host: bad step '%s'\n", line);
			return 2;
		}
		fflush(stdout);
	}
	return 0;
}

static int vm_child(void *arg)
{
	usleep((useconds_t)(long)arg * 1000);
	return 0;
}

/* A task in our address space, not a thread, as LSan's tracer is. */
static int run_vm_child(long ms)
{
	size_t size = 256 * 1024;
	char *stack = malloc(size);
	int pid, status = 0;

	if (!stack)
		return 1;
	pid = clone(vm_child, stack + size, CLONE_VM | SIGCHLD, (void *)ms);
	if (pid < 0 || waitpid(pid, &status, 0) != pid) {
		free(stack);
		return 1;
	}
	free(stack);
	return !WIFEXITED(status) || WEXITSTATUS(status);
}

/*
 * The names: heap strings, never freed (docs/instrumenting.md, "Never
 * changed or freed"): batched records hold their addresses until a drain,
 * which may come at the thread's exit. Freed before it, the row got the
 * allocator's bytes as its name (e2e_serve, a 5-round run no age flush
 * drained: "\x61\xd9.. (invalid UTF-8)"). Static, so LeakSanitizer sees them
 * reachable.
 */
static char **v;

int main(int argc, char **argv)
{
	long names = 4, rounds = 0, pause_ms = 10, spin_us = 100;
	long slow_every = 0, slow_us = 0, vm_child_ms = 0, factor = 0, k, i;
	uint64_t *inner = NULL, *outer = NULL;
	uint64_t lat_sum = 0, lat_outer_sum = 0, o0, t0, t1, o1, start, (*times)[4] = NULL;
	size_t ntimes = 0, cap = 0;
	const char *times_path = NULL;
	int wait = 0, step = 0;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--wait"))
			wait = 1;
		else if (!strcmp(argv[i], "--steps"))
			step = 1;
		else if (i + 1 < argc && !strcmp(argv[i], "--names"))
			names = atol(argv[++i]);
		else if (i + 1 < argc && !strcmp(argv[i], "--rounds"))
			rounds = atol(argv[++i]);
		else if (i + 1 < argc && !strcmp(argv[i], "--pause-ms"))
			pause_ms = atol(argv[++i]);
		else if (i + 1 < argc && !strcmp(argv[i], "--spin-us"))
			spin_us = atol(argv[++i]);
		else if (i + 1 < argc && !strcmp(argv[i], "--slow-every"))
			slow_every = atol(argv[++i]);
		else if (i + 1 < argc && !strcmp(argv[i], "--slow-us"))
			slow_us = atol(argv[++i]);
		else if (i + 1 < argc && !strcmp(argv[i], "--vm-child-ms"))
			vm_child_ms = atol(argv[++i]);
		else if (i + 1 < argc && !strcmp(argv[i], "--spin-factor"))
			factor = atol(argv[++i]);
		else if (i + 1 < argc && !strcmp(argv[i], "--times"))
			times_path = argv[++i];
		else {
			fprintf(stderr, "fleet_host: bad argument '%s'\n", argv[i]);
			return 2;
		}
	}
	if (names < 1)
		names = 1;
	v = calloc((size_t)names, sizeof(*v));
	for (i = 0; v && i < names; i++) {
		v[i] = malloc(24);
		if (!v[i])
			return 1;
		snprintf(v[i], 24, "q%05ld", i);
	}
	if (!v)
		return 1;
	if (step)
		return steps(v, names);
	if (factor) {
		inner = calloc((size_t)names, sizeof(*inner));
		outer = calloc((size_t)names, sizeof(*outer));
		if (!inner || !outer)
			return 1;
	}
	signal(SIGTERM, on_stop);
	signal(SIGINT, on_stop);
	signal(SIGUSR1, on_go);
	if (wait) {
		printf("ready %d\n", (int)getpid());
		fflush(stdout);
		while (!go && !stop)
			usleep(1000);
	}
	start = gt_now();
	for (k = 0; !stop && (!rounds || k < rounds); k++) {
		for (i = 0; i < names; i++) {
			uint64_t us = i == 0 && slow_every &&
				      k % slow_every == slow_every - 1 ?
					      (uint64_t)slow_us :
					      (uint64_t)spin_us;
			struct timespec pre, post;
			long f;

			for (f = 0; factor && f < i; f++)
				us *= (uint64_t)factor;

			/* The barriers keep each clock reading on its side of
			 * the probe's asm (which has no memory clobber). */
			o0 = gt_now();
			BARRIER();
			SP_QUERY_BEGIN(v[i]);
			BARRIER();
			t0 = gt_now();
			gt_spin(us * 1000);
			t1 = gt_now();
			/* Realtime only for --times: other tests' hosts run
			 * as they did. */
			if (times_path)
				clock_gettime(CLOCK_REALTIME, &pre);
			BARRIER();
			SP_QUERY_END(v[i]);
			BARRIER();
			o1 = gt_now();
			if (times_path)
				clock_gettime(CLOCK_REALTIME, &post);
			SP_CACHE_HIT(v[i]);
			if (factor) {
				inner[i] += t1 - t0;
				outer[i] += o1 - o0;
			}
			if (i == 0) {
				lat_sum += t1 - t0;
				lat_outer_sum += o1 - o0;
			}
			if (i == 0 && times_path) {
				if (ntimes == cap) {
					cap = cap ? 2 * cap : 4096;
					times = realloc(times, cap * sizeof(*times));
					if (!times)
						return 1;
				}
				times[ntimes][0] = t1 - t0;
				times[ntimes][1] = o1 - o0;
				times[ntimes][2] = ts_ns(&pre);
				times[ntimes++][3] = ts_ns(&post);
			}
		}
		if (pause_ms)
			usleep((useconds_t)pause_ms * 1000);
	}
	printf("{\"pid\":%d,\"rounds\":%ld,\"names\":%ld,\"invocations_per_name\":%ld,"
	       "\"cache_hits_per_name\":%ld,\"q00000_latency_sum_ns\":%llu,"
	       "\"q00000_latency_outer_sum_ns\":%llu,\"elapsed_ns\":%llu",
	       (int)getpid(), k, names, k, k, (unsigned long long)lat_sum,
	       (unsigned long long)lat_outer_sum,
	       (unsigned long long)(gt_now() - start));
	for (i = 0; factor && i < names; i++)
		printf("%s%llu", i ? "," : ",\"inner_ns_per_name\":[",
		       (unsigned long long)inner[i]);
	for (i = 0; factor && i < names; i++)
		printf("%s%llu", i ? "," : "],\"outer_ns_per_name\":[",
		       (unsigned long long)outer[i]);
	printf("%s}\n", factor ? "]" : "");
	free(inner);
	free(outer);
	if (times_path) {
		FILE *f = fopen(times_path, "w");
		size_t j;

		if (!f)
			return 1;
		for (j = 0; j < ntimes; j++)
			fprintf(f, "%llu %llu %llu %llu\n",
				(unsigned long long)times[j][0],
				(unsigned long long)times[j][1],
				(unsigned long long)times[j][2],
				(unsigned long long)times[j][3]);
		if (fclose(f))
			return 1;
		free(times);
	}
	if (vm_child_ms && run_vm_child(vm_child_ms))
		return 1;
	return 0;
}
