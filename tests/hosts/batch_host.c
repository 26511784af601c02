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
 *                           prints per query its time inside and around
 *                           its probes, its steps' inside theirs, and their
 *                           BEGINs' and ENDs' (tests/e2e/sptest.py,
 *                           cross_bounds): {"span_ns", "span_outer_ns",
 *                           "span_step_ns", "span_step_begin_ns",
 *                           "span_step_end_ns", the same for "back"}
 *   batch_host signal N     N "work" pairs (more until the handler ran
 *                           2,000 times) while a 10 kHz timer signal's
 *                           handler runs "sig" pairs (so some land inside
 *                           appends): prints {"work": pairs, "sig": handled}
 *   batch_host fork N       N "parent" pairs, fork with records still in the
 *                           ring, the child runs N "child" pairs; then the
 *                           parent N more: prints {"parent": 2N, "child": N}
 *   batch_host block MS     one "early" pair, then sleeps MS ms (a thread
 *                           that blocks with a partial ring)
 *   batch_host spin MS      "spin" pairs in a tight loop for MS ms (a host
 *                           that keeps flushing while -d stops sptrace):
 *                           prints {"spin": pairs}
 *   batch_host threads N [MS]
 *                           N short-lived threads, 16 at a time (MS ms apart:
 *                           a churn that spans --interval ticks), each 5 "t"
 *                           pairs and a "plain" pair of batch_plain.c
 *                           (per-event sites, not fallbacks); a pthread key
 *                           of the host's, created after the probes' own,
 *                           whose destructor runs a "late" pair once the
 *                           thread's ring is gone (fallbacks);
 *                           prints {"t": 5N, "late": N, "plain": N} and the
 *                           process's
 *                           VmSize and /proc/self/maps line count, before
 *                           (after a first wave) and after
 *   batch_host libs N LIB.. dlopens every LIB (batch_many.c) and runs N
 *                           rounds: an "outer" query that begins in the
 *                           first and ends in the last, around a "lib" pair
 *                           in each; on the main thread and 2 more.
 *                           Prints {"outer": .., "lib": ..}
 *   batch_host func N       N rounds of a "pre" pair, then an "around" query
 *                           around a call of the plain function bh_fn_in
 *                           (300 us), then a call of bh_fn_out, a plain
 *                           function around an "inside" query (200 us):
 *                           --func 'bh_fn_*' frames inside batched queries
 *                           and the reverse. Prints the host's clock sums:
 *                           around_ns (between its probes),
 *                           around_outer_ns (around them), in_call_ns
 *                           (around the call), in_body_ns (the body's first
 *                           and last line), out_call_ns, out_body_ns,
 *                           inside_ns and inside_outer_ns
 *   batch_host marks N      on the main thread and one more, N rounds of an
 *                           "rq" query around a <sys/sdt.h> bh:sdt__start /
 *                           bh:sdt__done pair (for a --query line), then
 *                           SP_MARK("m", round), SP_ALLOC("obj", 64, p) and
 *                           SP_FREE("obj", p), each after an
 *                           SP_CACHE_HIT("rq"), 2 us apart: per-event events
 *                           right after batched ones.
 *                           Prints {"rounds": N, "threads": 2}
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <sys/sdt.h>
#include <sp_probe.h>
#include "gt_spin.h"

void bl_begin(const char *q);
void bl_end(const char *q);
void bp_pair(const char *q);

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

/* A 100 us "step": returns the host's time inside its probes, and adds
 * the time from before its BEGIN to the reading after it to *begin, and
 * from the reading before its END to after it to *end. */
static uint64_t step(uint64_t *begin, uint64_t *end)
{
	uint64_t o0, t0, t1;

	o0 = gt_now();
	SP_QUERY_BEGIN("step");
	t0 = gt_now();
	gt_spin(100000);
	t1 = gt_now();
	SP_QUERY_END("step");
	*begin += t0 - o0;
	*end += gt_now() - t1;
	return t1 - t0;
}

