/* SPDX-License-Identifier: MIT */
/*
 * The sections of the HTML report that only a trace file (sptrace record)
 * can give: an icicle of the recorded stacks and a timeline of threads.
 */
#ifndef SPTRACE_HTML_TRACE_H
#define SPTRACE_HTML_TRACE_H

#include <stdint.h>
#include <stdio.h>

/* At most this many thread lanes and time segments are drawn; the rest
 * are counted in a line under the chart. */
#define HTML_TRACE_MAX_LANES 64
#define HTML_TRACE_MAX_SEGMENTS 20000

/*
 * Writes <section id="flame"> (frames weighted by self time, as `sptrace
 * export --folded` counts them) and <section id="threads"> (each thread's
 * outermost intervals over the run's duration_ns) for the trace file at
 * path. A file that is not a trace file writes nothing and returns 0.
 * 0 or -errno (-ENOMEM; a damaged trace: what could be read is drawn).
 */
int html_trace__write(FILE *out, const char *path, uint64_t duration_ns);

#endif /* SPTRACE_HTML_TRACE_H */
