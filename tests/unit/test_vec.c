// SPDX-License-Identifier: MIT
/*
 * Unit tests of common/vec.h, the growable array every layer uses: it
 * grows by doubling, keeps what it held, and refuses a size that would
 * wrap, leaving the array as it was; a sorted array's lower bound, and an
 * element inserted in place, zeroed, with the rest moved up.
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

struct keyed {
	uint32_t pad, pid;
};

static void test_lower_bound(void)
{
	struct keyed v[] = { { 9, 3 }, { 9, 5 }, { 9, 5 }, { 9, 8 } };

	CHECK_U64(VEC_LOWER_BOUND(v, 4, pid, 1), 0);
	CHECK_U64(VEC_LOWER_BOUND(v, 4, pid, 3), 0);
	CHECK_U64(VEC_LOWER_BOUND(v, 4, pid, 4), 1);
	CHECK_U64(VEC_LOWER_BOUND(v, 4, pid, 5), 1);	/* the first of two */
	CHECK_U64(VEC_LOWER_BOUND(v, 4, pid, 8), 3);
	CHECK_U64(VEC_LOWER_BOUND(v, 4, pid, 9), 4);
	CHECK_U64(VEC_LOWER_BOUND(v, 0, pid, 9), 0);
}

/* Inserted where the lower bound says, in any order: sorted, each zeroed
 * but for what the caller set, none lost. */
static void test_insert_sorted(void)
{
	static const uint32_t pids[] = { 50, 10, 90, 30, 70, 20, 80, 60, 40, 1 };
	struct keyed *v = NULL, *e;
	size_t n = 0, cap = 0, i;
	int bad = 0;

	for (i = 0; i < sizeof(pids) / sizeof(pids[0]); i++) {
		e = VEC_INSERT_AT(v, n, cap, VEC_LOWER_BOUND(v, n, pid, pids[i]));
		if (!e || e->pad || e->pid) {
			bad++;
			break;
		}
		e->pid = pids[i];
	}
	CHECK_U64(bad, 0);
	CHECK_U64(n, 10);
	for (i = 0; i < n; i++)
		if (v[i].pad || (i && v[i - 1].pid >= v[i].pid))
			bad++;
	CHECK_U64(bad, 0);
	CHECK_U64(v[0].pid, 1);
	CHECK_U64(v[9].pid, 90);
	free(v);
}

int main(void)
{
	RUN(test_grow_keeps);
	RUN(test_no_growth_when_room);
	RUN(test_overflow_refused);
	RUN(test_lower_bound);
	RUN(test_insert_sorted);
	return check_status();
}
