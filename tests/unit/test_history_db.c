// SPDX-License-Identifier: MIT
/*
 * Unit tests of userspace/history_db.c: a run stored and loaded back field
 * by field (hostile names, per-pid rows, histogram bins, error counters,
 * lost events, memory types and timeline), run references, listing and
 * one query across runs, sets of runs and the figures of their queries,
 * and the schema version: created, migrated from an empty database,
 * refused (untouched) when newer or someone else's.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>
#include <sqlite3.h>
#include "history_db.h"
#include "mem_report.h"
#include "run_set.h"
#include "summary.h"
#include "check.h"

static char dir[] = "/tmp/test_history_db.XXXXXX";

static char *path_in_dir(const char *name)
{
	static char buf[256];

	snprintf(buf, sizeof(buf), "%s/%s", dir, name);
	return buf;
}

/* Names no query should have, but any may: quotes, SQL, newline, tab,
 * invalid UTF-8, an escape sequence, a long name. */
static const char *const hostile[] = {
	"q'uote\"d",
	"x'); DROP TABLE runs; --",
	"line\nbreak\ttab",
	"\xff\xfe invalid \xc3 utf8 \xed\xa0\x80",
	"\x1b[31mred\x1b[0m",
	"\xe2\x9c\x93 ok",
	"",
};

static struct sp_query_stats stats(uint64_t k)
{
	struct sp_query_stats st = {
		.count = k, .total_ns = 1000 * k + 7, .self_ns = 900 * k + 3,
		.min_ns = 11 + k, .max_ns = 5000 + k, .cache_hits = 2 * k + 1,
		.incr_loads = 3 * k, .incr_load_ns = 333 * k,
		.blocked_count = 4 * k, .blocked_ns = 444 * k,
	};

	return st;
}

static void fill(struct summary *s, bool per_pid)
{
	struct sp_query_stats st;
	unsigned int i;

	summary__init(s);
	s->per_pid = per_pid;
	s->duration_ns = 123456789012ull;
	s->lost = 17;
	s->errors[SP_ERR_END_WITHOUT_BEGIN] = 5;
	s->errors[SP_ERR_FUNC_UNWOUND] = 9;
	for (i = 0; i < sizeof(hostile) / sizeof(hostile[0]); i++) {
		st = stats(i + 1);
		CHECK(summary__add_stats_pid(s, hostile[i], 100, &st) == 0);
		CHECK(summary__add_hist_pid(s, hostile[i], 100, i, 3) == 0);
		CHECK(summary__add_hist_pid(s, hostile[i], 100, 40 + i, i + 1) == 0);
	}
	/* A second process's row of the same name, and a row with a count
	 * of zero (its min means nothing) and no bins. */
	st = stats(50);
	CHECK(summary__add_stats_pid(s, "q'uote\"d", 200, &st) == 0);
	CHECK(summary__add_hist_pid(s, "q'uote\"d", 200, 63, 50) == 0);
	st = stats(0);
	st.blocked_ns = 99;
	CHECK(summary__add_stats_pid(s, "blocked only", 100, &st) == 0);
	/* Figures above INT64_MAX round-trip as their bits. */
	st = stats(1);
	st.self_ns = UINT64_MAX - 5;
	CHECK(summary__add_stats_pid(s, "huge", 100, &st) == 0);
	summary__finish(s);
}

static void fill_mem(struct mem_report *r)
{
	struct mem_figures f = { 1, 2, 3, 4, 5, 6, 7 };
	struct mem_point p = { 10, 20, 30, 40, 50, 60 };
	unsigned int i;

	mem_report__init(r);
	r->duration_ns = 999;
	r->sampled = 4;
	r->heap_traced = true;
	r->timeline_on = true;
	r->tl.interval_ns = 100000000;
	r->tl.step = 1;
	r->heap = f;
	r->errors[0] = 12;
	CHECK(mem_report__add_type(r, "struct node", &f) == 0);
	f.live_bytes = 4242;
	CHECK(mem_report__add_type(r, "type\n\xff", &f) == 0);
	for (i = 0; i < 5; i++) {
		p.t_ns = 100 * i;
		p.rss_bytes = 1000 + i;
		CHECK(mem_timeline__add(&r->tl, &p) == 0);
	}
}

