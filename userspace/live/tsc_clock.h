/* SPDX-License-Identifier: MIT */
/*
 * The writer of the TSC -> CLOCK_MONOTONIC map of batched records
 * (include/sptrace/tsc_map.h): a calibration at load, then, about once a
 * second while the session runs, a new segment pair that follows the
 * clock's NTP-slewed rate and steers the accumulated offset back to zero,
 * as a PLL does. Pure arithmetic apart from tsc_clock__sample(), so the
 * unit tests drive it with a simulated clock.
 */
#ifndef SPTRACE_TSC_CLOCK_H
#define SPTRACE_TSC_CLOCK_H

#include <stdint.h>
#include <sptrace/tsc_map.h>

/* How often the session recalibrates once started; each recalibration
 * plans to remove the offset it measured by the next one. */
#define TSC_CLOCK_PERIOD_NS 1000000000ull
/* The first two recalibrations come this long after the load-time
 * calibration's first sample (100 and 300 ms), each measuring the rate
 * from that sample: the 20 ms calibration's slope is only as good as two
 * samples 20 ms apart, and waiting a whole period to refine it left the
 * first second of a session off by that much. */
#define TSC_CLOCK_EARLY1_NS 100000000ull
#define TSC_CLOCK_EARLY2_NS 300000000ull
/* A rate that moved by more than this from the last one (a new NTP
 * frequency: adjtimex steps it at once) is measured again this soon, over
 * a window wholly after the change, instead of a period later. A time
 * daemon's own corrections are far smaller than this. */
#define TSC_CLOCK_RELOCK_PPM 20
#define TSC_CLOCK_RELOCK_NS 100000000ull
/* A new segment starts this far after its sample: records are converted
 * by the old segment up to there, whether drained before or after the
 * publish, unless publishing takes longer than this. */
#define TSC_CLOCK_MARGIN_NS 10000000ull
/* Bound of the offset correction: a segment's slope is the measured rate
 * +-500 ppm at most (what NTP itself may add), so it stays positive and
 * an interval is never off by more than that while an offset is removed. */
#define TSC_CLOCK_MAX_CORR_PPM 500
/* A rate further than 1/8 from the first calibration's is not the clock's
 * (a suspend, a stalled sample; adjtimex's tick reaches 10%): ignored. */
#define TSC_CLOCK_SANE_SHIFT 3

struct tsc_clock {
	volatile struct sp_tsc_clock *map;	/* BPF .bss, or a test's */
	uint64_t t_prev, ns_prev;	/* the last sample */
	uint64_t t_cal, ns_cal;		/* the calibration's first sample */
	uint64_t rate;		/* measured ns per tick << SP_TSC_SHIFT */
	uint64_t rate0;		/* the load-time calibration's */
	uint64_t next_ns;	/* CLOCK_MONOTONIC ns when the next sample is
				 * due (tsc_clock__tick(); the unit tests) */
	int64_t offset_ns;	/* map - clock at the last sample */
	int64_t max_offset_ns;	/* largest |offset| after the first update */
	unsigned long updates, rejected, relocks;
};

/* Reads the TSC and CLOCK_MONOTONIC together: the clock between two TSC
 * readings, the narrowest bracket of up to 32 tries (fewer once one is
 * narrow). 0, -EAGAIN (every try preempted), -EOPNOTSUPP (not x86-64). */
int tsc_clock__sample(uint64_t *tsc, uint64_t *ns);
/* Starts the map from two samples (t0, n0), (t1, n1): one segment through
 * (t1, n1) at their rate. 0 or -EINVAL. */
int tsc_clock__start(struct tsc_clock *tc, volatile struct sp_tsc_clock *map,
		     uint64_t t0, uint64_t n0, uint64_t t1, uint64_t n1);
/* A new sample: publishes the next segment pair and sets next_ns. 0, or
 * -EINVAL for a sample not after the last one (nothing published). */
int tsc_clock__update(struct tsc_clock *tc, uint64_t t, uint64_t ns);
/* From the session's loop: samples and updates when a period has passed
 * since the last time (`now` is CLOCK_MONOTONIC). */
void tsc_clock__tick(struct tsc_clock *tc, uint64_t now);

#endif /* SPTRACE_TSC_CLOCK_H */
