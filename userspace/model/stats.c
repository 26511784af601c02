// SPDX-License-Identifier: MIT
/*
 * The statistics of repeated runs (stats.h). Why these methods, in plain
 * words: docs/numbers.md, "Repeated runs and verdicts".
 *
 * Run times are skewed and carry outliers (a run that shared its CPU), so
 * nothing here assumes a normal distribution: the comparison is the
 * Mann-Whitney test, which only ranks the runs, and its effect is the
 * Hodges-Lehmann estimate, the median of every pairwise difference, whose
 * interval comes from the same rank distribution. Up to STATS_EXACT_MAX
 * runs a side, without ties, that distribution is counted exactly (the
 * recurrence below, in doubles: its counts are sums of positive terms, so
 * no cancellation); beyond, or with ties (histogram percentiles are bucket
 * bounds and tie often), the normal approximation with the tie correction.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "stats.h"
#include "vec.h"

void stats_work__init(struct stats_work *w)
{
	memset(w, 0, sizeof(*w));
}

void stats_work__free(struct stats_work *w)
{
	free(w->diff);
	free(w->cdf);
	free(w->scratch);
	memset(w, 0, sizeof(*w));
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Puts the k-th smallest (0-based) of a[0..n) at a[k], none larger
 * before it and none smaller after it (Wirth's selection). */
static void select_kth(double *a, size_t n, size_t k)
{
	long lo = 0, hi = (long)n - 1, kk = (long)k, i, j;
	double pivot, t;

	while (lo < hi) {
		pivot = a[kk];
		i = lo;
		j = hi;
		do {
			while (a[i] < pivot)
				i++;
			while (pivot < a[j])
				j--;
			if (i <= j) {
				t = a[i];
				a[i] = a[j];
				a[j] = t;
				i++;
				j--;
			}
		} while (i <= j);
		if (j < kk)
			lo = i;
		if (kk < i)
			hi = j;
	}
}

double stats__median_inplace(double *v, size_t n)
{
	size_t h = n / 2;

	select_kth(v, n, h);
	if (n % 2)
		return v[h];
	/* Even: the mean of the two middle values; after the select, the
	 * upper one is v[h] and the lower the largest of v[0..h). */
	{
		double lower = v[0];
		size_t i;

		for (i = 1; i < h; i++)
			if (v[i] > lower)
				lower = v[i];
		return (lower + v[h]) / 2;
	}
}

static int scratch(struct stats_work *w, size_t n)
{
	return VEC_RESERVE(w->scratch, w->scratch_cap, n);
}

/* The largest k with P(Bin(n, 1/2) <= k - 1) <= 0.025: the median's
 * interval is the k-th smallest to the k-th largest. 0: none. */
static unsigned int median_rank(unsigned int n)
{
	double cdf = 0, lp;
	unsigned int k = 0;

	while (k < n) {
		lp = lgamma(n + 1.0) - lgamma(k + 1.0) - lgamma(n - k + 1.0) -
		     n * M_LN2;
		if (cdf + exp(lp) > 0.025)
			break;
		cdf += exp(lp);
		k++;
	}
	return k;
}

int stats__describe(struct stats_work *w, const double *v, unsigned int n,
		    struct stats_desc *d)
{
	double sum = 0, ss = 0, *s;
	unsigned int i, k;

	memset(d, 0, sizeof(*d));
	d->n = n;
	d->ci_lo = d->ci_hi = NAN;
	if (!n)
		return 0;
	if (scratch(w, n))
		return -ENOMEM;
	s = w->scratch;
	memcpy(s, v, n * sizeof(*s));
	qsort(s, n, sizeof(*s), cmp_double);
	for (i = 0; i < n; i++)
		sum += s[i];
	d->mean = sum / n;
	for (i = 0; i < n; i++)
		ss += (s[i] - d->mean) * (s[i] - d->mean);
	d->sd = n > 1 ? sqrt(ss / (n - 1)) : 0;
	d->min = s[0];
	d->max = s[n - 1];
	d->median = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
	k = median_rank(n);
	if (k) {
		d->ci_lo = s[k - 1];
		d->ci_hi = s[n - k];
	}
	for (i = 0; i < n; i++)
		s[i] = fabs(s[i] - d->median);
	d->mad = stats__median_inplace(s, n);
	return 0;
}

/*
 * P(U <= u) for u = 0 .. n * m with no ties: f(i, j, u), the number of
 * orderings of i x's and j y's in which u pairs have y above x, is
 * f(i, j - 1, u - i) (the largest value is a y, above all i x's) plus
 * f(i - 1, j, u) (it is an x). Kept for the next call with the same sizes.
 */
static int null_cdf(struct stats_work *w, unsigned int n, unsigned int m)
{
	size_t stride = (size_t)n * m + 1, j, u;
	double *prev, *cur, *t, total = 0, cum = 0;
	unsigned int i;

	if (w->cdf && w->cdf_n == n && w->cdf_m == m)
		return 0;
	prev = calloc((m + 1) * stride, sizeof(*prev));
	cur = calloc((m + 1) * stride, sizeof(*cur));
	t = realloc(w->cdf, stride * sizeof(*t));
	if (!prev || !cur || !t) {
		free(prev);
		free(cur);
		if (t)
			w->cdf = t;
		w->cdf_n = w->cdf_m = 0;
		return -ENOMEM;
	}
	w->cdf = t;
	for (j = 0; j <= m; j++)
		prev[j * stride] = 1;		/* f(0, j, 0) */
	for (i = 1; i <= n; i++) {
		memset(cur, 0, (m + 1) * stride * sizeof(*cur));
		cur[0] = 1;			/* f(i, 0, 0) */
		for (j = 1; j <= m; j++)
			for (u = 0; u <= (size_t)i * j; u++)
				cur[j * stride + u] = prev[j * stride + u] +
					(u >= i ? cur[(j - 1) * stride + u - i] : 0);
		t = prev;
		prev = cur;
		cur = t;
	}
	for (u = 0; u < stride; u++)
		total += prev[m * stride + u];
	for (u = 0; u < stride; u++) {
		cum += prev[m * stride + u];
		w->cdf[u] = cum / total;
	}
	free(prev);
	free(cur);
	w->cdf_n = n;
	w->cdf_m = m;
	return 0;
}