static const struct sp_query_row *find(const struct summary *s,
				       const char *name, uint32_t pid)
{
	unsigned int i;

	for (i = 0; i < s->nrows; i++)
		if (s->rows[i].pid == pid && !strcmp(s->rows[i].name, name))
			return &s->rows[i];
	return NULL;
}

static void same_summary(const struct summary *a, const struct summary *b)
{
	unsigned int i, j;

	CHECK_U64(b->nrows, a->nrows);
	CHECK_U64(b->duration_ns, a->duration_ns);
	CHECK_U64(b->total_self_ns, a->total_self_ns);
	CHECK_U64(b->lost, a->lost);
	CHECK(b->per_pid == a->per_pid);
	for (i = 0; i < SP_ERR__MAX; i++)
		CHECK_U64(b->errors[i], a->errors[i]);
	for (i = 0; i < a->nrows; i++) {
		const struct sp_query_row *x = &a->rows[i];
		const struct sp_query_row *y = find(b, x->name, x->pid);

		CHECK(y != NULL);
		if (!y)
			continue;
		CHECK(!memcmp(&x->st, &y->st, sizeof(x->st)));
		CHECK_U64(y->nbins, x->nbins);
		for (j = 0; j < x->nbins && j < y->nbins; j++) {
			CHECK_U64(y->bins[j].bucket, x->bins[j].bucket);
			CHECK_U64(y->bins[j].count, x->bins[j].count);
		}
		CHECK_U64(y->p50_ns, x->p50_ns);
		CHECK_U64(y->p90_ns, x->p90_ns);
		CHECK_U64(y->p99_ns, x->p99_ns);
	}
}

static void test_round_trip(void)
{
	struct history_run meta = { .started_at = 1700000000,
				    .duration_ns = 123456789012ull,
				    .label = "nightly 'x'", .command = "cmd -a\nb",
				    .pids = "1,2", .host = "h", .version = "9.9",
				    .source = "live" }, got = { 0 };
	struct mem_report mr, mr2;
	struct summary s, s2;
	struct history_db *db;
	int64_t id = 0, id2 = 0;
	unsigned int i;

	fill(&s, true);
	fill_mem(&mr);
	CHECK(history_db__open(path_in_dir("rt.db"), true, &db) == 0);
	if (!db)
		return;
	CHECK(history_db__store(db, &meta, &s, &mr, &id) == 0);
	CHECK(id == 1);
	summary__init(&s2);
	mem_report__init(&mr2);
	CHECK(history_db__load(db, "1", &s2, &mr2, &got) == 0);
	summary__finish(&s2);
	same_summary(&s, &s2);
	CHECK(got.id == 1);
	CHECK(got.started_at == 1700000000);
	CHECK_U64(got.duration_ns, 123456789012ull);
	CHECK_STR(got.label, "nightly 'x'");
	CHECK_STR(got.command, "cmd -a\nb");
	CHECK_STR(got.pids, "1,2");
	CHECK_STR(got.host, "h");
	CHECK_STR(got.version, "9.9");
	CHECK_STR(got.source, "live");
	/* Memory: the heap, every type and point, the counters. */
	CHECK_U64(mr2.duration_ns, 999);
	CHECK_U64(mr2.sampled, 4);
	CHECK(mr2.heap_traced && mr2.timeline_on && !mr2.per_thread);
	CHECK(!memcmp(&mr2.heap, &mr.heap, sizeof(mr.heap)));
	CHECK_U64(mr2.errors[0], 12);
	CHECK_U64(mr2.ntypes, 2);
	for (i = 0; i < mr.ntypes && mr2.ntypes == 2; i++) {
		unsigned int j = !strcmp(mr2.types[0].name, mr.types[i].name) ? 0 : 1;

		CHECK_STR(mr2.types[j].name, mr.types[i].name);
		CHECK(!memcmp(&mr2.types[j].f, &mr.types[i].f, sizeof(mr.types[i].f)));
	}
	CHECK_U64(mr2.tl.n, mr.tl.n);
	CHECK_U64(mr2.tl.interval_ns, mr.tl.interval_ns);
	for (i = 0; i < mr.tl.n && i < mr2.tl.n; i++)
		CHECK(!memcmp(&mr2.tl.v[i], &mr.tl.v[i], sizeof(mr.tl.v[i])));
	history_run__free(&got);
	summary__free(&s2);
	mem_report__free(&mr2);

	/* A run without memory and metadata: NULLs stay NULL, mr stays empty. */
	memset(&meta, 0, sizeof(meta));
	CHECK(history_db__store(db, &meta, &s, NULL, &id2) == 0);
	CHECK(id2 == 2);
	summary__init(&s2);
	mem_report__init(&mr2);
	CHECK(history_db__load(db, "latest", &s2, &mr2, &got) == 0);
	CHECK(got.id == 2 && !got.label && !got.command && !got.source);
	CHECK_U64(mr2.ntypes, 0);
	CHECK_U64(mr2.tl.n, 0);
	history_run__free(&got);
	summary__free(&s2);
	mem_report__free(&mr2);
	history_db__close(db);
	summary__free(&s);
	mem_report__free(&mr);
}

