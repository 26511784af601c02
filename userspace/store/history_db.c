// SPDX-License-Identifier: MIT
/*
 * The metrics history database (docs/database.md): runs stored in SQLite.
 *
 * The schema version is PRAGMA user_version; `migrations` below takes a
 * database from version i to i + 1, and every pending step runs in the one
 * IMMEDIATE transaction that also bumps user_version, so two processes
 * opening a new file at once cannot both migrate it, and a crash leaves the
 * old version. A file from a newer sptrace is refused, never touched.
 *
 * A run is stored in one IMMEDIATE transaction: SQLite's journal (WAL)
 * makes it all or nothing across crashes and SIGKILL; busy_timeout makes a
 * second writer wait for the first instead of failing with "database is
 * locked". Counters are uint64 in C and INTEGER (int64) in SQLite: stored
 * as their two's-complement bits, they round-trip exactly (a figure above
 * 2^63 - 1 would read negative in sqlite3, about 292 years of nanoseconds).
 * Names are TEXT bound with their length, stored as the exact bytes.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <sqlite3.h>
#include <sys/utsname.h>
#include "input.h"
#include "history_db.h"
#include "log.h"
#include "mem_report.h"
#include "output.h"
#include "run_set.h"
#include "summary.h"
#include "vec.h"

/* How long a writer waits for another writer's transaction. */
#define HISTORY_BUSY_MS 30000

struct history_db {
	sqlite3 *db;
	char *path;
};

/* Migration i takes the schema from version i to i + 1. Append only. */
static const char *const migrations[] = {
	/* 0 -> 1 */
	"CREATE TABLE runs ("
	" id INTEGER PRIMARY KEY,"
	" started_at INTEGER NOT NULL,"
	" duration_ns INTEGER NOT NULL,"
	" label TEXT, command TEXT, pids TEXT, host TEXT, version TEXT,"
	" source TEXT,"
	" per_pid INTEGER NOT NULL,"
	" lost INTEGER NOT NULL,"
	" total_self_ns INTEGER NOT NULL);"
	"CREATE INDEX runs_label ON runs(label);"
	"CREATE TABLE queries ("
	" id INTEGER PRIMARY KEY,"
	" run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
	" name TEXT NOT NULL,"
	" pid INTEGER NOT NULL,"
	" count INTEGER NOT NULL, total_ns INTEGER NOT NULL,"
	" self_ns INTEGER NOT NULL, min_ns INTEGER NOT NULL,"
	" max_ns INTEGER NOT NULL, cache_hits INTEGER NOT NULL,"
	" incr_loads INTEGER NOT NULL, incr_load_ns INTEGER NOT NULL,"
	" blocked_count INTEGER NOT NULL, blocked_ns INTEGER NOT NULL,"
	" p50_ns INTEGER NOT NULL, p90_ns INTEGER NOT NULL,"
	" p99_ns INTEGER NOT NULL,"
	" UNIQUE (run_id, name, pid));"
	"CREATE INDEX queries_name ON queries(name);"
	"CREATE TABLE hist_bins ("
	" query_id INTEGER NOT NULL REFERENCES queries(id) ON DELETE CASCADE,"
	" bucket INTEGER NOT NULL,"
	" count INTEGER NOT NULL,"
	" PRIMARY KEY (query_id, bucket)) WITHOUT ROWID;"
	"CREATE TABLE run_errors ("
	" run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
	" kind TEXT NOT NULL,"
	" name TEXT NOT NULL,"
	" count INTEGER NOT NULL,"
	" PRIMARY KEY (run_id, kind, name)) WITHOUT ROWID;"
	"CREATE TABLE mem_reports ("
	" run_id INTEGER PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,"
	" duration_ns INTEGER NOT NULL,"
	" sampled INTEGER NOT NULL,"
	" heap_traced INTEGER NOT NULL,"
	" per_thread INTEGER NOT NULL,"
	" timeline_on INTEGER NOT NULL,"
	" interval_ns INTEGER NOT NULL,"
	" step INTEGER NOT NULL,"
	" heap_allocs INTEGER NOT NULL, heap_alloc_bytes INTEGER NOT NULL,"
	" heap_frees INTEGER NOT NULL, heap_free_bytes INTEGER NOT NULL,"
	" heap_live INTEGER NOT NULL, heap_live_bytes INTEGER NOT NULL,"
	" heap_peak_live_bytes INTEGER NOT NULL);"
	"CREATE TABLE mem_types ("
	" run_id INTEGER NOT NULL REFERENCES mem_reports(run_id) ON DELETE CASCADE,"
	" name TEXT NOT NULL,"
	" allocs INTEGER NOT NULL, alloc_bytes INTEGER NOT NULL,"
	" frees INTEGER NOT NULL, free_bytes INTEGER NOT NULL,"
	" live INTEGER NOT NULL, live_bytes INTEGER NOT NULL,"
	" peak_live_bytes INTEGER NOT NULL,"
	" PRIMARY KEY (run_id, name)) WITHOUT ROWID;"
	"CREATE TABLE mem_timeline ("
	" run_id INTEGER NOT NULL REFERENCES mem_reports(run_id) ON DELETE CASCADE,"
	" seq INTEGER NOT NULL,"
	" t_ns INTEGER NOT NULL,"
	" rss_bytes INTEGER NOT NULL, rss_anon_bytes INTEGER NOT NULL,"
	" rss_file_bytes INTEGER NOT NULL, heap_live_bytes INTEGER NOT NULL,"
	" typed_live_bytes INTEGER NOT NULL,"
	" PRIMARY KEY (run_id, seq)) WITHOUT ROWID;",
};

_Static_assert(sizeof(migrations) / sizeof(migrations[0]) == HISTORY_DB_VERSION,
	       "one migration per schema version");

static int sqlite_errno(int rc)
{
	switch (rc & 0xff) {
	case SQLITE_OK:
		return 0;
	case SQLITE_NOMEM:
		return -ENOMEM;
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		return -EBUSY;
	case SQLITE_READONLY:
	case SQLITE_PERM:
	case SQLITE_AUTH:
		return -EACCES;
	case SQLITE_FULL:
		return -ENOSPC;
	case SQLITE_CANTOPEN:
		return -ENOENT;
	case SQLITE_NOTADB:
	case SQLITE_CORRUPT:
		return -EBADMSG;
	case SQLITE_TOOBIG:
		return -E2BIG;
	case SQLITE_CONSTRAINT:
	case SQLITE_MISMATCH:
	case SQLITE_RANGE:
		return -EINVAL;
	default:
		return -EIO;
	}
}

/* Reports rc as one line naming the file; returns -errno. */
static int db_fail(struct history_db *h, const char *what, int rc)
{
	const char *hint = "";

	switch (rc & 0xff) {
	case SQLITE_NOTADB:
		hint = " (not an sptrace history database?)";
		break;
	case SQLITE_CORRUPT:
		hint = " (the file is damaged: check it with sqlite3 FILE 'PRAGMA integrity_check')";
		break;
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		hint = " (another process held it too long: retry)";
		break;
	case SQLITE_FULL:
		hint = " (free some space: nothing was stored)";
		break;
	}
	sp_err("%s: %s: %s%s", h->path, what,
	       h->db ? sqlite3_errmsg(h->db) : sqlite3_errstr(rc), hint);
	return sqlite_errno(rc);
}

