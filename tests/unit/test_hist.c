// SPDX-License-Identifier: MIT
/*
 * Unit tests of include/sptrace/hist.h, the histogram both the BPF program
 * and userspace compile: bucket index and bounds agree, buckets are narrow
 * enough, and percentiles read back from buckets are close to the truth.
 */
#include <stdlib.h>
#include <sptrace/hist.h>
#include "check.h"

#define LAST_BUCKET (SP_HIST_BUCKETS - 1)

static uint64_t xorshift(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *state = x;
}

/* v lies in its bucket's [lo, hi); the last bucket's hi saturates. */
static int in_bucket(uint64_t v)
{
	uint32_t b = sp_hist_bucket(v);

	if (b >= SP_HIST_BUCKETS)
		return 0;
	if (sp_hist_bucket_lo(b) > v)
		return 0;
	return v < sp_hist_bucket_hi(b) ||
	       (b == LAST_BUCKET && sp_hist_bucket_hi(b) == UINT64_MAX);
}

static void test_log2(void)
{
	unsigned int p;

	CHECK_U64(sp_log2_u64(1), 0);
	CHECK_U64(sp_log2_u64(2), 1);
	CHECK_U64(sp_log2_u64(3), 1);
	CHECK_U64(sp_log2_u64(1000), 9);
	CHECK_U64(sp_log2_u64(UINT64_MAX), 63);
	for (p = 0; p < 64; p++) {
		uint64_t v = (uint64_t)1 << p;

		CHECK_U64(sp_log2_u64(v), p);
		if (p >= 1)
			CHECK_U64(sp_log2_u64(v - 1), p - 1);
		if (p >= 1)
			CHECK_U64(sp_log2_u64(v + 1), p);
	}
}

static void test_bucket_values(void)
{
	/* Hand-computed: exact below 32, then 32 sub-buckets per octave. */
	CHECK_U64(sp_hist_bucket(0), 0);
	CHECK_U64(sp_hist_bucket(1), 1);
	CHECK_U64(sp_hist_bucket(31), 31);
	CHECK_U64(sp_hist_bucket(32), 32);
	CHECK_U64(sp_hist_bucket(33), 33);
	CHECK_U64(sp_hist_bucket(63), 63);
	CHECK_U64(sp_hist_bucket(64), 64);
	CHECK_U64(sp_hist_bucket(65), 64);
	CHECK_U64(sp_hist_bucket(66), 65);
	CHECK_U64(sp_hist_bucket(1000), 190);	/* 5 * 32 + (1000 >> 4) % 32 */
	CHECK_U64(sp_hist_bucket_lo(190), 992);
	CHECK_U64(sp_hist_bucket_hi(190), 1008);
	CHECK_U64(sp_hist_bucket(UINT64_MAX), LAST_BUCKET);
	CHECK_U64(SP_HIST_BUCKETS, 1920);
}

static void test_bucket_contains(void)
{
	static const uint64_t fixed[] = {
		0, 1, 2, 31, 32, 33, 63, 64, 65, 127, 128, 999, 1000, 1001,
		1000000, 1000000000, 1000000000000ULL, UINT64_MAX - 1,
		UINT64_MAX,
	};
	uint64_t state = 0x9e3779b97f4a7c15ULL;
	unsigned int i, p;

	for (i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++) {
		if (!in_bucket(fixed[i]))
			printf("FAIL value %" PRIu64 " outside its bucket\n",
			       fixed[i]);
		CHECK(in_bucket(fixed[i]));
	}
	for (p = 0; p < 64; p++) {
		uint64_t v = (uint64_t)1 << p;

		CHECK(in_bucket(v));
		CHECK(in_bucket(v - 1));
		CHECK(in_bucket(v + 1));
	}
	for (i = 0; i < 100000; i++) {
		/* Spread over all magnitudes, not just huge values. */
		uint64_t v = xorshift(&state) >> (xorshift(&state) % 64);

		if (!in_bucket(v)) {
			CHECK(in_bucket(v));
			break;
		}
	}
}

static void test_bucket_bounds(void)
{
	uint32_t b;
	unsigned int bad = 0;

	for (b = 0; b < SP_HIST_BUCKETS; b++) {
		uint64_t lo = sp_hist_bucket_lo(b), hi = sp_hist_bucket_hi(b);

		/* Bounds map back to the bucket; buckets tile without gaps. */
		bad += sp_hist_bucket(lo) != b;
		bad += lo >= hi;
		if (b < LAST_BUCKET) {
			bad += sp_hist_bucket(hi - 1) != b;
			bad += hi != sp_hist_bucket_lo(b + 1);
		}
		/* At most 1/32 of the lower bound wide above the exact part. */
		if (b >= SP_HIST_SUB)
			bad += (hi - lo) > lo / SP_HIST_SUB;
		if (bad) {
			printf("FAIL bucket %u: lo %" PRIu64 " hi %" PRIu64 "\n",
			       b, lo, hi);
			break;
		}
	}
	CHECK(bad == 0);
}

