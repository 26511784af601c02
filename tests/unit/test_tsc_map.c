// SPDX-License-Identifier: MIT
/*
 * Unit tests of the TSC -> CLOCK_MONOTONIC map (include/sptrace/tsc_map.h,
 * userspace/live/tsc_clock.c) against a simulated TSC and a simulated
 * NTP-slewed clock: exact fixed-point products at any tick, a continuous
 * and monotone map, conversions that do not change once published (a
 * record drained after a switch gets the segment that covered its tick),
 * convergence to the clock after +-500 ppm frequency steps, the bounded
 * slope correction, the session's schedule (samples 100 and 300 ms after
 * load, and 100 ms after a rate change) against a bad calibration and
 * frequency steps, and the publish that never writes a slot a reader may
 * read.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sptrace/tsc_map.h>
#include "check.h"
#include "tsc_clock.h"

typedef unsigned __int128 u128;

/* ---- the simulated clocks ------------------------------------------------
 * A 2.9 GHz TSC; CLOCK_MONOTONIC runs at (1 + ppb / 1e9) ns per 1/2.9 ns
 * tick, the frequency set by steps at given ticks. */
#define HZ 2900000000ull
#define START (1ull << 62)	/* a TSC after ~50 years: no overflow */

struct sim {
	uint64_t t0, ns0;	/* start of the current rate */
	int64_t ppb;
};

static uint64_t sim_ns(const struct sim *c, uint64_t t)
{
	return c->ns0 + (uint64_t)((u128)(t - c->t0) *
				   (uint64_t)(1000000000ll + c->ppb) / HZ);
}

static void sim_set(struct sim *c, uint64_t t, int64_t ppm)
{
	c->ns0 = sim_ns(c, t);
	c->t0 = t;
	c->ppb = ppm * 1000;
}

static uint64_t ticks(double s)
{
	return (uint64_t)(s * (double)HZ);
}

static uint64_t rnd(void)
{
	static uint64_t x = 88172645463325252ull;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return x;
}

/* A sample of the clock at tick t, +-20 ns of bracket jitter. */
static uint64_t sample_ns(const struct sim *c, uint64_t t)
{
	return sim_ns(c, t) + rnd() % 41 - 20;
}

static struct sp_tsc_clock *map_new(void)
{
	struct sp_tsc_clock *m = calloc(1, sizeof(*m));

	if (!m)
		abort();
	return m;
}

/* Non-decreasing, and continuous (one tick moves it by at most 1 ns) at
 * every published base, as BPF evaluates it. */
static void check_shape(const struct sp_tsc_clock *m)
{
	uint64_t k, lo = m->count > SP_TSC_KEPT ? m->count - SP_TSC_KEPT : 0;
	unsigned int bad_mono = 0, bad_cont = 0;

	for (k = lo + 1; k < m->count; k++) {
		uint64_t b = m->seg[k & (SP_TSC_SEGS - 1)].base, t, prev;

		prev = sp_tsc_ns(m, b - 3);
		for (t = b - 2; t <= b + 3; t++) {
			uint64_t v = sp_tsc_ns(m, t);

			bad_mono += v < prev;
			bad_cont += v - prev > 1;
			prev = v;
		}
		CHECK(m->seg[k & (SP_TSC_SEGS - 1)].base >=
		      m->seg[(k - 1) & (SP_TSC_SEGS - 1)].base);
		CHECK(m->seg[k & (SP_TSC_SEGS - 1)].mult > 0);
	}
	CHECK_U64(bad_mono, 0);
	CHECK_U64(bad_cont, 0);
}

static void test_ticks_ns_exact(void)
{
	unsigned int i, bad = 0;

	for (i = 0; i < 200000; i++) {
		uint64_t t = rnd(), m = rnd() & ((1ull << SP_TSC_SHIFT) - 1);

		if (i % 4 == 0)
			t = UINT64_MAX - (t & 0xffff);
		bad += sp_tsc_ticks_ns(t, m) !=
		       (uint64_t)(((u128)t * m) >> SP_TSC_SHIFT);
	}
	CHECK_U64(bad, 0);
	/* 2^64 - 1 ticks at 1 ns per tick (the slowest TSC allowed) */
	CHECK_U64(sp_tsc_ticks_ns(UINT64_MAX, (1ull << SP_TSC_SHIFT) - 1),
		  (uint64_t)(((u128)UINT64_MAX * ((1ull << SP_TSC_SHIFT) - 1)) >>
			     SP_TSC_SHIFT));
}

