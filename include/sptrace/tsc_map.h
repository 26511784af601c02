/* SPDX-License-Identifier: MIT */
/*
 * TSC ticks to CLOCK_MONOTONIC nanoseconds, the map that converts batched
 * records stamped with the TSC (probes/sp_probe.h). Compiled by the BPF
 * program (bpf/query_batch.bpf.c, which converts every such record, live and
 * recorded) and by userspace (userspace/live/tsc_clock.c, which writes the
 * map, and the unit tests), so both evaluate it to the nanosecond.
 *
 * CLOCK_MONOTONIC is the TSC scaled by a rate NTP slews (adjtimex: up to
 * +-500 ppm of frequency, more with a tick change), so one calibration at
 * load drifts from bpf_ktime_get_ns(): intervals come out off by the slew
 * rate and absolute times drift by up to 30 ms a minute. sptrace therefore
 * recalibrates about once a second (tsc_clock.c) and the map is
 * piecewise linear: a ring of segments {base tick, ns at base, ns per tick},
 * each starting where the one before it ends (continuous) with a slope that
 * is always positive (monotone).
 *
 * Publishing: one writer (sptrace) fills the slots after the last published
 * one, then raises `count`; segment k lives in slot k % SP_TSC_SEGS. A
 * reader takes `count`, looks only at the newest SP_TSC_KEPT segments and
 * reads `count` again: a publish in progress writes slots the reader does
 * not look at, and if a publish completed meanwhile (the reader stalled
 * for a whole recalibration period) it looks again. x86 keeps loads in
 * order and stores in order, and the TSC is used only there.
 *
 * Choosing: a record's tick is converted by the newest segment whose base
 * is at or before it, so a record stamped before a switch and drained after
 * it still gets the segment that covered it, and an END never converts to
 * before its BEGIN. A tick before the oldest kept segment (a record more
 * than SP_TSC_KEPT / 2 recalibrations old, from a thread that blocked that
 * long) is converted by extending the oldest kept segment backwards: still
 * monotone; the error is its slope's, relative to what the clock did over
 * that time (docs/numbers.md, "Time base").
 */
#ifndef SPTRACE_TSC_MAP_H
#define SPTRACE_TSC_MAP_H

#include <stdbool.h>
#include <linux/types.h>
#ifdef __bpf__
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>	/* bpf_loop() */
#endif

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

/* ns per tick in fixed point: mult = ns per tick << SP_TSC_SHIFT. For a
 * TSC of more than 1 GHz (mult < 2^32), neither product of
 * sp_tsc_ticks_ns() nor their sum overflows for any 64-bit tick count;
 * 1 / mult is the slope's resolution (0.0007 ppm at 3 GHz). */
#define SP_TSC_SHIFT 32

/* Slots of the ring, a power of two; two segments per recalibration. */
#define SP_TSC_SEGS 4096
/* Segments a reader may use: the two slots after them are what the next
 * publish overwrites. 4094 segments: 34 minutes at one publish a second. */
#define SP_TSC_KEPT (SP_TSC_SEGS - 2)

struct sp_tsc_seg {
	__u64 base;	/* first tick it covers */
	__u64 ns_base;	/* CLOCK_MONOTONIC ns at base */
	__u64 mult;	/* ns per tick << SP_TSC_SHIFT, > 0 */
};

/* In the BPF program's .bss; written by sptrace through the mmap'ed map. */
struct sp_tsc_clock {
	__u64 count;	/* segments published, ever; 0: no calibration */
	__u64 pad;
	struct sp_tsc_seg seg[SP_TSC_SEGS];
};

/* floor(t * mult / 2^SP_TSC_SHIFT), exactly, without a 128-bit product. */
static __always_inline __u64 sp_tsc_ticks_ns(__u64 t, __u64 mult)
{
	return (t >> SP_TSC_SHIFT) * mult +
	       (((t & ((1ull << SP_TSC_SHIFT) - 1)) * mult) >> SP_TSC_SHIFT);
}