static void test_merged_rows(void)
{
	struct history_run meta = { .label = "m" };
	struct summary s, s2;
	struct history_db *db;

	/* Without per_pid the two processes' rows are one row. */
	fill(&s, false);
	CHECK(history_db__open(path_in_dir("merged.db"), true, &db) == 0);
	if (!db)
		return;
	CHECK(history_db__store(db, &meta, &s, NULL, NULL) == 0);
	summary__init(&s2);
	CHECK(history_db__load(db, "latest", &s2, NULL, NULL) == 0);
	summary__finish(&s2);
	same_summary(&s, &s2);
	CHECK(find(&s2, "q'uote\"d", 0) && find(&s2, "q'uote\"d", 0)->st.count == 51);
	summary__free(&s2);
	summary__free(&s);
	history_db__close(db);
}

static void test_refs_list_query(void)
{
	struct history_run meta = { 0 };
	struct history_entry *runs;
	struct history_point *pts;
	struct sp_query_stats st;
	struct history_db *db;
	struct summary s;
	unsigned int n, k;
	int64_t id;

	CHECK(history_db__open(path_in_dir("refs.db"), true, &db) == 0);
	if (!db)
		return;
	CHECK(history_db__load(db, "latest", NULL, NULL, NULL) == -ENOENT);
	/* Runs 1..4: labels a, b, a, b; query "q" in 1, 2, 4 (two pids in 4). */
	for (k = 1; k <= 4; k++) {
		summary__init(&s);
		s.per_pid = true;
		st = stats(k);
		if (k != 3)
			CHECK(summary__add_stats_pid(&s, "q", 1, &st) == 0);
		if (k == 4)
			CHECK(summary__add_stats_pid(&s, "q", 2, &st) == 0);
		CHECK(summary__add_stats_pid(&s, "other", 1, &st) == 0);
		summary__finish(&s);
		meta.label = k % 2 ? "a" : "b";
		meta.started_at = 1000 + k;
		CHECK(history_db__store(db, &meta, &s, NULL, &id) == 0);
		CHECK(id == k);
		summary__free(&s);
	}
	CHECK(history_db__resolve(db, "latest", &id) == 0 && id == 4);
	CHECK(history_db__resolve(db, "latest~0", &id) == 0 && id == 4);
	CHECK(history_db__resolve(db, "latest~1", &id) == 0 && id == 3);
	CHECK(history_db__resolve(db, "latest~3", &id) == 0 && id == 1);
	CHECK(history_db__resolve(db, "2", &id) == 0 && id == 2);
	CHECK(history_db__resolve(db, "latest~4", &id) == -ENOENT);
	CHECK(history_db__resolve(db, "5", &id) == -ENOENT);
	CHECK(history_db__resolve(db, "0", &id) == -EINVAL);
	CHECK(history_db__resolve(db, "-1", &id) == -EINVAL);
	CHECK(history_db__resolve(db, "latest~-1", &id) == -EINVAL);
	CHECK(history_db__resolve(db, "latest~", &id) == -EINVAL);
	CHECK(history_db__resolve(db, "latestx", &id) == -EINVAL);
	CHECK(history_db__resolve(db, "2x", &id) == -EINVAL);
	CHECK(history_db__resolve(db, "", &id) == -EINVAL);
	summary__init(&s);
	CHECK(history_db__load(db, "99", &s, NULL, NULL) == -ENOENT);
	CHECK(s.nrows == 0);
	summary__free(&s);

	CHECK(history_db__list(db, NULL, &runs, &n) == 0);
	CHECK_U64(n, 4);
	if (n == 4) {
		CHECK(runs[0].run.id == 1 && runs[3].run.id == 4);
		CHECK_U64(runs[2].nqueries, 1);
		CHECK_U64(runs[3].nqueries, 3);
		CHECK_U64(runs[3].total_self_ns, 3 * stats(4).self_ns);
		CHECK(runs[1].run.started_at == 1002);
	}
	history_entries__free(runs, n);
	CHECK(history_db__list(db, "b", &runs, &n) == 0);
	CHECK_U64(n, 2);
	if (n == 2)
		CHECK(runs[0].run.id == 2 && runs[1].run.id == 4);
	history_entries__free(runs, n);
	CHECK(history_db__list(db, "none", &runs, &n) == 0 && n == 0);
	history_entries__free(runs, n);

	CHECK(history_db__query(db, NULL, "q", &pts, &n) == 0);
	CHECK_U64(n, 4);
	if (n == 4) {
		CHECK(pts[0].present && pts[1].present && !pts[2].present &&
		      pts[3].present);
		CHECK_U64(pts[0].count, 1);
		CHECK_U64(pts[1].self_ns, stats(2).self_ns);
		CHECK_U64(pts[3].count, 8);	/* both processes */
		CHECK_U64(pts[3].total_ns, 2 * stats(4).total_ns);
		CHECK_STR(pts[3].run.label, "b");
	}
	history_points__free(pts, n);
	CHECK(history_db__query(db, "a", "q", &pts, &n) == 0);
	CHECK_U64(n, 2);
	if (n == 2)
		CHECK(pts[0].present && !pts[1].present);
	history_points__free(pts, n);
	history_db__close(db);
}

