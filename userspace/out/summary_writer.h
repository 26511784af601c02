/* SPDX-License-Identifier: MIT */
/*
 * out/ layer: one writer per output format over the model; uses store/
 * and below (docs/architecture.md).
 *
 * Writing a finished summary in the format the user chose: the dispatcher
 * over the table, JSON and CSV writers (table.h, json_out.h, csv_out.h).
 * It writes nothing itself; no writer calls it or another writer.
 */
#ifndef SPTRACE_SUMMARY_WRITER_H
#define SPTRACE_SUMMARY_WRITER_H

#include <stdbool.h>
#include <stdio.h>
#include "summary.h"

enum summary_format { SUMMARY_TABLE = 0, SUMMARY_JSON, SUMMARY_CSV };

struct summary_write_opts {
	enum summary_format format;
	bool hist;              /* table: print each query's histogram as ASCII bars */
	double percent_above;   /* table: hide rows whose self% <= this (0 = show all) */
	bool all_columns;	/* table: see table_opts */
	unsigned int width;	/* table: see table_opts (0: --wide) */
};

/* "table", "json", "csv" -> 0, anything else -EINVAL. */
int summary_format__parse(const char *str, enum summary_format *fmt);

/*
 * Writes the finished summary (summary__finish() called after the last add;
 * -EINVAL otherwise) in opts->format. For JSON and CSV the error counters go
 * to stderr as warnings, so `out` stays a pure data file. Returns 0 or -errno
 * (-EIO on a write error). opts may be NULL for defaults.
 */
int summary_writer__write(FILE *out, const struct summary *s,
			  const struct summary_write_opts *opts);

#endif /* SPTRACE_SUMMARY_WRITER_H */
