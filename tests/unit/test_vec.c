// SPDX-License-Identifier: MIT
/*
 * Unit tests of common/vec.h, the growable array every layer uses: it
 * grows by doubling, keeps what it held, and refuses a size that would
 * wrap, leaving the array as it was.
 */
#include <errno.h>
#include "check.h"
#include "vec.h"

static void test_grow_keeps(void)
{
	uint64_t *v = NULL;
	size_t cap = 0, n, i;
	int bad = 0;

	for (n = 0; n < 1000; n++) {
		if (VEC_RESERVE(v, cap, n + 1)) {
			bad++;
			break;
		}
		v[n] = n * 3;
	}
	CHECK_U64(bad, 0);
	CHECK(cap >= 1000 && cap < 2000);	/* doubled, not per element */
	for (i = 0; i < n; i++)
		if (v[i] != i * 3)
			bad++;
	CHECK_U64(bad, 0);
	free(v);
}

static void test_no_growth_when_room(void)
{
	char *v = NULL;
	size_t cap = 0;
	char *before;

	CHECK_U64(VEC_RESERVE(v, cap, 5), 0);
	CHECK_U64(cap, 8);
	before = v;
	CHECK_U64(VEC_RESERVE(v, cap, 8), 0);
	CHECK(v == before);
	CHECK_U64(cap, 8);
	free(v);
}

static void test_overflow_refused(void)
{
	uint64_t *v = NULL;
	size_t cap = 0;
	uint64_t *before;

	CHECK_U64(VEC_RESERVE(v, cap, 4), 0);
	before = v;
	CHECK_U64(VEC_RESERVE(v, cap, SIZE_MAX / 4), (uint64_t)-ENOMEM);
	CHECK_U64(VEC_RESERVE(v, cap, SIZE_MAX), (uint64_t)-ENOMEM);
	CHECK(v == before);
	CHECK_U64(cap, 8);
	free(v);
}

int main(void)
{
	RUN(test_grow_keeps);
	RUN(test_no_growth_when_room);
	RUN(test_overflow_refused);
	return check_status();
}
