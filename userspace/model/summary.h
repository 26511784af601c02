/* SPDX-License-Identifier: MIT */
/*
 * model/ layer: the summary, diff, memory report, replay; uses
 * discovery/ and common/ only (docs/architecture.md).
 *
 * The one in-memory summary every source feeds (live BPF maps now, recorded
 * traces later) and every writer (table, JSON, CSV) reads. Rows are keyed by
 * query name: rows of several processes or name pointers with the same
 * string are merged here, never in the writers.
 */
#ifndef SPTRACE_SUMMARY_H
#define SPTRACE_SUMMARY_H

#include <stdbool.h>
#include <stdint.h>
#include <sptrace/query_abi.h>
#include <sptrace/hist.h>

struct sp_query_row {
	char *name;			/* owned, NUL-terminated, any bytes */
	uint32_t pid;			/* with per_pid: the process; else 0 */
	struct sp_query_stats st;	/* summed over CPUs/processes */
	struct sp_hist_bin *bins;	/* sorted by bucket, owned */
	unsigned int nbins;
	unsigned int bins_cap;
	/* Filled by summary__finish(): */
	uint64_t p50_ns, p90_ns, p99_ns;
};

/* A process's title (discovery/proc_title.h) for --per-pid rows. */
struct summary_title {
	uint32_t pid;
	char *title;			/* owned, bounded, any bytes */
};

struct summary {
	uint64_t duration_ns;		/* wall time of the session */
	uint64_t total_self_ns;		/* sum of self_ns over rows (finish) */
	struct sp_query_row *rows;
	unsigned int nrows;
	unsigned int rows_cap;
	uint32_t *index;		/* name hash -> row + 1; 2 * rows_cap */
	uint64_t errors[SP_ERR__MAX];	/* summed over CPUs */
	uint64_t lost;			/* events lost on the way (record) */
	/* How the live session got its events: "batched", "per-event" or
	 * "mixed" (per file; see probes/sp_probe.h); NULL when not live. */
	const char *events_mode;
	/* Live: events of batched files that fired their per-event site
	 * (their thread's ring gone or unmappable); counted like the rest.
	 * Unknown where sptrace could not watch the site that tells them. */
	uint64_t batch_fallback;
	bool batch_fallback_unknown;
	bool per_pid;			/* rows are (name, pid), not name */
	bool finished;
	struct summary_title *titles;	/* sorted by pid */
	unsigned int ntitles, titles_cap;
};

/* Sort orders for summary__sort(). */
enum summary_sort {
	SORT_SELF = 0, SORT_TOTAL, SORT_COUNT, SORT_NAME, SORT_CACHE_HITS,
	SORT_BLOCKED, SORT_INCR, SORT_P50, SORT_P99, SORT_MAX,
};

void summary__init(struct summary *s);
void summary__free(struct summary *s);

/* Adds one source row's figures to the row named `name` (created on first
 * use). min/max merge as min/max, everything else sums. Returns 0 or -ENOMEM. */
int summary__add_stats(struct summary *s, const char *name,
		       const struct sp_query_stats *st);
/* Adds `count` to histogram bucket `bucket` of row `name`. 0 or -errno
 * (-EINVAL for a bucket >= SP_HIST_BUCKETS). */
int summary__add_hist(struct summary *s, const char *name, uint32_t bucket,
		      uint64_t count);
/* The same for the row (name, pid): with s->per_pid set, rows of other
 * processes stay apart; without it, pid is ignored. */
int summary__add_stats_pid(struct summary *s, const char *name, uint32_t pid,
			   const struct sp_query_stats *st);
int summary__add_hist_pid(struct summary *s, const char *name, uint32_t pid,
			  uint32_t bucket, uint64_t count);
/* The index in s->rows of row (name, pid), created empty on first use
 * (or -errno); it stays that row's until the rows are sorted or folded.
 * The _at variants add to a row found so: a reader that meets one row
 * many times (a histogram bucket per map entry) finds it once. */
int summary__row_index(struct summary *s, const char *name, uint32_t pid);
int summary__add_stats_at(struct summary *s, unsigned int row,
			  const struct sp_query_stats *st);
int summary__add_hist_at(struct summary *s, unsigned int row, uint32_t bucket,
			 uint64_t count);

/* Sets (replaces) the title of process `pid`. 0 or -ENOMEM. */
int summary__set_title(struct summary *s, uint32_t pid, const char *title);
/* The title of `pid`, or NULL if it has none. */
const char *summary__title(const struct summary *s, uint32_t pid);
/* Copies every title of `src` into `dst`. 0 or -ENOMEM. */
int summary__copy_titles(struct summary *dst, const struct summary *src);

/* Copies the figures of `src` that are not rows: errors, lost, and the
 * live session's events mode and batch_fallback (every summary made from
 * another must carry them, or a report shows a 0 nobody counted). */
void summary__copy_counts(struct summary *dst, const struct summary *src);

/* Computes total_self_ns and each row's percentiles; sorts by self time. */
void summary__finish(struct summary *s);
/* Re-sorts rows (descending; SORT_NAME ascending). Ties break by name. */
void summary__sort(struct summary *s, enum summary_sort key);
/* Parses a --sort column name ("self", "total", "count", "name", "cache-hits",
 * "blocked", "incr", "p50", "p99", "max"); 0 or -EINVAL. */
int summary__parse_sort(const char *str, enum summary_sort *key);

/* Name of error slot i as used in JSON/CSV keys ("end_without_begin", ...). */
const char *summary__error_name(unsigned int i);
/* Sum of the unbalanced-event slots, the map-full slots. */
uint64_t summary__unbalanced(const struct summary *s);
uint64_t summary__map_full(const struct summary *s);

#endif /* SPTRACE_SUMMARY_H */
