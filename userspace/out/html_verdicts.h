/* SPDX-License-Identifier: MIT */
/*
 * The comparison view of `sptrace report` over sets of runs: each query's
 * verdict as a badge, its change with the 95% interval (or the history's
 * noise fence), and a small multiple of its self time run by run, both
 * sets in their colours with each set's median (docs/report.md). Static
 * HTML and SVG, numbers only in the SVG: nothing to fetch, nothing to run.
 */
#ifndef SPTRACE_HTML_VERDICTS_H
#define SPTRACE_HTML_VERDICTS_H

#include <stdio.h>
#include "run_set.h"
#include "verdict.h"

struct html_verdicts {
	const struct verdicts *v;
	const struct run_set *base, *new;	/* the runs compared */
	const char *base_ref, *new_ref;		/* as the user named them */
};

/* The CSS the section needs (appended to the page's). */
extern const char html_verdicts__css[];

/* The section: a heading, the method, one row per query (those whose
 * verdict is not unchanged first). 0 or -ENOMEM. */
int html_verdicts__write(FILE *out, const struct html_verdicts *hv);

#endif /* SPTRACE_HTML_VERDICTS_H */
