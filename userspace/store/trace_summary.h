/* SPDX-License-Identifier: MIT */
/*
 * The recorded source of the one aggregator: a trace file replayed through
 * the same stack arithmetic and row/histogram arithmetic as live mode.
 */
#ifndef SPTRACE_TRACE_SUMMARY_H
#define SPTRACE_TRACE_SUMMARY_H

#include "summary.h"

/* Reads a trace file and aggregates it into s exactly as live mode does;
 * prints the reader's warnings. 0 or -errno (already reported as one
 * line). s is not finished. */
int trace_summary__read(const char *path, struct summary *s);

#endif /* SPTRACE_TRACE_SUMMARY_H */