/* Runs the PLL over `secs` simulated seconds, one update every 1.00-1.05 s,
 * calling `at(sec)` first so a test can change the rate. Returns the tick
 * reached. Checks on the way that a tick converted before an update
 * converts the same after it (what was drained stays put). */
static uint64_t run(struct tsc_clock *tc, struct sim *c, uint64_t t, double secs,
		    void (*at)(struct sim *, uint64_t, double, void *), void *arg,
		    double *elapsed)
{
	double end = *elapsed + secs;
	unsigned int moved = 0;

	while (*elapsed < end) {
		double step = 1.0 + (double)(rnd() % 50) / 1000.0;
		uint64_t probe[4], before[4];
		int i;

		t += ticks(step);
		*elapsed += step;
		if (at)
			at(c, t, *elapsed, arg);
		/* records stamped up to now, some drained only after the
		 * update: their conversion must not change */
		for (i = 0; i < 4; i++) {
			probe[i] = t - ticks(0.004) * (uint64_t)i;
			before[i] = sp_tsc_ns(tc->map, probe[i]);
		}
		CHECK(tsc_clock__update(tc, t, sample_ns(c, t)) == 0);
		for (i = 0; i < 4; i++)
			moved += sp_tsc_ns(tc->map, probe[i]) != before[i];
	}
	CHECK_U64(moved, 0);
	return t;
}

static uint64_t start(struct tsc_clock *tc, struct sp_tsc_clock *m,
		      struct sim *c, int64_t skew_ns)
{
	uint64_t t0 = START, t1 = START + ticks(0.02);

	*c = (struct sim){ .t0 = 0, .ns0 = 1000000000000ull, .ppb = 0 };
	c->t0 = t0;
	CHECK(tsc_clock__start(tc, m, t0, sample_ns(c, t0) + skew_ns, t1,
			       sample_ns(c, t1) + skew_ns) == 0);
	return t1;
}

static int64_t err_at(const struct tsc_clock *tc, const struct sim *c,
		      uint64_t t)
{
	return (int64_t)(sp_tsc_ns(tc->map, t) - sim_ns(c, t));
}

struct steps {
	double at[4];
	int64_t ppm[4];
	int n, done;
};

static void do_steps(struct sim *c, uint64_t t, double el, void *arg)
{
	struct steps *s = arg;

	/* the step lands mid-period: 0.4 s before this sample */
	if (s->done < s->n && el >= s->at[s->done]) {
		sim_set(c, t - ticks(0.4), s->ppm[s->done]);
		s->done++;
	}
}

/* +500 ppm at ~5 s, -500 at ~15 s, back to 0 at ~25 s: within 4 s of each
 * step the map is within 1 us of the clock and its slope within 1 ppm of
 * the clock's rate; at no time does a slope leave the rate +-500 ppm. */
static void test_converges(void)
{
	struct sp_tsc_clock *m = map_new();
	struct steps st = { { 5, 15, 25 }, { 500, -500, 0 }, 3, 0 };
	struct tsc_clock tc;
	struct sim c;
	double el = 0;
	int64_t worst_after = 0, worst_during = 0, e;
	uint64_t t = start(&tc, m, &c, 0), k;
	int phase;

	for (phase = 0; phase < 3; phase++) {
		double next = phase < 2 ? st.at[phase + 1] : st.at[phase] + 10;

		t = run(&tc, &c, t, st.at[phase] + 0.5 - el, do_steps, &st, &el);
		/* 4 s after the step (0.4 s before the sample that saw it) */
		t = run(&tc, &c, t, 3.5, do_steps, &st, &el);
		e = err_at(&tc, &c, t);
		if (llabs(e) > worst_during)
			worst_during = llabs(e);
		/* converged, until the next step: the map between samples too */
		while (el + 1.1 < next) {
			t = run(&tc, &c, t, 0.01, do_steps, &st, &el);
			for (k = 1; k <= 4; k++) {
				e = err_at(&tc, &c, t + ticks(0.25) * k);
				if (llabs(e) > worst_after)
					worst_after = llabs(e);
			}
		}
	}
	printf("    converged: |map - clock| <= %lld ns (at the sample 4 s after a step: %lld ns)\n",
	       (long long)worst_after, (long long)worst_during);
	CHECK(worst_after <= 200);
	CHECK(worst_during <= 200);
	/* slope of the newest segment vs the clock's rate (ns per tick) */
	{
		const struct sp_tsc_seg *s = &m->seg[(m->count - 2) & (SP_TSC_SEGS - 1)];
		double slope = (double)s->mult / (double)(1ull << SP_TSC_SHIFT);
		double truth = (1e9 + (double)c.ppb) / (double)HZ;

		printf("    slope %+.3f ppm from the clock's rate\n",
		       (slope / truth - 1) * 1e6);
		CHECK(slope / truth - 1 < 0.1e-6 && slope / truth - 1 > -0.1e-6);
	}
	check_shape(m);
	free(m);
}