/* Sums for one of cross's queries: its time inside and around its probes,
 * and its step's time inside its probes and in its BEGIN and END. */
struct cross_sum {
	uint64_t ns, outer_ns, step_ns, step_begin_ns, step_end_ns;
};

static void cross_print(const char *name, const struct cross_sum *q, const char *sep)
{
	printf("\"%s_ns\": %llu, \"%s_outer_ns\": %llu, \"%s_step_ns\": %llu, "
	       "\"%s_step_begin_ns\": %llu, \"%s_step_end_ns\": %llu%s",
	       name, (unsigned long long)q->ns, name,
	       (unsigned long long)q->outer_ns, name,
	       (unsigned long long)q->step_ns, name,
	       (unsigned long long)q->step_begin_ns, name,
	       (unsigned long long)q->step_end_ns, sep);
}

static int cross(int n)
{
	struct cross_sum span = { 0 }, back = { 0 };
	uint64_t o0, t0, t1;
	int i;

	for (i = 0; i < n; i++) {
		o0 = gt_now();
		bl_begin("span");
		t0 = gt_now();
		span.step_ns += step(&span.step_begin_ns, &span.step_end_ns);
		t1 = gt_now();
		SP_QUERY_END("span");
		span.outer_ns += gt_now() - o0;
		span.ns += t1 - t0;

		o0 = gt_now();
		SP_QUERY_BEGIN("back");
		t0 = gt_now();
		back.step_ns += step(&back.step_begin_ns, &back.step_end_ns);
		t1 = gt_now();
		bl_end("back");
		back.outer_ns += gt_now() - o0;
		back.ns += t1 - t0;
	}
	printf("{");
	cross_print("span", &span, ", ");
	cross_print("back", &back, "}\n");
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

/*
 * 10 kHz, not faster: where a trap costs ~5 us (a VM whose guest kernel
 * entries cost ~1 us each), a per-event handler pair under ASan outlasted
 * the 20 us period of a 50 kHz timer, and the next signal was pending at
 * every sigreturn: the loop never ran again (e2e_record_per_event timed
 * out), and in batched mode the thread stayed inside one append while the
 * handler's records wrapped its ring onto the uncommitted record
 * (docs/numbers.md, "Signal storms").
 */
static int signals(int n)
{
	struct itimerspec it = { { 0, 100000 }, { 0, 100000 } };
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
	/* At least 2,000 handler runs, however fast the machine runs pairs */
	for (i = 0; i < n || (handled < 2000 && i < 100000000); i++) {
		SP_QUERY_BEGIN("work");
		SP_QUERY_END("work");
	}
	timer_delete(t);
	printf("{\"work\": %d, \"sig\": %d}\n", i, (int)handled);
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

/* ---- spin MS: a host still flushing while sptrace stops ---- */
static int spin(int ms)
{
	struct timespec t0, t;
	long long n = 0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		for (int i = 0; i < 1024; i++, n++) {
			SP_QUERY_BEGIN("spin");
			SP_QUERY_END("spin");
		}
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) * 1000 +
			 (t.tv_nsec - t0.tv_nsec) / 1000000 < ms);
	printf("{\"spin\": %lld}\n", n);
	return 0;
}

/* ---- threads N: rings unmapped at thread exit ---- */
static pthread_key_t late_key;

static void late_exit(void *p)
{
	(void)p;
	/* Runs after the probes' own key destructor (keys in creation
	 * order): the thread's ring is unmapped by now. */
	SP_QUERY_BEGIN("late");
	SP_QUERY_END("late");
}

static void *churn(void *arg)
{
	(void)arg;
	pthread_setspecific(late_key, (void *)1);
	pairs("t", 5);
	bp_pair("plain");
	return NULL;
}

