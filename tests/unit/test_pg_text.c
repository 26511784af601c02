// SPDX-License-Identifier: MIT
/*
 * normalize=pg: the BPF fold (spec_norm.h's sp_norm_pg) never merges what
 * PostgreSQL keeps apart, and userspace (pg_text.c) names rows as
 * pg_stat_statements does: merged by tree, split into statements,
 * utility statements as written, truncated strings never parsed.
 */
#include <errno.h>
#include <sptrace/spec_norm.h>
#include "check.h"
#include "pg_text.h"

/* The byte stream BPF hashes for s (norm_byte_pg in query_spec.bpf.c). */
static void fold(const char *s, char *out, size_t len)
{
	char str[SP_SPEC_NAME_LEN] = { 0 };
	struct sp_norm st = { 0 };
	size_t i, n = strlen(s), at = 0;
	__u32 o;

	if (n >= sizeof(str))
		n = sizeof(str) - 1;
	memcpy(str, s, n);
	for (i = 0; i < n && at + 2 < len; i++) {
		o = sp_norm_pg(&st, (__u8)str[i],
			       sp_norm_pg_long(str, (__u32)i, (long)n + 1));
		if (o)
			out[at++] = o == SP_NORM_PH ? '#' : (char)o;
	}
	out[at] = 0;
}

static int same_fold(const char *a, const char *b)
{
	char fa[512], fb[512];

	fold(a, fa, sizeof(fa));
	fold(b, fb, sizeof(fb));
	return !strcmp(fa, fb);
}

static void test_fold(void)
{
	/* merged in BPF: PostgreSQL merges them too */
	CHECK(same_fold("SELECT 1 AS a", "SELECT 7 AS a"));
	CHECK(same_fold("select 'x 1', 12", "select 'x 2', 34"));
	CHECK(same_fold("UPDATE t SET a = a + 5 WHERE id = 42;",
			"UPDATE t SET a = a + 9 WHERE id = 17;"));
	/* apart: PostgreSQL keeps them apart */
	CHECK(!same_fold("SELECT t1.a FROM t1", "SELECT t2.a FROM t2"));
	CHECK(!same_fold("SELECT \"1\"", "SELECT \"2\""));
	CHECK(!same_fold("SELECT $1", "SELECT $2"));
	CHECK(!same_fold("SET work_mem = 1", "SET work_mem = 2"));
	CHECK(!same_fold("SELECT 1; SET a = 1", "SELECT 1; SET a = 2"));
	/* int4 and a wider integer: a run of 10 digits is kept */
	CHECK(!same_fold("SELECT 1234567890", "SELECT 3234567890"));
	/* a run's length is kept (one row per length; userspace merges) */
	CHECK(!same_fold("SELECT 5", "SELECT 55"));
	/* leading whitespace; a statement not a query */
	CHECK(same_fold("  select 1", "  select 2"));
	CHECK(!same_fold("EXPLAIN SELECT 1", "EXPLAIN SELECT 2"));
}

static void name_is(struct pg_text *t, const char *raw, const char *want)
{
	char buf[1024];

	CHECK(!pg_text__name(t, raw, false, 0, buf, sizeof(buf)));
	CHECK_STR(buf, want);
}

static void test_names(void)
{
	struct pg_text *t = pg_text__new();
	char buf[256];

	CHECK(t != NULL);
	if (!t)
		return;
	/* learnt first: of one statement's texts, the smallest is shown */
	CHECK(!pg_text__learn(t, "select 4 as w;"));
	CHECK(!pg_text__learn(t, "SELECT 3 AS v"));
	CHECK(!pg_text__learn(t, "SELECT 5000000000"));
	name_is(t, "select 4 as w;", "SELECT $1 AS v");
	/* comments, spacing and aliases are not in the jumble */
	name_is(t, "SELECT  9 AS u /* c */", "SELECT $1 AS v");
	/* a wider integer's constant is another row */
	name_is(t, "SELECT 5000000000", "SELECT $1");
	/* IN lists of 2 and 3: two rows */
	name_is(t, "SELECT 1 WHERE 1 IN (1,2)", "SELECT $1 WHERE $2 IN ($3,$4)");
	name_is(t, "SELECT 1 WHERE 1 IN (1,2,3)",
		"SELECT $1 WHERE $2 IN ($3,$4,$5)");
	/* lexical forms */
	name_is(t, "SELECT E'a\\'b 7', $$x 1$$, .5e-3, B'101', -5",
		"SELECT $1, $2, $3, $4, $5");
	name_is(t, "SELECT 1 /* don't */ + 2", "SELECT $1 /* don't */ + $2");
	/* utility statements as written; statements apart */
	name_is(t, "SET work_mem = '4MB';", "SET work_mem = '4MB'");
	name_is(t, "BEGIN; SELECT 1 AS x ;COMMIT",
		"BEGIN\x1eSELECT $1 AS v\x1e" "COMMIT");
	CHECK(!pg_text__name(t, "SELECT 'xxx", true, 0xabc, buf, sizeof(buf)));
	CHECK_STR(buf, "<truncated #000000000abc> SELECT 'xxx");
	pg_text__free(t);
}

int main(void)
{
	RUN(test_fold);
	if (pg_text__available()) {
		RUN(test_names);
	} else {
		char buf[16];

		CHECK(pg_text__name(NULL, "x", false, 0, buf, sizeof(buf)) ==
		      -ENOTSUP);
	}
	return check_status();
}
