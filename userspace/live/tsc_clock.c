// SPDX-License-Identifier: MIT
/*
 * The TSC -> CLOCK_MONOTONIC map of batched records, written while the
 * session runs (see tsc_clock.h, and include/sptrace/tsc_map.h for how BPF
 * reads it).
 *
 * Each update takes a sample (T, N) of the TSC and the clock and plans the
 * map forward from a switch tick S a little after T:
 *  - rate r: ns per tick measured since the previous sample (the clock's
 *    current NTP-slewed rate);
 *  - segment A from S: starts at the map's own value at S (continuous)
 *    with the slope that brings the map onto the clock, as predicted at
 *    rate r, when the next sample is due, clamped to
 *    r +- TSC_CLOCK_MAX_CORR_PPM;
 *  - segment B from when the next sample is due (S + one period, or less
 *    early on and after a rate change): rate r, uncorrected, so a session
 *    that stops recalibrating (a stalled sptrace) does not keep steering.
 * S is never before the last published base, so bases only grow and a
 * reader can bisect them.
 *
 * The schedule: samples at 100 and 300 ms after the load-time calibration,
 * each rate measured from that calibration's first sample (a 20 ms
 * calibration is only as good as its two samples), then one a period; and
 * 100 ms after a sample whose rate moved by more than
 * TSC_CLOCK_RELOCK_PPM (adjtimex changed the frequency), so the new rate
 * is measured over a window wholly after the change a period sooner.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#include "log.h"
#include "tsc_clock.h"

typedef unsigned __int128 u128;

#if defined(__x86_64__)
static uint64_t rdtsc(void)
{
	uint32_t lo, hi;

	__asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
}
#endif

int tsc_clock__sample(uint64_t *tsc, uint64_t *ns)
{
#if defined(__x86_64__)
	uint64_t a, b, best = UINT64_MAX;
	struct timespec ts;
	int i;

	/* Up to 32 tries, done at the first bracket of 256 ticks or less
	 * (most are ~100 on the 2.6 GHz test VM: 38 ns): a sample's error is
	 * at most half its bracket, 49 ns at 256 ticks, so 0.5 ppm of the
	 * first recalibration's 100 ms. */
	for (i = 0; i < 32 && best > 256; i++) {
		a = rdtsc();
		clock_gettime(CLOCK_MONOTONIC, &ts);
		b = rdtsc();
		if (b - a >= best)
			continue;
		best = b - a;
		*tsc = a + (b - a) / 2;
		*ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	}
	/* A vDSO read takes well under 1 us, so at 10,000 ticks (3.4 us at
	 * 2.9 GHz) each try was interrupted; the sample's error is at most
	 * half its bracket, 1.7 ppm of a 1 s period. */
	return best < 10000 ? 0 : -EAGAIN;
#else
	(void)tsc;
	(void)ns;
	return -EOPNOTSUPP;
#endif
}

/* ns -> ticks at rate `mult` (ns per tick << SP_TSC_SHIFT). */
static uint64_t ns_ticks(uint64_t ns, uint64_t mult)
{
	return (uint64_t)(((u128)ns << SP_TSC_SHIFT) / mult);
}

/* Writes segs[0..n) after the published ones, then publishes them: the
 * slots written are the two after the newest SP_TSC_KEPT, which no reader
 * looks at (tsc_map.h). */
static void publish(struct tsc_clock *tc, const struct sp_tsc_seg *segs,
		    unsigned int n)
{
	volatile struct sp_tsc_clock *m = tc->map;
	uint64_t count = m->count;
	unsigned int i;

	for (i = 0; i < n; i++) {
		volatile struct sp_tsc_seg *s =
			&m->seg[(count + i) & (SP_TSC_SEGS - 1)];

		s->base = segs[i].base;
		s->ns_base = segs[i].ns_base;
		s->mult = segs[i].mult;
	}
	__atomic_store_n(&m->count, count + n, __ATOMIC_RELEASE);
}

int tsc_clock__start(struct tsc_clock *tc, volatile struct sp_tsc_clock *map,
		     uint64_t t0, uint64_t n0, uint64_t t1, uint64_t n1)
{
	struct sp_tsc_seg s;
	uint64_t rate;

	if (t1 <= t0 || n1 <= n0)
		return -EINVAL;
	rate = (uint64_t)(((u128)(n1 - n0) << SP_TSC_SHIFT) / (t1 - t0));
	if (!rate || rate >= 1ull << SP_TSC_SHIFT)
		return -EINVAL;	/* a TSC slower than 1 GHz: see tsc_map.h */
	*tc = (struct tsc_clock){
		.map = map, .t_prev = t1, .ns_prev = n1, .t_cal = t0,
		.ns_cal = n0, .rate = rate, .rate0 = rate,
		.next_ns = n0 + TSC_CLOCK_EARLY1_NS,
	};
	map->count = 0;
	s = (struct sp_tsc_seg){ .base = t1, .ns_base = n1, .mult = rate };
	publish(tc, &s, 1);
	return 0;
}

