// SPDX-License-Identifier: MIT
/*
 * Verdicts over two sets of runs (verdict.h). Times are compared on a log
 * scale (a 0 counts as 1 ns), so that an effect is a ratio and a query of
 * 1 ms and one of 1 s that both got 10% slower show the same 1.10; the
 * counts are compared as the sets of values each side had.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "verdict.h"

static const char *const verdict_names[VERDICT__MAX] = {
	[VERDICT_UNCHANGED] = "unchanged",
	[VERDICT_REGRESSED] = "regressed",
	[VERDICT_IMPROVED] = "improved",
	[VERDICT_NOISY] = "too noisy to say",
};

const char *verdict__name(enum verdict v)
{
	return v < VERDICT__MAX ? verdict_names[v] : "?";
}

const char *verdict__key(enum verdict v)
{
	return v == VERDICT_NOISY ? "too_noisy" : verdict__name(v);
}

bool verdict_row__listed(const struct verdict_row *r)
{
	return r->v != VERDICT_UNCHANGED || r->count_changed ||
	       r->status != DIFF_BOTH;
}

void verdicts__free(struct verdicts *v)
{
	unsigned int i;

	for (i = 0; v->rows && i < v->nrows; i++)
		free(v->rows[i].name);
	free(v->rows);
	memset(v, 0, sizeof(*v));
}

/* A time figure's comparison on the log scale, before the adjustment. */
struct shift {
	double shift, lo, hi;
};

/* Buffers for one figure of one query: raw values and their logs. */
struct bufs {
	double *rb, *rn, *lb, *ln, *tmp;
	struct stats_work w;
};

static void values(const struct run_set_query *q, unsigned int nruns,
		   enum run_fig f, double *raw, double *lg)
{
	unsigned int r;

	for (r = 0; r < nruns; r++) {
		uint64_t x = q ? q->v[(size_t)r * FIG__MAX + f] : 0;

		raw[r] = (double)x;
		lg[r] = log(x ? (double)x : 1.0);
	}
}

