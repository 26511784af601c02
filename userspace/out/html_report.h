/* SPDX-License-Identifier: MIT */
/*
 * `sptrace report`: one self-contained HTML file (inline CSS, JS and SVG,
 * no network) for people: the summary table with a Total row, sortable
 * columns, each query's histogram and percentiles on click, the memory
 * timeline, and with a base run the change of every query (docs/report.md).
 */
#ifndef SPTRACE_HTML_REPORT_H
#define SPTRACE_HTML_REPORT_H

#include <stdint.h>
#include <stdio.h>
#include "summary.h"

struct mem_report;

/* One side of the report. */
struct html_run {
	const char *name;		/* what the report calls it: a file, "DB run 3" */
	const char *info;		/* NULL or one more line (command, host, date) */
	const struct summary *s;	/* finished */
	const struct mem_report *mr;	/* NULL, or its timeline is drawn */
	/* NULL, or the file the run was read from: a trace file adds the
	 * icicle of its stacks and the timeline of its threads. */
	const char *trace;
};

/*
 * A change is coloured (class "up" or "down") when it is at least
 * HTML_DELTA_PCT percent of the base figure AND at least the floor in
 * absolute terms (1us of time, 1 invocation); anything smaller is
 * "neutral". A figure that was 0 in the base and is not now is "up".
 */
#define HTML_DELTA_PCT 5.0
#define HTML_DELTA_FLOOR_NS 1000
#define HTML_DELTA_FLOOR_COUNT 1

enum html_delta { HTML_NEUTRAL = 0, HTML_UP, HTML_DOWN };

enum html_delta html_report__delta_class(uint64_t base, uint64_t new,
					 uint64_t floor);
/* The class name of a delta: "neutral", "up", "down". */
const char *html_report__delta_name(enum html_delta d);

/*
 * Writes the report of `run` (compared to `base` when non-NULL) to out.
 * Every string (query names, run names, info) is HTML-escaped, the data
 * block holds only numbers. 0 or -errno (-EINVAL for an unfinished
 * summary, -ENOMEM, -EIO on a write error).
 */
int html_report__write(FILE *out, const char *title, const struct html_run *run,
		       const struct html_run *base);

struct html_verdicts;
/* The comparison view over sets of runs (html_verdicts.h) first, then
 * `run` (the newest run of the new set) as html_report__write() shows a
 * run alone. 0 or -errno as above. */
int html_report__write_verdicts(FILE *out, const char *title,
				const struct html_run *run,
				const struct html_verdicts *hv);

#endif /* SPTRACE_HTML_REPORT_H */
