// SPDX-License-Identifier: MIT
/*
 * Lifecycle host: what a traced process may do to its tracer. Every mode
 * prints "ready PID", waits for SIGUSR1, does its work, and prints one
 * JSON line with the counts it made.
 *
 *   life_host threads N K       N short-lived threads (at most 16 alive at
 *                               once), each K life_thread intervals
 *   life_host exec K PROG ARGS  K life_pre_exec intervals, then execv(PROG)
 *   life_host dlopen K LIB      dlopen(LIB) first, then K life_lib
 *                               intervals (in LIB: life_lib_run). LIB may be
 *                               longer than PATH_MAX: the host walks to its
 *                               directory one component at a time.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sp_probe.h>

#ifdef LIFE_HOST_LIB
void life_lib_run(long k);
void life_lib_run(long k)
{
	long i;

	for (i = 0; i < k; i++) {
		SP_QUERY_BEGIN("life_lib");
		SP_QUERY_END("life_lib");
	}
}
#else
static long per_thread;

static void *thread_main(void *arg)
{
	long i;

	(void)arg;
	for (i = 0; i < per_thread; i++) {
		SP_QUERY_BEGIN("life_thread");
		SP_QUERY_END("life_thread");
	}
	return NULL;
}

static int run_threads(long n)
{
	pthread_t t[16];
	long started = 0, i;

	while (started < n) {
		long batch = n - started < 16 ? n - started : 16;

		for (i = 0; i < batch; i++)
			if (pthread_create(&t[i], NULL, thread_main, NULL)) {
				perror("pthread_create");
				return 1;
			}
		for (i = 0; i < batch; i++)
			pthread_join(t[i], NULL);
		started += batch;
	}
	printf("{\"threads\": %ld, \"queries\": {\"life_thread\": %ld}}\n", n,
	       n * per_thread);
	return 0;
}

static void wait_go(void)
{
	sigset_t set;
	int sig;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, NULL);
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	do
		sig = sigwaitinfo(&set, NULL);
	while (sig < 0 && errno == EINTR);
	/* An exec'd program must not inherit a blocked SIGUSR1. */
	sigprocmask(SIG_UNBLOCK, &set, NULL);
}

int main(int argc, char **argv)
{
	long k;

	if (argc < 3)
		goto usage;
	k = atol(argv[2]);
	if (!strcmp(argv[1], "threads") && argc == 4) {
		per_thread = atol(argv[3]);
		wait_go();
		return run_threads(k);
	}
	if (!strcmp(argv[1], "exec") && argc >= 4) {
		long i;

		wait_go();
		for (i = 0; i < k; i++) {
			SP_QUERY_BEGIN("life_pre_exec");
			SP_QUERY_END("life_pre_exec");
		}
		printf("{\"queries\": {\"life_pre_exec\": %ld}}\n", k);
		fflush(stdout);
		execv(argv[3], &argv[3]);
		perror(argv[3]);
		return 1;
	}
	if (!strcmp(argv[1], "dlopen") && argc == 4) {
		char *path = argv[3], *slash, lib[300];
		void (*run)(long);
		void *h;

		/* No system call takes a path longer than PATH_MAX: chdir to
		 * each directory in turn, then open the file relative to it. */
		if (*path == '/' && chdir("/"))
			return 1;
		while ((slash = strchr(path, '/'))) {
			*slash = 0;
			if (*path && chdir(path)) {
				perror(path);
				return 1;
			}
			path = slash + 1;
		}
		snprintf(lib, sizeof(lib), "./%s", path);
		h = dlopen(lib, RTLD_NOW);
		if (!h) {
			fprintf(stderr, "dlopen: %s\n", dlerror());
			return 1;
		}
		*(void **)&run = dlsym(h, "life_lib_run");
		if (!run)
			return 1;
		wait_go();
		run(k);
		printf("{\"queries\": {\"life_lib\": %ld}}\n", k);
		return 0;
	}
usage:
	fprintf(stderr, "usage: life_host threads N K | exec K PROG [ARGS] | dlopen K LIB\n");
	return 2;
}
#endif
