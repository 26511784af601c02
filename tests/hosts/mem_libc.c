// SPDX-License-Identifier: MIT
/*
 * libc-allocator host: no sp probes at all; `sptrace mem` must find every
 * figure through malloc & co. Built with frame pointers and without
 * sanitizers (they replace malloc). Ground truth: the calls below, and
 * nothing from libc before main, which the host checks itself: it writes
 * "premain_heap_bytes=N" (mallinfo2() at the top of main, 0 when libc has
 * allocated nothing) to stderr without allocating.
 *
 *   basic   leak_site():        10 x malloc(100), never freed
 *           temp_site():        20 x malloc(64), all live at once, freed
 *           calloc_site():      5 x calloc(10, 30), freed; 3 overflowing
 *                               calloc()s that return NULL
 *           realloc_chain():    realloc(NULL, 50), grown to 5000, shrunk
 *                               to 10, realloc(p, 0): 3 allocations (5060
 *                               B), 3 frees; the 5000 B block is the peak
 *           memalign_site():    4 x posix_memalign(64, 256), 2 freed
 *           aligned_site():     3 x aligned_alloc(64, 128) and
 *                               2 x memalign(32, 96), freed
 *           realloc_fail():     malloc(40), a realloc that fails, free
 *           5 x free(NULL)
 *   none    nothing
 *   threads N   N threads one after another, each thread_alloc():
 *               malloc(32) + free
 *   loop N      N x (malloc(64) + free); prints ns_per_iter=X
 *   wait MODE   reads a line from stdin first
 */
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

/* Stores keep the compiler from pairing and removing malloc and free. */
static void *volatile sink[64];
static volatile size_t huge = SIZE_MAX / 2 + 1;

static NOINLINE void leak_site(void)
{
	sink[0] = malloc(100);
}

static NOINLINE void *temp_site(void)
{
	return malloc(64);
}

static NOINLINE void *calloc_site(size_t n, size_t size)
{
	return calloc(n, size);
}

static NOINLINE void realloc_chain(void)
{
	void *p = realloc(NULL, 50);

	p = realloc(p, 5000);
	sink[1] = p;
	p = realloc(p, 10);
	sink[1] = p;
	sink[1] = realloc(p, 0);
}

static NOINLINE void *memalign_site(void)
{
	void *p = NULL;

	return posix_memalign(&p, 64, 256) ? NULL : p;
}

static NOINLINE void aligned_site(void)
{
	void *a[5];
	int i;

	for (i = 0; i < 3; i++)
		a[i] = aligned_alloc(64, 128);
	a[3] = memalign(32, 96);
	a[4] = memalign(32, 96);
	for (i = 0; i < 5; i++) {
		sink[2] = a[i];
		free(a[i]);
	}
}

static NOINLINE void realloc_fail(void)
{
	void *p = malloc(40), *q;

	sink[3] = p;
	q = realloc(p, huge);
	sink[4] = q;
	free(q ? q : p);
}

static void basic(void)
{
	void *v[20];
	int i;

	for (i = 0; i < 10; i++)
		leak_site();
	for (i = 0; i < 20; i++)
		v[i] = temp_site();
	for (i = 0; i < 20; i++) {
		sink[5] = v[i];
		free(v[i]);
	}
	for (i = 0; i < 5; i++)
		v[i] = calloc_site(10, 30);
	for (i = 0; i < 5; i++)
		free(v[i]);
	for (i = 0; i < 3; i++)
		sink[6] = calloc_site(huge, 4);
	realloc_chain();
	for (i = 0; i < 4; i++)
		v[i] = memalign_site();
	free(v[0]);
	free(v[1]);
	sink[7] = v[2];
	sink[8] = v[3];
	aligned_site();
	realloc_fail();
	for (i = 0; i < 5; i++)
		free(sink[63]);	/* NULL */
}

static NOINLINE void *thread_alloc(void *arg)
{
	void *p = malloc(32);

	(void)arg;
	sink[9] = p;
	free(p);
	return NULL;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static NOINLINE void loop(long n)
{
	uint64_t t0 = now_ns();
	long i;

	for (i = 0; i < n; i++) {
		void *p = malloc(64);

		sink[10] = p;
		free(p);
	}
	printf("ns_per_iter=%.2f\n", (double)(now_ns() - t0) / (double)n);
}

int main(int argc, char **argv)
{
	struct mallinfo2 mi = mallinfo2();
	char line[64];
	int a = 1, len;

	len = snprintf(line, sizeof(line), "premain_heap_bytes=%zu\n",
		       mi.uordblks + mi.hblkhd);
	if (write(2, line, (size_t)len) != len)
		return 2;

	if (argc > a && !strcmp(argv[a], "wait")) {
		if (!fgets(line, sizeof(line), stdin))
			return 2;
		a++;
	}
	if (argc <= a)
		return 2;
	if (!strcmp(argv[a], "basic")) {
		basic();
	} else if (!strcmp(argv[a], "none")) {
		return 0;
	} else if (!strcmp(argv[a], "threads") && argc > a + 1) {
		long n = atol(argv[a + 1]), i;

		for (i = 0; i < n; i++) {
			pthread_t t;

			if (pthread_create(&t, NULL, thread_alloc, NULL))
				return 1;
			pthread_join(t, NULL);
		}
	} else if (!strcmp(argv[a], "loop") && argc > a + 1) {
		loop(atol(argv[a + 1]));
	} else {
		return 2;
	}
	return 0;
}
