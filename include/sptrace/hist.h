/* SPDX-License-Identifier: MIT */
/*
 * Log-linear latency histogram shared by the BPF side (bucket index) and
 * userspace (bucket bounds, percentiles). One definition, compiled by both.
 *
 * Values below SP_HIST_SUB land in exact buckets 0..SP_HIST_SUB-1. Above,
 * every power of two [2^p, 2^(p+1)) is split into SP_HIST_SUB equal
 * sub-buckets, so a bucket is at most 1/SP_HIST_SUB (3.1%) of its lower
 * bound wide and a percentile read from it is off by at most half of that
 * (1.6%). A pure log2 histogram (bpftrace's hist()) is off by up to 50%.
 */
#ifndef SPTRACE_HIST_H
#define SPTRACE_HIST_H

#include <linux/types.h>

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

#define SP_HIST_SUB_BITS 5
#define SP_HIST_SUB (1u << SP_HIST_SUB_BITS)
/* Highest bucket is for p = 63: shift 58, (58 + 1) * 32 + 31 = 1919. */
#define SP_HIST_BUCKETS ((64 - SP_HIST_SUB_BITS + 1) * SP_HIST_SUB)

/* floor(log2(v)) for v > 0, without __builtin_clzll: the BPF backend has no
 * count-leading-zeros instruction and no libgcc to call. */
static __always_inline unsigned int sp_log2_u64(__u64 v)
{
	unsigned int r = 0;

	if (v >> 32) { v >>= 32; r += 32; }
	if (v >> 16) { v >>= 16; r += 16; }
	if (v >> 8)  { v >>= 8;  r += 8; }
	if (v >> 4)  { v >>= 4;  r += 4; }
	if (v >> 2)  { v >>= 2;  r += 2; }
	if (v >> 1)  { r += 1; }
	return r;
}

static __always_inline __u32 sp_hist_bucket(__u64 v)
{
	unsigned int shift;

	if (v < SP_HIST_SUB)
		return (__u32)v;
	shift = sp_log2_u64(v) - SP_HIST_SUB_BITS;
	return (shift + 1) * SP_HIST_SUB +
	       (__u32)((v >> shift) & (SP_HIST_SUB - 1));
}

/* Smallest value that falls into bucket b. */
static __always_inline __u64 sp_hist_bucket_lo(__u32 b)
{
	unsigned int shift;

	if (b < SP_HIST_SUB)
		return b;
	shift = b / SP_HIST_SUB - 1;
	return ((__u64)SP_HIST_SUB + (b % SP_HIST_SUB)) << shift;
}

/* One past the largest value of bucket b (saturates at UINT64_MAX). */
static __always_inline __u64 sp_hist_bucket_hi(__u32 b)
{
	unsigned int shift;

	if (b < SP_HIST_SUB)
		return (__u64)b + 1;
	shift = b / SP_HIST_SUB - 1;
	if (b == SP_HIST_BUCKETS - 1)
		return ~(__u64)0;
	return sp_hist_bucket_lo(b) + ((__u64)1 << shift);
}

#ifndef __bpf__
/* Userspace only: a sparse histogram, buckets sorted by index. */
struct sp_hist_bin {
	__u32 bucket;
	__u32 pad;
	__u64 count;
};

/*
 * Value at quantile q (0 < q <= 1) of a histogram with `n` bins sorted by
 * bucket and `total` counts, clamped to [min, max] (the exact extremes are
 * known). Within the bucket that holds the rank the value is interpolated
 * linearly, treating the bucket's counts as evenly spread.
 */
static inline __u64 sp_hist_percentile(const struct sp_hist_bin *bins,
				       unsigned int n, __u64 total, double q,
				       __u64 min, __u64 max)
{
	__u64 rank, seen = 0, v = 0;
	unsigned int i;

	if (!n || !total)
		return 0;
	rank = (__u64)(q * (double)total + 0.999999999);
	if (rank < 1)
		rank = 1;
	if (rank > total)
		rank = total;
	for (i = 0; i < n; i++) {
		if (seen + bins[i].count >= rank) {
			__u64 lo = sp_hist_bucket_lo(bins[i].bucket);
			__u64 hi = sp_hist_bucket_hi(bins[i].bucket);
			double frac = ((double)(rank - seen) - 0.5) /
				      (double)bins[i].count;

			v = lo + (__u64)(frac * (double)(hi - lo));
			break;
		}
		seen += bins[i].count;
	}
	if (i == n)
		v = max;
	if (v < min)
		v = min;
	if (v > max)
		v = max;
	return v;
}
#endif /* !__bpf__ */

#endif /* SPTRACE_HIST_H */