static int exec(struct history_db *h, const char *sql, const char *what)
{
	int rc = sqlite3_exec(h->db, sql, NULL, NULL, NULL);

	return rc == SQLITE_OK ? 0 : db_fail(h, what, rc);
}

static int prepare(struct history_db *h, const char *sql, sqlite3_stmt **st)
{
	int rc = sqlite3_prepare_v2(h->db, sql, -1, st, NULL);

	return rc == SQLITE_OK ? 0 : db_fail(h, "cannot prepare a statement", rc);
}

/* The first column of the first row of a one-value query (`sql`), in *v;
 * `what` names it in the error line. */
static int query_int64(struct history_db *h, const char *sql,
		       const char *what, int64_t *v)
{
	sqlite3_stmt *st;
	int rc, err;

	err = prepare(h, sql, &st);
	if (err)
		return err;
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*v = sqlite3_column_int64(st, 0);
		rc = SQLITE_OK;
	}
	sqlite3_finalize(st);
	return rc == SQLITE_OK ? 0 : db_fail(h, what, rc);
}

static int user_version(struct history_db *h, int *v)
{
	int64_t n = 0;
	int err;

	err = query_int64(h, "PRAGMA user_version",
			  "cannot read the schema version", &n);
	*v = (int)n;
	return err;
}

/* Whether the file holds any table (a version-0 file may be someone
 * else's SQLite database: never add our tables to it unasked). */
static int has_tables(struct history_db *h, bool *yes)
{
	int64_t n = 0;
	int err;

	err = query_int64(h, "SELECT count(*) FROM sqlite_schema",
			  "cannot read the schema", &n);
	*yes = n > 0;
	return err;
}

/* Whether this build may use the file: its version in *v, or -errno
 * (reported) for a newer schema, someone else's database, or (without
 * create) a database with no schema yet. Reads only. */
static int check_version(struct history_db *h, bool create, int *v)
{
	bool tables = false;
	int err;

	err = user_version(h, v);
	if (err)
		return err;
	if (*v > HISTORY_DB_VERSION) {
		sp_err("%s: database schema version %d is newer than this sptrace (%s) supports (%d) (use a newer sptrace)",
		       h->path, *v, SPTRACE_VERSION, HISTORY_DB_VERSION);
		return -EPROTONOSUPPORT;
	}
	if (*v)
		return 0;
	err = has_tables(h, &tables);
	if (err)
		return err;
	if (tables) {
		sp_err("%s: an SQLite database, but not an sptrace history database (give a new file)",
		       h->path);
		return -EBADMSG;
	}
	if (!create) {
		sp_err("%s: no runs stored yet (store one with --db on a run or with sptrace import)",
		       h->path);
		return -ENOENT;
	}
	return 0;
}

/* Brings the schema to HISTORY_DB_VERSION in one transaction; the version
 * is read again under the write lock, so of two processes creating the
 * file at once, one migrates and the other finds it done. */
static int migrate(struct history_db *h, bool create)
{
	char sql[64];
	int v, err, i;

	err = exec(h, "BEGIN IMMEDIATE", "cannot lock the database");
	if (err)
		return err;
	err = check_version(h, create, &v);
	if (err)
		goto rollback;
	for (i = v; i < HISTORY_DB_VERSION; i++) {
		err = exec(h, migrations[i], "cannot migrate the schema");
		if (err)
			goto rollback;
	}
	snprintf(sql, sizeof(sql), "PRAGMA user_version = %d",
		 HISTORY_DB_VERSION);
	if (v != HISTORY_DB_VERSION)
		err = exec(h, sql, "cannot migrate the schema");
	if (!err)
		err = exec(h, "COMMIT", "cannot migrate the schema");
	if (!err)
		return 0;
rollback:
	sqlite3_exec(h->db, "ROLLBACK", NULL, NULL, NULL);
	return err;
}

int history_db__open(const char *path, bool create, struct history_db **out)
{
	int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOFOLLOW |
		    SQLITE_OPEN_FULLMUTEX;
	struct history_db *h;
	struct stat st;
	int rc, err, v;

	*out = NULL;
	h = calloc(1, sizeof(*h));
	if (!h || !(h->path = strdup(path))) {
		free(h);
		sp_err("%s: out of memory", path);
		return -ENOMEM;
	}
	/* SQLite would read a FIFO or a device as a database (and fail,
	 * or wait, as would creating it): only a regular file is one. */
	if (!stat(path, &st) && !S_ISREG(st.st_mode)) {
		err = S_ISDIR(st.st_mode) ? -EISDIR : -EINPUT_NOTREG;
		sp_err("%s: cannot open the database: %s", path,
		       input__strerror(err));
		history_db__close(h);
		return err;
	}
	/* Created 0600 like every file sptrace writes (SQLite's own default
	 * is 0644; its -wal and -shm files copy the database's mode). */
	if (create) {
		int fd = output__create(path, OUTPUT_KEEP);

		if (fd < 0) {
			err = fd;
			if (err == -ENOENT)
				sp_err("%s: cannot create the database: %s (does its directory exist?)",
				       path, strerror(-err));
			else
				sp_err("%s: cannot create the database: %s",
				       path, strerror(-err));
			history_db__close(h);
			return err;
		}
		close(fd);
	}
	rc = sqlite3_open_v2(path, &h->db, flags, NULL);
	if (rc != SQLITE_OK) {
		int sys = sqlite3_system_errno(h->db);

		if (!create && (rc & 0xff) == SQLITE_CANTOPEN && sys == ENOENT)
			sp_err("%s: no such database (store a run with --db first)",
			       path);
		else if ((rc & 0xff) == SQLITE_CANTOPEN && sys)
			sp_err("%s: cannot open the database: %s", path,
			       strerror(sys));
		else
			db_fail(h, "cannot open the database", rc);
		err = sys && (rc & 0xff) == SQLITE_CANTOPEN ? -sys
							    : sqlite_errno(rc);
		history_db__close(h);
		return err;
	}
	sqlite3_extended_result_codes(h->db, 0);
	sqlite3_busy_timeout(h->db, HISTORY_BUSY_MS);
	/* Checked before anything is written: a file this build must not
	 * use (a newer schema, someone else's database) stays as it was,
	 * journal mode included. In one read transaction: the version and
	 * the tables must come from one snapshot, or a file that another
	 * sptrace is creating right now reads as version 0 with tables,
	 * i.e. as someone else's database. */
	err = exec(h, "BEGIN", "cannot read the database");
	if (!err) {
		err = check_version(h, create, &v);
		sqlite3_exec(h->db, err ? "ROLLBACK" : "COMMIT", NULL, NULL,
			     NULL);
	}
	/* WAL: readers never block the writer, and a killed writer's
	 * transaction is simply not in the log. */
	if (!err)
		err = exec(h, "PRAGMA journal_mode = WAL", "cannot open the database");
	if (!err)
		err = exec(h, "PRAGMA foreign_keys = ON", "cannot open the database");
	if (!err)
		err = exec(h, "PRAGMA synchronous = NORMAL", "cannot open the database");
	if (!err && v != HISTORY_DB_VERSION)
		err = migrate(h, create);
	if (err) {
		history_db__close(h);
		return err;
	}
	*out = h;
	return 0;
}