static bool all_equal(const double *a, unsigned int n, const double *b,
		      unsigned int m)
{
	unsigned int i;

	for (i = 1; i < n; i++)
		if (a[i] != a[0])
			return false;
	for (i = 0; i < m; i++)
		if (b[i] != a[0])
			return false;
	return true;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Sorts a[0..n) and drops repeats; returns the count left. */
static unsigned int uniq(double *a, unsigned int n)
{
	unsigned int i, k = 0;

	qsort(a, n, sizeof(*a), cmp_double);
	for (i = 0; i < n; i++)
		if (!k || a[i] != a[k - 1])
			a[k++] = a[i];
	return k;
}

/* A count changed: the two sides' sets of values differ. Reorders both. */
static bool count_changed(double *a, unsigned int n, double *b,
			  unsigned int m)
{
	unsigned int i;

	n = uniq(a, n);
	m = uniq(b, m);
	if (n != m)
		return true;
	for (i = 0; i < n; i++)
		if (a[i] != b[i])
			return true;
	return false;
}

/* The verdict of a change (log ratio) that was flagged or not, given
 * whether the noise leaves room for a change of the threshold's size. */
static enum verdict judge(double change, bool flagged, bool quiet)
{
	if (flagged)
		return change > 0 ? VERDICT_REGRESSED : VERDICT_IMPROVED;
	return quiet ? VERDICT_UNCHANGED : VERDICT_NOISY;
}

int verdict__judge_history(struct stats_work *w, const double *x,
			   unsigned int n, double y, double threshold,
			   double *scratch, double *ratio, double *fence,
			   enum verdict *v)
{
	double T = log1p(threshold), change, f;
	int err;

	memcpy(scratch, x, n * sizeof(*scratch));
	change = y - stats__median_inplace(scratch, n);
	*ratio = exp(change);
	*fence = NAN;
	err = stats__fence(w, x, n, &f);
	if (err == -EINVAL) {
		*v = VERDICT_NOISY;	/* too short a history */
		return 0;
	}
	if (err)
		return err;
	*fence = f;
	*v = judge(change, fabs(change) > f && fabs(change) >= T, f <= T);
	return 0;
}

static int one_figure(struct verdicts *v, struct verdict_row *row,
		      struct shift *sh, const struct run_set_query *bq,
		      const struct run_set_query *nq, enum run_fig f,
		      struct bufs *b)
{
	struct verdict_fig *fig = &row->f[f];
	unsigned int nb = v->nbase, nn = v->nnew;
	struct stats_cmp c;
	int err;

	values(bq, nb, f, b->rb, b->lb);
	values(nq, nn, f, b->rn, b->ln);
	err = stats__describe(&b->w, b->rb, nb, &fig->base);
	if (!err)
		err = stats__describe(&b->w, b->rn, nn, &fig->new);
	if (err)
		return err;
	fig->lo = fig->hi = fig->p = fig->p_adj = fig->fence = NAN;
	if (!run_fig__is_time(f)) {
		fig->changed = count_changed(b->rb, nb, b->rn, nn);
		return 0;
	}
	fig->ratio = 1;
	if (all_equal(b->lb, nb, b->ln, nn)) {
		/* Every run the same (often all 0): nothing to test. */
		fig->v = VERDICT_UNCHANGED;
		if (v->mode == VERDICT_HISTORY) {
			fig->fence = 0;
		} else {
			fig->lo = fig->hi = 1;
			fig->p = fig->p_adj = 1;
		}
		return 0;
	}
	if (v->mode == VERDICT_HISTORY)
		return verdict__judge_history(&b->w, b->lb, nb, b->ln[0],
					      v->o.threshold, b->tmp,
					      &fig->ratio, &fig->fence, &fig->v);
	err = stats__compare(&b->w, b->lb, nb, b->ln, nn, &c);
	if (err)
		return err;
	fig->tested = true;
	fig->p = c.p;
	fig->ratio = exp(c.shift);
	fig->lo = exp(c.lo);
	fig->hi = exp(c.hi);
	sh->shift = c.shift;
	sh->lo = c.lo;
	sh->hi = c.hi;
	return 0;
}

/* Samples mode: each time figure's p-values adjusted over the queries
 * tested on it, then each figure judged. */
static int adjust(struct verdicts *v, struct shift *sh)
{
	double T = log1p(v->o.threshold), *p, *adj;
	unsigned int f, i, k;
	int err = 0;

	p = malloc((v->nrows ? v->nrows : 1) * sizeof(*p));
	adj = malloc((v->nrows ? v->nrows : 1) * sizeof(*adj));
	if (!p || !adj) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (f = 0; f < FIG_NTIMES; f++) {
		for (i = k = 0; i < v->nrows; i++)
			if (v->rows[i].f[f].tested)
				p[k++] = v->rows[i].f[f].p;
		if (f == FIG_SELF)
			v->ntested = k;
		err = stats__bh(p, k, adj);
		if (err)
			goto cleanup;
		for (i = k = 0; i < v->nrows; i++) {
			struct verdict_fig *fig = &v->rows[i].f[f];
			const struct shift *s = &sh[(size_t)i * FIG_NTIMES + f];

			if (!fig->tested)
				continue;
			fig->p_adj = adj[k++];
			fig->v = judge(s->shift, fig->p_adj <= v->o.fdr &&
					fabs(s->shift) >= T,
				       (s->hi - s->lo) / 2 <= T);
		}
	}
cleanup:
	free(p);
	free(adj);
	return err;
}

static int cmp_row(const void *a, const void *b)
{
	const struct verdict_row *x = a, *y = b;
	double ex = fabs(x->effect_ns), ey = fabs(y->effect_ns);

	if (ex != ey)
		return ex > ey ? -1 : 1;
	return strcmp(x->name, y->name);
}

static void finish_row(struct verdicts *v, struct verdict_row *r)
{
	const struct verdict_fig *s = &r->f[FIG_SELF];
	unsigned int f;

	r->v = s->v;
	for (f = FIG_NTIMES; f < FIG__MAX; f++)
		r->count_changed |= r->f[f].changed;
	if (r->status == DIFF_BOTH)
		r->effect_ns = s->base.median * (s->ratio - 1);
	else
		r->effect_ns = s->new.median - s->base.median;
	v->n[r->v]++;
	v->ncount_changed += r->count_changed;
	v->nnew_q += r->status == DIFF_NEW;
	v->ngone += r->status == DIFF_GONE;
}

int verdicts__build(struct verdicts *v, const struct run_set *base,
		    const struct run_set *new, const struct verdict_opts *o)
{
	unsigned int i = 0, j = 0, k, f, most;
	struct shift *sh = NULL;
	struct bufs b = { 0 };
	int err = 0;

	memset(v, 0, sizeof(*v));
	v->o = *o;
	v->nbase = base->nruns;
	v->nnew = new->nruns;
	v->mode = new->nruns == 1 && base->nruns >= 2 ? VERDICT_HISTORY
						       : VERDICT_SAMPLES;
	stats_work__init(&b.w);
	most = base->nruns > new->nruns ? base->nruns : new->nruns;
	v->rows = calloc((size_t)base->nq + new->nq + 1, sizeof(*v->rows));
	sh = calloc(((size_t)base->nq + new->nq + 1) * FIG_NTIMES, sizeof(*sh));
	b.rb = malloc((most + 1) * sizeof(double));
	b.rn = malloc((most + 1) * sizeof(double));
	b.lb = malloc((most + 1) * sizeof(double));
	b.ln = malloc((most + 1) * sizeof(double));
	b.tmp = malloc((most + 1) * sizeof(double));
	if (!v->rows || !sh || !b.rb || !b.rn || !b.lb || !b.ln || !b.tmp) {
		err = -ENOMEM;
		goto cleanup;
	}
	/* Merge join by name: both sets are sorted by it. */
	while (!err && (i < base->nq || j < new->nq)) {
		const struct run_set_query *bq = NULL, *nq = NULL;
		struct verdict_row *r = &v->rows[v->nrows];
		int c = i == base->nq ? 1 : j == new->nq ? -1 :
			strcmp(base->q[i].name, new->q[j].name);

		if (c <= 0)
			bq = &base->q[i++];
		if (c >= 0)
			nq = &new->q[j++];
		r->name = strdup(bq ? bq->name : nq->name);
		if (!r->name) {
			err = -ENOMEM;
			break;
		}
		v->nrows++;
		r->status = c < 0 ? DIFF_GONE : c > 0 ? DIFF_NEW : DIFF_BOTH;
		for (f = 0; !err && f < FIG__MAX; f++)
			err = one_figure(v, r, f < FIG_NTIMES ?
					 &sh[(size_t)(v->nrows - 1) * FIG_NTIMES + f] :
					 NULL, bq, nq, f, &b);
	}
	if (!err && v->mode == VERDICT_SAMPLES)
		err = adjust(v, sh);
	if (err)
		goto cleanup;
	for (k = 0; k < v->nrows; k++)
		finish_row(v, &v->rows[k]);
	if (v->nrows > 1)
		qsort(v->rows, v->nrows, sizeof(*v->rows), cmp_row);
cleanup:
	free(sh);
	free(b.rb);
	free(b.rn);
	free(b.lb);
	free(b.ln);
	free(b.tmp);
	stats_work__free(&b.w);
	return err;
}
