/* SPDX-License-Identifier: MIT */
/*
 * Loading a run into a summary, in one place for diff, report and import:
 * a trace file (sptrace record) or a JSON summary (sptrace -f json), told
 * apart by content, or a run of a history database by reference (an id,
 * latest or latest~N).
 */
#ifndef SPTRACE_RUN_LOAD_H
#define SPTRACE_RUN_LOAD_H

struct history_db;
struct history_run;
struct mem_report;
struct summary;

/* A run file into s, finished, its counters' warnings said once (naming
 * path). 0 or -errno (reported). */
int run_load__file(const char *path, struct summary *s);
/* The run `ref` of h into s (finished), with its memory report into mr
 * and its metadata into meta when they are non-NULL. 0 or -errno
 * (reported). */
int run_load__db(struct history_db *h, const char *ref, struct summary *s,
		 struct mem_report *mr, struct history_run *meta);
/* One line when unbalanced pairs, full maps or lost events make a run's
 * figures undercount, naming the run. */
void run_load__warn(const char *name, const struct summary *s);

#endif /* SPTRACE_RUN_LOAD_H */
