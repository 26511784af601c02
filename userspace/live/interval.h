/* SPDX-License-Identifier: MIT */
/*
 * Continuous mode (sptrace --interval): per-interval figures as the
 * difference of two cumulative reads.
 */
#ifndef SPTRACE_INTERVAL_H
#define SPTRACE_INTERVAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "summary.h"

struct interval {
	struct summary prev;	/* cumulative, per pid, at the last tick */
};

void interval__init(struct interval *iv);
void interval__free(struct interval *iv);
/*
 * Fills `out` (initialised, empty; made per pid) with cur - prev, then
 * takes `cur` as the new prev (copied). Rows whose pid is in `folded`
 * (sorted; see struct exited_rows) were moved to pid 0 in `cur`, and are moved
 * the same way in prev first. Counts, times and histogram buckets
 * subtract exactly. min/max: exact when the interval set a new extreme,
 * else the bound of the lowest/highest bucket of the interval's histogram
 * (within one bucket, 3%), clamped to the cumulative extremes. Rows with
 * nothing in the interval are left out. 0 or -ENOMEM.
 */
int interval__delta(struct interval *iv, const struct summary *cur,
		    const uint32_t *folded, size_t nfolded,
		    struct summary *out);

struct session;
struct query_provider;
struct summary_write_opts;

struct interval_opts {
	double seconds;			/* > 0 */
	bool cumulative;		/* totals since the start, not deltas */
	bool per_pid;
	int sort;			/* enum summary_sort */
	const struct summary_write_opts *ropts;	/* table or JSON (Lines) */
	const char *output;		/* NULL/"-": stdout */
	bool force;
};

/*
 * Runs a started session, writing one report every interval and a final
 * one with what is left when it ends (Ctrl-C, -d, the targets' end):
 * a table under a header line, or one compact JSON object per line.
 * 0 or -errno (reported).
 */
int interval__run(struct session *ss, struct query_provider *qp,
		  const struct interval_opts *io);

#endif /* SPTRACE_INTERVAL_H */
