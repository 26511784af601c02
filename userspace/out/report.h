/* SPDX-License-Identifier: MIT */
/*
 * Output writers for a finished summary: the boxed table for people, JSON
 * and CSV for other tools. Writers print the summary's numbers as they are
 * and escape every string they write.
 */
#ifndef SPTRACE_REPORT_H
#define SPTRACE_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "summary.h"

enum report_format { REPORT_TABLE = 0, REPORT_JSON, REPORT_CSV };

struct report_opts {
	enum report_format format;
	bool hist;              /* table: print each query's histogram as ASCII bars */
	double percent_above;   /* table: hide rows whose self% <= this (0 = show all) */
};

/* "table", "json", "csv" -> 0, anything else -EINVAL. */
int report__parse_format(const char *str, enum report_format *fmt);

/*
 * Writes the finished summary (summary__finish() called after the last add;
 * -EINVAL otherwise) in opts->format. For JSON and CSV the error counters go
 * to stderr as warnings, so `out` stays a pure data file. Returns 0 or -errno
 * (-EIO on a write error). opts may be NULL for defaults.
 */
int report__write(FILE *out, const struct summary *s,
		  const struct report_opts *opts);
int table__write(FILE *out, const struct summary *s,
		 const struct report_opts *opts);
int json__write(FILE *out, const struct summary *s);
/* json__write() with more top-level fields: `extra` writes them (no
 * leading comma, no braces) before the final '}'. 0 or -errno. */
int json__write_with(FILE *out, const struct summary *s,
		     int (*extra)(FILE *, void *), void *ctx);
int csv__write(FILE *out, const struct summary *s);

/* The ASCII histogram of --hist for one row: a title line (name, count,
 * p50/p90/p99/max), then one bar per power of two, empty ends trimmed.
 * Nothing for a row without samples. 0 or -ENOMEM. */
int report__hist_print(FILE *out, const struct sp_query_row *r);

/* One "sptrace: warning: N <counter> events (...)" line per non-zero error
 * counter, and one for lost events. 0 or -EIO. */
int report__warn_errors(FILE *err, const struct summary *s);

/* Human-scaled duration into buf: "0ns", "999ns", "1.50us", "12.3ms",
 * "2.01s" (3 significant digits, rounded half up). */
void report__fmt_ns(char *buf, size_t len, uint64_t ns);

/* Helpers shared by the writers. */

/* Length (1-4) of the valid UTF-8 sequence starting at str, with its code
 * point in *cp; 0 if the bytes there are not one (stray continuation,
 * overlong, surrogate, above U+10FFFF, cut short). */
int report__utf8_next(const char *str, uint32_t *cp);
/* Flushes out: 0, or -EIO if this or any earlier write to it failed. */
int report__flush(FILE *out);

#endif /* SPTRACE_REPORT_H */
