// SPDX-License-Identifier: MIT
/* The library dl_cycle_host loads and unloads: 100 queries, each its own
 * name, run once per call. */
#include <sp_probe.h>

int dl_cycle_run(void);
int dl_cycle_enabled(void);

#define Q(n) SP_QUERY_BEGIN("dlq" #n); SP_QUERY_END("dlq" #n);
#define Q10(n) Q(n##0) Q(n##1) Q(n##2) Q(n##3) Q(n##4) Q(n##5) Q(n##6)        \
	Q(n##7) Q(n##8) Q(n##9)

/* Queries per call. */
int dl_cycle_run(void)
{
	Q10(0) Q10(1) Q10(2) Q10(3) Q10(4) Q10(5) Q10(6) Q10(7) Q10(8) Q10(9)
	return 100;
}

/* This copy's semaphores: a tracer attached to it. */
int dl_cycle_enabled(void)
{
	return SP_ENABLED();
}

/* Batching on as if a tracer were attached (the kernel raises these while
 * one is): for a test of the ring code without a tracer. */
void dl_cycle_force_batching(void);

void dl_cycle_force_batching(void)
{
	sp_flush_semaphore = 1;
	sp_query_begin_semaphore = 1;
	sp_query_end_semaphore = 1;
}
