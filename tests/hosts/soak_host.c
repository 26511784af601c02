// SPDX-License-Identifier: MIT
/*
 * Soak and lifecycle host: N threads run a fixed query mix at a paced
 * rate and count, per query, every interval they complete and every cache
 * hit they mark, so a tracer's table can be compared to the truth exactly.
 *
 * One iteration of a thread (i counts the thread's iterations):
 *   soak_outer                      1 interval
 *     soak_inner (nested)           when i % 2 == 0
 *   cache hit on soak_inner         when i % 3 == 0
 *   soak_leaf, twice                2 intervals
 * A thread checks for the end only between iterations, so every interval
 * it begins is ended and counted.
 *
 *   soak_host [--threads N] [--rate EVENTS_PER_S] [--seconds S]
 *             [--iterations K] [--phases P] [--wait] [--out FILE]
 *
 * --rate: probe events per second over all threads (0: as fast as
 * possible; default 250000). A phase ends after --seconds (default: none),
 * after --iterations per thread (default: none), or at SIGTERM/SIGINT,
 * which also ends the process. --wait: print "ready PID" and start each
 * phase on SIGUSR1, so a tracer attached before it sees every event. After
 * each phase the host prints (or writes to FILE, replacing it) one JSON
 * line with its cumulative counts, and exits after --phases (default 1).
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sp_probe.h>

#define MAX_THREADS 64

struct worker {
	pthread_t t;
	uint64_t iters, outer, inner, hits, leaf, events;
	char pad[64];
};

static int nthreads = 4;
static double rate = 250000;
static double seconds;
static uint64_t max_iters;
static atomic_bool stop;
static atomic_int finished;	/* workers done with --iterations */
static struct worker workers[MAX_THREADS];

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static __attribute__((noinline)) void leaf(void)
{
	SP_QUERY_BEGIN("soak_leaf");
	SP_QUERY_END("soak_leaf");
}

static void iteration(struct worker *w)
{
	uint64_t i = w->iters;

	SP_QUERY_BEGIN("soak_outer");
	if (i % 2 == 0) {
		SP_QUERY_BEGIN("soak_inner");
		SP_QUERY_END("soak_inner");
		w->inner++;
		w->events += 2;
	}
	SP_QUERY_END("soak_outer");
	w->outer++;
	if (i % 3 == 0) {
		SP_CACHE_HIT("soak_inner");
		w->hits++;
		w->events++;
	}
	leaf();
	leaf();
	w->leaf += 2;
	w->events += 6;
	w->iters++;
}

static void *work(void *arg)
{
	struct worker *w = arg;
	uint64_t start = now_ns(), first_events = w->events, first_iters = w->iters;
	double per_thread = rate / nthreads;

	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		int j;

		for (j = 0; j < 64; j++) {
			if (max_iters && w->iters - first_iters >= max_iters) {
				atomic_fetch_add(&finished, 1);
				return NULL;
			}
			iteration(w);
		}
		if (per_thread > 0) {
			/* Paced: sleep until these events are due. */
			uint64_t due = start + (uint64_t)((double)(w->events -
								   first_events) /
							  per_thread * 1e9);
			uint64_t now = now_ns();

			if (due > now) {
				struct timespec ts = {
					.tv_sec = (time_t)((due - now) / 1000000000ull),
					.tv_nsec = (long)((due - now) % 1000000000ull),
				};

				nanosleep(&ts, NULL);
			}
		}
	}
	return NULL;
}

static int report(const char *out, int phase, double elapsed)
{
	uint64_t it = 0, o = 0, in = 0, h = 0, l = 0, ev = 0;
	FILE *f = stdout;
	char tmp[4096];
	int i;

	for (i = 0; i < nthreads; i++) {
		it += workers[i].iters;
		o += workers[i].outer;
		in += workers[i].inner;
		h += workers[i].hits;
		l += workers[i].leaf;
		ev += workers[i].events;
	}
	if (out) {
		snprintf(tmp, sizeof(tmp), "%s.tmp", out);
		f = fopen(tmp, "w");
		if (!f) {
			perror(tmp);
			return 1;
		}
	}
	fprintf(f,
		"{\"pid\": %d, \"phase\": %d, \"threads\": %d, \"iterations\": %llu, "
		"\"events\": %llu, \"seconds\": %.3f, \"rate\": %.0f, "
		"\"queries\": {\"soak_outer\": %llu, \"soak_inner\": %llu, "
		"\"soak_leaf\": %llu}, \"cache_hits\": {\"soak_inner\": %llu}}\n",
		(int)getpid(), phase, nthreads, (unsigned long long)it,
		(unsigned long long)ev, elapsed, elapsed > 0 ? (double)ev / elapsed : 0,
		(unsigned long long)o, (unsigned long long)in,
		(unsigned long long)l, (unsigned long long)h);
	if (out) {
		/* Renamed into place: a reader never sees half a line. */
		if (fclose(f) || rename(tmp, out)) {
			perror(out);
			return 1;
		}
	} else {
		fflush(stdout);
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *out = NULL;
	int phases = 1, wait_go = 0, phase, i, sig;
	double elapsed = 0;
	sigset_t set;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--wait")) {
			wait_go = 1;
			continue;
		}
		if (!v)
			goto usage;
		if (!strcmp(a, "--threads"))
			nthreads = atoi(v);
		else if (!strcmp(a, "--rate"))
			rate = atof(v);
		else if (!strcmp(a, "--seconds"))
			seconds = atof(v);
		else if (!strcmp(a, "--iterations"))
			max_iters = strtoull(v, NULL, 10);
		else if (!strcmp(a, "--phases"))
			phases = atoi(v);
		else if (!strcmp(a, "--out"))
			out = v;
		else
			goto usage;
		i++;
	}
	if (nthreads < 1 || nthreads > MAX_THREADS || phases < 1 || rate < 0)
		goto usage;

	/* Signals are taken by sigtimedwait() in this thread only. */
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	if (wait_go) {
		printf("ready %d\n", (int)getpid());
		fflush(stdout);
	}
	for (phase = 1; phase <= phases; phase++) {
		uint64_t t0;
		int ended = 0;

		if (wait_go) {
			do
				sig = sigwaitinfo(&set, NULL);
			while (sig < 0 && errno == EINTR);
			if (sig != SIGUSR1)
				break;
		}
		atomic_store(&stop, false);
		atomic_store(&finished, 0);
		t0 = now_ns();
		for (i = 0; i < nthreads; i++)
			if (pthread_create(&workers[i].t, NULL, work, &workers[i])) {
				perror("pthread_create");
				return 1;
			}
		/* Wait for the deadline or a signal; --iterations ends the
		 * workers by themselves. */
		for (;;) {
			struct timespec ts = { 0, 20000000 };

			sig = sigtimedwait(&set, NULL, &ts);
			if (sig == SIGTERM || sig == SIGINT) {
				ended = 1;
				break;
			}
			if (seconds > 0 && now_ns() - t0 >= (uint64_t)(seconds * 1e9))
				break;
			if (max_iters && atomic_load(&finished) == nthreads)
				break;
		}
		atomic_store(&stop, true);
		for (i = 0; i < nthreads; i++)
			pthread_join(workers[i].t, NULL);
		elapsed += (double)(now_ns() - t0) / 1e9;
		if (report(out, phase, elapsed))
			return 1;
		if (ended)
			break;
	}
	return 0;
usage:
	fprintf(stderr, "usage: soak_host [--threads N] [--rate EV_PER_S] [--seconds S] [--iterations K] [--phases P] [--wait] [--out FILE]\n");
	return 2;
}