static void test_bucket_monotonic(void)
{
	uint64_t state = 12345, v, w;
	unsigned int i, bad = 0;

	for (v = 0; v < 300000; v++)
		bad += sp_hist_bucket(v) > sp_hist_bucket(v + 1);
	for (i = 0; i < 100000; i++) {
		v = xorshift(&state) >> (xorshift(&state) % 64);
		w = xorshift(&state) >> (xorshift(&state) % 64);
		if (v > w)
			bad += sp_hist_bucket(v) < sp_hist_bucket(w);
		else
			bad += sp_hist_bucket(v) > sp_hist_bucket(w);
	}
	CHECK(bad == 0);
}

/* A dense count array turned into the sorted sparse form. */
static unsigned int to_bins(const uint64_t *counts, struct sp_hist_bin *bins,
			    uint64_t *total)
{
	unsigned int b, n = 0;

	*total = 0;
	for (b = 0; b < SP_HIST_BUCKETS; b++) {
		if (!counts[b])
			continue;
		bins[n].bucket = b;
		bins[n].pad = 0;
		bins[n].count = counts[b];
		*total += counts[b];
		n++;
	}
	return n;
}

static int within(uint64_t got, double want, double rel)
{
	double d = (double)got - want;

	return (d < 0 ? -d : d) <= want * rel;
}

static void test_percentile_uniform(void)
{
	static uint64_t counts[SP_HIST_BUCKETS];
	static struct sp_hist_bin bins[SP_HIST_BUCKETS];
	uint64_t v, total, p50, p90, p99;
	unsigned int n;

	/* 1..100000 ns once each: p50 = 50000, p90 = 90000, p99 = 99000. */
	for (v = 1; v <= 100000; v++)
		counts[sp_hist_bucket(v)]++;
	n = to_bins(counts, bins, &total);
	CHECK_U64(total, 100000);
	p50 = sp_hist_percentile(bins, n, total, 0.50, 1, 100000);
	p90 = sp_hist_percentile(bins, n, total, 0.90, 1, 100000);
	p99 = sp_hist_percentile(bins, n, total, 0.99, 1, 100000);
	if (!within(p50, 50000, 0.02) || !within(p90, 90000, 0.02) ||
	    !within(p99, 99000, 0.02))
		printf("FAIL uniform: p50 %" PRIu64 " p90 %" PRIu64
		       " p99 %" PRIu64 "\n", p50, p90, p99);
	CHECK(within(p50, 50000, 0.02));
	CHECK(within(p90, 90000, 0.02));
	CHECK(within(p99, 99000, 0.02));
	CHECK(sp_hist_percentile(bins, n, total, 1.0, 1, 100000) <= 100000);
	CHECK(sp_hist_percentile(bins, n, total, 0.000001, 1, 100000) >= 1);
}

static void test_percentile_bimodal(void)
{
	static uint64_t counts[SP_HIST_BUCKETS];
	static struct sp_hist_bin bins[SP_HIST_BUCKETS];
	uint64_t total, p50, p90, p99;
	unsigned int n;

	/* 900 fast calls of 100ns, 100 slow ones of 1ms. */
	counts[sp_hist_bucket(100)] = 900;
	counts[sp_hist_bucket(1000000)] = 100;
	n = to_bins(counts, bins, &total);
	CHECK_U64(n, 2);
	p50 = sp_hist_percentile(bins, n, total, 0.50, 100, 1000000);
	p90 = sp_hist_percentile(bins, n, total, 0.90, 100, 1000000);
	p99 = sp_hist_percentile(bins, n, total, 0.99, 100, 1000000);
	CHECK(within(p50, 100, 0.02));
	CHECK(within(p90, 100, 0.02));	/* rank 900 is the last fast call */
	CHECK(within(p99, 1000000, 0.02));
}

static void test_percentile_single(void)
{
	struct sp_hist_bin bin = { .bucket = sp_hist_bucket(12345),
				   .count = 1000 };
	struct sp_hist_bin exact = { .bucket = sp_hist_bucket(7), .count = 5 };
	uint64_t v;

	/* One value: min == max, so every percentile is exactly it. */
	CHECK_U64(sp_hist_percentile(&bin, 1, 1000, 0.50, 12345, 12345), 12345);
	CHECK_U64(sp_hist_percentile(&bin, 1, 1000, 0.90, 12345, 12345), 12345);
	CHECK_U64(sp_hist_percentile(&bin, 1, 1000, 0.99, 12345, 12345), 12345);
	/* Unclamped, the answer stays inside the value's bucket. */
	v = sp_hist_percentile(&bin, 1, 1000, 0.99, 0, UINT64_MAX);
	CHECK(v >= sp_hist_bucket_lo(bin.bucket));
	CHECK(v < sp_hist_bucket_hi(bin.bucket));
	/* Exact buckets below 32 give the value itself. */
	CHECK_U64(sp_hist_percentile(&exact, 1, 5, 0.5, 0, UINT64_MAX), 7);
	CHECK_U64(sp_hist_percentile(&exact, 1, 5, 0.99, 0, UINT64_MAX), 7);
	/* No samples, no answer. */
	CHECK_U64(sp_hist_percentile(&bin, 0, 0, 0.5, 1, 2), 0);
}

int main(void)
{
	RUN(test_log2);
	RUN(test_bucket_values);
	RUN(test_bucket_contains);
	RUN(test_bucket_bounds);
	RUN(test_bucket_monotonic);
	RUN(test_percentile_uniform);
	RUN(test_percentile_bimodal);
	RUN(test_percentile_single);
	return check_status();
}
