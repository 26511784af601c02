/* SPDX-License-Identifier: MIT */
/*
 * Storing a run in the history database, in one place for trace, record,
 * mem (a run just traced) and import (a run file saved earlier).
 */
#ifndef SPTRACE_RUN_STORE_H
#define SPTRACE_RUN_STORE_H

#include <stdint.h>

struct history_db;
struct history_run;
struct mem_report;
struct summary;

/* Where a traced run came from: the command launched, or the pids and
 * binaries traced. */
struct run_origin {
	char *const *cmd;		/* NULL: none launched */
	const int *pids;
	int npids;
	const char *const *binaries;
	int nbinaries;
};

/* Stores a finished run: its metadata (command, pids, host, version,
 * label, source "live"/"record"/"mem"/"bench") and the summary, with mr
 * when non-NULL, in one transaction; its id in *id (may be NULL). 0 or
 * -errno (reported). */
int run_store(struct history_db *h, const char *label, const char *source,
	      const struct run_origin *o, int64_t started_at,
	      const struct summary *s, const struct mem_report *mr,
	      int64_t *id);
/* Loads the run file at path (run_load__file) and stores it as one run of
 * the database at db (created if missing), dated and described by what the
 * file says of itself; its id in *id. 0 or -errno (reported). */
int run_store__import(const char *db, const char *label, const char *path,
		      int64_t *id);

/* What the run file at path says of its run, into r: a trace file's start
 * time, command (history_run__describe), pids and version; a JSON summary
 * has none of them (r->command stays NULL), only its modification time.
 * 0 or -ENOMEM. */
int run_store__describe(const char *path, struct history_run *r);

#endif /* SPTRACE_RUN_STORE_H */
