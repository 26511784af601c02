// SPDX-License-Identifier: MIT
/*
 * Batched-events host: the cases a per-thread ring in the host's memory
 * must get right. Each prints what it did, timed by its own clock.
 *
 *   batch_host first        "session" around 5 runs of a 2 ms "rare" query,
 *                           each timed around the probes: prints
 *                           {"rare": [ns x5], "session": ns}
 *   batch_host cross N      N "span" queries that begin in the library and
 *                           end in the executable (and N "back" the other
 *                           way round), each around a 100 us "step" query:
 *                           prints {"span_ns": total, "back_ns": total, ...}
 *   batch_host signal N     N "work" pairs while a 50 kHz timer signal's
 *                           handler runs "sig" pairs (so some land inside
 *                           appends): prints {"work": N, "sig": handled}
 *   batch_host fork N       N "parent" pairs, fork with records still in the
 *                           ring, the child runs N "child" pairs; then the
 *                           parent N more: prints {"parent": 2N, "child": N}
 *   batch_host block MS     one "early" pair, then sleeps MS ms (a thread
 *                           that blocks with a partial ring)
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <sp_probe.h>
#include "gt_spin.h"

void bl_begin(const char *q);
void bl_end(const char *q);

static int first(void)
{
	uint64_t t0, t1, s0, s1, rare[5];
	int i;

	SP_QUERY_BEGIN("session");
	s0 = gt_now();
	for (i = 0; i < 5; i++) {
		gt_spin(1000000);	/* apart: each run in a batch of its own */
		SP_QUERY_BEGIN("rare");
		t0 = gt_now();
		gt_spin(2000000);
		t1 = gt_now();
		SP_QUERY_END("rare");
		rare[i] = t1 - t0;
	}
	s1 = gt_now();
	SP_QUERY_END("session");
	printf("{\"rare\": [%llu, %llu, %llu, %llu, %llu], \"session\": %llu}\n",
	       (unsigned long long)rare[0], (unsigned long long)rare[1],
	       (unsigned long long)rare[2], (unsigned long long)rare[3],
	       (unsigned long long)rare[4], (unsigned long long)(s1 - s0));
	return 0;
}

static uint64_t step(void)
{
	uint64_t t0, t1;

	SP_QUERY_BEGIN("step");
	t0 = gt_now();
	gt_spin(100000);
	t1 = gt_now();
	SP_QUERY_END("step");
	return t1 - t0;
}

static int cross(int n)
{
	uint64_t t0, t1, span = 0, back = 0, span_self = 0, back_self = 0, c;
	int i;

	for (i = 0; i < n; i++) {
		bl_begin("span");
		t0 = gt_now();
		c = step();
		t1 = gt_now();
		SP_QUERY_END("span");
		span += t1 - t0;
		span_self += t1 - t0 - c;

		SP_QUERY_BEGIN("back");
		t0 = gt_now();
		c = step();
		t1 = gt_now();
		bl_end("back");
		back += t1 - t0;
		back_self += t1 - t0 - c;
	}
	printf("{\"span_ns\": %llu, \"span_self_ns\": %llu, \"back_ns\": %llu, \"back_self_ns\": %llu}\n",
	       (unsigned long long)span, (unsigned long long)span_self,
	       (unsigned long long)back, (unsigned long long)back_self);
	return 0;
}

static volatile sig_atomic_t handled;

static void on_prof(int sig)
{
	(void)sig;
	SP_QUERY_BEGIN("sig");
	SP_QUERY_END("sig");
	handled++;
}

static int signals(int n)
{
	struct itimerspec it = { { 0, 20000 }, { 0, 20000 } };
	struct sigevent ev;
	struct sigaction sa;
	timer_t t;
	int i;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_prof;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGPROF, &sa, NULL);
	memset(&ev, 0, sizeof(ev));
	ev.sigev_notify = SIGEV_SIGNAL;
	ev.sigev_signo = SIGPROF;
	if (timer_create(CLOCK_MONOTONIC, &ev, &t) || timer_settime(t, 0, &it, NULL))
		return 1;
	for (i = 0; i < n; i++) {
		SP_QUERY_BEGIN("work");
		SP_QUERY_END("work");
	}
	timer_delete(t);
	printf("{\"work\": %d, \"sig\": %d}\n", n, (int)handled);
	return 0;
}

static void pairs(const char *q, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		SP_QUERY_BEGIN(q);
		SP_QUERY_END(q);
	}
}

static int forks(int n)
{
	int status;
	pid_t pid;

	pairs("parent", n);	/* n < ring size: records still in the ring */
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		pairs("child", n);
		_exit(0);
	}
	waitpid(pid, &status, 0);
	pairs("parent", n);
	printf("{\"parent\": %d, \"child\": %d}\n", 2 * n, n);
	return !WIFEXITED(status) || WEXITSTATUS(status);
}

static int block(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	SP_QUERY_BEGIN("early");
	SP_QUERY_END("early");
	printf("early\n");
	fflush(stdout);
	nanosleep(&ts, NULL);
	return 0;
}

int main(int argc, char **argv)
{
	int n = argc > 2 ? atoi(argv[2]) : 0;

	if (argc >= 2 && !strcmp(argv[1], "first"))
		return first();
	if (argc == 3 && n > 0 && !strcmp(argv[1], "cross"))
		return cross(n);
	if (argc == 3 && n > 0 && !strcmp(argv[1], "signal"))
		return signals(n);
	if (argc == 3 && n > 0 && !strcmp(argv[1], "fork"))
		return forks(n);
	if (argc == 3 && n > 0 && !strcmp(argv[1], "block"))
		return block(n);
	fprintf(stderr, "usage: batch_host first | cross N | signal N | fork N | block MS\n");
	return 2;
}
