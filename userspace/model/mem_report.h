/* SPDX-License-Identifier: MIT */
/*
 * The memory report: what `sptrace mem` and `sptrace --mem` print, filled
 * from the maps of bpf/mem.bpf.c by mem_provider.c (already scaled when
 * sampled) and written as tables, JSON or CSV. Writers print the figures
 * as they are and escape every string.
 */
#ifndef SPTRACE_MEM_REPORT_H
#define SPTRACE_MEM_REPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sptrace/mem_abi.h>
#include "summary_writer.h"

/* Most timeline points kept; when full, neighbours merge. */
#define MEM_TIMELINE_MAX 1024

struct mem_figures {
	uint64_t allocs, alloc_bytes, frees, free_bytes;
	uint64_t live, live_bytes, peak_live_bytes;
};

struct mem_type_row {
	char *name;
	struct mem_figures f;
};

struct mem_thread_row {
	uint32_t pid, tid;
	char *thread;		/* SP_THREAD_NAME, else the comm */
	char *type;		/* NULL: the libc heap */
	struct mem_figures f;
};

struct mem_site_row {
	char **frames;		/* innermost first */
	unsigned int nframes;
	char *type;		/* NULL: the libc heap */
	uint64_t allocs, alloc_bytes, live, live_bytes;
};

struct mem_point {
	uint64_t t_ns;		/* since counting started */
	uint64_t rss_bytes, rss_anon_bytes, rss_file_bytes;
	uint64_t heap_live_bytes, typed_live_bytes;
};

struct mem_timeline {
	struct mem_point *v;
	unsigned int n;
	uint64_t interval_ns;	/* between samples taken */
	unsigned int step;	/* samples per point (doubles when full) */
	unsigned int pending;	/* samples merged into the open point */
};

struct mem_report {
	uint64_t duration_ns;
	uint32_t sampled;	/* every Nth allocation counted (1: all) */
	bool heap_traced;	/* the libc allocator was attached */
	bool per_thread;
	bool timeline_on;
	struct mem_type_row *types;
	unsigned int ntypes;
	size_t types_cap;
	struct mem_figures heap;
	struct mem_thread_row *threads;
	unsigned int nthreads;
	size_t threads_cap;
	struct mem_site_row *sites;
	unsigned int nsites;
	size_t sites_cap;
	struct mem_timeline tl;
	uint64_t errors[SP_MEM_ERR__MAX];
	unsigned int max_sites;	/* table: sites printed (0: default) */
};

void mem_report__init(struct mem_report *r);
void mem_report__free(struct mem_report *r);

/* Adds a type's figures to the row of that name (created on first use).
 * Peaks add up: across processes their sum bounds the true peak. */
int mem_report__add_type(struct mem_report *r, const char *name,
			 const struct mem_figures *f);
int mem_report__add_thread(struct mem_report *r, uint32_t pid, uint32_t tid,
			   const char *thread, const char *type,
			   const struct mem_figures *f);
/* Adds a site: merged with a site of the same frames and type. Takes
 * ownership of frames (and its strings) whatever the result. */
int mem_report__add_site(struct mem_report *r, char **frames,
			 unsigned int nframes, const char *type,
			 uint64_t allocs, uint64_t alloc_bytes, uint64_t live,
			 uint64_t live_bytes);
/* Sorts: types and threads by live bytes then bytes, sites by live bytes
 * then bytes (descending; ties by name). */
void mem_report__finish(struct mem_report *r);

/* The timeline: one sample (kept when a step's worth of samples is in:
 * merged by maximum). 0 or -ENOMEM. */
int mem_timeline__add(struct mem_timeline *tl, const struct mem_point *p);

/* Human-scaled bytes: "512 B", "1.5 KiB", "12.0 MiB". */
void mem_report__fmt_bytes(char *buf, size_t len, uint64_t b);
/* Name of error slot i in JSON/CSV ("unknown_frees", ...). */
const char *mem_report__error_name(unsigned int i);

/* Tables (types, heap, threads, sites, timeline sparkline). 0 or -EIO. */
int mem_report__write_table(FILE *out, const struct mem_report *r);
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
		      enum summary_format fmt);

#endif /* SPTRACE_MEM_REPORT_H */
