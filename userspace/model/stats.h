/* SPDX-License-Identifier: MIT */
/*
 * The statistics of repeated runs (docs/numbers.md, "Repeated runs and
 * verdicts"): one sample described, two samples compared by the
 * Mann-Whitney test with the Hodges-Lehmann estimate and its exact
 * interval, p-values adjusted by Benjamini-Hochberg, and the fence of a
 * history's run-to-run changes. Pure arithmetic on doubles; the verdicts
 * built on it are verdict.h. tests/unit/stats_reference.py computes the
 * same figures independently.
 */
#ifndef SPTRACE_STATS_H
#define SPTRACE_STATS_H

#include <stdbool.h>
#include <stddef.h>

/* Every interval is 95%. */
#define STATS_Z975 1.959963984540054
/* Samples up to this size, without ties, get exact p-values and
 * intervals; larger ones, or with ties, the normal approximation. */
#define STATS_EXACT_MAX 50

/* One sample. */
struct stats_desc {
	unsigned int n;
	double mean, median, sd;	/* sd: sample (n - 1); 0 for n = 1 */
	double mad;			/* median of |x - median| */
	double min, max;
	/* The median's 95% interval from the order statistics (exact, no
	 * assumption on the distribution); NAN when n < 6 gives none. */
	double ci_lo, ci_hi;
};

/* Two samples x (base, n) and y (new, m). */
struct stats_cmp {
	double u;		/* pairs with y > x, ties counting 1/2 */
	double p;		/* two-sided p-value of "no shift" */
	bool exact;		/* exact distribution, else normal */
	double shift;		/* Hodges-Lehmann: median of y_j - x_i */
	double lo, hi;		/* 95% interval of the shift; -/+INFINITY
				 * when the samples are too small for one */
};

/* Scratch space kept from one comparison to the next (the pairwise
 * differences, the null distribution of the last sizes). */
struct stats_work {
	double *diff;
	size_t diff_cap;
	double *cdf;		/* P(U <= u), u = 0 .. n * m */
	unsigned int cdf_n, cdf_m;
	double *scratch;
	size_t scratch_cap;
};

void stats_work__init(struct stats_work *w);
void stats_work__free(struct stats_work *w);

/* Describes v[0..n) (n >= 1; v is left as it was). 0 or -ENOMEM. */
int stats__describe(struct stats_work *w, const double *v, unsigned int n,
		    struct stats_desc *d);
/* Compares y to x (n, m >= 1). 0 or -ENOMEM. */
int stats__compare(struct stats_work *w, const double *x, unsigned int n,
		   const double *y, unsigned int m, struct stats_cmp *c);
/* Benjamini-Hochberg: adj[i] is p[i] adjusted over the n p-values (the
 * smallest false discovery rate at which p[i] would be a discovery).
 * 0 or -ENOMEM. */
int stats__bh(const double *p, unsigned int n, double *adj);
/*
 * The fence of a history x[0..n) in run order (perf.rust-lang.org's
 * significance threshold): Q3 + 3 * (Q3 - Q1) of the n - 1 changes
 * |x[i + 1] - x[i]|, Q1 and Q3 the medians of the lower and upper half
 * (the middle one left out when odd). -EINVAL when n < 4 (fewer than 3
 * changes), else 0 or -ENOMEM.
 */
int stats__fence(struct stats_work *w, const double *x, unsigned int n,
		 double *fence);
/* The median of v[0..n) (n >= 1), reordering v. */
double stats__median_inplace(double *v, size_t n);

#endif /* SPTRACE_STATS_H */