/* sptrace stalled for 10 s (no update) while the clock ran 500 ppm fast:
 * the map is 5 ms behind when updates resume. The offset is removed at 500
 * ppm at most, so over ~10 s; every slope stays within the measured rate
 * +-500 ppm and the offset shrinks at every update. */
static void test_clamped(void)
{
	struct sp_tsc_clock *m = map_new();
	struct tsc_clock tc;
	struct sim c;
	double el = 0;
	uint64_t t = start(&tc, m, &c, 0), k, from;
	int64_t last, e;
	unsigned int grew = 0, n;

	t = run(&tc, &c, t, 3, NULL, NULL, &el);
	from = m->count;
	sim_set(&c, t, 500);
	t += ticks(10);
	last = -err_at(&tc, &c, t);
	printf("    behind by %lld ns after 10 s without an update\n",
	       (long long)last);
	CHECK(last > 4900000);
	last += 600000;		/* the first update comes ~1 s later */
	for (n = 0; n < 14; n++) {
		t = run(&tc, &c, t, 0.01, NULL, NULL, &el);
		e = -err_at(&tc, &c, t);
		/* shrinking by no more than ~500 us a second until it is
		 * the samples' noise */
		if (last > 1000)
			grew += e >= last || last - e > 530000;
		last = llabs(e);
	}
	CHECK_U64(grew, 0);
	printf("    %lld ns after 14 more updates\n", (long long)last);
	CHECK(last < 100);
	for (k = from; k + 1 < m->count; k += 2) {
		const struct sp_tsc_seg *a = &m->seg[k & (SP_TSC_SEGS - 1)];
		const struct sp_tsc_seg *b = &m->seg[(k + 1) & (SP_TSC_SEGS - 1)];
		double corr = (double)a->mult / (double)b->mult - 1;

		CHECK(corr <= 500e-6 + 1e-9 && corr >= -500e-6 - 1e-9);
	}
	check_shape(m);
	free(m);
}

/* ---- the session's schedule ----------------------------------------------
 * Samples when tc->next_ns comes (the loop sees it 0-50 ms late), and every
 * 50 ms window of the map between two samples checked against the clock:
 * those are the segments records stamped there convert with. */
#define WIN 0.05

static uint64_t tick_of(const struct sim *c, uint64_t ns)
{
	return c->t0 + (uint64_t)((u128)(ns - c->ns0) * HZ /
				  (uint64_t)(1000000000ll + c->ppb));
}

struct sched {
	double lim_ppm;		/* a window's slope further off is bad */
	int64_t lim_off_ns;	/* so is an offset larger than this */
	double last_bad;	/* end of the last bad window, s after load */
	double worst_ppm;	/* of the windows from `from` s on */
	double from;
	unsigned int samples;	/* samples taken until last_bad */
	unsigned int n;
};

static double el_of(uint64_t t)
{
	return (double)(t - START) / (double)HZ;
}

static void scan(const struct tsc_clock *tc, const struct sim *c,
		 struct sched *sc, uint64_t a, uint64_t b)
{
	uint64_t w, d = ticks(WIN);

	for (w = a; w + d <= b; w += d) {
		double ppm = ((double)(sp_tsc_ns(tc->map, w + d) -
				       sp_tsc_ns(tc->map, w)) /
			      (double)(sim_ns(c, w + d) - sim_ns(c, w)) - 1) * 1e6;
		int64_t off = err_at(tc, c, w);

		if (fabs(ppm) > sc->lim_ppm || llabs(off) > sc->lim_off_ns) {
			sc->last_bad = el_of(w + d);
			sc->samples = sc->n;
		}
		if (el_of(w) >= sc->from && fabs(ppm) > sc->worst_ppm)
			sc->worst_ppm = fabs(ppm);
	}
}