static int raw_exec(const char *path, const char *sql)
{
	sqlite3 *db;
	int rc;

	rc = sqlite3_open(path, &db);
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
	sqlite3_close(db);
	return rc;
}

static int raw_int(const char *path, const char *sql)
{
	sqlite3_stmt *st;
	sqlite3 *db;
	int v = -1;

	if (sqlite3_open(path, &db) == SQLITE_OK &&
	    sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) {
		if (sqlite3_step(st) == SQLITE_ROW)
			v = sqlite3_column_int(st, 0);
		sqlite3_finalize(st);
	}
	sqlite3_close(db);
	return v;
}

static void test_schema_versions(void)
{
	struct history_db *db;
	char *p;
	int fd;

	/* Missing, without create: refused, not created. */
	p = path_in_dir("missing.db");
	CHECK(history_db__open(p, false, &db) == -ENOENT && !db);
	CHECK(access(p, F_OK) != 0);
	/* In a missing directory. */
	CHECK(history_db__open(path_in_dir("nodir/x.db"), true, &db) < 0);

	/* An empty SQLite database (version 0): migrated only with create. */
	p = path_in_dir("old.db");
	CHECK(raw_exec(p, "PRAGMA user_version = 0") == SQLITE_OK);
	CHECK(history_db__open(p, false, &db) == -ENOENT);
	CHECK(history_db__open(p, true, &db) == 0);
	history_db__close(db);
	CHECK(raw_int(p, "PRAGMA user_version") == HISTORY_DB_VERSION);
	CHECK(raw_int(p, "SELECT count(*) FROM sqlite_schema WHERE name = 'hist_bins'") == 1);
	CHECK(raw_int(p, "SELECT count(*) FROM pragma_journal_mode WHERE journal_mode = 'wal'") == 1);
	/* Reopening an up-to-date database changes nothing. */
	CHECK(history_db__open(p, false, &db) == 0);
	history_db__close(db);

	/* A zero-byte file is an empty database too. */
	p = path_in_dir("zero.db");
	fd = open(p, O_CREAT | O_WRONLY, 0600);
	CHECK(fd >= 0);
	close(fd);
	CHECK(history_db__open(p, true, &db) == 0);
	history_db__close(db);

	/* A database of a future sptrace: refused, left as it was. */
	p = path_in_dir("future.db");
	CHECK(raw_exec(p, "CREATE TABLE runs (x); CREATE TABLE future (y);"
		       "PRAGMA user_version = 7") == SQLITE_OK);
	CHECK(history_db__open(p, true, &db) == -EPROTONOSUPPORT && !db);
	CHECK(history_db__open(p, false, &db) == -EPROTONOSUPPORT && !db);
	CHECK(raw_int(p, "PRAGMA user_version") == 7);
	CHECK(raw_int(p, "SELECT count(*) FROM sqlite_schema") == 2);
	CHECK(raw_int(p, "SELECT count(*) FROM pragma_journal_mode WHERE journal_mode = 'delete'") == 1);

	/* Someone else's database (tables, version 0): never touched. */
	p = path_in_dir("foreign.db");
	CHECK(raw_exec(p, "CREATE TABLE mine (a)") == SQLITE_OK);
	CHECK(history_db__open(p, true, &db) == -EBADMSG && !db);
	CHECK(raw_int(p, "SELECT count(*) FROM sqlite_schema") == 1);
	CHECK(raw_int(p, "SELECT count(*) FROM pragma_journal_mode WHERE journal_mode = 'delete'") == 1);

	/* Not a database at all. */
	p = path_in_dir("text.db");
	fd = open(p, O_CREAT | O_WRONLY, 0600);
	CHECK(fd >= 0 && write(fd, "hello, this is not SQLite at all, not even close\n", 50) == 50);
	close(fd);
	CHECK(history_db__open(p, true, &db) == -EBADMSG && !db);
}

