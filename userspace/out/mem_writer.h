/* SPDX-License-Identifier: MIT */
/*
 * The writers of the memory report (model/mem_report.h): tables, JSON and
 * CSV. They print the figures as they are and escape every string.
 */
#ifndef SPTRACE_MEM_WRITER_H
#define SPTRACE_MEM_WRITER_H

#include <stdint.h>
#include <stdio.h>
#include "mem_report.h"
#include "summary_writer.h"

/* Human-scaled bytes: "512 B", "1.5 KiB", "12.0 MiB". */
void mem_report__fmt_bytes(char *buf, size_t len, uint64_t b);
/* Tables (types, heap, threads, sites, timeline sparkline), the types and
 * threads tables fitted in `width` characters (0: every column, --wide).
 * 0 or -EIO. */
int mem_report__write_table(FILE *out, const struct mem_report *r,
			    unsigned int width);
/* The report's JSON fields without braces ("sampled":N,...), for
 * json_out__write_with(); ctx is the report. 0 or -EIO. */
int mem_report__json_fields(FILE *out, void *ctx);
/* The whole JSON object of `sptrace mem`. */
int mem_report__write_json(FILE *out, const struct mem_report *r);
int mem_report__write_csv(FILE *out, const struct mem_report *r);
/* One warning line per non-zero error counter. */
void mem_report__warn_errors(FILE *err, const struct mem_report *r);
/* In `fmt`: table, JSON or CSV, then the warnings on stderr. */
int mem_report__write(FILE *out, const struct mem_report *r,
		      enum summary_format fmt, unsigned int width);

#endif /* SPTRACE_MEM_WRITER_H */
