// SPDX-License-Identifier: MIT
/*
 * A host that forks while traced (tests/e2e/test_fork_safety.py): every
 * child must live, whatever the tracer attached.
 *
 *   fork_storm [--children N] [--iters K] [--parent-units U] [--every-ms M]
 *              [--threads T] [--names] [--gate] [--prefork W]
 *
 * Runs every sp probe kind (a query with a cache hit, an incremental load
 * and a blocked interval nested in it, a mark, a typed allocation and its
 * free, a generic SP_PROBE, and with --names SP_THREAD_NAME; two marks) U times in the
 * parent, then makes N children in turn, by fork(), vfork()+exec, clone()
 * without CLONE_VM, posix_spawn() and a daemon's double fork (child i the
 * (i % 5)th way), running U units between two; each child runs K units and
 * exits 0. --every-ms sleeps between two children. --threads adds T-1
 * threads running units beside the main thread until the storm ends.
 * --gate waits for SP_ENABLED() first (a tracer attached with -p), then
 * prints "ready" and waits for a byte on stdin (the tracer said it traces). --prefork W: instead, W long-lived workers forked after
 * the gate each run K query pairs ("prefork_q"); the parent runs none.
 *
 * Every descendant writes one byte to a pipe when it has run its units;
 * the parent reads the pipe to its end (every descendant gone) and prints
 *   {"children": N, "alive": A, "died": D, "parent_units": P,
 *    "child_units": C, "threads": T}
 * where A counts the bytes (children that ran to the end, daemons'
 * grandchildren included) and D the direct children that did not exit 0.
 * Exit status 0 if every child lived, 1 if not, 2 on a usage error.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <sp_probe.h>

extern char **environ;

static int names;
static volatile int storm_over;
static long units_done[64];

/* One unit: every probe kind once. */
static void unit(long i)
{
	void *p = malloc(16);

	if (names)
		SP_THREAD_NAME("storm");
	SP_QUERY_BEGIN("storm_q");
	SP_CACHE_HIT("storm_dep");
	SP_INCR_LOAD_BEGIN("storm_q");
	SP_INCR_LOAD_END("storm_q");
	SP_BLOCKED_BEGIN("storm_dep");
	SP_BLOCKED_END("storm_dep");
	SP_QUERY_END("storm_q");
	SP_MARK("storm_mark", i);
	SP_MARK("storm_mark_end", i);
	SP_ALLOC("storm_obj", 16, p);
	SP_FREE("storm_obj", p);
	SP_PROBE(storm_generic, i, 16);
	free(p);
}

static void units(long n)
{
	long i;

	for (i = 0; i < n; i++)
		unit(i);
}

/* The end of a child: its byte, then exit 0. */
static void child_done(int fd)
{
	if (write(fd, "x", 1) != 1)
		_exit(3);
	_exit(0);
}

static void *worker(void *arg)
{
	long k = (long)arg;

	while (!__atomic_load_n(&storm_over, __ATOMIC_ACQUIRE)) {
		unit(units_done[k]);
		units_done[k]++;
	}
	return NULL;
}

/* A child that execs this program: --child K --fd FD [--names]. */
static void exec_argv(char **argv, char *self, char *kbuf, char *fdbuf)
{
	argv[0] = self;
	argv[1] = "--child";
	argv[2] = kbuf;
	argv[3] = "--fd";
	argv[4] = fdbuf;
	argv[5] = names ? "--names" : NULL;
	argv[6] = NULL;
}

static int make_child(int way, long k, int fd, char *self)
{
	char kbuf[32], fdbuf[32], *argv[7];
	pid_t pid, gc;

	snprintf(kbuf, sizeof(kbuf), "%ld", k);
	snprintf(fdbuf, sizeof(fdbuf), "%d", fd);
	exec_argv(argv, self, kbuf, fdbuf);
	switch (way) {
	case 0:	/* fork */
		pid = fork();
		if (!pid) {
			units(k);
			child_done(fd);
		}
		return pid;
	case 1:	/* vfork + exec */
		pid = vfork();
		if (!pid) {
			execv(self, argv);
			_exit(4);
		}
		return pid;
	case 2:	/* clone without CLONE_VM: a copy of the address space */
		pid = (pid_t)syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
		if (!pid) {
			units(k);
			child_done(fd);
		}
		return pid;
	case 3:	/* posix_spawn */
		return posix_spawn(&pid, self, NULL, NULL, argv, environ) ? -1 :
									    pid;
	default:	/* a daemon's double fork: the grandchild does the work */
		pid = fork();
		if (!pid) {
			if (setsid() < 0)
				_exit(5);
			gc = fork();
			if (gc < 0)
				_exit(6);
			if (gc) {
				units(1);	/* the intermediate runs them too */
				_exit(0);
			}
			units(k);
			child_done(fd);
		}
		return pid;
	}
}

