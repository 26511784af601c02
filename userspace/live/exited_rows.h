/* SPDX-License-Identifier: MIT */
/*
 * Reading a running session again and again (sptrace --interval, sptrace
 * serve) with flat memory: the rows of processes that exited are moved out
 * of the kernel maps into a bounded userspace accumulator, and every
 * process seen gets its labels (comm, executable) once.
 */
#ifndef SPTRACE_EXITED_ROWS_H
#define SPTRACE_EXITED_ROWS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "summary.h"

struct query_provider;
struct session;

/* A process that has rows. */
struct tracked_proc {
	uint32_t pid;
	uint64_t start;		/* /proc/PID/stat starttime: tells reuse */
	char comm[17];		/* "" if it exited before it was seen */
	char *exe;		/* owned; "" if unknown */
	/* Owned; "" if unknown. Taken once, the first title the process set
	 * (see title_inherited): a label that changed with the process's
	 * state would start a new series. */
	char *title;
	bool alive;
	/* The title at first sight was its parent's (a PostgreSQL backend
	 * before it sets its own): read again at each read until it
	 * changes, then kept. */
	bool title_inherited;
	bool evicted;		/* its rows are in the accumulator */
	uint64_t dead_ns;	/* CLOCK_MONOTONIC when seen gone */
};

struct exited_rows {
	struct query_provider *qp;
	struct session *ss;		/* its snapshots of exited pids dropped */
	/* Rows of exited processes (per pid), then, once `keep_ns` passed,
	 * under pid 0: "every exited process". */
	struct summary acc;
	struct tracked_proc *procs;	/* sorted by pid */
	size_t nprocs, procs_cap;
	uint64_t keep_ns;
	uint64_t evicted_rows;		/* kernel rows moved to `acc` */
	uint64_t exited;		/* processes seen exiting */
	/* Pids whose rows the last exited_rows__read() moved to pid 0 (sorted). */
	uint32_t *folded;
	size_t nfolded, folded_cap;
	uint64_t next_scan_ns;
	uint64_t next_read_ns;		/* exited_rows__tick() */
	bool churn;			/* the last read evicted rows */
	/* Another provider (--mem) names its rows through the session's
	 * snapshots: keep those of exited processes. */
	bool keep_spaces;
};

/* keep_s: how long an exited process keeps rows of its own. */
void exited_rows__init(struct exited_rows *f, struct query_provider *qp,
		 struct session *ss, double keep_s);
void exited_rows__free(struct exited_rows *f);
/*
 * The cumulative figures now into `out` (initialised, empty; made per
 * pid): the kernel's rows of live processes plus the accumulator; rows of
 * processes that had exited before this call are evicted from the maps.
 * out->duration_ns is the time since counting began (or the session's
 * duration once it stopped). Not finished. 0 or -errno (reported).
 */
int exited_rows__read(struct exited_rows *f, struct summary *out);
/* Between reads (cheap, rate-limited): labels the targets started since,
 * so that one exiting before the next read keeps its labels. 0 or
 * -ENOMEM. */
int exited_rows__poll(struct exited_rows *f);
/*
 * A one-shot run (sptrace -d N, Ctrl-C, a command): as exited_rows__poll(),
 * and every `period_ns` a read whose figures are dropped, which moves the
 * rows of processes gone out of the maps, so connection churn never fills
 * them; every tenth of it while processes exit (the last read evicted
 * some). 0 or -errno (reported).
 */
int exited_rows__tick(struct exited_rows *f, uint64_t period_ns);
/* The run's figures added to `out` (per pid or not, as `out` is): a last
 * exited_rows__read(), the rows of exited processes included. */
int exited_rows__collect(struct exited_rows *f, struct summary *out);
/* The process `pid`, or NULL. */
const struct tracked_proc *exited_rows__proc(const struct exited_rows *f, uint32_t pid);
/* Processes alive at the last read. */
size_t exited_rows__alive(const struct exited_rows *f);
/* Adds row `r` (stats and histogram) to `dst` as process `pid`. */
int exited_rows__add_row(struct summary *dst, const struct sp_query_row *r,
		   uint32_t pid);

#endif /* SPTRACE_EXITED_ROWS_H */
