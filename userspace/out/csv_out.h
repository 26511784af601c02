/* SPDX-License-Identifier: MIT */
/*
 * The CSV summary: one line per query, no histogram, no error counters.
 */
#ifndef SPTRACE_CSV_OUT_H
#define SPTRACE_CSV_OUT_H

#include <stdio.h>
#include "summary.h"

/* The finished summary (-EINVAL otherwise) as CSV. 0 or -errno. */
int csv_out__write(FILE *out, const struct summary *s);

#endif /* SPTRACE_CSV_OUT_H */
