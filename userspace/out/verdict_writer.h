/* SPDX-License-Identifier: MIT */
/*
 * The writers of `sptrace diff`'s verdicts (model/verdict.h): a boxed
 * table for people (by default only the rows that are not unchanged), JSON
 * and CSV for tools (every row, every figure). Formats: docs/formats.md,
 * "Verdicts".
 */
#ifndef SPTRACE_VERDICT_WRITER_H
#define SPTRACE_VERDICT_WRITER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "verdict.h"

/* The version of the verdicts' JSON ("MAJOR.MINOR", docs/formats.md). */
#define VERDICTS_JSON_VERSION "1.0"

/* One side as the output names it: the reference given, and its runs. */
struct verdict_side {
	const char *ref;
	const int64_t *ids;
	unsigned int nids;
};

/*
 * The table: a title naming both sides and counting the verdicts, the
 * rows (all, or only those verdict_row__listed()), a line counting the
 * rows left out, and a footer saying how the verdicts were reached (the
 * test and the correction across queries). Fits `width` characters (0:
 * no limit). 0 or -errno.
 */
int verdicts__write_table(FILE *out, const struct verdicts *v,
			  const struct verdict_side *base,
			  const struct verdict_side *new, bool all,
			  unsigned int width);
/* The JSON document: every row and figure with its statistics. */
int verdicts__write_json(FILE *out, const struct verdicts *v,
			 const struct verdict_side *base,
			 const struct verdict_side *new);
/* CSV: one line per query and figure. */
int verdicts__write_csv(FILE *out, const struct verdicts *v);
/* The change of a ratio as text: "+10.2%", "-3.05%", "0.00%". */
void verdict__fmt_ratio(char *buf, size_t len, double ratio);
/* A count figure's values as text: "10", "9..11" when the runs differ,
 * and "10 -> 11" when the two sides' values differ. */
void verdict__fmt_counts(char *buf, size_t len, const struct verdict_fig *f);
/* The interval of a figure as text: "+9.8% .. +10.6%", "±1.9%" (history:
 * its fence), or "-" (none). */
void verdict__fmt_interval(char *buf, size_t len, const struct verdicts *v,
			   const struct verdict_fig *f);

#endif /* SPTRACE_VERDICT_WRITER_H */