void history_db__close(struct history_db *h)
{
	if (!h)
		return;
	sqlite3_close_v2(h->db);
	free(h->path);
	free(h);
}

void history_run__free(struct history_run *r)
{
	if (!r)
		return;
	free(r->label);
	free(r->command);
	free(r->pids);
	free(r->host);
	free(r->version);
	free(r->source);
	memset(r, 0, sizeof(*r));
}

/* Binding helpers: uint64 as its int64 bits; NULL strings as SQL NULL. */
static int bind_u64(sqlite3_stmt *st, int i, uint64_t v)
{
	return sqlite3_bind_int64(st, i, (sqlite3_int64)v);
}

static int bind_str(sqlite3_stmt *st, int i, const char *s)
{
	if (!s)
		return sqlite3_bind_null(st, i);
	if (strlen(s) > INT_MAX)
		return SQLITE_TOOBIG;
	return sqlite3_bind_text(st, i, s, (int)strlen(s), SQLITE_STATIC);
}

static uint64_t col_u64(sqlite3_stmt *st, int i)
{
	return (uint64_t)sqlite3_column_int64(st, i);
}

/* A copy of a text column (exact bytes); NULL for SQL NULL. *err is set
 * to -ENOMEM on failure. */
static char *col_str(sqlite3_stmt *st, int i, int *err)
{
	const unsigned char *t;
	char *s;
	int n;

	if (sqlite3_column_type(st, i) == SQLITE_NULL)
		return NULL;
	t = sqlite3_column_text(st, i);
	n = sqlite3_column_bytes(st, i);
	s = malloc((size_t)n + 1);
	if (!s || (!t && n)) {
		free(s);
		*err = -ENOMEM;
		return NULL;
	}
	if (n)
		memcpy(s, t, (size_t)n);
	s[n] = 0;
	return s;
}

