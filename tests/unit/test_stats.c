// SPDX-License-Identifier: MIT
/*
 * The statistics and verdicts of repeated runs (model/stats.c, run_set.c,
 * verdict.c) against stats_expected.h: the same figures computed by an
 * independent Python reference (stats_reference.py, exact fractions and
 * big integers), on fixed data. Then what the reference does not cover:
 * the joining of rows into a set, and the order of the rows.
 */
#include <errno.h>
#include <math.h>
#include "check.h"
#include "stats.h"
#include "stats_expected.h"
#include "run_set.h"
#include "verdict.h"

/* Equal within 1e-9 relative (the reference sums and rounds its own
 * way), NAN to NAN, infinities exactly. */
static bool near(double got, double want)
{
	if (isnan(want))
		return isnan(got);
	if (isinf(want))
		return got == want;
	return fabs(got - want) <= 1e-9 * fmax(1, fabs(want));
}

#define CHECK_NEAR(got, want, what, i)					\
	do {								\
		double g_ = (got), w_ = (want);				\
		if (!near(g_, w_)) {					\
			printf("FAIL %s:%d: %s [%u]: %.17g, want %.17g\n", \
			       __FILE__, __LINE__, what, (unsigned)(i), g_, w_); \
			check_failed++;					\
		}							\
	} while (0)

#define N(a) (sizeof(a) / sizeof((a)[0]))

static void test_describe(void)
{
	struct stats_work w;
	struct stats_desc d;
	unsigned int i;

	stats_work__init(&w);
	for (i = 0; i < N(exp_desc); i++) {
		const struct exp_desc *e = &exp_desc[i];

		CHECK(!stats__describe(&w, e->v, e->n, &d));
		CHECK_U64(d.n, e->n);
		CHECK_NEAR(d.mean, e->mean, "mean", i);
		CHECK_NEAR(d.median, e->median, "median", i);
		CHECK_NEAR(d.sd, e->sd, "sd", i);
		CHECK_NEAR(d.mad, e->mad, "mad", i);
		CHECK_NEAR(d.min, e->min, "min", i);
		CHECK_NEAR(d.max, e->max, "max", i);
		CHECK_NEAR(d.ci_lo, e->ci_lo, "ci_lo", i);
		CHECK_NEAR(d.ci_hi, e->ci_hi, "ci_hi", i);
	}
	stats_work__free(&w);
}

static void test_compare(void)
{
	struct stats_work w;
	struct stats_cmp c;
	unsigned int i, rep;

	stats_work__init(&w);
	/* Twice: the second pass reuses the cached null distribution. */
	for (rep = 0; rep < 2; rep++) {
		for (i = 0; i < N(exp_cmp); i++) {
			const struct exp_cmp *e = &exp_cmp[i];

			CHECK(!stats__compare(&w, e->x, e->n, e->y, e->m, &c));
			CHECK_NEAR(c.u, e->u, "u", i);
			CHECK_NEAR(c.p, e->p, "p", i);
			CHECK(c.exact == e->exact);
			CHECK_NEAR(c.shift, e->shift, "shift", i);
			CHECK_NEAR(c.lo, e->lo, "lo", i);
			CHECK_NEAR(c.hi, e->hi, "hi", i);
		}
	}
	stats_work__free(&w);
}

static void test_bh(void)
{
	double adj[N(bh_p)];
	unsigned int i;

	CHECK(!stats__bh(bh_p, N(bh_p), adj));
	for (i = 0; i < N(bh_p); i++)
		CHECK_NEAR(adj[i], bh_adj[i], "bh", i);
}

static void test_fence(void)
{
	struct stats_work w;
	unsigned int i;
	double f;

	stats_work__init(&w);
	for (i = 0; i < N(exp_fence); i++) {
		const struct exp_fence *e = &exp_fence[i];
		int err = stats__fence(&w, e->x, e->n, &f);

		CHECK(e->ok ? !err : err == -EINVAL);
		if (e->ok)
			CHECK_NEAR(f, e->fence, "fence", i);
	}
	stats_work__free(&w);
}

static int set_of(struct run_set *s, const struct exp_query *q,
		  unsigned int nq, unsigned int nruns)
{
	int64_t ids[64];
	unsigned int i, r;
	int err;

	for (r = 0; r < nruns; r++)
		ids[r] = r + 1;
	err = run_set__init(s, ids, nruns);
	for (i = 0; !err && i < nq; i++)
		for (r = 0; !err && r < nruns; r++)
			err = run_set__add(s, r, q[i].name,
					   &q[i].v[(size_t)r * EXP_FIGS]);
	return err ? err : run_set__finish(s);
}

