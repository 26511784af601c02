/* SPDX-License-Identifier: MIT */
/*
 * `sptrace diff`: two summaries (recorded traces or JSON summaries) compared
 * query by query (out/diff_writer.h writes them as a table for people or
 * JSON for tools). Like measureme's `diff`, rows are sorted by how much
 * their self time moved.
 */
#ifndef SPTRACE_DIFF_H
#define SPTRACE_DIFF_H

#include <stdbool.h>
#include <stdint.h>
#include "summary.h"

/* The figures compared, per query and for the Total row. */
struct diff_figs {
	uint64_t self_ns, total_ns, count, cache_hits, blocked_ns, incr_load_ns;
};

enum diff_status {
	DIFF_BOTH = 0,		/* a row in both runs */
	DIFF_NEW,		/* only in the new run */
	DIFF_GONE,		/* only in the base run */
};

struct diff_row {
	char *name;		/* owned by the diff (rows), "Total" (total) */
	enum diff_status status;
	struct diff_figs base, new;	/* zero on the side it is missing from */
};

struct diff {
	struct diff_row total;	/* sums over all rows ("Total"), saturating */
	struct diff_row *rows;	/* by |self change| desc, ties by name */
	unsigned int nrows;
	unsigned int nnew, ngone;
	uint64_t base_duration_ns, new_duration_ns;
};

/*
 * Joins the rows of two summaries by name (finished or not; neither is
 * changed). Names are compared as the JSON writer writes them, each byte of
 * invalid UTF-8 read as U+FFFD: a trace and the JSON summary of the same
 * run then hold the same names (rows that become equal are summed, as the
 * JSON reader sums them). 0 or -ENOMEM; d is ready for diff__free() either
 * way.
 */
int diff__build(struct diff *d, const struct summary *base,
		const struct summary *new);
void diff__free(struct diff *d);
/* name with each byte of invalid UTF-8 replaced by U+FFFD, as json_out.c
 * writes it and diff__build() joins it (malloc'ed). NULL on ENOMEM. */
char *diff__clean_name(const char *name);

/* |new - base| into *mag; true when new < base (a decrease). Exact over the
 * whole uint64 range, where an int64 difference would overflow. */
bool diff__delta(uint64_t base, uint64_t new, uint64_t *mag);
/* Self-time change in percent of the base; false (no figure: JSON null,
 * table "new" or "-") when the base self time is 0. */
bool diff__self_pct(const struct diff_row *r, double *pct);

#endif /* SPTRACE_DIFF_H */
