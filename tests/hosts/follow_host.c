// SPDX-License-Identifier: MIT
/*
 * Process-tree host for `sptrace --follow` (tests/e2e/test_follow.py).
 *
 *   follow_host N K EXEC_HOST PLUGIN STATIC_HOST
 *
 * The parent runs "f_parent" 3 times and forks: N children, child i
 * running "f_child" K * (i + 1) times, child 0 also forking a grandchild
 * that runs "f_grand" 7 times; a child that execs EXEC_HOST PLUGIN 5
 * (dlopen_host: "before_dlopen" once, then the plugin's "plugin_query" 5
 * times); and a child that execs STATIC_HOST --leaf 6 (this file built
 * statically: "f_static" 6 times). Every process that runs queries prints
 * {"pid": P, "name": NAME, "count": C} on its own line; the parent waits
 * for all and exits with status 3.
 *
 *   follow_host --orphan K
 *
 * The parent forks and exits at once with status 5; the child's main
 * thread exits first (pthread_exit), and its other thread runs "f_orphan"
 * K times 300 ms later, so the process outlives the command and its
 * first thread.
 *
 *   follow_host --live MS
 *
 * Runs "f_live" for MS milliseconds, then exits (tests/e2e/
 * test_reach_faults.py: a target that exits while sptrace attaches).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <sp_probe.h>

static void truth(const char *name, int n)
{
	char line[128];
	int len;

	len = snprintf(line, sizeof(line),
		       "{\"pid\": %d, \"name\": \"%s\", \"count\": %d}\n",
		       (int)getpid(), name, n);
	/* One write: lines of several processes never interleave. */
	if (write(STDOUT_FILENO, line, (size_t)len) != len)
		_exit(1);
}

static void run(int n, int which)
{
	int i;

	for (i = 0; i < n; i++) {
		switch (which) {
		case 0:
			SP_QUERY_BEGIN("f_parent");
			SP_QUERY_END("f_parent");
			break;
		case 1:
			SP_QUERY_BEGIN("f_child");
			SP_QUERY_END("f_child");
			break;
		case 2:
			SP_QUERY_BEGIN("f_grand");
			SP_QUERY_END("f_grand");
			break;
		case 3:
			SP_QUERY_BEGIN("f_static");
			SP_QUERY_END("f_static");
			break;
		case 4:
			SP_QUERY_BEGIN("f_orphan");
			SP_QUERY_END("f_orphan");
			break;
		default:
			SP_QUERY_BEGIN("f_live");
			SP_QUERY_END("f_live");
			break;
		}
	}
}

static void *orphan_thread(void *arg)
{
	int n = (int)(long)arg;

	usleep(300000);
	run(n, 4);
	truth("f_orphan", n);
	return NULL;
}

static pid_t spawn(char *const argv[])
{
	pid_t pid = fork();

	if (pid == 0) {
		execv(argv[0], argv);
		perror("follow_host: execv");
		_exit(127);
	}
	return pid;
}

int main(int argc, char **argv)
{
	int n, k, i;
	pid_t pid;

	if (argc == 3 && !strcmp(argv[1], "--leaf")) {
		n = atoi(argv[2]);
		run(n, 3);
		truth("f_static", n);
		return 0;
	}
	if (argc == 3 && !strcmp(argv[1], "--live")) {
		struct timespec t0, t;
		long ms = atol(argv[2]);

		clock_gettime(CLOCK_MONOTONIC, &t0);
		for (n = 0;; n++) {
			clock_gettime(CLOCK_MONOTONIC, &t);
			if ((t.tv_sec - t0.tv_sec) * 1000 +
				    (t.tv_nsec - t0.tv_nsec) / 1000000 >= ms)
				break;
			run(1, 5);
		}
		truth("f_live", n);
		return 0;
	}
	if (argc == 3 && !strcmp(argv[1], "--orphan")) {
		pthread_t t;

		if (fork())
			return 5;
		if (pthread_create(&t, NULL, orphan_thread,
				   (void *)(long)atoi(argv[2])))
			_exit(1);
		pthread_exit(NULL);
	}
	if (argc != 6 || (n = atoi(argv[1])) <= 0 || (k = atoi(argv[2])) <= 0) {
		fprintf(stderr, "usage: follow_host N K EXEC_HOST PLUGIN STATIC_HOST\n");
		return 2;
	}
	run(3, 0);
	truth("f_parent", 3);
	for (i = 0; i < n; i++) {
		pid = fork();
		if (pid < 0)
			return 1;
		if (pid)
			continue;
		/* The child's first instruction after fork is a probe. */
		run(k * (i + 1), 1);
		truth("f_child", k * (i + 1));
		if (i == 0) {
			pid = fork();
			if (pid == 0) {
				run(7, 2);
				truth("f_grand", 7);
				_exit(0);
			}
			waitpid(pid, NULL, 0);
		}
		_exit(0);
	}
	{
		char *ex[] = { argv[3], argv[4], "5", NULL };
		char *st[] = { argv[5], "--leaf", "6", NULL };

		if (spawn(ex) < 0 || spawn(st) < 0)
			return 1;
	}
	while (wait(NULL) > 0)
		;
	return 3;
}