int tsc_clock__update(struct tsc_clock *tc, uint64_t t, uint64_t ns)
{
	volatile struct sp_tsc_clock *m = tc->map;
	uint64_t rate, last, sw, f_sw, span, target, mult, lo, hi, dev;
	uint64_t t_ref, ns_ref, moved;
	bool early = tc->updates < 2, relock = false;
	struct sp_tsc_seg segs[2];
	u128 slope;
	int64_t off;

	if (t <= tc->t_prev || ns <= tc->ns_prev || !m->count)
		return -EINVAL;
	/* Early on, the rate since the calibration's first sample: the
	 * longest window there is, and the calibration's own error is the
	 * one being removed. */
	t_ref = early ? tc->t_cal : tc->t_prev;
	ns_ref = early ? tc->ns_cal : tc->ns_prev;
	rate = (uint64_t)(((u128)(ns - ns_ref) << SP_TSC_SHIFT) / (t - t_ref));
	dev = rate > tc->rate0 ? rate - tc->rate0 : tc->rate0 - rate;
	if (dev > tc->rate0 >> TSC_CLOCK_SANE_SHIFT ||
	    rate >= 1ull << SP_TSC_SHIFT) {
		tc->rejected++;		/* keep the last rate */
	} else {
		moved = rate > tc->rate ? rate - tc->rate : tc->rate - rate;
		relock = !early && moved > (uint64_t)((u128)tc->rate *
					TSC_CLOCK_RELOCK_PPM / 1000000);
		tc->rate = rate;
	}
	rate = tc->rate;
	tc->relocks += relock;
	tc->next_ns = tc->updates == 0 ? tc->ns_cal + TSC_CLOCK_EARLY2_NS :
		      relock ? ns + TSC_CLOCK_RELOCK_NS :
			       ns + TSC_CLOCK_PERIOD_NS;
	if (tc->next_ns < ns + TSC_CLOCK_RELOCK_NS)
		tc->next_ns = ns + TSC_CLOCK_RELOCK_NS;	/* a late sample */

	off = (int64_t)(sp_tsc_ns(m, t) - ns);
	last = m->seg[(m->count - 1) & (SP_TSC_SEGS - 1)].base;
	sw = t + ns_ticks(TSC_CLOCK_MARGIN_NS, rate);
	if (sw < last)
		sw = last;	/* bases never go back (tsc_map.h bisects) */
	f_sw = sp_tsc_ns(m, sw);
	/* Segment A lasts until the next sample is due (a period, or 100 to
	 * 300 ms early on and after a rate change) and aims to meet the clock
	 * as predicted at rate r where it ends. */
	span = ns_ticks(tc->next_ns - ns, rate);
	target = ns + sp_tsc_ticks_ns(sw + span - t, rate);
	slope = target > f_sw ? ((u128)(target - f_sw) << SP_TSC_SHIFT) / span
			      : 0;
	lo = rate - (uint64_t)((u128)rate * TSC_CLOCK_MAX_CORR_PPM / 1000000);
	hi = rate + (uint64_t)((u128)rate * TSC_CLOCK_MAX_CORR_PPM / 1000000);
	if (hi >= 1ull << SP_TSC_SHIFT)
		hi = (1ull << SP_TSC_SHIFT) - 1;	/* see tsc_map.h */
	mult = slope < lo ? lo : slope > hi ? hi : (uint64_t)slope;

	segs[0] = (struct sp_tsc_seg){ .base = sw, .ns_base = f_sw,
				       .mult = mult };
	segs[1] = (struct sp_tsc_seg){
		.base = sw + span,
		.ns_base = f_sw + sp_tsc_ticks_ns(span, mult),
		.mult = rate,
	};
	publish(tc, segs, 2);

	tc->offset_ns = off;
	if (tc->updates && (off < 0 ? -off : off) > tc->max_offset_ns)
		tc->max_offset_ns = off < 0 ? -off : off;
	tc->updates++;
	if (sp_verbosity >= 2)
		sp_info("TSC map: %.3f s after the last sample: rate %+.3f ppm from the first calibration, map - clock %+" PRId64 " ns, slope %+.3f ppm from the rate%s",
			(double)(ns - tc->ns_prev) / 1e9,
			((double)rate / (double)tc->rate0 - 1) * 1e6, off,
			((double)mult / (double)rate - 1) * 1e6,
			relock ? " (the rate moved: again in 100 ms)" : "");
	tc->t_prev = t;
	tc->ns_prev = ns;
	return 0;
}

void tsc_clock__tick(struct tsc_clock *tc, uint64_t now)
{
	uint64_t t, ns;

	if (!tc->map || now < tc->next_ns)
		return;
	tc->next_ns = now + TSC_CLOCK_PERIOD_NS;	/* unless updated */
	if (tsc_clock__sample(&t, &ns)) {
		tc->rejected++;
		tc->next_ns = now + TSC_CLOCK_PERIOD_NS / 10;	/* soon */
		return;
	}
	(void)tsc_clock__update(tc, t, ns);
}