/* VmSize (kB) and the number of mappings, as the process sees them. */
static void footprint(long *vm_kb, long *maps)
{
	char line[512];
	FILE *f;

	*vm_kb = *maps = -1;
	f = fopen("/proc/self/status", "r");
	if (f) {
		while (fgets(line, sizeof(line), f))
			if (!strncmp(line, "VmSize:", 7))
				*vm_kb = atol(line + 7);
		fclose(f);
	}
	f = fopen("/proc/self/maps", "r");
	if (f) {
		*maps = 0;
		while (fgets(line, sizeof(line), f))
			++*maps;
		fclose(f);
	}
}

static int wave(int n)
{
	pthread_t t[16];
	int i;

	for (i = 0; i < n; i++)
		if (pthread_create(&t[i], NULL, churn, NULL))
			return -1;
	for (i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	return 0;
}

static int threads(int n, int pause_ms)
{
	struct timespec pause = { pause_ms / 1000, (pause_ms % 1000) * 1000000L };
	long vm0, maps0, vm1, maps1;
	int done = 0, w;

	SP_QUERY_BEGIN("main");	/* the probes' key first, then the host's */
	SP_QUERY_END("main");
	if (pthread_key_create(&late_key, late_exit))
		return 1;
	w = n < 16 ? n : 16;
	if (wave(w))
		return 1;
	done += w;
	footprint(&vm0, &maps0);
	while (done < n) {
		if (pause_ms)
			nanosleep(&pause, NULL);
		w = n - done < 16 ? n - done : 16;
		if (wave(w))
			return 1;
		done += w;
	}
	footprint(&vm1, &maps1);
	printf("{\"t\": %d, \"late\": %d, \"plain\": %d, \"vm_kb_before\": %ld, "
	       "\"vm_kb_after\": %ld, \"maps_before\": %ld, \"maps_after\": %ld}\n",
	       5 * n, n, n, vm0, vm1, maps0, maps1);
	return 0;
}

/* ---- libs N LIB...: more instrumented objects than rings once kept ---- */
struct many {
	void (*pair[64])(void);
	void (*begin)(const char *);
	void (*end)(const char *);
	int nlibs, rounds;
};

static void *many_run(void *arg)
{
	struct many *m = arg;
	int r, k;

	for (r = 0; r < m->rounds; r++) {
		m->begin("outer");
		for (k = 0; k < m->nlibs; k++)
			m->pair[k]();
		m->end("outer");
	}
	return NULL;
}

static int libs(int n, int nlibs, char **paths)
{
	struct many m = { .nlibs = nlibs, .rounds = n };
	void *h, *first = NULL, *last = NULL;
	pthread_t t[2];
	int k;

	if (nlibs > 64)
		return 2;
	for (k = 0; k < nlibs; k++) {
		h = dlopen(paths[k], RTLD_NOW | RTLD_LOCAL);
		if (!h) {
			fprintf(stderr, "%s\n", dlerror());
			return 1;
		}
		*(void **)&m.pair[k] = dlsym(h, "bm_pair");
		if (!m.pair[k])
			return 1;
		if (!first)
			first = h;
		last = h;
	}
	*(void **)&m.begin = dlsym(first, "bm_begin");
	*(void **)&m.end = dlsym(last, "bm_end");
	if (!m.begin || !m.end)
		return 1;
	for (k = 0; k < 2; k++)
		if (pthread_create(&t[k], NULL, many_run, &m))
			return 1;
	many_run(&m);
	for (k = 0; k < 2; k++)
		pthread_join(t[k], NULL);
	printf("{\"outer\": %d, \"lib\": %d}\n", 3 * n, 3 * n * nlibs);
	return 0;
}

/* ---- func N: --func frames and batched queries, nested both ways ---- */
static uint64_t in_body, out_body, inside, inside_outer;

__attribute__((noinline)) void bh_fn_in(void)
{
	uint64_t t0 = gt_now();

	gt_spin(300000);
	in_body += gt_now() - t0;
}

__attribute__((noinline)) void bh_fn_out(void)
{
	uint64_t t0 = gt_now(), oa, a, b, ob;

	gt_spin(50000);
	oa = gt_now();
	SP_QUERY_BEGIN("inside");
	a = gt_now();
	gt_spin(200000);
	b = gt_now();
	SP_QUERY_END("inside");
	ob = gt_now();
	inside += b - a;
	inside_outer += ob - oa;
	gt_spin(50000);
	out_body += gt_now() - t0;
}

static int funcs(int n)
{
	uint64_t around = 0, around_outer = 0, in_call = 0, out_call = 0;
	uint64_t o0, o1, t0, t1, c0, c1;
	int i;

	for (i = 0; i < n; i++) {
		/* Records before "around" in the batch: its BEGIN is never
		 * the first record of one, which flushes at once. */
		SP_QUERY_BEGIN("pre");
		SP_QUERY_END("pre");
		o0 = gt_now();
		SP_QUERY_BEGIN("around");
		t0 = gt_now();
		gt_spin(50000);
		c0 = gt_now();
		bh_fn_in();
		c1 = gt_now();
		gt_spin(50000);
		t1 = gt_now();
		SP_QUERY_END("around");
		o1 = gt_now();
		around += t1 - t0;
		around_outer += o1 - o0;
		in_call += c1 - c0;
		c0 = gt_now();
		bh_fn_out();
		c1 = gt_now();
		out_call += c1 - c0;
	}
	printf("{\"around_ns\": %llu, \"around_outer_ns\": %llu, "
	       "\"in_call_ns\": %llu, \"in_body_ns\": %llu, "
	       "\"out_call_ns\": %llu, \"out_body_ns\": %llu, \"inside_ns\": %llu, "
	       "\"inside_outer_ns\": %llu}\n",
	       (unsigned long long)around, (unsigned long long)around_outer,
	       (unsigned long long)in_call, (unsigned long long)in_body,
	       (unsigned long long)out_call, (unsigned long long)out_body,
	       (unsigned long long)inside, (unsigned long long)inside_outer);
	return 0;
}

/* ---- marks N: per-event events inside batched queries ---- */
static void *mark_rounds(void *arg)
{
	int n = *(int *)arg, i;
	char obj[64];

	for (i = 0; i < n; i++) {
		/* Each per-event probe right after a batched one. */
		SP_QUERY_BEGIN("rq");
		gt_spin(2000);
		DTRACE_PROBE1(bh, sdt__start, i);
		gt_spin(2000);
		DTRACE_PROBE1(bh, sdt__done, i);
		gt_spin(2000);
		SP_CACHE_HIT("rq");
		gt_spin(2000);
		SP_MARK("m", i);
		gt_spin(2000);
		SP_CACHE_HIT("rq");
		gt_spin(2000);
		SP_ALLOC("obj", sizeof(obj), obj);
		gt_spin(2000);
		SP_CACHE_HIT("rq");
		gt_spin(2000);
		SP_FREE("obj", obj);
		gt_spin(2000);
		SP_QUERY_END("rq");
		gt_spin(2000);
	}
	return NULL;
}

static int marks(int n)
{
	pthread_t t;

	SP_THREAD_NAME("marks-main");
	if (pthread_create(&t, NULL, mark_rounds, &n))
		return 1;
	mark_rounds(&n);
	pthread_join(t, NULL);
	printf("{\"rounds\": %d, \"threads\": 2}\n", n);
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
	if (argc == 3 && n > 0 && !strcmp(argv[1], "spin"))
		return spin(n);
	if ((argc == 3 || argc == 4) && n > 0 && !strcmp(argv[1], "threads"))
		return threads(n, argc == 4 ? atoi(argv[3]) : 0);
	if (argc >= 4 && n > 0 && !strcmp(argv[1], "libs"))
		return libs(n, argc - 3, argv + 3);
	if (argc == 3 && n > 0 && !strcmp(argv[1], "func"))
		return funcs(n);
	if (argc == 3 && n > 0 && !strcmp(argv[1], "marks"))
		return marks(n);
	fprintf(stderr, "usage: batch_host first | cross N | signal N | fork N | block MS | spin MS | threads N [MS] | libs N LIB... | func N | marks N\n");
	return 2;
}
