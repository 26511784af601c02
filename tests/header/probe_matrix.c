// SPDX-License-Identifier: MIT
/*
 * Every probe macro once, in functions that are not inlined, so the header
 * test can check each compiler/flag combination emits the right notes and
 * sites. Compiled as C and as C++ (probe_matrix.cc includes this file).
 */
#include <sp_probe.h>
#include <stdlib.h>

#define NOINLINE __attribute__((noinline))

NOINLINE static int queries(int x)
{
	SP_QUERY_BEGIN("q");
	x += 1;
	SP_QUERY_END("q");
	return x;
}

NOINLINE static int scoped(int x)
{
	SP_SCOPE("scoped");
	return x * 2;
}

/* Keyed and run-time text forms: query sites of 2 (integer key) and 3
 * (text key) arguments; the *_STR names intern only while traced. */
NOINLINE static void texts(const char *t, unsigned long n,
			   unsigned long long key)
{
	SP_QUERY_BEGIN_STR(t, n);
	SP_CACHE_HIT_STR(t, n);
	SP_QUERY_END_STR(t, n);
	SP_QUERY_BEGIN_KEY("q", key);
	SP_CACHE_HIT_KEY("q", key);
	SP_QUERY_END_KEY("q", key);
	SP_QUERY_BEGIN_KEY_STR("q", t, n);
	SP_CACHE_HIT_KEY_STR("q", t, n);
	SP_QUERY_END_KEY_STR("q", t, n);
}

NOINLINE static void others(void *p, unsigned long long key)
{
	SP_CACHE_HIT("q");
	SP_INCR_LOAD_BEGIN("q");
	SP_INCR_LOAD_END("q");
	SP_BLOCKED_BEGIN("q");
	SP_BLOCKED_END("q");
	SP_MARK("m", key);
	SP_ALLOC("node", 16, p);
	SP_FREE("node", p);
	SP_THREAD_NAME("main");
	SP_PROBE(custom0);
	SP_PROBE(custom6, 1, 2, 3, 4, 5, key);
}

int main(int argc, char **argv)
{
	void *p = malloc(16);

	others(p, (unsigned long long)argc);
	texts(argv[0], 3, (unsigned long long)argc);
	free(p);
	if (SP_ENABLED())
		return 3;	/* nobody traces this run */
	return queries(argc) + scoped(argc) == 2 + 2 ? 0 : 1;
}