static void test_describe(void)
{
	char *argv[] = { "./engine", "--bench", "a b", NULL };
	const char *bins[] = { "/usr/bin/x", "/lib/y.so" };
	int pids[] = { 12, 345 };
	struct history_run r = { 0 };

	CHECK(history_run__describe(&r, argv, pids, 1, NULL, 0) == 0);
	CHECK_STR(r.command, "./engine --bench a b");
	CHECK_STR(r.pids, "12");
	CHECK(history_run__describe(&r, NULL, pids, 2, NULL, 0) == 0);
	CHECK_STR(r.command, "-p 12,345");
	CHECK_STR(r.pids, "12,345");
	CHECK(history_run__describe(&r, NULL, NULL, 0, bins, 2) == 0);
	CHECK_STR(r.command, "-b /usr/bin/x -b /lib/y.so");
	CHECK(r.pids == NULL);
	CHECK(history_run__fill(&r, "L", "live") == 0);
	CHECK_STR(r.label, "L");
	CHECK_STR(r.source, "live");
	CHECK_STR(r.version, SPTRACE_VERSION);
	CHECK(r.host && r.host[0]);
	CHECK(r.started_at > 1600000000);
	history_run__free(&r);
	CHECK(r.command == NULL && r.label == NULL);
}

/* The ids of set `ref` as "1,3,5" (or "err N"). */
static const char *set_of(struct history_db *db, const char *ref)
{
	static char buf[128];
	int64_t *ids = NULL;
	unsigned int n = 0, i;
	size_t at = 0;
	int err = history_db__resolve_set(db, ref, &ids, &n);

	if (err) {
		snprintf(buf, sizeof(buf), "err %d", err);
		return buf;
	}
	buf[0] = 0;
	for (i = 0; i < n; i++)
		at += (size_t)snprintf(buf + at, sizeof(buf) - at, "%s%lld",
				       i ? "," : "", (long long)ids[i]);
	free(ids);
	return buf;
}

