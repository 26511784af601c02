// SPDX-License-Identifier: MIT
/*
 * The C half of the mixed C+Rust host (tests/rust/mixed): queries fired by
 * sp_probe.h in a static library linked into a Rust binary. Both languages
 * define the same weak hidden semaphores; the binary must keep one per name.
 * Each language batches into a ring of its own; the tracer merges a
 * thread's rings by time, so queries nest across the two.
 */
#include <time.h>
#include <sp_probe.h>

void mixed_c_query(int n);
int mixed_c_enabled(void);
unsigned long long mixed_c_outer(void (*work)(void));
void mixed_c_begin(const char *name);
void mixed_c_end(const char *name);

void mixed_c_query(int n)
{
	int i;

	for (i = 0; i < n; i++) {
		SP_QUERY_BEGIN("c_query");
		SP_CACHE_HIT("shared");
		SP_QUERY_BEGIN("shared");
		SP_QUERY_END("shared");
		SP_QUERY_END("c_query");
	}
}

static unsigned long long now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (unsigned long long)t.tv_sec * 1000000000ull +
	       (unsigned long long)t.tv_nsec;
}

/* A C query around Rust work (which runs a Rust query inside); returns
 * its time read right inside the probes, as the ground-truth hosts do (a
 * batched flush that a BEGIN fires is not the query's, nor in sptrace's
 * figure). */
unsigned long long mixed_c_outer(void (*work)(void))
{
	unsigned long long t0, t1;

	SP_QUERY_BEGIN("c_outer");
	t0 = now_ns();
	work();
	t1 = now_ns();
	SP_QUERY_END("c_outer");
	return t1 - t0;
}

/* BEGIN or END of a query named by Rust (sp_name!): the same address as
 * the Rust macros pass for that name. */
void mixed_c_begin(const char *name)
{
	SP_QUERY_BEGIN(name);
}

void mixed_c_end(const char *name)
{
	SP_QUERY_END(name);
}

int mixed_c_enabled(void)
{
	return SP_ENABLED();
}
