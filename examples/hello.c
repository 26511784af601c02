// SPDX-License-Identifier: MIT
/*
 * hello: the smallest program worth tracing with sptrace. It shows every
 * everyday probe: a query marked with SP_SCOPE, one marked with explicit
 * SP_QUERY_BEGIN/END, queries nested in queries, a memoised query whose
 * repeated calls are SP_CACHE_HITs, and SP_THREAD_NAME.
 *
 *   hello [ITERATIONS]        (default 200: about one second)
 *
 *   sudo sptrace -- ./hello   prints one row per query when hello exits.
 *
 * Untraced, every probe costs one load and one not-taken branch, so there is
 * no need to compile them out of a release build (SP_PROBES_DISABLE would).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sp_probe.h>

/* Deterministic busy work standing in for real computation (about 1 ns per
 * round on a current x86-64). Returns a value so it cannot be optimised
 * away. */
static uint64_t churn(uint64_t x, unsigned long rounds)
{
	while (rounds--) {
		x ^= x >> 31;
		x *= 0x9e3779b97f4a7c15ull;
	}
	return x;
}

/*
 * A query with SP_SCOPE: the BEGIN fires here and the END when `parse`
 * returns, whichever return it takes. The name is a string literal: sptrace
 * keys its table by the pointer and reads the text once.
 */
static uint64_t parse(unsigned item)
{
	SP_SCOPE("parse");

	return churn(item, 200000);
}

/*
 * A memoised query: the first call computes, later calls answer from the
 * cache and say so with SP_CACHE_HIT (and no BEGIN/END: nothing ran). In
 * sptrace's table this shows as 1 invocation and ITERATIONS-1 cache hits.
 * Single-threaded, so a plain static is a good enough cache.
 */
static uint64_t lang_items(void)
{
	static int cached;
	static uint64_t value;

	if (cached) {
		SP_CACHE_HIT("lang_items");
		return value;
	}
	SP_QUERY_BEGIN("lang_items");
	value = churn(42, 20000000);
	cached = 1;
	SP_QUERY_END("lang_items");
	return value;
}

/*
 * A query with explicit BEGIN/END around sub-queries. Its self time in the
 * table is its total time minus the time spent in parse and lang_items.
 * Each BEGIN needs its END on the same thread, on every path out.
 */
static uint64_t typeck(unsigned item)
{
	uint64_t v;

	SP_QUERY_BEGIN("typeck");
	v = parse(item) ^ lang_items();
	v = churn(v, 1000000);
	SP_QUERY_END("typeck");
	return v;
}

/* Two levels down: codegen -> typeck -> parse, plus its own work. */
static uint64_t codegen(unsigned item)
{
	SP_SCOPE("codegen");

	return churn(typeck(item), 1700000);
}

static int parse_iterations(const char *arg, unsigned long *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(arg, &end, 10);
	if (errno || end == arg || *end || v == 0 || v > 100000000ul || arg[0] == '-')
		return -1;
	*out = v;
	return 0;
}

int main(int argc, char **argv)
{
	unsigned long iterations = 200, i;
	uint64_t digest = 0;

	if (argc > 2 || (argc == 2 && parse_iterations(argv[1], &iterations))) {
		fprintf(stderr, "usage: %s [ITERATIONS]   (a positive number, default 200)\n",
			argv[0]);
		return 2;
	}

	/* Names the thread in sptrace's per-thread views; a string literal. */
	SP_THREAD_NAME("main");

	for (i = 0; i < iterations; i++)
		digest ^= codegen((unsigned)i);

	/* Printed so a reader can check the counts sptrace reports. */
	printf("hello: iterations=%lu codegen=%lu typeck=%lu parse=%lu "
	       "lang_items=1 lang_items_cache_hits=%lu digest=%016llx\n",
	       iterations, iterations, iterations, iterations, iterations - 1,
	       (unsigned long long)digest);
	return 0;
}
