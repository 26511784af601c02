/* SPDX-License-Identifier: MIT */
/*
 * The OpenMetrics / Prometheus text writer of `sptrace serve`: one summary
 * (rows per process), the processes' labels and sptrace's own health, as
 * counters, a latency histogram per row and gauges (docs/fleet.md).
 */
#ifndef SPTRACE_OPENMETRICS_H
#define SPTRACE_OPENMETRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sptrace/ladder.h>
#include "summary.h"

/*
 * Where a process's `binary` and `title` labels go (serve
 * --process-labels). INFO: once per process, on sptrace_process_info,
 * which PromQL joins on `pid`; the per-query series carry `pid` and
 * `comm` only. SERIES: also on every per-query series, as they were
 * before the info metric (dashboards that select on them).
 */
enum om_proc_labels {
	OM_PROC_LABELS_INFO,
	OM_PROC_LABELS_SERIES,
};

/* Labels and gauges of one process (pid 0: every exited process). */
struct om_process {
	uint32_t pid;
	const char *comm;
	const char *binary;
	const char *title;	/* NULL: none */
	bool alive;
	uint64_t rss_bytes;	/* 0: unknown or gone */
};

/* sptrace's own figures. */
struct om_health {
	uint64_t attached_probes;
	uint64_t targets_alive;
	uint64_t evicted_rows;
	uint64_t exited_processes;
	uint64_t http_dropped;		/* connections closed by timeout/limit */
	uint64_t http_rejected;		/* requests answered 4xx */
	uint64_t folded_rows;		/* serve --top: rows in "<other>" */
	uint64_t self_rss_bytes;
	double read_seconds;		/* the last read of the maps */
};

struct mem_report;
/* What the writer kept of each row between two expositions. */
struct om_cache;

struct om_input {
	const struct summary *s;	/* per pid; finished not required */
	const struct mem_report *mem;	/* --mem: its gauges; or NULL */
	const struct om_process *procs;	/* sorted by pid */
	size_t nprocs;
	const struct om_health *h;
	bool openmetrics;		/* OpenMetrics 1.0, else text 0.0.4 */
	enum om_proc_labels proc_labels;
	/* Or NULL. The rows' escaped names and formatted numbers from the
	 * last write: a row whose figures did not change is copied, not
	 * formatted again. The bytes are those of a write without it. */
	struct om_cache *cache;
};

/* A growing output buffer: the response body. */
struct om_buf {
	char *p;
	size_t len, cap;
	bool oom;
};

/* The fixed `le` bounds of the latency histogram: sp_ladder_ns, in ns
 * (1-2-5 from 1 us to 10 s), then +Inf. */
#define OM_NBOUNDS SP_LADDER_NBOUNDS

/* NULL if out of memory. */
struct om_cache *om_cache__new(void);
void om_cache__free(struct om_cache *c);

/* Appends the exposition of `in` to b. 0 or -ENOMEM. */
int openmetrics__write(struct om_buf *b, const struct om_input *in);

/*
 * An exposition that is never written whole: the rows' texts (one block
 * per write, shared with in->cache until the next write, kept as long as
 * a snapshot holds it), the processes' labels and the rest, from which
 * om_snapshot__read() copies the bytes openmetrics__write() would give,
 * piece by piece into a caller's buffer. serve sends a scrape from it;
 * a snapshot stays as it was while the cache renders the next one.
 * Reference counts are plain: one thread.
 */
struct om_snapshot;

/* Where a read of a snapshot stopped: zeroed to start. */
struct om_cursor {
	unsigned int sect;		/* family; past them, the tail */
	bool in_rows;			/* past the family's header */
	size_t row;
	unsigned int line;		/* of the row in the histogram */
	size_t off;			/* bytes of the item already given */
	uint64_t pos;			/* bytes given */
};

/* The snapshot of `in` (one reference, the caller's). 0 or -ENOMEM. */
int openmetrics__snapshot(const struct om_input *in,
			  struct om_snapshot **out);
/* Its length in bytes, known before any is read. */
size_t om_snapshot__len(const struct om_snapshot *sn);
/* Copies up to max bytes from the cursor on into buf, moves the cursor;
 * the bytes copied, 0 at the end. */
size_t om_snapshot__read(const struct om_snapshot *sn, struct om_cursor *c,
			 char *buf, size_t max);
struct om_snapshot *om_snapshot__get(struct om_snapshot *sn);
/* Drops a reference; true if that was the last (it is freed). NULL is a
 * no-op. */
bool om_snapshot__put(struct om_snapshot *sn);
/* The Content-Type of the format written. */
const char *openmetrics__content_type(bool openmetrics);
void om_buf__free(struct om_buf *b);

#endif /* SPTRACE_OPENMETRICS_H */
