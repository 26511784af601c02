/* SPDX-License-Identifier: MIT */
/*
 * The writers of `sptrace diff`: a diff (model/diff.h) as a boxed table for
 * people or JSON for tools.
 */
#ifndef SPTRACE_DIFF_WRITER_H
#define SPTRACE_DIFF_WRITER_H

#include <stdio.h>
#include "diff.h"

/*
 * The boxed table: a title line naming both runs, then Total and the rows.
 * A query only in one run says so in the Status column ("new"/"gone"; the
 * column is hidden when every query is in both). Each figure shows the NEW
 * run's value and its change from BASE ("+1.50ms", "-3", "0"); the cache,
 * blocked and incr-load pairs are hidden when zero in both runs for every
 * query. Names and paths are made terminal-safe. 0 or -errno (-EIO on a
 * write error).
 */
int diff__write_table(FILE *out, const struct diff *d, const char *base_name,
		      const char *new_name);
/* The same table fitted to `width` characters by leaving out columns
 * (docs/formats.md; named in a line under it); 0: every column. */
int diff__write_table_fit(FILE *out, const struct diff *d,
			  const char *base_name, const char *new_name,
			  unsigned int width);
/*
 * {"base": BASE, "new": NEW,
 *  "duration_ns": {"base": N, "new": N, "delta": ±N},
 *  "total": {"base": {figs}, "new": {figs}, "delta": {figs, signed},
 *            "self_pct": number|null},
 *  "queries": [{"name", "status": "both|new|gone", "base", "new", "delta",
 *               "self_pct"}, ...]}
 * with figs = self_ns, total_ns, count, cache_hits, blocked_ns,
 * incr_load_ns; queries in the table's order; self_pct null for a 0 base.
 * 0 or -errno (-EIO on a write error).
 */
int diff__write_json(FILE *out, const struct diff *d, const char *base_name,
		     const char *new_name);

#endif /* SPTRACE_DIFF_WRITER_H */
