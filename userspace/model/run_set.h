/* SPDX-License-Identifier: MIT */
/*
 * A set of runs (repeated runs of one program, or a history of it) held as
 * one value per run for each query and figure: what verdict.h compares.
 * Queries are joined by name as diff.h joins them (invalid UTF-8 read as
 * U+FFFD); a run without a query holds zeros for it (the query ran 0
 * times in that run).
 */
#ifndef SPTRACE_RUN_SET_H
#define SPTRACE_RUN_SET_H

#include <stdint.h>

/* The figures of a query in one run. Times first: they are compared by
 * their statistics; the counts after them exactly. */
enum run_fig {
	FIG_SELF = 0, FIG_TOTAL, FIG_BLOCKED, FIG_INCR, FIG_P50, FIG_P99,
	FIG_COUNT, FIG_CACHE_HITS, FIG_BLOCKED_COUNT, FIG_INCR_LOADS,
	FIG__MAX,
};
#define FIG_NTIMES FIG_COUNT

/* The figure's key in JSON and CSV ("self_ns", "count", ...). */
const char *run_fig__key(enum run_fig f);
/* Whether f is a time (ns) rather than a count. */
static inline int run_fig__is_time(enum run_fig f)
{
	return f < FIG_NTIMES;
}

struct run_set_query {
	char *name;			/* joined name, owned */
	unsigned int present;		/* runs that have it */
	uint64_t *v;			/* [run * FIG__MAX + figure] */
};

struct run_set {
	unsigned int nruns;
	int64_t *ids;			/* the runs' ids, as given (ascending) */
	struct run_set_query *q;	/* by name, after run_set__finish() */
	unsigned int nq;
	/* Rows added and not yet joined. */
	struct run_set_row *rows;
	size_t nrows, rows_cap;
};

/* An empty set of nruns runs with these ids (copied). 0 or -ENOMEM. */
int run_set__init(struct run_set *s, const int64_t *ids, unsigned int nruns);
void run_set__free(struct run_set *s);
/*
 * One stored row of run `run` (index into ids): rows of one name in one
 * run (several processes) are summed, but p50 and p99, of which the
 * largest is kept. 0, -ENOMEM, or -EINVAL for a run out of range.
 */
int run_set__add(struct run_set *s, unsigned int run, const char *name,
		 const uint64_t fig[FIG__MAX]);
/* Joins the rows added into s->q, sorted by name. 0 or -ENOMEM. */
int run_set__finish(struct run_set *s);
/* The query called name, or NULL. */
const struct run_set_query *run_set__find(const struct run_set *s,
					  const char *name);

#endif /* SPTRACE_RUN_SET_H */
