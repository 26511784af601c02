/* SPDX-License-Identifier: MIT */
/*
 * Verdicts: which queries really changed between two sets of runs
 * (run_set.h), and which only moved within their noise. Two modes:
 *
 * - samples (both sets have several runs): per query and time figure,
 *   the Mann-Whitney test on log times, the Hodges-Lehmann ratio and its
 *   95% interval (stats.h); p-values adjusted across the queries by
 *   Benjamini-Hochberg;
 * - history (one new run against several earlier ones): the new run's
 *   change from the history's median against the fence of the history's
 *   own run-to-run changes (perf.rust-lang.org's significance threshold).
 *
 * Counts are compared exactly. The rules, in plain words, with an
 * example: docs/numbers.md, "Repeated runs and verdicts".
 */
#ifndef SPTRACE_VERDICT_H
#define SPTRACE_VERDICT_H

#include <stdbool.h>
#include <stdint.h>
#include "diff.h"
#include "run_set.h"
#include "stats.h"

enum verdict {
	VERDICT_UNCHANGED = 0,	/* any change is below the threshold */
	VERDICT_REGRESSED,	/* slower, beyond the noise */
	VERDICT_IMPROVED,	/* faster, beyond the noise */
	VERDICT_NOISY,		/* the noise is wider than the threshold */
	VERDICT__MAX,
};

enum verdict_mode {
	VERDICT_SAMPLES = 0,	/* two sets of runs */
	VERDICT_HISTORY,	/* one run against a history */
};

#define VERDICT_DEFAULT_THRESHOLD 0.02	/* changes under 2% count as none */
#define VERDICT_DEFAULT_FDR 0.05	/* false discovery rate */

struct verdict_opts {
	double threshold;	/* fraction: 0.02 is 2% */
	double fdr;		/* Benjamini-Hochberg's q */
};

/* One figure of one query. */
struct verdict_fig {
	struct stats_desc base, new;	/* of the figures themselves */
	/* Times: */
	bool tested;		/* compared (not every run the same) */
	double ratio;		/* new / base: the estimate */
	double lo, hi;		/* samples: its 95% interval (0/INFINITY:
				 * too few runs for one); history: NAN */
	double p, p_adj;	/* samples: p-value, adjusted; history: NAN */
	double fence;		/* history: the noise fence, as a log ratio
				 * (exp(fence) - 1 is a fraction); samples: NAN */
	enum verdict v;
	/* Counts: */
	bool changed;		/* the sides' sets of values differ */
};

struct verdict_row {
	char *name;			/* owned */
	enum diff_status status;	/* in both sets, only new, only base */
	struct verdict_fig f[FIG__MAX];
	enum verdict v;			/* self time's: the row's verdict */
	bool count_changed;		/* any count figure changed */
	/* The change of the query's self time in ns: what it adds to (or
	 * takes from) the program's total time. Rows are sorted by it. */
	double effect_ns;
};

struct verdicts {
	enum verdict_mode mode;
	struct verdict_opts o;
	unsigned int nbase, nnew;	/* runs */
	struct verdict_row *rows;	/* by |effect_ns| desc, then name */
	unsigned int nrows;
	unsigned int n[VERDICT__MAX];	/* rows per verdict */
	unsigned int ncount_changed, nnew_q, ngone;
	unsigned int ntested;		/* self time's family (samples) */
};

/* "regressed", "improved", "unchanged", "too noisy to say". */
const char *verdict__name(enum verdict v);
/* The same as one word, for JSON and CSV: "too_noisy" for the last. */
const char *verdict__key(enum verdict v);
/*
 * Compares new with base (both finished). History mode when new has one
 * run and base several; samples mode otherwise. 0 or -ENOMEM; v is ready
 * for verdicts__free() either way.
 */
int verdicts__build(struct verdicts *v, const struct run_set *base,
		    const struct run_set *new, const struct verdict_opts *o);
void verdicts__free(struct verdicts *v);
/*
 * The history rule for one figure: the new run's log value y against the
 * log values x[0..n) of the runs before it, in run order. *ratio is the
 * change from their median (exp), *fence their noise fence (a log ratio;
 * NAN when n < 4, too short a history). 0 or -ENOMEM.
 */
int verdict__judge_history(struct stats_work *w, const double *x,
			   unsigned int n, double y, double threshold,
			   double *scratch, double *ratio, double *fence,
			   enum verdict *v);
/* Whether the default listing shows the row: its verdict is not
 * unchanged, a count changed, or the query is in one set only. */
bool verdict_row__listed(const struct verdict_row *r);

#endif /* SPTRACE_VERDICT_H */