/* Until `until` s after load; a step to `ppm` at `step_s` (< 0: none). */
static uint64_t run_sched(struct tsc_clock *tc, struct sim *c, uint64_t t,
			  double until, double step_s, int64_t ppm,
			  struct sched *sc)
{
	uint64_t end = START + ticks(until), step_t, from = t, tn;

	step_t = step_s >= 0 ? START + ticks(step_s) : UINT64_MAX;
	while (t < end) {
		uint64_t due = tc->next_ns + (rnd() % 50) * 1000000ull;

		tn = tick_of(c, due);
		if (step_t > t && step_t < tn) {
			scan(tc, c, sc, from, step_t);
			sim_set(c, step_t, ppm);
			from = step_t;
			tn = tick_of(c, due);
		}
		scan(tc, c, sc, from, tn);
		CHECK(tsc_clock__update(tc, tn, sample_ns(c, tn)) == 0);
		sc->n++;
		t = from = tn;
	}
	return t;
}

/* A load-time calibration 200 ppm off (its two samples 4 us apart from
 * the truth over its 20 ms: what a preempted bracket can do): the samples
 * at 100 and 300 ms remove it, so from 0.4 s after load every 50 ms window
 * is within 1 ppm and 1 us of the clock. Before they existed (the first
 * recalibration a period after load) that took 2 s. */
static void test_start_off(void)
{
	struct sp_tsc_clock *m = map_new();
	struct sched sc = { .lim_ppm = 1, .lim_off_ns = 1000, .from = 0.4 };
	struct tsc_clock tc;
	struct sim c;
	uint64_t t = start(&tc, m, &c, 0);

	/* start() calibrated exactly; again, 4 us off at the second sample */
	CHECK(tsc_clock__start(&tc, m, START, sample_ns(&c, START), t,
			       sample_ns(&c, t) + 4000) == 0);
	t = run_sched(&tc, &c, t, 6, -1, 0, &sc);
	printf("    200 ppm off at load: within 1 ppm and 1 us from %.2f s on (%u samples); worst window after 0.4 s %.2f ppm\n",
	       sc.last_bad, sc.samples, sc.worst_ppm);
	CHECK(sc.last_bad <= 0.4);
	CHECK(sc.samples <= 2);
	CHECK(sc.worst_ppm <= 1);
	check_shape(m);
	free(m);
}

/* Frequency steps under the session's schedule: +500 ppm mid-period, then
 * the 1000 ppm swing to -500. A rate that moved is measured again 100 ms
 * later, so every window is within 1 ppm and 1 us of the clock 2.3 s after
 * the +500 step and 3.5 s after the swing (whose offset, up to 1 ms, goes
 * at the 500 ppm clamp); a sample a period later took 3.1 and 4.0 s. */
static void test_relock(void)
{
	struct sp_tsc_clock *m = map_new();
	struct sched sc = { .lim_ppm = 1, .lim_off_ns = 1000 };
	struct tsc_clock tc;
	struct sim c;
	uint64_t t = start(&tc, m, &c, 0);
	double worst[2];
	unsigned int k;

	for (k = 0; k < 2; k++) {
		double step, max = 0;
		int i;

		/* 20 phases of the step against the schedule */
		for (i = 0; i < 20; i++) {
			t = run_sched(&tc, &c, t, el_of(t) + 3, -1, 0, &sc);
			if (k == 1)	/* the swing starts from +500, settled */
				t = run_sched(&tc, &c, t, el_of(t) + 6,
					      el_of(t) + 0.5, 500, &sc);
			step = el_of(t) + 0.05 + (double)(rnd() % 950) / 1000.0;
			sc.last_bad = 0;
			t = run_sched(&tc, &c, t, step + 6, step,
				      k ? -500 : 500, &sc);
			if (sc.last_bad - step > max)
				max = sc.last_bad - step;
			/* back to 0, settled before the next phase */
			t = run_sched(&tc, &c, t, el_of(t) + 6, el_of(t) + 0.5,
				      0, &sc);
		}
		worst[k] = max;
	}
	printf("    within 1 ppm and 1 us of the clock %.2f s after a +500 ppm step, %.2f s after the swing to -500 (worst of 20 each); %lu re-locks\n",
	       worst[0], worst[1], tc.relocks);
	CHECK(worst[0] <= 2.3);
	CHECK(worst[1] <= 3.5);
	check_shape(m);
	free(m);
}

