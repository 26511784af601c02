/* SPDX-License-Identifier: MIT */
/*
 * One run of `sptrace bench`: a command launched and traced as `sptrace
 * -- CMD` traces it, its summary stored in the history database. Each run
 * is a session of its own (the BPF program loaded again): a run then
 * costs what `sptrace --db` costs, and shares nothing with the run before
 * it, which is what repeated runs are for.
 */
#ifndef SPTRACE_BENCH_RUN_H
#define SPTRACE_BENCH_RUN_H

#include <stdbool.h>
#include <stdint.h>
#include "session.h"

struct history_db;

struct bench_result {
	int64_t id;			/* the stored run (0: not stored) */
	uint64_t duration_ns;		/* traced wall time */
	int status;			/* the command's exit status */
	bool interrupted;		/* Ctrl-C or SIGTERM ended it */
	unsigned int queries;		/* query rows */
};

/*
 * Runs o->cmd once under a session of its own, and stores the run in db
 * with label and source "bench" when it ran to its end with status 0 and
 * was not interrupted (a run cut short is not one of the runs compared).
 * 0 (see r for what happened) or -errno (reported).
 */
int bench_run__once(const struct session_opts *o, struct history_db *db,
		    const char *label, struct bench_result *r);

#endif /* SPTRACE_BENCH_RUN_H */
