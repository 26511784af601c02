/* SPDX-License-Identifier: MIT */
/*
 * The fixed latency ladder of `sptrace serve` (1-2-5 from 1 us to 10 s, then
 * +Inf), shared by the BPF side (which slot an invocation goes to) and the
 * OpenMetrics writer (the `le` bounds). One definition, compiled by both.
 *
 * serve shows no percentile, only counts at these bounds, so it has the
 * BPF program (bpf/query_core.bpf.h, `ladder`) count an invocation by its ladder
 * slot instead of its fine kernel bucket: a query then has at most 23 `hist`
 * entries, not one per kernel bucket its invocations ever touched, and the
 * count at a bound is exact (a kernel bucket straddling a bound would put
 * up to 3% of the values below it under the next bound up).
 *
 * A slot is stored as a kernel bucket index (sp_ladder_bucket()) whose
 * whole range lies within the slot, so every reader of `hist` (summary
 * bins, exited rows, the writer's bucket -> bound rule) works unchanged.
 */
#ifndef SPTRACE_LADDER_H
#define SPTRACE_LADDER_H

#include <linux/types.h>
#include <sptrace/hist.h>

/* Bounds, then one slot more: +Inf. */
#define SP_LADDER_NBOUNDS 22
#define SP_LADDER_SLOTS (SP_LADDER_NBOUNDS + 1)

/* The `le` bounds in ns. In BPF every index is a constant once the loops
 * below are unrolled, so the array folds away into immediates. */
static const __u64 sp_ladder_ns[SP_LADDER_NBOUNDS] __attribute__((unused)) = {
	1000ull, 2000ull, 5000ull,				/* us */
	10000ull, 20000ull, 50000ull,
	100000ull, 200000ull, 500000ull,
	1000000ull, 2000000ull, 5000000ull,			/* ms */
	10000000ull, 20000000ull, 50000000ull,
	100000000ull, 200000000ull, 500000000ull,
	1000000000ull, 2000000000ull, 5000000000ull,		/* s */
	10000000000ull,
};

#if defined(__clang__)
#define SP_LADDER_UNROLL _Pragma("clang loop unroll(full)")
#else
#define SP_LADDER_UNROLL
#endif

/* The slot of a value: the first bound >= ns, SP_LADDER_NBOUNDS if none. */
static __always_inline __u32 sp_ladder_slot(__u64 ns)
{
	__u32 k;

	SP_LADDER_UNROLL
	for (k = 0; k < SP_LADDER_NBOUNDS; k++)
		if (ns <= sp_ladder_ns[k])
			break;
	return k;
}

/* The slot of a kernel bucket: the first bound >= its largest value (what
 * the writer does with a fine bucket). */
static __always_inline __u32 sp_ladder_bucket_slot(__u32 b)
{
	return sp_ladder_slot(sp_hist_bucket_hi(b) - 1);
}

/*
 * The kernel bucket that stands for slot k: the highest bucket whose
 * largest value is <= the bound. The bucket holding the bound may reach
 * past it; then the one below ends below the bound and, a bucket being at
 * most 1/32 of its values wide and bounds 2x or more apart, above the bound
 * before. +Inf: the bucket after the one holding 10 s, wholly above it.
 */
static __always_inline __u32 sp_ladder_bucket(__u32 k)
{
	__u32 b;

	if (k >= SP_LADDER_NBOUNDS)
		return sp_hist_bucket(sp_ladder_ns[SP_LADDER_NBOUNDS - 1]) + 1;
	b = sp_hist_bucket(sp_ladder_ns[k]);
	if (sp_hist_bucket_hi(b) - 1 > sp_ladder_ns[k])
		b--;
	return b;
}

/* What the BPF program keys an invocation of ns by in ladder mode. With k
 * a constant in each unrolled step, each return is an immediate. */
static __always_inline __u32 sp_ladder_hist_bucket(__u64 ns)
{
	__u32 k;

	SP_LADDER_UNROLL
	for (k = 0; k < SP_LADDER_NBOUNDS; k++)
		if (ns <= sp_ladder_ns[k])
			return sp_ladder_bucket(k);
	return sp_ladder_bucket(SP_LADDER_NBOUNDS);
}

#endif /* SPTRACE_LADDER_H */
