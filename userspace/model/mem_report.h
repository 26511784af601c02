/* SPDX-License-Identifier: MIT */
/*
 * The memory report: what `sptrace mem` and `sptrace --mem` print, filled
 * from the maps of bpf/mem.bpf.c by mem_provider.c (already scaled when
 * sampled) and written as tables, JSON or CSV by out/mem_writer.h.
 */
#ifndef SPTRACE_MEM_REPORT_H
#define SPTRACE_MEM_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sptrace/mem_abi.h>

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
	/* The traced command line (history_run__describe), kept with the
	 * data so `report --mem` can refuse another program's; owned,
	 * NULL: unknown (files from before it was written). */
	char *command;
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

/* Name of error slot i in JSON/CSV ("unknown_frees", ...). */
const char *mem_report__error_name(unsigned int i);

#endif /* SPTRACE_MEM_REPORT_H */