/* One update writes only the two slots after the newest SP_TSC_KEPT: no
 * slot a reader may look at changes under it. */
static void test_publish_slots(void)
{
	struct sp_tsc_clock *m = map_new(), *snap = map_new();
	struct tsc_clock tc;
	struct sim c;
	double el = 0;
	uint64_t t = start(&tc, m, &c, 0), k, changed = 0, n;

	/* wrap the ring once so every slot holds something */
	t = run(&tc, &c, t, SP_TSC_SEGS / 2 * 1.03, NULL, NULL, &el);
	memcpy(snap, m, sizeof(*m));
	n = m->count;
	t += ticks(1);
	CHECK(tsc_clock__update(&tc, t, sample_ns(&c, t)) == 0);
	CHECK_U64(m->count, n + 2);
	for (k = n - SP_TSC_KEPT; k < n; k++)
		changed += memcmp(&m->seg[k & (SP_TSC_SEGS - 1)],
				  &snap->seg[k & (SP_TSC_SEGS - 1)],
				  sizeof(struct sp_tsc_seg)) != 0;
	CHECK_U64(changed, 0);
	check_shape(m);
	free(snap);
	free(m);
}

/* A record older than the oldest kept segment (its thread blocked for
 * longer than the ring covers) is converted by extending that segment
 * backwards: below every later value, and off the clock by no more than
 * that segment's slope error over the extra time. */
static void test_older_than_kept(void)
{
	struct sp_tsc_clock *m = map_new();
	struct tsc_clock tc;
	struct sim c;
	double el = 0;
	uint64_t t = start(&tc, m, &c, 0), old, oldest;
	int64_t e;

	sim_set(&c, t, 20);	/* a small steady frequency offset */
	old = t + ticks(5);
	t = run(&tc, &c, t, SP_TSC_SEGS / 2 * 1.03 + 60, NULL, NULL, &el);
	oldest = m->seg[(m->count - SP_TSC_KEPT) & (SP_TSC_SEGS - 1)].base;
	CHECK(old < oldest);
	CHECK(sp_tsc_ns(m, old) <= sp_tsc_ns(m, oldest));
	CHECK(sp_tsc_ns(m, old - 1) <= sp_tsc_ns(m, old));
	e = err_at(&tc, &c, old);
	printf("    a tick %.0f s before the oldest kept segment: %+lld ns\n",
	       (double)(oldest - old) / (double)HZ, (long long)e);
	/* docs/numbers.md: the error grows at the oldest segment's slope
	 * error, 0.1 ppm in steady state: 7 us over these 70 s */
	CHECK(llabs(e) < 7000);
	free(m);
}

/* A sample whose rate is not a clock's (the clock stood still, as over a
 * suspend) leaves the rate as it was; the map stays monotone. */
static void test_rejected(void)
{
	struct sp_tsc_clock *m = map_new();
	struct tsc_clock tc;
	struct sim c;
	double el = 0;
	uint64_t t = start(&tc, m, &c, 0), rate;

	t = run(&tc, &c, t, 3, NULL, NULL, &el);
	rate = tc.rate;
	t += ticks(10);		/* 10 s of TSC, 1 s of clock */
	c.ns0 = sim_ns(&c, t) - 9000000000ull;
	c.t0 = t;
	CHECK(tsc_clock__update(&tc, t, sample_ns(&c, t)) == 0);
	CHECK_U64(tc.rejected, 1);
	CHECK_U64(tc.rate, rate);
	CHECK(tsc_clock__update(&tc, t, sample_ns(&c, t)) == -EINVAL);
	check_shape(m);
	free(m);
}

int main(void)
{
	RUN(test_ticks_ns_exact);
	RUN(test_converges);
	RUN(test_clamped);
	RUN(test_start_off);
	RUN(test_relock);
	RUN(test_publish_slots);
	RUN(test_older_than_kept);
	RUN(test_rejected);
	return check_status();
}
