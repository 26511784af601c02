/* SPDX-License-Identifier: MIT */
/*
 * Trends of a history (`sptrace history`): each run of a set judged, query
 * by query, against the runs before it of the same program, by the rule
 * of verdict.h's history mode. A run that breaks a query's trend is one
 * whose self time is beyond the fence of the runs before it.
 */
#ifndef SPTRACE_TREND_H
#define SPTRACE_TREND_H

#include "run_set.h"
#include "verdict.h"

/* How one run of one query stands against the runs before it. */
struct trend_point {
	bool judged;		/* enough earlier runs of its program (>= 4) */
	enum verdict v;
	double ratio;		/* self time / the earlier runs' median */
	double fence;		/* their fence, a log ratio */
};

struct trend {
	unsigned int nruns, nq;
	struct trend_point *p;	/* [query * nruns + run], queries as the set's */
	unsigned int *breaks;	/* per query: runs regressed or improved */
};

/*
 * Judges every run of s (finished, runs in order) for every query against
 * the at most `window` runs before it with the same group[] (e.g. the same
 * command line). 0 or -ENOMEM.
 */
int trend__build(struct trend *t, const struct run_set *s,
		 const unsigned int *group, unsigned int window,
		 double threshold);
void trend__free(struct trend *t);

#endif /* SPTRACE_TREND_H */
