// SPDX-License-Identifier: MIT
/*
 * Forks children that exec, over and over, for sptrace --follow
 * (tests/e2e/test_killsafe.py: a killed tracer must leave none stopped).
 *
 *   exec_storm LIB          the storm, until SIGTERM
 *   exec_storm --leaf LIB   one child: a query, LIB dlopen()ed, its
 *                           queries run, dlclose(), exit 0
 *
 * The parent keeps 4 children at a time, each a fork() that execs this
 * program as a leaf, 10 ms apart (about 100 a second, leaving the CPUs
 * to the tracer): every child is stopped at its exec and at its loader's
 * events by a --follow tracer. SIGUSR2 prints "enabled <e>" (SP_ENABLED()
 * of the parent); SIGTERM stops forking, waits for the children and prints
 *   children <n> ok <k> enabled <e>
 * (k: children that exited 0). A child left stopped keeps the parent
 * waiting: the test sees it in state T.
 */
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
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

static int leaf(const char *lib)
{
	int (*run)(void);
	void *h;

	SP_QUERY_BEGIN("storm_leaf");
	SP_QUERY_END("storm_leaf");
	h = dlopen(lib, RTLD_NOW);
	if (!h)
		return 1;
	*(void **)&run = dlsym(h, "dl_cycle_run");
	if (!run)
		return 1;
	run();
	return dlclose(h) ? 1 : 0;
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_signal };	/* no restart */
	long children = 0, ok = 0;
	int running = 0, status;
	pid_t pid;

	if (argc == 3 && !strcmp(argv[1], "--leaf"))
		return leaf(argv[2]);
	if (argc != 2) {
		fprintf(stderr, "usage: exec_storm LIB | --leaf LIB\n");
		return 2;
	}
	sigaction(SIGUSR2, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	while (!done || running) {
		if (ask) {
			ask = 0;
			printf("enabled %d\n", SP_ENABLED() ? 1 : 0);
			fflush(stdout);
		}
		if (!done && running < 4) {
			usleep(10000);
			SP_QUERY_BEGIN("storm_fork");
			pid = fork();
			if (pid == 0) {
				execl(argv[0], argv[0], "--leaf", argv[1],
				      (char *)NULL);
				_exit(127);
			}
			SP_QUERY_END("storm_fork");
			if (pid > 0) {
				children++;
				running++;
			}
			continue;
		}
		pid = waitpid(-1, &status, 0);
		if (pid > 0) {
			running--;
			ok += WIFEXITED(status) && !WEXITSTATUS(status);
		} else if (errno == ECHILD) {
			running = 0;
		}
	}
	printf("children %ld ok %ld enabled %d\n", children, ok,
	       SP_ENABLED() ? 1 : 0);
	return 0;
}
