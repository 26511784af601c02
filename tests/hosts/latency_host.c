// SPDX-License-Identifier: MIT
/*
 * Latency host: start/end events with known keys, delays and mistakes, for
 * `sptrace latency`. Built twice: as the executable, and with
 * LATENCY_HOST_LIB as liblathost.so, whose own copies of the same events
 * (own string literals, own USDT sites) the executable calls for some
 * pairs, so pairs cross binaries as well as threads.
 *
 *   latency_host [--wait] marks|usdt
 *   latency_host flood N
 *
 * marks: SP_MARK("lat_enqueue", key) on the main thread, SP_MARK("lat_dequeue",
 *        key) on a consumer thread once the pair's delay has passed.
 * usdt:  the same pairs through <sys/sdt.h> probes lathost:enqueue(key, x)
 *        and lathost:dequeue(x, key); x is a decoy, never a key.
 *
 * First 3 starts never ended, one key started 3 times and never ended (2
 * overwritten + 1 left) and 4 ends never started; then PAIRS pairs, FAST of
 * them FAST_NS apart, the rest SLOW_NS (busy-wait from the instant after the
 * start event); then a second end of an ended key: 6 unmatched starts, 5
 * unmatched ends. In marks mode, marks of other names (some a prefix or suffix of the
 * real names) on keys that would change those counts if they were taken
 * for the real ones. GNU ld merges string tails, so "lat_enqueue" may well
 * point into "xlat_enqueue": the decoys test that too. Prints the truth as one JSON line, with the bounds
 * [lo_ns, hi_ns] the host measured around each pair's two events.
 *
 * flood: N starts (SP_MARK "lat_enqueue", keys 1..N), never ended.
 *
 * --wait: print "ready <pid>" and wait for SIGUSR1 before working (for -p).
 */
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sdt.h>
#include <unistd.h>
#include <sp_probe.h>
#include "gt_spin.h"

void lat_lib_enqueue(uint64_t key, int usdt);
void lat_lib_dequeue(uint64_t key, int usdt);

#ifdef LATENCY_HOST_LIB

void lat_lib_enqueue(uint64_t key, int usdt)
{
	uint64_t x = key * 7 + 3;

	if (usdt)
		DTRACE_PROBE2(lathost, enqueue, key, x);
	else
		SP_MARK("lat_enqueue", key);
}

void lat_lib_dequeue(uint64_t key, int usdt)
{
	uint64_t x = key * 7 + 3;

	if (usdt)
		DTRACE_PROBE2(lathost, dequeue, x, key);
	else
		SP_MARK("lat_dequeue", key);
}

#else /* the executable */

#define PAIRS 100
#define FAST 70
#define FAST_NS 1000000ull
#define SLOW_NS 4000000ull
#define KEY0 1000u

static int usdt;

/* Noinline: each is one site, hit by every pair that goes through it. */
static __attribute__((noinline)) void enqueue(uint64_t key, int via_lib)
{
	uint64_t x = key * 7 + 3;

	if (via_lib)
		lat_lib_enqueue(key, usdt);
	else if (usdt)
		DTRACE_PROBE2(lathost, enqueue, key, x);
	else
		SP_MARK("lat_enqueue", key);
}

static __attribute__((noinline)) void dequeue(uint64_t key, int via_lib)
{
	uint64_t x = key * 7 + 3;

	if (via_lib)
		lat_lib_dequeue(key, usdt);
	else if (usdt)
		DTRACE_PROBE2(lathost, dequeue, x, key);
	else
		SP_MARK("lat_dequeue", key);
}

/*
 * One item in flight from the producer (main) to the consumer, which polls
 * for it instead of sleeping: a wakeup can take longer than a pair's delay
 * on a busy machine. The producer sleeps until the item is done.
 */
enum { EMPTY, FULL, DONE, QUIT };
static _Atomic int state = EMPTY;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static uint64_t item_key, item_t0, item_delay;
static int item_lib;
/* What the host measured around each pair: the time between its two
 * events lies in [lo, hi]. */
static uint64_t lo_ns[PAIRS], hi_ns[PAIRS], item_t_before;
static int item_index;

static void *consumer(void *arg)
{
	uint64_t t_before_end, t_after_end;
	int st;

	(void)arg;
	for (;;) {
		while ((st = atomic_load_explicit(&state, memory_order_acquire)) !=
			       FULL && st != QUIT)
			;
		if (st == QUIT)
			return NULL;
		while (gt_now() - item_t0 < item_delay)
			;
		t_before_end = gt_now();
		dequeue(item_key, item_lib);
		t_after_end = gt_now();
		lo_ns[item_index] = t_before_end - item_t0;
		hi_ns[item_index] = t_after_end - item_t_before;

		pthread_mutex_lock(&mu);
		atomic_store_explicit(&state, DONE, memory_order_release);
		pthread_cond_broadcast(&cv);
		pthread_mutex_unlock(&mu);
	}
}

