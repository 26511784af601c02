/* SPDX-License-Identifier: MIT */
/*
 * The statistics of repeated runs as text (model/run_stats.h): what
 * `sptrace bench` prints about each set of runs it made, as a table, JSON
 * or CSV (docs/formats.md, "Statistics of repeated runs"); and the one way
 * a sample's statistics (struct stats_desc) are written, which the
 * verdicts' writers use too.
 */
#ifndef SPTRACE_STATS_WRITER_H
#define SPTRACE_STATS_WRITER_H

#include <stdint.h>
#include <stdio.h>
#include "run_stats.h"

struct json_writer;

/* The version of the statistics' JSON ("MAJOR.MINOR"). */
#define RUN_STATS_JSON_VERSION "1.0"

/* One set as the output names it. */
struct run_stats_side {
	const char *ref;		/* "label:old", "12..21" */
	const int64_t *ids;
	unsigned int nids;
	const struct run_stats *st;
};

int run_stats__write_table(FILE *out, const struct run_stats_side *sides,
			   unsigned int n, unsigned int width);
int run_stats__write_json(FILE *out, const struct run_stats_side *sides,
			  unsigned int n);
int run_stats__write_csv(FILE *out, const struct run_stats_side *sides,
			 unsigned int n);

/* "name": {"n", "mean", "median", "sd", "mad", "min", "max", "ci"}. */
void stats_writer__json_desc(struct json_writer *w, const char *name,
			     const struct stats_desc *d);
/* ",x" (empty for NAN and infinities). */
void stats_writer__csv_double(FILE *out, double x);
/* The nine columns n..ci_hi, each after a comma. */
void stats_writer__csv_desc(FILE *out, const struct stats_desc *d);

#endif /* SPTRACE_STATS_WRITER_H */
