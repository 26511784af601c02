/* SPDX-License-Identifier: MIT */
/*
 * `sptrace history --trends`: per query, its self time across the runs as
 * a sparkline and the runs that broke its trend (model/trend.h), as a
 * table or JSON (docs/database.md, "sptrace history").
 */
#ifndef SPTRACE_TREND_WRITER_H
#define SPTRACE_TREND_WRITER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "run_set.h"
#include "trend.h"

/* The sparkline shows at most this many runs, the latest. */
#define TREND_SPARK_RUNS 40

/* all: every query, not only those with a break. */
int trend__write_table(FILE *out, const struct run_set *s,
		       const struct trend *t, bool all, unsigned int width);
int trend__write_json(FILE *out, const struct run_set *s,
		      const struct trend *t);
/* "regressed +10.2%" for a break, "" otherwise. */
void trend__fmt_point(char *buf, size_t len, const struct trend_point *p);

#endif /* SPTRACE_TREND_WRITER_H */
