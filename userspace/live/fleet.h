/* SPDX-License-Identifier: MIT */
/*
 * Reading a running session again and again (sptrace --interval, sptrace
 * serve) with flat memory: the rows of processes that exited are moved out
 * of the kernel maps into a bounded userspace accumulator, and every
 * process seen gets its labels (comm, executable) once.
 */
#ifndef SPTRACE_FLEET_H
#define SPTRACE_FLEET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "summary.h"

struct query_provider;
struct session;

/* A process that has rows. */
struct fleet_proc {
	uint32_t pid;
	uint64_t start;		/* /proc/PID/stat starttime: tells reuse */
	char comm[17];		/* "" if it exited before it was seen */
	char *exe;		/* owned; "" if unknown */
	bool alive;
	bool evicted;		/* its rows are in the accumulator */
	uint64_t dead_ns;	/* CLOCK_MONOTONIC when seen gone */
};

struct fleet {
	struct query_provider *qp;
	struct session *ss;		/* its snapshots of exited pids dropped */
	/* Rows of exited processes (per pid), then, once `keep_ns` passed,
	 * under pid 0: "every exited process". */
	struct summary acc;
	struct fleet_proc *procs;	/* sorted by pid */
	size_t nprocs, procs_cap;
	uint64_t keep_ns;
	uint64_t evicted_rows;		/* kernel rows moved to `acc` */
	uint64_t exited;		/* processes seen exiting */
	/* Pids whose rows the last fleet__read() moved to pid 0 (sorted). */
	uint32_t *folded;
	size_t nfolded, folded_cap;
	uint64_t next_scan_ns;
	/* Another provider (--mem) names its rows through the session's
	 * snapshots: keep those of exited processes. */
	bool keep_spaces;
};

/* keep_s: how long an exited process keeps rows of its own. */
void fleet__init(struct fleet *f, struct query_provider *qp,
		 struct session *ss, double keep_s);
void fleet__free(struct fleet *f);
/*
 * The cumulative figures now into `out` (initialised, empty; made per
 * pid): the kernel's rows of live processes plus the accumulator; rows of
 * processes that had exited before this call are evicted from the maps.
 * out->duration_ns is the time since counting began (or the session's
 * duration once it stopped). Not finished. 0 or -errno (reported).
 */
int fleet__read(struct fleet *f, struct summary *out);
/* Between reads (cheap, rate-limited): labels the targets started since,
 * so that one exiting before the next read keeps its labels. 0 or
 * -ENOMEM. */
int fleet__poll(struct fleet *f);
/* The process `pid`, or NULL. */
const struct fleet_proc *fleet__proc(const struct fleet *f, uint32_t pid);
/* Processes alive at the last read. */
size_t fleet__alive(const struct fleet *f);
/* Adds row `r` (stats and histogram) to `dst` as process `pid`. */
int fleet__add_row(struct summary *dst, const struct sp_query_row *r,
		   uint32_t pid);

#endif /* SPTRACE_FLEET_H */
