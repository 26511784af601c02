// SPDX-License-Identifier: MIT
/*
 * Late-library host: runs a query of its own, then dlopen()s a plugin with
 * sp probes and runs the plugin's query ITER times.
 *
 *   dlopen_host PLUGIN ITER [--wait]
 *
 * --wait: print "ready <pid>", wait for SIGUSR1, and give the tracer
 * 500 ms after dlopen() before using the plugin (a running process is not
 * stopped for the tracer to attach to what it maps).
 */
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sp_probe.h>

int main(int argc, char **argv)
{
	void (*run)(void);
	int i, n, wait;
	void *h;

	if (argc < 3 || (n = atoi(argv[2])) <= 0) {
		fprintf(stderr, "usage: dlopen_host PLUGIN ITER [--wait]\n");
		return 2;
	}
	wait = argc > 3 && !strcmp(argv[3], "--wait");
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
	SP_QUERY_BEGIN("before_dlopen");
	SP_QUERY_END("before_dlopen");
	h = dlopen(argv[1], RTLD_NOW);
	if (!h) {
		fprintf(stderr, "dlopen_host: %s\n", dlerror());
		return 1;
	}
	*(void **)&run = dlsym(h, "plugin_run");
	if (!run)
		return 1;
	if (wait)
		usleep(500000);
	for (i = 0; i < n; i++)
		run();
	dlclose(h);
	return 0;
}
