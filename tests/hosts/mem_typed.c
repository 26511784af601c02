// SPDX-License-Identifier: MIT
/*
 * Typed-allocation host: SP_ALLOC / SP_FREE with known types, counts,
 * sizes, frees and leaks on two threads, from noinline functions whose
 * names the allocation sites must show (tests/e2e/test_mem.py has the
 * ground truth, repeated here):
 *
 *   main thread ("main"):  Widget  48 B: 60 from widget_temp() all freed,
 *                          40 from widget_leak() never freed (all 100 live
 *                          at once: peak 4800 B, live 1920 B at the end);
 *                          Buffer: 100, 200, ..., 1000 B from buffer_grow()
 *                          all live, then all freed (peak 5500 B), then
 *                          2 x 700 B from buffer_leak() (live 1400 B);
 *                          3 SP_FREE of pointers never allocated.
 *   thread "gadget-maker": Gadget 200 B: 50 from gadget_make(), 20 freed
 *                          (peak 10000 B, live 6000 B).
 *
 *   mem_typed [wait]       with "wait", blocks until a line on stdin first
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sp_probe.h>

#define NOINLINE __attribute__((noinline))

static void *widgets[100], *buffers[10], *gadgets[50];
/* Distinct side effects keep identical-code folding from merging the
 * allocating functions (each site must name its own). */
static volatile int made[5];

static NOINLINE void *widget_temp(void)
{
	void *p = malloc(48);

	SP_ALLOC("Widget", 48, p);
	made[0]++;
	__asm__ volatile("" ::: "memory");
	return p;
}

static NOINLINE void *widget_leak(void)
{
	void *p = malloc(48);

	SP_ALLOC("Widget", 48, p);
	made[1]++;
	__asm__ volatile("" ::: "memory");
	return p;
}

static NOINLINE void *buffer_grow(size_t n)
{
	void *p = malloc(n);

	SP_ALLOC("Buffer", n, p);
	made[2]++;
	__asm__ volatile("" ::: "memory");
	return p;
}

static NOINLINE void *buffer_leak(void)
{
	void *p = malloc(700);

	SP_ALLOC("Buffer", 700, p);
	made[3]++;
	__asm__ volatile("" ::: "memory");
	return p;
}

static NOINLINE void *gadget_make(void)
{
	void *p = malloc(200);

	SP_ALLOC("Gadget", 200, p);
	made[4]++;
	__asm__ volatile("" ::: "memory");
	return p;
}

static void *gadget_thread(void *arg)
{
	int i;

	(void)arg;
	SP_THREAD_NAME("gadget-maker");
	for (i = 0; i < 50; i++)
		gadgets[i] = gadget_make();
	for (i = 0; i < 20; i++) {
		SP_FREE("Gadget", gadgets[i]);
		free(gadgets[i]);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	static void *leaks[2];
	pthread_t t;
	char line[16];
	int i;

	if (argc > 1 && !strcmp(argv[1], "wait") &&
	    !fgets(line, sizeof(line), stdin))
		return 2;
	for (i = 0; i < 60; i++)
		widgets[i] = widget_temp();
	for (i = 60; i < 100; i++)
		widgets[i] = widget_leak();
	for (i = 0; i < 60; i++) {
		SP_FREE("Widget", widgets[i]);
		free(widgets[i]);
	}
	for (i = 0; i < 10; i++)
		buffers[i] = buffer_grow((size_t)(i + 1) * 100);
	for (i = 0; i < 10; i++) {
		SP_FREE("Buffer", buffers[i]);
		free(buffers[i]);
	}
	for (i = 0; i < 2; i++)
		leaks[i] = buffer_leak();
	for (i = 1; i <= 3; i++)
		SP_FREE("Widget", (void *)(unsigned long)(0x1000 * i));
	/* After the main thread's work: the peaks do not mix. */
	if (pthread_create(&t, NULL, gadget_thread, NULL))
		return 1;
	pthread_join(t, NULL);
	return leaks[0] && leaks[1] ? 0 : 1;
}