static const struct verdict_row *row_named(const struct verdicts *v,
					   const char *name)
{
	unsigned int i;

	for (i = 0; i < v->nrows; i++)
		if (!strcmp(v->rows[i].name, name))
			return &v->rows[i];
	return NULL;
}

static void test_verdicts(void)
{
	const struct verdict_opts o = { VERDICT_DEFAULT_THRESHOLD,
					VERDICT_DEFAULT_FDR };
	unsigned int s, i, f;

	_Static_assert(EXP_FIGS == FIG__MAX, "the reference's figures");
	for (s = 0; s < N(exp_sets); s++) {
		const struct exp_set *e = &exp_sets[s];
		struct run_set b, n;
		struct verdicts v;

		CHECK(!set_of(&b, e->base, e->nbase_q, e->nbase));
		CHECK(!set_of(&n, e->new, e->nnew_q, e->nnew));
		CHECK(!verdicts__build(&v, &b, &n, &o));
		CHECK_U64(v.nrows, e->nwant);
		CHECK(v.mode == (e->nnew == 1 && e->nbase >= 2 ?
				 VERDICT_HISTORY : VERDICT_SAMPLES));
		for (i = 0; i < e->nwant; i++) {
			const struct exp_result *w = &e->want[i];
			const struct verdict_row *r = row_named(&v, w->name);

			CHECK(r != NULL);
			if (!r)
				continue;
			CHECK_STR(verdict__name(r->v), w->verdict);
			CHECK_NEAR(r->f[FIG_SELF].ratio, w->ratio, "ratio", i);
			CHECK_NEAR(r->f[FIG_SELF].lo, w->lo, "lo", i);
			CHECK_NEAR(r->f[FIG_SELF].hi, w->hi, "hi", i);
			CHECK_NEAR(r->f[FIG_SELF].p, w->p, "p", i);
			CHECK_NEAR(r->f[FIG_SELF].p_adj, w->p_adj, "p_adj", i);
			CHECK_NEAR(r->f[FIG_SELF].fence, w->fence, "fence", i);
			CHECK_NEAR(r->effect_ns, w->effect, "effect", i);
			for (f = 0; f < FIG_NTIMES; f++)
				CHECK_STR(verdict__name(r->f[f].v),
					  w->fig_verdicts[f]);
			for (f = FIG_NTIMES; f < FIG__MAX; f++)
				CHECK(r->f[f].changed ==
				      w->changed[f - FIG_NTIMES]);
		}
		/* Sorted by the size of the effect, largest first. */
		for (i = 1; i < v.nrows; i++)
			CHECK(fabs(v.rows[i - 1].effect_ns) >=
			      fabs(v.rows[i].effect_ns));
		verdicts__free(&v);
		run_set__free(&b);
		run_set__free(&n);
	}
}

/* Rows of one name in one run (several processes) sum, but for the
 * percentiles, which keep the largest; a run without the query holds 0;
 * names join as diff.h joins them. */
static void test_run_set(void)
{
	const int64_t ids[] = { 7, 9, 12 };
	uint64_t a[FIG__MAX] = { 0 }, b[FIG__MAX] = { 0 };
	const struct run_set_query *q;
	struct run_set s;

	a[FIG_SELF] = 100;
	a[FIG_P50] = 40;
	a[FIG_COUNT] = 3;
	b[FIG_SELF] = 50;
	b[FIG_P50] = 90;
	b[FIG_COUNT] = 2;
	CHECK(!run_set__init(&s, ids, 3));
	CHECK(!run_set__add(&s, 2, "q", a));
	CHECK(!run_set__add(&s, 0, "q", a));
	CHECK(!run_set__add(&s, 0, "q", b));
	CHECK(!run_set__add(&s, 1, "bad\xff", b));
	CHECK(run_set__add(&s, 3, "q", a) == -EINVAL);
	CHECK(!run_set__finish(&s));
	CHECK_U64(s.nq, 2);
	q = run_set__find(&s, "q");
	CHECK(q && q->present == 2);
	if (q) {
		CHECK_U64(q->v[0 * FIG__MAX + FIG_SELF], 150);
		CHECK_U64(q->v[0 * FIG__MAX + FIG_P50], 90);
		CHECK_U64(q->v[0 * FIG__MAX + FIG_COUNT], 5);
		CHECK_U64(q->v[1 * FIG__MAX + FIG_SELF], 0);
		CHECK_U64(q->v[2 * FIG__MAX + FIG_SELF], 100);
	}
	q = run_set__find(&s, "bad\xef\xbf\xbd");
	CHECK(q && q->present == 1);
	CHECK(!run_set__find(&s, "none"));
	run_set__free(&s);
}

int main(void)
{
	RUN(test_describe);
	RUN(test_compare);
	RUN(test_bh);
	RUN(test_fence);
	RUN(test_verdicts);
	RUN(test_run_set);
	return check_status();
}
