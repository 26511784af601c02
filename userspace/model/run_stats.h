/* SPDX-License-Identifier: MIT */
/*
 * The statistics of one set of runs (run_set.h), per query and figure:
 * mean, median, spread and the median's 95% interval (stats.h). What
 * `sptrace bench` prints about the runs it made.
 */
#ifndef SPTRACE_RUN_STATS_H
#define SPTRACE_RUN_STATS_H

#include "run_set.h"
#include "stats.h"

struct run_stats_row {
	const char *name;		/* the set's */
	unsigned int present;		/* runs that have the query */
	struct stats_desc f[FIG__MAX];
};

struct run_stats {
	unsigned int nruns;
	struct run_stats_row *rows;	/* by median self time, largest first */
	unsigned int nrows;
};

/* The statistics of s (finished; it must outlive st). 0 or -ENOMEM. */
int run_stats__build(struct run_stats *st, const struct run_set *s);
void run_stats__free(struct run_stats *st);

#endif /* SPTRACE_RUN_STATS_H */
