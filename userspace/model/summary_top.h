/* SPDX-License-Identifier: MIT */
/*
 * Bounding a summary for a scrape (`serve --top N`): the N rows of most
 * self time keep their names, every other row is folded into one row
 * "<other>" per process, so every total stays exact.
 */
#ifndef SPTRACE_SUMMARY_TOP_H
#define SPTRACE_SUMMARY_TOP_H

#include "summary.h"

#define SUMMARY_TOP_OTHER "<other>"

/* Fills `out` (initialized, empty) with the top `n` rows of `in` by self
 * time and the fold of the rest; *folded gets the number of rows folded.
 * `in` is re-sorted. 0 or -ENOMEM. */
int summary__top(struct summary *in, unsigned int n, struct summary *out,
		 unsigned int *folded);

#endif /* SPTRACE_SUMMARY_TOP_H */