static void test_sets(void)
{
	struct history_run meta = { 0 };
	const struct run_set_query *q;
	struct sp_query_stats st;
	struct history_db *db;
	struct run_set rs;
	struct summary s;
	int64_t *ids, want[] = { 2, 4, 5 };
	unsigned int n, k;

	CHECK(history_db__open(path_in_dir("sets.db"), true, &db) == 0);
	if (!db)
		return;
	/* Runs 1..6: labels x, y, x, y, y, none; commands A, A, B, A, A, A;
	 * query "q" in every run but 3, two processes in run 4. */
	for (k = 1; k <= 6; k++) {
		summary__init(&s);
		s.per_pid = true;
		st = stats(k);
		if (k != 3)
			CHECK(summary__add_stats_pid(&s, "q", 1, &st) == 0);
		if (k == 4)
			CHECK(summary__add_stats_pid(&s, "q", 2, &st) == 0);
		CHECK(summary__add_stats_pid(&s, "r\xff", 1, &st) == 0);
		summary__finish(&s);
		meta.label = k == 6 ? NULL : k == 1 || k == 3 ? "x" : "y";
		meta.command = k == 3 ? "B" : "A";
		CHECK(history_db__store(db, &meta, &s, NULL, NULL) == 0);
		summary__free(&s);
	}
	CHECK_STR(set_of(db, "3"), "3");
	CHECK_STR(set_of(db, "latest"), "6");
	CHECK_STR(set_of(db, "2..4"), "2,3,4");
	CHECK_STR(set_of(db, "latest~2..latest"), "4,5,6");
	CHECK_STR(set_of(db, "5,1,2..3,1"), "1,2,3,5");
	CHECK_STR(set_of(db, "label:x"), "1,3");
	CHECK_STR(set_of(db, "label:y"), "2,4,5");
	CHECK_STR(set_of(db, "label:nope"), "err -2");
	CHECK_STR(set_of(db, "4..2"), "err -22");
	CHECK_STR(set_of(db, "7..9"), "err -2");
	CHECK_STR(set_of(db, "1,x"), "err -22");
	CHECK_STR(set_of(db, "1,,2"), "err -22");
	/* The history of run 5: the runs before it of command A. */
	CHECK(history_db__earlier(db, 5, 30, &ids, &n) == 0);
	CHECK(n == 3 && ids[0] == 1 && ids[1] == 2 && ids[2] == 4);
	free(ids);
	CHECK(history_db__earlier(db, 5, 2, &ids, &n) == 0);
	CHECK(n == 2 && ids[0] == 2 && ids[1] == 4);
	free(ids);
	CHECK(history_db__earlier(db, 1, 30, &ids, &n) == 0 && n == 0);
	free(ids);
	/* Figures: run 4's two processes summed; run 3 without q holds 0;
	 * names joined as diff joins them. */
	CHECK(history_db__load_set(db, want, 3, &rs) == 0);
	CHECK_U64(rs.nq, 2);
	q = run_set__find(&rs, "q");
	CHECK(q && q->present == 3);
	if (q) {
		CHECK_U64(q->v[0 * FIG__MAX + FIG_SELF], stats(2).self_ns);
		CHECK_U64(q->v[1 * FIG__MAX + FIG_SELF], 2 * stats(4).self_ns);
		CHECK_U64(q->v[1 * FIG__MAX + FIG_COUNT], 8);
		CHECK_U64(q->v[1 * FIG__MAX + FIG_BLOCKED_COUNT], 2 * 16);
		CHECK_U64(q->v[2 * FIG__MAX + FIG_INCR], stats(5).incr_load_ns);
	}
	CHECK(run_set__find(&rs, "r\xef\xbf\xbd") != NULL);
	run_set__free(&rs);
	CHECK(history_db__load_set(db, (int64_t[]){ 3 }, 1, &rs) == 0);
	CHECK(rs.nq == 1 && !run_set__find(&rs, "q"));
	run_set__free(&rs);
	history_db__close(db);
}

int main(void)
{
	char cmd[300];

	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	RUN(test_round_trip);
	RUN(test_merged_rows);
	RUN(test_refs_list_query);
	RUN(test_schema_versions);
	RUN(test_describe);
	RUN(test_sets);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd))
		printf("warning: could not remove %s\n", dir);
	return check_status();
}
