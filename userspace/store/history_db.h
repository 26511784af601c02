/* SPDX-License-Identifier: MIT */
/*
 * The metrics history database: runs (a summary, its metadata and, when
 * there is one, the memory report) stored in SQLite so that `history`,
 * `diff --db` and the HTML report compare runs over time. Schema, versioning
 * and guarantees: docs/database.md.
 */
#ifndef SPTRACE_HISTORY_DB_H
#define SPTRACE_HISTORY_DB_H

#include <stdbool.h>
#include <stdint.h>

struct summary;
struct mem_report;

/* The schema version this build writes (PRAGMA user_version). */
#define HISTORY_DB_VERSION 1

struct history_db;			/* opaque: an open SQLite database */

/* One stored run's metadata. */
struct history_run {
	int64_t id;
	int64_t started_at;		/* unix seconds */
	uint64_t duration_ns;
	char *label, *command, *pids, *host, *version, *source; /* owned, may be NULL */
};

/* Opens (creating and migrating the schema when create) the database at
 * path. 0 or -errno, error reported naming the file. */
int history_db__open(const char *path, bool create, struct history_db **out);
void history_db__close(struct history_db *db);

/* Stores one run in ONE transaction: metadata, every query row with its
 * histogram bins and error counters, and (mr non-NULL) the memory per-type
 * rows and timeline. *id (may be NULL) gets the new run id. The run's
 * duration is meta->duration_ns, or s->duration_ns when that is 0. s should
 * be finished (its p50/p90/p99 are stored). 0 or -errno (reported). */
int history_db__store(struct history_db *db, const struct history_run *meta,
		      const struct summary *s, const struct mem_report *mr,
		      int64_t *id);

/* Loads run `ref` (a run id, or "latest", or "latest~N") into an empty,
 * unfinished summary s (rows, bins, duration, errors, lost), and mr (may be
 * NULL) and meta (may be NULL). -ENOENT (reported) for an unknown run. The
 * caller finishes s (summary__finish) and frees meta (history_run__free). */
int history_db__load(struct history_db *db, const char *ref,
		     struct summary *s, struct mem_report *mr,
		     struct history_run *meta);

void history_run__free(struct history_run *r);

/* Fills what a run on this machine knows of itself: started_at (now, when
 * 0), host (uname nodename), version (SPTRACE_VERSION), and copies of label
 * and source (either may be NULL). 0 or -ENOMEM (reported). */
int history_run__fill(struct history_run *r, const char *label,
		      const char *source);
/* The command line of a run: argv joined by spaces ("" for none), or
 * "-p PID,PID" and "-b PATH" when there is no argv; pids the same list
 * "PID,PID" (NULL when none). 0 or -ENOMEM (reported). */
int history_run__describe(struct history_run *r, char *const *argv,
			  const int *pids, int npids,
			  const char *const *binaries, int nbinaries);
/* Opens (creating) the database at path, stores the run and closes it; on
 * success says "stored as run N" on stderr. 0 or -errno (reported). */
int history_db__store_file(const char *path, const struct history_run *meta,
			   const struct summary *s,
			   const struct mem_report *mr, int64_t *id);

/*
 * Additions for `sptrace history` and the HTML report.
 */

/* Resolves `ref` ("latest", "latest~N" or an id) to a run id. -ENOENT
 * (reported) when no such run; -EINVAL (reported) for a malformed ref. */
int history_db__resolve(struct history_db *db, const char *ref, int64_t *id);

/* One run as listed: metadata plus totals over its query rows. */
struct history_entry {
	struct history_run run;
	uint64_t nqueries;		/* distinct query rows */
	uint64_t total_self_ns;		/* sum of self_ns over its rows */
};

/* Every run (label non-NULL: only runs with that label), oldest first.
 * *out is an array of *n entries; free with history_entries__free. */
int history_db__list(struct history_db *db, const char *label,
		     struct history_entry **out, unsigned int *n);
void history_entries__free(struct history_entry *v, unsigned int n);

/* One query across runs: its figures in each run (label-filtered as
 * history_db__list, oldest first). Runs without the query have present
 * false. Rows of several processes of a per-pid run are summed; p99 is
 * the row's stored p99 (the maximum over its per-pid rows). */
struct history_point {
	struct history_run run;
	bool present;
	uint64_t count, self_ns, total_ns, p99_ns;
};
int history_db__query(struct history_db *db, const char *label,
		      const char *query, struct history_point **out,
		      unsigned int *n);
void history_points__free(struct history_point *v, unsigned int n);

/*
 * Sets of runs, for verdicts (model/verdict.h).
 */
struct run_set;

/*
 * The runs a set reference names, as ids ascending without repeats
 * (*ids malloc'ed, *n >= 1):
 *   REF          one run: an id, latest or latest~N
 *   A..B         every stored run from REF A to REF B (ids A <= id <= B)
 *   X,Y,...      every run of each item (a REF or a range)
 *   label:NAME   every run labelled NAME (the rest of the string)
 * -ENOENT (reported) when it names no stored run, -EINVAL (reported) for
 * a malformed reference.
 */
int history_db__resolve_set(struct history_db *db, const char *set,
			    int64_t **ids, unsigned int *n);
/* The runs stored before run `id` with the same command line (at most
 * `max`, the latest ones), ids ascending; *n may be 0. 0 or -errno
 * (reported). */
int history_db__earlier(struct history_db *db, int64_t id, unsigned int max,
			int64_t **ids, unsigned int *n);
/* The query rows of runs ids[0..n) into set (initialized here, finished;
 * free with run_set__free()), in one read transaction. 0 or -errno
 * (reported). */
int history_db__load_set(struct history_db *db, const int64_t *ids,
			 unsigned int n, struct run_set *set);
/* The same for the one query called exactly `name`. */
int history_db__load_query_set(struct history_db *db, const int64_t *ids,
			       unsigned int n, const char *name,
			       struct run_set *set);

#endif /* SPTRACE_HISTORY_DB_H */
