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
	/* > 0: scaled from sampled windows (--max-overhead), an estimate
	 * within this share of the truth at 95% (docs/numbers.md). */
	double est_err;
	/* Filled by summary__finish(): */
	uint64_t p50_ns, p90_ns, p99_ns;
};

/* A process's title (discovery/proc_title.h) for --per-pid rows. */
struct summary_title {
	uint32_t pid;
	char *title;			/* owned, bounded, any bytes */
};

/*
 * sptrace's own cost in one traced process (live sessions; docs/numbers.md,
 * "Overhead"): what its probes did there and their estimated time. The
 * share of the process's CPU time is taken over the window between two
 * readings of that CPU time (win_*): from its first sight (0 for one that
 * started traced) to the session's end or its last reading alive.
 */
struct summary_cost {
	uint32_t pid;			/* 0: processes beyond the BPF map */
	uint64_t hits[SP_HIT__MAX];	/* the whole session (query_abi.h) */
	uint64_t probe_ns;		/* their estimated time */
	uint64_t win_probe_ns;		/* the estimate within the window */
	uint64_t win_cpu_ns;		/* its CPU time then; 0: unknown */
	uint64_t cpu_end_ns;		/* its whole CPU time at the window's end */
};

struct summary_overhead {
	bool known;			/* a live session costed its probes */
	bool bpf_timed;			/* the kernel's BPF run times used */
	/* Price of one hit of each kind, ns (SP_HIT_PAUSE_NS: unused). */
	double unit_ns[SP_HIT__MAX];
	/* BPF run time on every process of the machine, not the targets'
	 * alone (the exec drain on each system call, the thread-exit
	 * tracepoint), over the session; 0 without bpf_timed. */
	uint64_t system_bpf_ns;
	struct summary_cost *procs;	/* owned, sorted by pid */
	unsigned int nprocs;
};

/* --max-overhead: the length of a sampling window (live/sampler.h). */
#define SUMMARY_SAMPLE_WINDOW_NS 100000000ull

/* --max-overhead: a process traced in sampled windows, whose sp probe
 * rows are scaled by 1 / traced, or whose --func probes were shed for a
 * while, its --func rows scaled by 1 / func_traced; either marked as
 * estimates. */
struct summary_sampled {
	uint32_t pid;
	unsigned int every;	/* sampled as sparsely as 1 window in every */
	double traced;		/* share of its work in the windows traced */
	double bias;		/* how far off `traced` may be, relative */
	double func_traced;	/* share of its work with --func probes on */
	double func_bias;
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
	/* Live, --max-overhead: intervals cut by a sampling window's edge. */
	uint64_t sample_cut;
	bool per_pid;			/* rows are (name, pid), not name */
	bool finished;
	struct summary_overhead overhead;
	struct summary_sampled *sampled;	/* owned, sorted by pid */
	unsigned int nsampled;
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
/* dst's sampled processes become a copy of v[0..n). 0 or -ENOMEM. */
int summary__set_sampling(struct summary *dst, const struct summary_sampled *v,
			  size_t n);
/* Over the processes with a CPU reading: the estimated probe time and
 * CPU time of their windows (either may be NULL); their ratio, or -1 when
 * no process has one. */
double summary__overhead_share(const struct summary_overhead *o,
			       uint64_t *probe_ns, uint64_t *cpu_ns);
/* The name of hit kind k in the outputs ("event", "flush", ...). */
const char *summary__hit_name(unsigned int k);
/* dst's overhead becomes a copy of o (NULL: none). 0 or -ENOMEM (then
 * none). */
int summary__set_overhead(struct summary *dst, const struct summary_overhead *o);

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