int main(int argc, char **argv)
{
	long n = 100, k = 100, u = 10, every_ms = 0, threads = 1, prefork = 0;
	long parent_units = 0, child_units = 0, i, alive = 0, died = 0;
	int gate = 0, pfd[2], st, fd = -1;
	pthread_t tids[64];
	char c, self[4096];
	ssize_t len;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--names"))
			names = 1;
		else if (!strcmp(a, "--gate"))
			gate = 1;
		else if (v && !strcmp(a, "--child"))
			k = atol(argv[++i]), u = -1;
		else if (v && !strcmp(a, "--fd"))
			fd = atoi(argv[++i]);
		else if (v && !strcmp(a, "--children"))
			n = atol(argv[++i]);
		else if (v && !strcmp(a, "--iters"))
			k = atol(argv[++i]);
		else if (v && !strcmp(a, "--parent-units"))
			u = atol(argv[++i]);
		else if (v && !strcmp(a, "--every-ms"))
			every_ms = atol(argv[++i]);
		else if (v && !strcmp(a, "--threads"))
			threads = atol(argv[++i]);
		else if (v && !strcmp(a, "--prefork"))
			prefork = atol(argv[++i]);
		else {
			fprintf(stderr, "fork_storm: bad argument '%s'\n", a);
			return 2;
		}
	}
	if (u < 0) {	/* an exec'd child */
		units(k);
		child_done(fd);
	}
	if (threads < 1 || threads > 64 || n < 0 || k < 0 || u < 0)
		return 2;
	len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (len <= 0)
		return 2;
	self[len] = 0;
	if (pipe(pfd))
		return 2;
	if (gate) {
		while (!SP_ENABLED())
			usleep(1000);
		printf("ready\n");
		fflush(stdout);
		/* Attaching is not one step: the test says when sptrace
		 * said it traces every site. */
		if (read(STDIN_FILENO, &c, 1) != 1)
			return 2;
	}
	if (names)
		SP_THREAD_NAME("storm_main");
	for (i = 1; i < threads; i++)
		if (pthread_create(&tids[i], NULL, worker, (void *)i))
			return 2;
	if (prefork) {
		for (i = 0; i < prefork; i++)
			if (!fork()) {
				for (long j = 0; j < k; j++) {
					SP_QUERY_BEGIN("prefork_q");
					SP_QUERY_END("prefork_q");
				}
				child_done(pfd[1]);
			}
		n = prefork;
		child_units = prefork * k;
	} else {
		units(u);
		parent_units += u;
		for (i = 0; i < n; i++) {
			if (make_child((int)(i % 5), k, pfd[1], self) < 0) {
				perror("fork_storm: child");
				return 2;
			}
			child_units += k + (i % 5 == 4);
			units(u);
			parent_units += u;
			if (every_ms)
				usleep((useconds_t)every_ms * 1000);
		}
	}
	__atomic_store_n(&storm_over, 1, __ATOMIC_RELEASE);
	for (i = 1; i < threads; i++) {
		pthread_join(tids[i], NULL);
		parent_units += units_done[i];
	}
	for (;;) {
		if (wait(&st) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (!WIFEXITED(st) || WEXITSTATUS(st))
			died++;
	}
	close(pfd[1]);
	while (read(pfd[0], &c, 1) == 1)
		alive++;
	printf("{\"children\": %ld, \"alive\": %ld, \"died\": %ld, "
	       "\"parent_units\": %ld, \"child_units\": %ld, \"threads\": %ld}\n",
	       n, alive, died, parent_units, child_units, threads);
	return alive == n && !died ? 0 : 1;
}
