// SPDX-License-Identifier: MIT
/*
 * Unit tests of include/sptrace/ladder.h, the latency ladder that serve's
 * BPF program counts by and its OpenMetrics writer prints: each slot's
 * representative kernel bucket reads back as that slot, and values at, just
 * below and just above every bound land in the right slot.
 */
#include <sptrace/ladder.h>
#include "check.h"

/* The writer's rule (openmetrics.c row_format): a bucket goes under the
 * first bound >= its largest value. Written out again here on purpose. */
static uint32_t writer_slot(uint32_t b)
{
	uint64_t top = sp_hist_bucket_hi(b) - 1;
	uint32_t k = 0;

	while (k < SP_LADDER_NBOUNDS && top > sp_ladder_ns[k])
		k++;
	return k;
}

/* The representative bucket's claim rests on this: 1-2-5, rising, each
 * bound 2x or more above the one before. */
static void test_bounds(void)
{
	CHECK_U64(sp_ladder_ns[0], 1000);
	CHECK_U64(sp_ladder_ns[SP_LADDER_NBOUNDS - 1], 10000000000ull);
	for (uint32_t k = 1; k < SP_LADDER_NBOUNDS; k++)
		CHECK(sp_ladder_ns[k] >= 2 * sp_ladder_ns[k - 1]);
}

static void test_representative(void)
{
	for (uint32_t k = 0; k < SP_LADDER_SLOTS; k++) {
		uint32_t b = sp_ladder_bucket(k);
		uint64_t top = sp_hist_bucket_hi(b) - 1;

		CHECK(b < SP_HIST_BUCKETS);
		CHECK_U64(writer_slot(b), k);
		CHECK_U64(sp_ladder_bucket_slot(b), k);
		/* Its whole range is in the slot: (bound[k-1], bound[k]]. */
		if (k < SP_LADDER_NBOUNDS)
			CHECK(top <= sp_ladder_ns[k]);
		if (k > 0)
			CHECK(sp_hist_bucket_lo(b) > sp_ladder_ns[k - 1]);
	}
}

/* ns -> slot, and the bucket the BPF program keys it by in ladder mode. */
static void check_value(uint64_t ns, uint32_t want)
{
	CHECK_U64(sp_ladder_slot(ns), want);
	CHECK_U64(sp_ladder_hist_bucket(ns), sp_ladder_bucket(want));
	CHECK_U64(writer_slot(sp_ladder_hist_bucket(ns)), want);
}

static void test_at_the_bounds(void)
{
	check_value(0, 0);
	check_value(1, 0);
	for (uint32_t k = 0; k < SP_LADDER_NBOUNDS; k++) {
		uint64_t b = sp_ladder_ns[k];

		check_value(b, k);
		check_value(b - 1, k);
		check_value(b + 1, k + 1);
		/* Within 1% of the bound, where a fine kernel bucket can
		 * straddle it. */
		check_value(b - b / 100, k);
		check_value(b + b / 100, k + 1);
	}
	check_value(UINT64_MAX, SP_LADDER_NBOUNDS);
}

/* Why the kernel counts by slot: the fine bucket that holds 1 ms is
 * [999424, 1015807], so fine buckets put 999.9 us under le=0.002, and
 * the one that holds 10 ms, [9961472, 10223615], 9.98 ms under le=0.02. */
static void test_fine_buckets_straddle(void)
{
	CHECK_U64(writer_slot(sp_hist_bucket(999900)), 10);
	CHECK_U64(writer_slot(sp_ladder_hist_bucket(999900)), 9);
	CHECK_U64(writer_slot(sp_hist_bucket(9980000)), 13);
	CHECK_U64(writer_slot(sp_ladder_hist_bucket(9980000)), 12);
}

int main(void)
{
	RUN(test_bounds);
	RUN(test_representative);
	RUN(test_at_the_bounds);
	RUN(test_fine_buckets_straddle);
	return check_status();
}