/* Sum of t^3 - t over the groups of t equal values of x and y together;
 * 0 when all differ. */
static int tie_sum(struct stats_work *w, const double *x, unsigned int n,
		   const double *y, unsigned int m, double *ties)
{
	size_t i, t, nn = (size_t)n + m;
	double *s;

	if (scratch(w, nn))
		return -ENOMEM;
	s = w->scratch;
	memcpy(s, x, n * sizeof(*s));
	memcpy(s + n, y, m * sizeof(*s));
	qsort(s, nn, sizeof(*s), cmp_double);
	*ties = 0;
	for (i = 0; i < nn; i += t) {
		for (t = 1; i + t < nn && s[i + t] == s[i]; t++)
			;
		*ties += (double)t * t * t - (double)t;
	}
	return 0;
}

int stats__compare(struct stats_work *w, const double *x, unsigned int n,
		   const double *y, unsigned int m, struct stats_cmp *c)
{
	size_t nm = (size_t)n * m, i, j, k, above = 0, equal = 0;
	double mu = nm / 2.0, sigma, ties, z, *d;
	size_t lim;
	int err;

	memset(c, 0, sizeof(*c));
	c->lo = -INFINITY;
	c->hi = INFINITY;
	c->p = 1;
	if (!n || !m)
		return 0;
	if (VEC_RESERVE(w->diff, w->diff_cap, nm))
		return -ENOMEM;
	d = w->diff;
	for (i = 0; i < n; i++)
		for (j = 0; j < m; j++) {
			double v = y[j] - x[i];

			d[i * m + j] = v;
			above += v > 0;
			equal += v == 0;
		}
	c->u = (double)above + (double)equal / 2;
	err = tie_sum(w, x, n, y, m, &ties);
	if (err)
		return err;
	c->exact = !ties && n <= STATS_EXACT_MAX && m <= STATS_EXACT_MAX;
	if (c->exact) {
		size_t uu = above;	/* an integer: no ties */
		double le, ge;

		err = null_cdf(w, n, m);
		if (err)
			return err;
		le = w->cdf[uu];
		ge = uu ? 1 - w->cdf[uu - 1] : 1;
		c->p = fmin(1, 2 * fmin(le, ge));
		/* k: the largest with P(U <= k - 1) <= 0.025. */
		for (k = 0; k <= nm && w->cdf[k] <= 0.025 * (1 + 1e-12); k++)
			;
	} else {
		double nn = (double)n + m;

		sigma = sqrt((double)nm / 12 *
			     ((nn + 1) - ties / (nn * (nn - 1))));
		if (sigma > 0) {
			z = (fabs(c->u - mu) - 0.5) / sigma;
			c->p = fmin(1, erfc(fmax(z, 0) / M_SQRT2));
		}
		z = floor(mu - STATS_Z975 * sigma);
		k = z > 0 ? (size_t)z : 0;
	}
	/* The shift: the median of the differences; its interval, the k-th
	 * smallest to the k-th largest. */
	c->shift = stats__median_inplace(d, nm);
	if (k >= 1 && k - 1 <= nm - k) {
		lim = k - 1;
		select_kth(d, nm, lim);
		c->lo = d[lim];
		lim = nm - k;
		select_kth(d, nm, lim);
		c->hi = d[lim];
	}
	return 0;
}

struct p_at {
	double p;
	unsigned int i;
};

static int cmp_p(const void *a, const void *b)
{
	const struct p_at *x = a, *y = b;

	if (x->p != y->p)
		return x->p < y->p ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

int stats__bh(const double *p, unsigned int n, double *adj)
{
	struct p_at *v;
	double run = 1;
	unsigned int r;

	if (!n)
		return 0;
	v = malloc(n * sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (r = 0; r < n; r++)
		v[r] = (struct p_at){ p[r], r };
	qsort(v, n, sizeof(*v), cmp_p);
	/* From the largest p down: adj of rank r (1-based) is the smallest
	 * p_(j) * n / j over j >= r. */
	for (r = n; r >= 1; r--) {
		double a = v[r - 1].p * n / r;

		if (a < run)
			run = a;
		adj[v[r - 1].i] = run;
	}
	free(v);
	return 0;
}

/* The median of the sorted s[0..n). */
static double sorted_median(const double *s, size_t n)
{
	return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

int stats__fence(struct stats_work *w, const double *x, unsigned int n,
		 double *fence)
{
	size_t k, h, i;
	double q1, q3, *d;

	if (n < 4)
		return -EINVAL;
	k = n - 1;
	if (scratch(w, k))
		return -ENOMEM;
	d = w->scratch;
	for (i = 0; i < k; i++)
		d[i] = fabs(x[i + 1] - x[i]);
	qsort(d, k, sizeof(*d), cmp_double);
	h = k / 2;
	q1 = sorted_median(d, h);
	q3 = sorted_median(d + k - h, h);
	*fence = q3 + 3 * (q3 - q1);
	return 0;
}