/* Steps a statement that returns no row, then resets it for reuse. */
static int step_done(sqlite3_stmt *st)
{
	int rc = sqlite3_step(st);

	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

static int store_errors(struct history_db *h, int64_t run, const char *kind,
			const char *name, uint64_t count, sqlite3_stmt *st)
{
	int rc;

	if (!count)
		return SQLITE_OK;
	(void)h;
	rc = sqlite3_bind_int64(st, 1, run);
	if (rc == SQLITE_OK)
		rc = bind_str(st, 2, kind);
	if (rc == SQLITE_OK)
		rc = bind_str(st, 3, name);
	if (rc == SQLITE_OK)
		rc = bind_u64(st, 4, count);
	return rc == SQLITE_OK ? step_done(st) : rc;
}

static int store_queries(struct history_db *h, int64_t run,
			 const struct summary *s)
{
	sqlite3_stmt *q = NULL, *b = NULL;
	unsigned int i, j;
	int rc;

	rc = sqlite3_prepare_v2(h->db,
		"INSERT INTO queries (run_id, name, pid, count, total_ns,"
		" self_ns, min_ns, max_ns, cache_hits, incr_loads,"
		" incr_load_ns, blocked_count, blocked_ns, p50_ns, p90_ns,"
		" p99_ns) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10,"
		" ?11, ?12, ?13, ?14, ?15, ?16)", -1, &q, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_prepare_v2(h->db,
			"INSERT INTO hist_bins (query_id, bucket, count)"
			" VALUES (?1, ?2, ?3)", -1, &b, NULL);
	for (i = 0; rc == SQLITE_OK && i < s->nrows; i++) {
		const struct sp_query_row *r = &s->rows[i];
		const struct sp_query_stats *x = &r->st;
		int64_t qid;

		rc = sqlite3_bind_int64(q, 1, run);
		if (rc == SQLITE_OK)
			rc = bind_str(q, 2, r->name);
		if (rc == SQLITE_OK)
			rc = sqlite3_bind_int64(q, 3, r->pid);
		if (rc == SQLITE_OK)
			rc = bind_u64(q, 4, x->count);
		if (rc == SQLITE_OK)
			rc = bind_u64(q, 5, x->total_ns);
		if (rc == SQLITE_OK)
			rc = bind_u64(q, 6, x->self_ns);
		if (rc == SQLITE_OK)
			rc = bind_u64(q, 7, x->count ? x->min_ns : 0);
		if (rc == SQLITE_OK)
			rc = bind_u64(q, 8, x->max_ns);
		if (rc == SQLITE_OK)
			rc = bind_u64(q, 9, x->cache_hits);
		if (rc == SQLITE_OK)
			rc = bind_u64(q, 10, x->incr_loads);
		if (rc == SQLITE_OK)
			rc = bind_u64(q, 11, x->incr_load_ns);
		if (rc == SQLITE_OK)
			rc = bind_u64(q, 12, x->blocked_count);
		if (rc == SQLITE_OK)
			rc = bind_u64(q, 13, x->blocked_ns);
		if (rc == SQLITE_OK)
			rc = bind_u64(q, 14, r->p50_ns);
		if (rc == SQLITE_OK)
			rc = bind_u64(q, 15, r->p90_ns);
		if (rc == SQLITE_OK)
			rc = bind_u64(q, 16, r->p99_ns);
		if (rc == SQLITE_OK)
			rc = step_done(q);
		qid = sqlite3_last_insert_rowid(h->db);
		for (j = 0; rc == SQLITE_OK && j < r->nbins; j++) {
			if (!r->bins[j].count)
				continue;
			rc = sqlite3_bind_int64(b, 1, qid);
			if (rc == SQLITE_OK)
				rc = sqlite3_bind_int64(b, 2, r->bins[j].bucket);
			if (rc == SQLITE_OK)
				rc = bind_u64(b, 3, r->bins[j].count);
			if (rc == SQLITE_OK)
				rc = step_done(b);
		}
	}
	sqlite3_finalize(q);
	sqlite3_finalize(b);
	return rc;
}

static int store_mem(struct history_db *h, int64_t run,
		     const struct mem_report *mr, sqlite3_stmt *e)
{
	sqlite3_stmt *st = NULL;
	const struct mem_figures *f = &mr->heap;
	unsigned int i;
	int rc;

	rc = sqlite3_prepare_v2(h->db,
		"INSERT INTO mem_reports (run_id, duration_ns, sampled,"
		" heap_traced, per_thread, timeline_on, interval_ns, step,"
		" heap_allocs, heap_alloc_bytes, heap_frees, heap_free_bytes,"
		" heap_live, heap_live_bytes, heap_peak_live_bytes) VALUES"
		" (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14,"
		" ?15)", -1, &st, NULL);
	if (rc != SQLITE_OK)
		return rc;
	rc = sqlite3_bind_int64(st, 1, run);
	if (rc == SQLITE_OK)
		rc = bind_u64(st, 2, mr->duration_ns);
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_int64(st, 3, mr->sampled);
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_int(st, 4, mr->heap_traced);
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_int(st, 5, mr->per_thread);
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_int(st, 6, mr->timeline_on);
	if (rc == SQLITE_OK)
		rc = bind_u64(st, 7, mr->tl.interval_ns);
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_int64(st, 8, mr->tl.step);
	if (rc == SQLITE_OK)
		rc = bind_u64(st, 9, f->allocs);
	if (rc == SQLITE_OK)
		rc = bind_u64(st, 10, f->alloc_bytes);
	if (rc == SQLITE_OK)
		rc = bind_u64(st, 11, f->frees);
	if (rc == SQLITE_OK)
		rc = bind_u64(st, 12, f->free_bytes);
	if (rc == SQLITE_OK)
		rc = bind_u64(st, 13, f->live);
	if (rc == SQLITE_OK)
		rc = bind_u64(st, 14, f->live_bytes);
	if (rc == SQLITE_OK)
		rc = bind_u64(st, 15, f->peak_live_bytes);
	if (rc == SQLITE_OK)
		rc = step_done(st);
	sqlite3_finalize(st);
	st = NULL;
	if (rc == SQLITE_OK)
		rc = sqlite3_prepare_v2(h->db,
			"INSERT INTO mem_types (run_id, name, allocs,"
			" alloc_bytes, frees, free_bytes, live, live_bytes,"
			" peak_live_bytes) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7,"
			" ?8, ?9)", -1, &st, NULL);
	for (i = 0; rc == SQLITE_OK && i < mr->ntypes; i++) {
		f = &mr->types[i].f;
		rc = sqlite3_bind_int64(st, 1, run);
		if (rc == SQLITE_OK)
			rc = bind_str(st, 2, mr->types[i].name);
		if (rc == SQLITE_OK)
			rc = bind_u64(st, 3, f->allocs);
		if (rc == SQLITE_OK)
			rc = bind_u64(st, 4, f->alloc_bytes);
		if (rc == SQLITE_OK)
			rc = bind_u64(st, 5, f->frees);
		if (rc == SQLITE_OK)
			rc = bind_u64(st, 6, f->free_bytes);
		if (rc == SQLITE_OK)
			rc = bind_u64(st, 7, f->live);
		if (rc == SQLITE_OK)
			rc = bind_u64(st, 8, f->live_bytes);
		if (rc == SQLITE_OK)
			rc = bind_u64(st, 9, f->peak_live_bytes);
		if (rc == SQLITE_OK)
			rc = step_done(st);
	}
	sqlite3_finalize(st);
	st = NULL;
	if (rc == SQLITE_OK)
		rc = sqlite3_prepare_v2(h->db,
			"INSERT INTO mem_timeline (run_id, seq, t_ns, rss_bytes,"
			" rss_anon_bytes, rss_file_bytes, heap_live_bytes,"
			" typed_live_bytes) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7,"
			" ?8)", -1, &st, NULL);
	for (i = 0; rc == SQLITE_OK && i < mr->tl.n; i++) {
		const struct mem_point *p = &mr->tl.v[i];

		rc = sqlite3_bind_int64(st, 1, run);
		if (rc == SQLITE_OK)
			rc = sqlite3_bind_int64(st, 2, i);
		if (rc == SQLITE_OK)
			rc = bind_u64(st, 3, p->t_ns);
		if (rc == SQLITE_OK)
			rc = bind_u64(st, 4, p->rss_bytes);
		if (rc == SQLITE_OK)
			rc = bind_u64(st, 5, p->rss_anon_bytes);
		if (rc == SQLITE_OK)
			rc = bind_u64(st, 6, p->rss_file_bytes);
		if (rc == SQLITE_OK)
			rc = bind_u64(st, 7, p->heap_live_bytes);
		if (rc == SQLITE_OK)
			rc = bind_u64(st, 8, p->typed_live_bytes);
		if (rc == SQLITE_OK)
			rc = step_done(st);
	}
	sqlite3_finalize(st);
	for (i = 0; rc == SQLITE_OK && i < SP_MEM_ERR__MAX; i++)
		rc = store_errors(h, run, "mem", mem_report__error_name(i),
				  mr->errors[i], e);
	return rc;
}

int history_db__store(struct history_db *h, const struct history_run *meta,
		      const struct summary *s, const struct mem_report *mr,
		      int64_t *id)
{
	sqlite3_stmt *st = NULL, *e = NULL;
	uint64_t total_self = 0;
	unsigned int i;
	int64_t run = 0;
	int rc, err;

	err = exec(h, "BEGIN IMMEDIATE", "cannot lock the database to store the run");
	if (err)
		return err;
	for (i = 0; i < s->nrows; i++)
		total_self += s->rows[i].st.self_ns;
	rc = sqlite3_prepare_v2(h->db,
		"INSERT INTO runs (started_at, duration_ns, label, command,"
		" pids, host, version, source, per_pid, lost, total_self_ns)"
		" VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
		-1, &st, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_int64(st, 1, meta->started_at);
	if (rc == SQLITE_OK)
		rc = bind_u64(st, 2, meta->duration_ns ? meta->duration_ns
							: s->duration_ns);
	if (rc == SQLITE_OK)
		rc = bind_str(st, 3, meta->label);
	if (rc == SQLITE_OK)
		rc = bind_str(st, 4, meta->command);
	if (rc == SQLITE_OK)
		rc = bind_str(st, 5, meta->pids);
	if (rc == SQLITE_OK)
		rc = bind_str(st, 6, meta->host);
	if (rc == SQLITE_OK)
		rc = bind_str(st, 7, meta->version);
	if (rc == SQLITE_OK)
		rc = bind_str(st, 8, meta->source);
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_int(st, 9, s->per_pid);
	if (rc == SQLITE_OK)
		rc = bind_u64(st, 10, s->lost);
	if (rc == SQLITE_OK)
		rc = bind_u64(st, 11, total_self);
	if (rc == SQLITE_OK)
		rc = step_done(st);
	run = sqlite3_last_insert_rowid(h->db);
	if (rc == SQLITE_OK)
		rc = store_queries(h, run, s);
	if (rc == SQLITE_OK)
		rc = sqlite3_prepare_v2(h->db,
			"INSERT INTO run_errors (run_id, kind, name, count)"
			" VALUES (?1, ?2, ?3, ?4)", -1, &e, NULL);
	for (i = 0; rc == SQLITE_OK && i < SP_ERR__MAX; i++)
		rc = store_errors(h, run, "query", summary__error_name(i),
				  s->errors[i], e);
	if (rc == SQLITE_OK && mr)
		rc = store_mem(h, run, mr, e);
	sqlite3_finalize(st);
	sqlite3_finalize(e);
	if (rc != SQLITE_OK) {
		err = db_fail(h, "cannot store the run", rc);
		sqlite3_exec(h->db, "ROLLBACK", NULL, NULL, NULL);
		return err;
	}
	err = exec(h, "COMMIT", "cannot store the run");
	if (err) {
		sqlite3_exec(h->db, "ROLLBACK", NULL, NULL, NULL);
		return err;
	}
	if (id)
		*id = run;
	return 0;
}

/* "latest", "latest~N" or a decimal id. */
int history_db__resolve(struct history_db *h, const char *ref, int64_t *id)
{
	sqlite3_stmt *st;
	long long n = 0;
	char *end;
	bool latest = false;
	int rc, err;

	if (!strncmp(ref, "latest", 6) && (!ref[6] || ref[6] == '~')) {
		latest = true;
		if (ref[6]) {
			errno = 0;
			n = strtoll(ref + 7, &end, 10);
			if (errno || end == ref + 7 || *end || n < 0 ||
			    ref[7] == '-' || ref[7] == '+' || ref[7] == ' ')
				goto bad;
		}
	} else {
		errno = 0;
		n = strtoll(ref, &end, 10);
		if (errno || end == ref || *end || n <= 0 || ref[0] == '+' ||
		    ref[0] == ' ')
			goto bad;
	}
	err = prepare(h, latest ? "SELECT id FROM runs ORDER BY id DESC LIMIT 1 OFFSET ?1"
				: "SELECT id FROM runs WHERE id = ?1", &st);
	if (err)
		return err;
	sqlite3_bind_int64(st, 1, n);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		*id = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	if (rc == SQLITE_DONE) {
		sp_err("%s: no run '%s' (sptrace history --db %s lists them)",
		       h->path, ref, h->path);
		return -ENOENT;
	}
	return rc == SQLITE_ROW ? 0 : db_fail(h, "cannot find the run", rc);
bad:
	sp_err("%s: invalid run '%s' (expected a run id, latest or latest~N)",
	       h->path, ref);
	return -EINVAL;
}

#define RUN_COLS "r.id, r.started_at, r.duration_ns, r.label, r.command," \
		 " r.pids, r.host, r.version, r.source"

/* The RUN_COLS columns from column 0 into r. 0 or -ENOMEM. */
static int read_run(sqlite3_stmt *st, struct history_run *r)
{
	int err = 0;

	memset(r, 0, sizeof(*r));
	r->id = sqlite3_column_int64(st, 0);
	r->started_at = sqlite3_column_int64(st, 1);
	r->duration_ns = col_u64(st, 2);
	r->label = col_str(st, 3, &err);
	r->command = col_str(st, 4, &err);
	r->pids = col_str(st, 5, &err);
	r->host = col_str(st, 6, &err);
	r->version = col_str(st, 7, &err);
	r->source = col_str(st, 8, &err);
	if (err)
		history_run__free(r);
	return err;
}

static int load_queries(struct history_db *h, int64_t run, struct summary *s)
{
	sqlite3_stmt *st = NULL;
	int64_t last = -1;
	int rc, err = 0;

	/* Bins come joined with their row: one pass, rows in id order. */
	rc = sqlite3_prepare_v2(h->db,
		"SELECT q.id, q.name, q.pid, q.count, q.total_ns, q.self_ns,"
		" q.min_ns, q.max_ns, q.cache_hits, q.incr_loads,"
		" q.incr_load_ns, q.blocked_count, q.blocked_ns, b.bucket,"
		" b.count FROM queries q LEFT JOIN hist_bins b"
		" ON b.query_id = q.id WHERE q.run_id = ?1"
		" ORDER BY q.id, b.bucket", -1, &st, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_int64(st, 1, run);
	while (rc == SQLITE_OK && !err &&
	       (rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *name = (const char *)sqlite3_column_text(st, 1);
		uint32_t pid = (uint32_t)sqlite3_column_int64(st, 2);
		int64_t qid = sqlite3_column_int64(st, 0);

		rc = SQLITE_OK;
		if (!name) {
			err = -ENOMEM;
			break;
		}
		if (qid != last) {
			struct sp_query_stats x = {
				.count = col_u64(st, 3),
				.total_ns = col_u64(st, 4),
				.self_ns = col_u64(st, 5),
				.min_ns = col_u64(st, 6),
				.max_ns = col_u64(st, 7),
				.cache_hits = col_u64(st, 8),
				.incr_loads = col_u64(st, 9),
				.incr_load_ns = col_u64(st, 10),
				.blocked_count = col_u64(st, 11),
				.blocked_ns = col_u64(st, 12),
			};

			err = summary__add_stats_pid(s, name, pid, &x);
			last = qid;
		}
		if (!err && sqlite3_column_type(st, 13) != SQLITE_NULL) {
			int64_t bucket = sqlite3_column_int64(st, 13);

			if (bucket < 0 || bucket >= SP_HIST_BUCKETS) {
				sp_err("%s: run %" PRId64 ": histogram bucket %" PRId64
				       " out of range (the database was edited?)",
				       h->path, run, bucket);
				err = -EBADMSG;
				break;
			}
			err = summary__add_hist_pid(s, name, pid,
						    (uint32_t)bucket,
						    col_u64(st, 14));
		}
	}
	if (rc == SQLITE_DONE)
		rc = SQLITE_OK;
	sqlite3_finalize(st);
	if (err == -ENOMEM)
		sp_err("%s: out of memory loading run %" PRId64, h->path, run);
	if (!err && rc != SQLITE_OK)
		err = db_fail(h, "cannot load the run", rc);
	return err;
}

static int load_errors(struct history_db *h, int64_t run, struct summary *s,
		       struct mem_report *mr)
{
	sqlite3_stmt *st = NULL;
	unsigned int i;
	int rc;

	rc = sqlite3_prepare_v2(h->db,
		"SELECT kind, name, count FROM run_errors WHERE run_id = ?1",
		-1, &st, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_int64(st, 1, run);
	while (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *kind = (const char *)sqlite3_column_text(st, 0);
		const char *name = (const char *)sqlite3_column_text(st, 1);

		rc = SQLITE_OK;
		if (!kind || !name)
			continue;
		/* Counters this build does not know are left out. */
		if (!strcmp(kind, "query") && s) {
			for (i = 0; i < SP_ERR__MAX; i++)
				if (!strcmp(name, summary__error_name(i)))
					s->errors[i] += col_u64(st, 2);
		} else if (!strcmp(kind, "mem") && mr) {
			for (i = 0; i < SP_MEM_ERR__MAX; i++)
				if (!strcmp(name, mem_report__error_name(i)))
					mr->errors[i] += col_u64(st, 2);
		}
	}
	if (rc == SQLITE_DONE)
		rc = SQLITE_OK;
	sqlite3_finalize(st);
	return rc == SQLITE_OK ? 0 : db_fail(h, "cannot load the run", rc);
}

static int load_mem(struct history_db *h, int64_t run, struct mem_report *mr)
{
	sqlite3_stmt *st = NULL;
	int rc, err = 0;

	rc = sqlite3_prepare_v2(h->db,
		"SELECT duration_ns, sampled, heap_traced, per_thread,"
		" timeline_on, interval_ns, step, heap_allocs,"
		" heap_alloc_bytes, heap_frees, heap_free_bytes, heap_live,"
		" heap_live_bytes, heap_peak_live_bytes FROM mem_reports"
		" WHERE run_id = ?1", -1, &st, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_int64(st, 1, run);
	if (rc == SQLITE_OK) {
		rc = sqlite3_step(st);
		if (rc == SQLITE_ROW) {
			mr->duration_ns = col_u64(st, 0);
			mr->sampled = (uint32_t)sqlite3_column_int64(st, 1);
			mr->heap_traced = sqlite3_column_int(st, 2);
			mr->per_thread = sqlite3_column_int(st, 3);
			mr->timeline_on = sqlite3_column_int(st, 4);
			mr->tl.interval_ns = col_u64(st, 5);
			mr->tl.step = (unsigned int)sqlite3_column_int64(st, 6);
			mr->heap.allocs = col_u64(st, 7);
			mr->heap.alloc_bytes = col_u64(st, 8);
			mr->heap.frees = col_u64(st, 9);
			mr->heap.free_bytes = col_u64(st, 10);
			mr->heap.live = col_u64(st, 11);
			mr->heap.live_bytes = col_u64(st, 12);
			mr->heap.peak_live_bytes = col_u64(st, 13);
			rc = SQLITE_OK;
		} else if (rc == SQLITE_DONE) {
			/* A run without a memory report: mr stays empty. */
			sqlite3_finalize(st);
			return 0;
		}
	}
	sqlite3_finalize(st);
	st = NULL;
	if (rc == SQLITE_OK)
		rc = sqlite3_prepare_v2(h->db,
			"SELECT name, allocs, alloc_bytes, frees, free_bytes,"
			" live, live_bytes, peak_live_bytes FROM mem_types"
			" WHERE run_id = ?1 ORDER BY name", -1, &st, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_int64(st, 1, run);
	while (rc == SQLITE_OK && !err &&
	       (rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *name = (const char *)sqlite3_column_text(st, 0);
		struct mem_figures f = {
			.allocs = col_u64(st, 1),
			.alloc_bytes = col_u64(st, 2),
			.frees = col_u64(st, 3),
			.free_bytes = col_u64(st, 4),
			.live = col_u64(st, 5),
			.live_bytes = col_u64(st, 6),
			.peak_live_bytes = col_u64(st, 7),
		};

		rc = SQLITE_OK;
		err = name ? mem_report__add_type(mr, name, &f) : -ENOMEM;
	}
	if (rc == SQLITE_DONE)
		rc = SQLITE_OK;
	sqlite3_finalize(st);
	st = NULL;
	if (rc == SQLITE_OK && !err)
		rc = sqlite3_prepare_v2(h->db,
			"SELECT t_ns, rss_bytes, rss_anon_bytes, rss_file_bytes,"
			" heap_live_bytes, typed_live_bytes FROM mem_timeline"
			" WHERE run_id = ?1 ORDER BY seq", -1, &st, NULL);
	if (rc == SQLITE_OK && !err)
		rc = sqlite3_bind_int64(st, 1, run);
	while (rc == SQLITE_OK && !err &&
	       (rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct mem_point p = {
			.t_ns = col_u64(st, 0),
			.rss_bytes = col_u64(st, 1),
			.rss_anon_bytes = col_u64(st, 2),
			.rss_file_bytes = col_u64(st, 3),
			.heap_live_bytes = col_u64(st, 4),
			.typed_live_bytes = col_u64(st, 5),
		};
		struct mem_point *v;

		rc = SQLITE_OK;
		/* Appended as stored: mem_timeline__add would merge again. */
		v = realloc(mr->tl.v, (mr->tl.n + 1) * sizeof(*v));
		if (!v) {
			err = -ENOMEM;
			break;
		}
		mr->tl.v = v;
		v[mr->tl.n++] = p;
	}
	if (rc == SQLITE_DONE)
		rc = SQLITE_OK;
	sqlite3_finalize(st);
	if (err == -ENOMEM)
		sp_err("%s: out of memory loading run %" PRId64, h->path, run);
	if (!err && rc != SQLITE_OK)
		err = db_fail(h, "cannot load the run", rc);
	return err;
}

int history_db__load(struct history_db *h, const char *ref, struct summary *s,
		     struct mem_report *mr, struct history_run *meta)
{
	struct history_run run = { 0 };
	sqlite3_stmt *st = NULL;
	int64_t id;
	int rc, err;

	err = history_db__resolve(h, ref, &id);
	if (err)
		return err;
	/* One read transaction: the run is seen whole even while others
	 * write. */
	err = exec(h, "BEGIN", "cannot read the database");
	if (err)
		return err;
	rc = sqlite3_prepare_v2(h->db,
		"SELECT " RUN_COLS ", r.per_pid, r.lost FROM runs r"
		" WHERE r.id = ?1", -1, &st, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_int64(st, 1, id);
	if (rc == SQLITE_OK)
		rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		rc = SQLITE_OK;
		err = read_run(st, &run);
		if (!err && s) {
			s->per_pid = sqlite3_column_int(st, 9);
			s->duration_ns = run.duration_ns;
			s->lost = col_u64(st, 10);
		}
	} else if (rc == SQLITE_DONE) {
		sp_err("%s: no run '%s'", h->path, ref);
		err = -ENOENT;
	}
	sqlite3_finalize(st);
	if (!err && rc != SQLITE_OK)
		err = db_fail(h, "cannot load the run", rc);
	if (!err && s)
		err = load_queries(h, id, s);
	if (!err)
		err = load_errors(h, id, s, mr);
	if (!err && mr)
		err = load_mem(h, id, mr);
	sqlite3_exec(h->db, "COMMIT", NULL, NULL, NULL);
	if (!err && meta)
		*meta = run;
	else
		history_run__free(&run);
	return err;
}

void history_entries__free(struct history_entry *v, unsigned int n)
{
	unsigned int i;

	for (i = 0; v && i < n; i++)
		history_run__free(&v[i].run);
	free(v);
}

void history_points__free(struct history_point *v, unsigned int n)
{
	unsigned int i;

	for (i = 0; v && i < n; i++)
		history_run__free(&v[i].run);
	free(v);
}

int history_db__list(struct history_db *h, const char *label,
		     struct history_entry **out, unsigned int *n)
{
	struct history_entry *v = NULL;
	unsigned int cnt = 0;
	size_t cap = 0;
	sqlite3_stmt *st = NULL;
	int rc, err = 0;

	*out = NULL;
	*n = 0;
	rc = sqlite3_prepare_v2(h->db,
		"SELECT " RUN_COLS ", (SELECT count(*) FROM queries q"
		" WHERE q.run_id = r.id), r.total_self_ns FROM runs r"
		" WHERE ?1 IS NULL OR r.label = ?1 ORDER BY r.id", -1, &st,
		NULL);
	if (rc == SQLITE_OK)
		rc = bind_str(st, 1, label);
	while (rc == SQLITE_OK && !err &&
	       (rc = sqlite3_step(st)) == SQLITE_ROW) {
		rc = SQLITE_OK;
		if (VEC_RESERVE(v, cap, (size_t)cnt + 1)) {
			err = -ENOMEM;
			break;
		}
		err = read_run(st, &v[cnt].run);
		if (err)
			break;
		v[cnt].nqueries = col_u64(st, 9);
		v[cnt].total_self_ns = col_u64(st, 10);
		cnt++;
	}
	if (rc == SQLITE_DONE)
		rc = SQLITE_OK;
	sqlite3_finalize(st);
	if (err == -ENOMEM)
		sp_err("%s: out of memory listing runs", h->path);
	if (!err && rc != SQLITE_OK)
		err = db_fail(h, "cannot list the runs", rc);
	if (err) {
		history_entries__free(v, cnt);
		return err;
	}
	*out = v;
	*n = cnt;
	return 0;
}

int history_db__query(struct history_db *h, const char *label,
		      const char *query, struct history_point **out,
		      unsigned int *n)
{
	struct history_point *v = NULL;
	unsigned int cnt = 0;
	size_t cap = 0;
	sqlite3_stmt *st = NULL;
	int rc, err = 0;

	*out = NULL;
	*n = 0;
	rc = sqlite3_prepare_v2(h->db,
		"SELECT " RUN_COLS ", count(q.id), sum(q.count),"
		" sum(q.self_ns), sum(q.total_ns), max(q.p99_ns) FROM runs r"
		" LEFT JOIN queries q ON q.run_id = r.id AND q.name = ?2"
		" WHERE ?1 IS NULL OR r.label = ?1 GROUP BY r.id ORDER BY r.id",
		-1, &st, NULL);
	if (rc == SQLITE_OK)
		rc = bind_str(st, 1, label);
	if (rc == SQLITE_OK)
		rc = bind_str(st, 2, query);
	while (rc == SQLITE_OK && !err &&
	       (rc = sqlite3_step(st)) == SQLITE_ROW) {
		rc = SQLITE_OK;
		if (VEC_RESERVE(v, cap, (size_t)cnt + 1)) {
			err = -ENOMEM;
			break;
		}
		err = read_run(st, &v[cnt].run);
		if (err)
			break;
		v[cnt].present = sqlite3_column_int64(st, 9) > 0;
		v[cnt].count = col_u64(st, 10);
		v[cnt].self_ns = col_u64(st, 11);
		v[cnt].total_ns = col_u64(st, 12);
		v[cnt].p99_ns = col_u64(st, 13);
		cnt++;
	}
	if (rc == SQLITE_DONE)
		rc = SQLITE_OK;
	sqlite3_finalize(st);
	if (err == -ENOMEM)
		sp_err("%s: out of memory reading the history", h->path);
	if (!err && rc != SQLITE_OK)
		err = db_fail(h, "cannot read the history", rc);
	if (err) {
		history_points__free(v, cnt);
		return err;
	}
	*out = v;
	*n = cnt;
	return 0;
}

static int dup_into(char **dst, const char *src)
{
	if (!src)
		return 0;
	*dst = strdup(src);
	return *dst ? 0 : -ENOMEM;
}

int history_run__fill(struct history_run *r, const char *label,
		      const char *source)
{
	struct utsname u;
	int err = 0;

	if (!r->started_at)
		r->started_at = (int64_t)time(NULL);
	if (!r->host && !uname(&u))
		err = dup_into(&r->host, u.nodename);
	if (!err && !r->version)
		err = dup_into(&r->version, SPTRACE_VERSION);
	if (!err && !r->label)
		err = dup_into(&r->label, label);
	if (!err && !r->source)
		err = dup_into(&r->source, source);
	if (err)
		sp_err("out of memory describing the run");
	return err;
}

/* Appends sep and str to the growing string *buf (length *len). */
static int append(char **buf, size_t *len, const char *sep, const char *str)
{
	size_t ns = strlen(sep), n = strlen(str);
	char *v = realloc(*buf, *len + ns + n + 1);

	if (!v)
		return -ENOMEM;
	memcpy(v + *len, sep, ns);
	memcpy(v + *len + ns, str, n + 1);
	*buf = v;
	*len += ns + n;
	return 0;
}

int history_run__describe(struct history_run *r, char *const *argv,
			  const int *pids, int npids,
			  const char *const *binaries, int nbinaries)
{
	char *cmd = NULL, *pl = NULL, num[16];
	size_t clen = 0, plen = 0;
	bool launched = argv && argv[0];
	int i, err = append(&cmd, &clen, "", "");

	for (i = 0; !err && launched && argv[i]; i++)
		err = append(&cmd, &clen, i ? " " : "", argv[i]);
	for (i = 0; !err && i < npids; i++) {
		snprintf(num, sizeof(num), "%d", pids[i]);
		err = append(&pl, &plen, i ? "," : "", num);
	}
	if (!err && !launched && pl)
		err = append(&cmd, &clen, "-p ", pl);
	for (i = 0; !err && !launched && i < nbinaries; i++)
		err = append(&cmd, &clen, clen ? " -b " : "-b ", binaries[i]);
	if (err) {
		free(cmd);
		free(pl);
		sp_err("out of memory describing the run");
		return err;
	}
	free(r->command);
	free(r->pids);
	r->command = cmd;
	r->pids = pl;
	return 0;
}

int history_db__store_file(const char *path, const struct history_run *meta,
			   const struct summary *s,
			   const struct mem_report *mr, int64_t *id)
{
	struct history_db *h;
	int64_t run;
	int err;

	err = history_db__open(path, true, &h);
	if (err)
		return err;
	err = history_db__store(h, meta, s, mr, &run);
	history_db__close(h);
	if (err)
		return err;
	sp_info("%s: stored as run %" PRId64, path, run);
	if (id)
		*id = run;
	return 0;
}

/* ---- sets of runs -------------------------------------------------------- */

static int cmp_id(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/* Appends the ids the statement st (bound, not stepped) returns. */
static int collect_ids(struct history_db *h, sqlite3_stmt *st, int64_t **ids,
		       unsigned int *n, size_t *cap)
{
	int rc;

	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (VEC_RESERVE(*ids, *cap, (size_t)*n + 1)) {
			sp_err("%s: out of memory reading the runs", h->path);
			return -ENOMEM;
		}
		(*ids)[(*n)++] = sqlite3_column_int64(st, 0);
	}
	return rc == SQLITE_DONE ? 0 : db_fail(h, "cannot read the runs", rc);
}

/* An end of a range A..B: a decimal id as it is (the range holds the runs
 * stored between the two, whether or not the ends were stored), else a
 * run reference. */
static int range_end(struct history_db *h, const char *ref, int64_t *id)
{
	char *end;
	long long n;

	errno = 0;
	n = strtoll(ref, &end, 10);
	if (ref[0] >= '0' && ref[0] <= '9' && !errno && !*end && n > 0) {
		*id = n;
		return 0;
	}
	return history_db__resolve(h, ref, id);
}

/* One item of a set: a run reference, or a range A..B of them. */
static int set_item(struct history_db *h, const char *item, int64_t **ids,
		    unsigned int *n, size_t *cap)
{
	const char *dots = strstr(item, "..");
	sqlite3_stmt *st = NULL;
	int64_t a, b;
	unsigned int before = *n;
	char *left;
	int err;

	if (!dots) {
		err = history_db__resolve(h, item, &a);
		if (err)
			return err;
		if (VEC_RESERVE(*ids, *cap, (size_t)*n + 1)) {
			sp_err("%s: out of memory reading the runs", h->path);
			return -ENOMEM;
		}
		(*ids)[(*n)++] = a;
		return 0;
	}
	left = strndup(item, (size_t)(dots - item));
	if (!left) {
		sp_err("%s: out of memory reading the runs", h->path);
		return -ENOMEM;
	}
	err = range_end(h, left, &a);
	free(left);
	if (!err)
		err = range_end(h, dots + 2, &b);
	if (err)
		return err;
	if (a > b) {
		sp_err("%s: invalid range '%s': its first run is after its last (give A..B with A before B)",
		       h->path, item);
		return -EINVAL;
	}
	err = prepare(h, "SELECT id FROM runs WHERE id BETWEEN ?1 AND ?2"
		      " ORDER BY id", &st);
	if (err)
		return err;
	sqlite3_bind_int64(st, 1, a);
	sqlite3_bind_int64(st, 2, b);
	err = collect_ids(h, st, ids, n, cap);
	sqlite3_finalize(st);
	return err || *n > before ? err : -ENOENT;
}

int history_db__resolve_set(struct history_db *h, const char *set,
			    int64_t **ids, unsigned int *n)
{
	unsigned int i, k;
	size_t cap = 0;
	int err = 0;

	*ids = NULL;
	*n = 0;
	if (!strncmp(set, "label:", 6)) {
		sqlite3_stmt *st = NULL;

		err = prepare(h, "SELECT id FROM runs WHERE label = ?1"
			      " ORDER BY id", &st);
		if (err)
			return err;
		bind_str(st, 1, set + 6);
		err = collect_ids(h, st, ids, n, &cap);
		sqlite3_finalize(st);
		if (!err && !*n) {
			sp_err("%s: no run labelled '%s' (sptrace history --db %s lists them)",
			       h->path, set + 6, h->path);
			err = -ENOENT;
		}
	} else {
		const char *p = set, *comma;
		char *item;

		do {
			comma = strchr(p, ',');
			item = comma ? strndup(p, (size_t)(comma - p)) :
				       strdup(p);
			if (!item) {
				sp_err("%s: out of memory reading the runs",
				       h->path);
				err = -ENOMEM;
				break;
			}
			err = set_item(h, item, ids, n, &cap);
			if (err == -ENOENT && strstr(item, ".."))
				sp_err("%s: no run in '%s' (sptrace history --db %s lists them)",
				       h->path, item, h->path);
			free(item);
			p = comma + 1;
		} while (!err && comma);
	}
	if (err) {
		free(*ids);
		*ids = NULL;
		*n = 0;
		return err;
	}
	if (*n > 1)
		qsort(*ids, *n, sizeof(**ids), cmp_id);
	for (i = k = 0; i < *n; i++)
		if (!k || (*ids)[i] != (*ids)[k - 1])
			(*ids)[k++] = (*ids)[i];
	*n = k;
	return 0;
}

int history_db__earlier(struct history_db *h, int64_t id, unsigned int max,
			int64_t **ids, unsigned int *n)
{
	sqlite3_stmt *st = NULL;
	size_t cap = 0;
	unsigned int i;
	int err;

	*ids = NULL;
	*n = 0;
	/* IS: a NULL command (a JSON summary's) matches NULL. */
	err = prepare(h, "SELECT id FROM runs WHERE id < ?1 AND command IS"
		      " (SELECT command FROM runs WHERE id = ?1)"
		      " ORDER BY id DESC LIMIT ?2", &st);
	if (err)
		return err;
	sqlite3_bind_int64(st, 1, id);
	sqlite3_bind_int64(st, 2, max);
	err = collect_ids(h, st, ids, n, &cap);
	sqlite3_finalize(st);
	if (err) {
		free(*ids);
		*ids = NULL;
		*n = 0;
		return err;
	}
	for (i = 0; i < *n / 2; i++) {
		int64_t t = (*ids)[i];

		(*ids)[i] = (*ids)[*n - 1 - i];
		(*ids)[*n - 1 - i] = t;
	}
	return 0;
}

/* The rows of runs ids[0..n) into set: every query, or (name non-NULL)
 * the one with exactly that name. */
static int load_set(struct history_db *h, const int64_t *ids, unsigned int n,
		    const char *name_only, struct run_set *set)
{
	sqlite3_stmt *st = NULL;
	unsigned int r;
	int rc, err;

	err = run_set__init(set, ids, n);
	if (err) {
		sp_err("%s: out of memory loading the runs", h->path);
		return err;
	}
	/* One read transaction: the runs are seen whole even while others
	 * write. */
	err = exec(h, "BEGIN", "cannot read the database");
	if (err) {
		run_set__free(set);
		return err;
	}
	rc = sqlite3_prepare_v2(h->db,
		"SELECT name, self_ns, total_ns, blocked_ns, incr_load_ns,"
		" p50_ns, p99_ns, count, cache_hits, blocked_count, incr_loads"
		" FROM queries WHERE run_id = ?1 AND (?2 IS NULL OR name = ?2)",
		-1, &st, NULL);
	if (rc == SQLITE_OK)
		rc = bind_str(st, 2, name_only);
	for (r = 0; rc == SQLITE_OK && !err && r < n; r++) {
		rc = sqlite3_bind_int64(st, 1, ids[r]);
		while (rc == SQLITE_OK && !err &&
		       (rc = sqlite3_step(st)) == SQLITE_ROW) {
			const char *name = (const char *)sqlite3_column_text(st, 0);
			uint64_t fig[FIG__MAX];
			unsigned int f;

			_Static_assert(FIG__MAX == 10, "one column per figure");
			rc = SQLITE_OK;
			for (f = 0; f < FIG__MAX; f++)
				fig[f] = col_u64(st, (int)f + 1);
			err = name ? run_set__add(set, r, name, fig) : -ENOMEM;
		}
		if (rc == SQLITE_DONE)
			rc = SQLITE_OK;
		sqlite3_reset(st);
	}
	sqlite3_finalize(st);
	sqlite3_exec(h->db, "COMMIT", NULL, NULL, NULL);
	if (!err && rc != SQLITE_OK)
		err = db_fail(h, "cannot load the runs", rc);
	if (!err)
		err = run_set__finish(set);
	if (err == -ENOMEM)
		sp_err("%s: out of memory loading the runs", h->path);
	if (err)
		run_set__free(set);
	return err;
}

int history_db__load_set(struct history_db *h, const int64_t *ids,
			 unsigned int n, struct run_set *set)
{
	return load_set(h, ids, n, NULL, set);
}

int history_db__load_query_set(struct history_db *h, const int64_t *ids,
			       unsigned int n, const char *name,
			       struct run_set *set)
{
	return load_set(h, ids, n, name, set);
}
