/* SPDX-License-Identifier: MIT */
/*
 * The boxed summary table for people, its --hist bars, and the one-line
 * warnings for non-zero error counters.
 */
#ifndef SPTRACE_TABLE_H
#define SPTRACE_TABLE_H

#include <stdbool.h>
#include <stdio.h>
#include "summary.h"

struct table_opts {
	bool hist;              /* print each query's histogram as ASCII bars */
	double percent_above;   /* hide rows whose self% <= this (0 = show all) */
	/* Every optional column (cache hits, blocked, incremental load), not
	 * only those non-zero in this summary, so that a series of tables
	 * (--interval) keeps its columns from one to the next. */
	bool all_columns;
	/* Fit this many characters (the rule above table__write() in
	 * table.c, docs/formats.md); 0 prints every column (--wide). */
	unsigned int width;
};
/* The width tables fit by default (--wide: no limit). */
#define TABLE_DEFAULT_WIDTH 120

/* The finished summary (-EINVAL otherwise) as a table, its warnings, and
 * with opts->hist the bars. 0 or -errno (-EIO on a write error); opts may
 * be NULL for defaults. */
int table__write(FILE *out, const struct summary *s,
		 const struct table_opts *opts);

/* The ASCII histogram of --hist for one row: a title line (name, count,
 * p50/p90/p99/max), then one bar per power of two, empty ends trimmed.
 * Nothing for a row without samples. 0 or -ENOMEM. */
int table__hist_print(FILE *out, const struct sp_query_row *r);

/* One "sptrace: warning: N <counter> events (...)" line per non-zero error
 * counter, and one for lost events. 0 or -EIO. */
int table__warn_errors(FILE *err, const struct summary *s);

#endif /* SPTRACE_TABLE_H */
