// SPDX-License-Identifier: MIT
/*
 * Loads and unloads an instrumented library (dl_cycle_lib.c) CYCLES times,
 * running its 100 queries once per load and a "dl_cycle" query of its own
 * per cycle (with marks "dl_open" and "dl_closed", keyed by the cycle, for
 * `sptrace latency`), and counts what it did (tests/e2e/test_dl_cycles.py,
 * test_killsafe.py).
 *
 *   dl_cycle_host LIB CYCLES [--wait [--late]] [--threads T] [--shift]
 *
 * Prints "rss_kb <n>" after the first load and, at the end,
 *   cycles <c> queries <q> rss_kb <n> enabled <e> <l>
 * its ground truth for a tracer's counts, the RSS that the rings of the
 * library's unloads must leave flat, and SP_ENABLED() of the executable and
 * of the library's last copy. CYCLES 0: until SIGTERM. SIGUSR2: prints
 * "enabled <e> <l>" at the next cycle. --wait: once LIB is loaded, prints
 * "ready <pid>" and waits for SIGUSR1 (a tracer attached to the loaded
 * library); the first cycle runs that copy. --late: LIB is unloaded before
 * "ready" (a tracer finds it unmapped and attaches it late). --threads T: T more threads run
 * the library's queries in every cycle too (each then has a ring in each
 * copy, which the main thread's dlclose must unmap). --shift: a page mapped
 * (and kept, untouched) before each load moves the library elsewhere, so
 * its query names are at new addresses in each copy.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <sp_probe.h>

static volatile sig_atomic_t ask, done;

static void on_signal(int sig)
{
	if (sig == SIGUSR2)
		ask = 1;
	else
		done = 1;
}

static long rss_kb(void)
{
	char line[256];
	long kb = -1;
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "VmRSS:", 6))
			kb = strtol(line + 6, NULL, 10);
	fclose(f);
	return kb;
}

struct lib {
	void *h;
	int (*run)(void);
	int (*enabled)(void);
};

/* --threads: each cycle, every worker runs the loaded copy between two
 * barrier waits; `stop` ends them. */
static pthread_barrier_t cycle_start, cycle_done;
static struct lib *shared;
static volatile int stop;
static long worker_queries;

static void *worker(void *arg)
{
	long n = 0;

	(void)arg;
	for (;;) {
		pthread_barrier_wait(&cycle_start);
		if (stop)
			break;
		n += shared->run();
		pthread_barrier_wait(&cycle_done);
	}
	__atomic_fetch_add(&worker_queries, n, __ATOMIC_RELAXED);
	return NULL;
}

static void load(const char *path, struct lib *l)
{
	l->h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!l->h) {
		fprintf(stderr, "dl_cycle_host: %s\n", dlerror());
		exit(1);
	}
	*(void **)&l->run = dlsym(l->h, "dl_cycle_run");
	*(void **)&l->enabled = dlsym(l->h, "dl_cycle_enabled");
	if (!l->run || !l->enabled) {
		fprintf(stderr, "dl_cycle_host: %s is not dl_cycle_lib\n", path);
		exit(1);
	}
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_signal };
	long cycles, i, queries = 0;
	int lib_enabled = 0, nthreads = 0, t;
	bool wait = false, late = false, shift = false;
	pthread_t th[16];
	struct lib l;

	if (argc < 3 || (cycles = atol(argv[2])) < 0) {
		fprintf(stderr, "usage: dl_cycle_host LIB CYCLES [--wait] [--threads T]\n");
		return 2;
	}
	for (t = 3; t < argc; t++) {
		if (!strcmp(argv[t], "--wait"))
			wait = true;
		else if (!strcmp(argv[t], "--late"))
			late = true;
		else if (!strcmp(argv[t], "--shift"))
			shift = true;
		else if (!strcmp(argv[t], "--threads") && t + 1 < argc)
			nthreads = atoi(argv[++t]);
		if (nthreads < 0 || nthreads > 16) {
			fprintf(stderr, "dl_cycle_host: --threads 0 to 16\n");
			return 2;
		}
	}
	shared = &l;
	pthread_barrier_init(&cycle_start, NULL, (unsigned)nthreads + 1);
	pthread_barrier_init(&cycle_done, NULL, (unsigned)nthreads + 1);
	for (t = 0; t < nthreads; t++)
		pthread_create(&th[t], NULL, worker, NULL);
	sigaction(SIGUSR2, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	load(argv[1], &l);
	printf("rss_kb %ld\n", rss_kb());
	if (wait) {
		sigset_t set;
		int sig;

		if (late && dlclose(l.h)) {
			fprintf(stderr, "dl_cycle_host: %s\n", dlerror());
			return 1;
		}
		sigemptyset(&set);
		sigaddset(&set, SIGUSR1);
		sigprocmask(SIG_BLOCK, &set, NULL);
		printf("ready %d\n", (int)getpid());
		fflush(stdout);
		sigwait(&set, &sig);
	}
	fflush(stdout);
	for (i = 0; (!cycles || i < cycles) && !done; i++) {
		SP_QUERY_BEGIN("dl_cycle");
		SP_MARK("dl_open", i);
		if (shift && mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS,
				  -1, 0) == MAP_FAILED)
			return 1;
		if (i || late)
			load(argv[1], &l);
		queries += l.run();
		if (nthreads) {
			pthread_barrier_wait(&cycle_start);
			pthread_barrier_wait(&cycle_done);
		}
		lib_enabled = l.enabled();
		if (ask) {
			ask = 0;
			printf("enabled %d %d\n", SP_ENABLED() ? 1 : 0,
			       lib_enabled ? 1 : 0);
			fflush(stdout);
		}
		if (dlclose(l.h)) {
			fprintf(stderr, "dl_cycle_host: %s\n", dlerror());
			return 1;
		}
		SP_MARK("dl_closed", i);
		SP_QUERY_END("dl_cycle");
	}
	stop = 1;
	if (nthreads) {
		pthread_barrier_wait(&cycle_start);
		for (t = 0; t < nthreads; t++)
			pthread_join(th[t], NULL);
	}
	queries += worker_queries;
	printf("cycles %ld queries %ld rss_kb %ld enabled %d %d\n", i, queries,
	       rss_kb(), SP_ENABLED() ? 1 : 0, lib_enabled ? 1 : 0);
	return 0;
}