/* Segment {base, ns_base, mult} at tick t, backwards from base for t <
 * base (never below 0). Non-decreasing in t. */
static __always_inline __u64 sp_tsc_seg_ns(__u64 base, __u64 ns_base,
					   __u64 mult, __u64 t)
{
	__u64 d;

	if (t >= base)
		return ns_base + sp_tsc_ticks_ns(t - base, mult);
	d = sp_tsc_ticks_ns(base - t, mult);
	return d < ns_base ? ns_base - d : 0;
}

/*
 * The newest segment of [lo, hi] whose base is at or before t, else lo:
 * a bisection (the bases grow with the segment number: tsc_clock.c never
 * publishes a base below the last one). Only for ticks older than the two
 * newest segments (see sp_tsc_ns()). sp_tsc_bisect() is one step, false
 * once [lo, hi] is one segment; 13 halve the ring. In BPF the steps run
 * from bpf_loop(), verified once, where a loop of 13 iterations of two
 * ways was walked again on every path into it (30,000 instructions, a
 * third of a drain's load); a rare call costs nothing per record.
 */
static __always_inline bool sp_tsc_bisect(const volatile struct sp_tsc_clock *c,
					  __u64 *lo, __u64 *hi, __u64 t)
{
	__u64 mid;

	if (*lo >= *hi)
		return false;
	mid = *hi - (*hi - *lo) / 2;
	if (c->seg[mid & (SP_TSC_SEGS - 1)].base <= t)
		*lo = mid;
	else
		*hi = mid - 1;
	return true;
}

#define SP_TSC_BISECT_STEPS 13

#ifdef __bpf__
struct sp_tsc_bisection {
	const volatile struct sp_tsc_clock *c;
	__u64 lo, hi, t;
};

static __attribute__((unused)) long sp_tsc_bisect_step(__u32 i, void *data)
{
	struct sp_tsc_bisection *b = data;

	(void)i;
	return !sp_tsc_bisect(b->c, &b->lo, &b->hi, b->t);
}

static __always_inline __u64 sp_tsc_find(const volatile struct sp_tsc_clock *c,
					 __u64 lo, __u64 hi, __u64 t)
{
	struct sp_tsc_bisection b = { .c = c, .lo = lo, .hi = hi, .t = t };

	bpf_loop(SP_TSC_BISECT_STEPS, sp_tsc_bisect_step, &b, 0);
	return b.lo;
}
#else
static __always_inline __u64 sp_tsc_find(const volatile struct sp_tsc_clock *c,
					 __u64 lo, __u64 hi, __u64 t)
{
	int i;

	for (i = 0; i < SP_TSC_BISECT_STEPS && sp_tsc_bisect(c, &lo, &hi, t);
	     i++)
		;
	return lo;
}
#endif

/*
 * Tick t in ns through the published segments of c (0 if none). The two
 * newest are looked at first, as a record is drained within about 10 ms of
 * its stamp (the newest starts 0.1 to 1 s after the one before it, when a
 * recalibration's correction ends); older ticks are found by bisection.
 */
static __always_inline __u64 sp_tsc_ns(const volatile struct sp_tsc_clock *c,
				       __u64 t)
{
	const volatile struct sp_tsc_seg *s;
	__u64 n, k, base, ns = 0;
	int try;

	for (try = 0; try < 2; try++) {
		n = c->count;
		if (!n)
			return 0;
		s = &c->seg[(n - 1) & (SP_TSC_SEGS - 1)];
		if (s->base > t && n > 1) {
			s = &c->seg[(n - 2) & (SP_TSC_SEGS - 1)];
			if (s->base > t) {
				k = sp_tsc_find(c, n > SP_TSC_KEPT ?
						   n - SP_TSC_KEPT : 0,
						n - 2, t);
				s = &c->seg[k & (SP_TSC_SEGS - 1)];
			}
		}
		base = s->base;
		ns = sp_tsc_seg_ns(base, s->ns_base, s->mult, t);
		if (c->count == n)
			break;
	}
	return ns;
}

#endif /* SPTRACE_TSC_MAP_H */