static void pair(int i, uint64_t key, uint64_t delay, int lib_start,
		 int lib_end)
{
	item_t_before = gt_now();
	enqueue(key, lib_start);
	item_t0 = gt_now();
	item_index = i;
	item_key = key;
	item_delay = delay;
	item_lib = lib_end;
	atomic_store_explicit(&state, FULL, memory_order_release);
	pthread_mutex_lock(&mu);
	while (atomic_load_explicit(&state, memory_order_acquire) != DONE)
		pthread_cond_wait(&cv, &mu);
	atomic_store_explicit(&state, EMPTY, memory_order_relaxed);
	pthread_mutex_unlock(&mu);
}

/* Marks that must not count: other names, on keys where a wrong match
 * would change the counts (900001 is pending, 800001 never started). */
static void decoys(void)
{
	int i;

	for (i = 0; i < 5; i++)
		SP_MARK("lat_other", KEY0 + i);
	SP_MARK("xlat_enqueue", 900001);	/* would overwrite a start */
	SP_MARK("lat_enqueue_", 900002);
	SP_MARK("lat_dequeue2", 900001);	/* would end a start */
	SP_MARK("_lat_dequeue", 900003);
}

int main(int argc, char **argv)
{
	int wait_sig = 0, i, fast = 0;
	pthread_t t;

	if (argc > 1 && !strcmp(argv[1], "--wait")) {
		wait_sig = 1;
		argv++;
		argc--;
	}
	if (argc == 3 && !strcmp(argv[1], "flood")) {
		int n = atoi(argv[2]);

		for (i = 1; i <= n; i++)
			enqueue((uint64_t)i, 0);
		return 0;
	}
	if (argc != 2 || (strcmp(argv[1], "marks") && strcmp(argv[1], "usdt"))) {
		fprintf(stderr, "usage: latency_host [--wait] marks|usdt | flood N\n");
		return 2;
	}
	usdt = !strcmp(argv[1], "usdt");
	if (wait_sig) {
		sigset_t set;
		int sig;

		sigemptyset(&set);
		sigaddset(&set, SIGUSR1);
		sigprocmask(SIG_BLOCK, &set, NULL);
		printf("ready %d\n", (int)getpid());
		fflush(stdout);
		sigwait(&set, &sig);
	}
	/* The unmatched events first: they also take every site's first hit,
	 * which costs the kernel more (it rewrites the probe's nop), out of
	 * the timed pairs. */
	for (i = 1; i <= 3; i++)		/* never ended */
		enqueue(900000 + (uint64_t)i, 0);
	for (i = 0; i < 3; i++)			/* 2 overwritten, 1 left */
		enqueue(900010, i == 1);
	for (i = 1; i <= 4; i++)		/* never started */
		dequeue(800000 + (uint64_t)i, i == 2);

	if (pthread_create(&t, NULL, consumer, NULL))
		return 1;
	for (i = 0; i < PAIRS; i++) {
		int is_fast = i % 10 < 7;

		fast += is_fast;
		pair(i, KEY0 + (uint64_t)i, is_fast ? FAST_NS : SLOW_NS,
		     i % 5 == 1, i % 3 == 2);
	}
	atomic_store_explicit(&state, QUIT, memory_order_release);
	pthread_join(t, NULL);

	dequeue(KEY0, 0);			/* ended already */
	if (!usdt)
		decoys();

	printf("{\"pairs\":%d,\"fast\":%d,\"slow\":%d,\"fast_ns\":%llu,"
	       "\"slow_ns\":%llu,\"unmatched_from\":6,\"unmatched_to\":5,"
	       "\"starts\":%d,\"ends\":%d",
	       PAIRS, fast, PAIRS - fast, FAST_NS, SLOW_NS,
	       PAIRS + 3 + 3, PAIRS + 4 + 1);
	for (i = 0; i < 2 * PAIRS; i++)
		printf("%s%" PRIu64, i == 0 ? ",\"lo_ns\":[" :
				     i == PAIRS ? "],\"hi_ns\":[" : ",",
		       i < PAIRS ? lo_ns[i] : hi_ns[i - PAIRS]);
	printf("]}\n");
	return 0;
}

#endif /* LATENCY_HOST_LIB */
