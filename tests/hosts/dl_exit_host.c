// SPDX-License-Identifier: MIT
/*
 * Exits while 3 threads run the batched probes of an instrumented library
 * (dl_cycle_lib.c, batching forced on without a tracer): the probe
 * header's unload at exit must leave the rings of threads still running
 * mapped (tests/e2e/test_dl_cycles.py). Built twice: dl_exit_dlopen
 * dlopen()s LIB, dl_exit_linked has the library as a DT_NEEDED dependency.
 *
 *   dl_exit_dlopen LIB | dl_exit_linked
 *
 * Exit status 0, or death by the signal of a ring unmapped under a thread.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#ifdef DL_EXIT_LINKED
int dl_cycle_run(void);
void dl_cycle_force_batching(void);
#endif

static int (*run)(void);

static void *worker(void *arg)
{
	(void)arg;
	for (;;)
		run();
	return NULL;
}

int main(int argc, char **argv)
{
	void (*force)(void);
	pthread_t t;
	int i;

#ifdef DL_EXIT_LINKED
	(void)argc;
	(void)argv;
	run = dl_cycle_run;
	force = dl_cycle_force_batching;
#else
	void *h = argc > 1 ? dlopen(argv[1], RTLD_NOW) : NULL;

	if (!h) {
		fprintf(stderr, "usage: dl_exit_dlopen LIB (%s)\n", dlerror());
		return 2;
	}
	*(void **)&run = dlsym(h, "dl_cycle_run");
	*(void **)&force = dlsym(h, "dl_cycle_force_batching");
	if (!run || !force)
		return 2;
#endif
	force();
	for (i = 0; i < 3; i++)
		if (pthread_create(&t, NULL, worker, NULL))
			return 2;
	usleep(50000);
	exit(0);
}
