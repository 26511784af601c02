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
#include "summary.h"

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

/* The fixed `le` bounds of the latency histogram, in ns (1-2-5 from 1 us
 * to 10 s), then +Inf. */
#define OM_NBOUNDS 22
extern const uint64_t om_bounds_ns[OM_NBOUNDS];

/* NULL if out of memory. */
struct om_cache *om_cache__new(void);
void om_cache__free(struct om_cache *c);

/* Appends the exposition of `in` to b. 0 or -ENOMEM. */
int openmetrics__write(struct om_buf *b, const struct om_input *in);
/* The Content-Type of the format written. */
const char *openmetrics__content_type(bool openmetrics);
void om_buf__free(struct om_buf *b);

#endif /* SPTRACE_OPENMETRICS_H */
