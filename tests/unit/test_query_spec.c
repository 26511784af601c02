// SPDX-License-Identifier: MIT
/*
 * --query spec grammar (every malformed form gets its one error line),
 * the SQL/digits normalizer BPF and userspace share, and the per-line pop
 * of the spec tracks.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sptrace/qstack.h>
#include <sptrace/spec_norm.h>
#include "check.h"
#include "query_spec.h"
#include "spec_norm_text.h"

/* Parses `text`; returns its status and what it printed to stderr. */
static int parse_capture(const char *text, struct query_spec *q, char *err,
			 size_t len)
{
	FILE *tmp = tmpfile();
	int saved = dup(2), r;
	size_t n;

	fflush(stderr);
	dup2(fileno(tmp), 2);
	r = query_spec__parse(text, "t.spec:7:", q);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	rewind(tmp);
	n = fread(err, 1, len - 1, tmp);
	err[n] = 0;
	fclose(tmp);
	return r;
}

static void test_malformed(void)
{
	static const struct { const char *spec, *needle; } bad[] = {
		{ "p:b,name=x", "add kind=cache" },
		{ "p:b", "no name=" },
		{ "", "no probe" },
		{ "p-b,name=x,kind=cache", "not PROVIDER:PROBE" },
		{ "p:b,p:e", "no name=" },
		{ "p:b,p:e,name=arg12", "no such argument" },
		{ "p:b,p:e,name=x,kind=sleepy", "unknown kind 'sleepy'" },
		{ "p:b,p:e,name=x,kind=cache", "kind=cache takes one probe" },
		{ "p:b,p:e,name=x,name=y", "name given twice" },
		{ "p:b,p:e,name=x,colour=red", "unexpected 'colour=red'" },
		{ "p:b,p:e|,name=x", "an empty END" },
		{ "p:b,p:e||p:f,name=x", "an empty END" },
		{ "p:b,p:e|q,name=x", "'q' is not PROVIDER:PROBE" },
		{ "p:b,p:e,name=x,if=arg3", NULL },
		{ "p:b,p:e,name=x,if=x>3", "expected argN OP NUMBER" },
		{ "p:b,p:e,name=x,if=arg3~3", "unknown comparison '~3'" },
		{ "p:b,p:e,name=x,if=arg3!=zz", "'zz' is not an integer" },
		{ "p:b,p:e,name=x,if=arg3>", "'' is not an integer" },
		{ "p:b,p:e,name=x,hit=arg13!=0", "expected argN OP NUMBER" },
		{ "p:b,p:e,name=x,normalize=sql", "normalize= needs name=argN" },
		{ "p:b,p:e,name=arg0,normalize=json", "unknown normalize 'json'" },
		{ "p:b,p:e,name=arg0,max-rows=0", "max-rows=0: expected" },
		{ "p:b,p:e,name=x,max-rows=5", "max-rows= needs a name from an argument" },
		{ "p:b,p:e,name=x,stack=a-b", "stack=a-b: expected a name" },
		{ "p:b,name=x,kind=cache,outcomes", "outcomes, stack= and serial need" },
		{ "p:b,name=x,kind=cache,serial", "outcomes, stack= and serial need" },
		{ "p:b,p:e,name=x,serial=1", "unexpected 'serial=1'" },
		{ "p:b,name=x,kind=cache,abandon=p:a", "abandon= needs a BEGIN,END" },
		{ "p:b,p:e,name=x,abandon=p:e", "abandon=p:e is also an END" },
		{ "p:b,p:e,name=x,abandon=p:a@l", "abandon=p:a@l: expected PROVIDER:PROBE" },
		{ "p:b,p:e,name=x,abandon", "unexpected 'abandon'" },
		{ "p:b,name=x,kind=cache,outcomes=1", "unexpected 'outcomes=1'" },
		{ "p:b@x,p:e,name=x", "@LABEL names an END" },
		{ "p:b,p:b,name=x", "p:b is both BEGIN and END" },
		{ "name=x,p:b,p:e", "unexpected 'name=x'" },
		{ "p:b,p:e,p:f,name=x", "unexpected 'p:f'" },
		{ "p:b,p:e1|p:e2|p:e3|p:e4|p:e5|p:e6|p:e7|p:e8|p:e9|p:e10|p:e11|p:e12|p:e13|p:e14|p:e15,name=x",
		  "more than 14 alternative ENDs" },
		{ "p:b,p:e,name=", "name=: expected argN" },
	};
	struct query_spec q;
	char err[1024];
	size_t i;
	int r;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&q, 0, sizeof(q));
		r = parse_capture(bad[i].spec, &q, err, sizeof(err));
		if (!bad[i].needle) {	/* a valid form among them */
			CHECK(r == 0);
			query_spec__free(&q);
			continue;
		}
		if (r != -EINVAL || !strstr(err, bad[i].needle) ||
		    strncmp(err, "sptrace: t.spec:7: '", 20) ||
		    strchr(err, '\n') != err + strlen(err) - 1) {
			printf("FAIL %s -> %d %s", bad[i].spec, r, err);
			check_failed++;
		}
	}
}

static void test_valid(void)
{
	struct query_spec q;
	const char *what;
	char err[256];

	CHECK(!parse_capture("pg:transaction__start,pg:transaction__commit@commit|pg:transaction-abort,name=txn,outcomes,stack=s1",
			     &q, err, sizeof(err)));
	CHECK(q.nprobes == 3);
	CHECK_STR(q.probe[2], "transaction__abort");	/* dashes -> __ */
	CHECK_STR(q.label[1], "commit");
	CHECK(!q.label[2]);
	CHECK(q.outcomes);
	CHECK(!q.serial);
	CHECK_STR(q.stack, "s1");
	CHECK_STR(q.where, "t.spec:7:");
	query_spec__free(&q);

	CHECK(!parse_capture("pg:query__start,pg:query__done,name=arg0,serial,normalize=sql",
			     &q, err, sizeof(err)));
	CHECK(q.serial && !q.outcomes && q.normalize == SP_NORM_SQL);
	CHECK(!q.abandon);
	query_spec__free(&q);

	CHECK(!parse_capture("pg:e__start,pg:e__done,name=execute,abandon=pg:transaction-abort,hit=arg3",
			     &q, err, sizeof(err)));
	CHECK(q.nprobes == 3 && q.abandon == 2);
	CHECK_STR(q.probe[2], "transaction__abort");
	CHECK(query_spec__arg_need(&q, 1, &what) == 3);
	CHECK(query_spec__arg_need(&q, 2, &what) == -1);	/* reads nothing */
	query_spec__free(&q);

	CHECK(!parse_capture("pg:buffer__read__done,name=rel:arg4,kind=cache,hit=arg7!=0,if=arg0>=-2",
			     &q, err, sizeof(err)));
	CHECK(q.cache && q.name_type == SP_SPEC_NAME_INT && q.arg == 4);
	CHECK_STR(q.literal, "rel:");
	CHECK(q.hit.arg == 7 && q.hit.op == SP_OP_NE && q.hit.val == 0);
	CHECK(q.cond.arg == 0 && q.cond.op == SP_OP_GE && q.cond.val == -2);
	CHECK_STR(query_spec__label(&q), "rel:");
	query_spec__free(&q);

	CHECK(!parse_capture("pg:query-start,pg:query-done,name=arg0,normalize=sql,max-rows=7,if=arg1",
			     &q, err, sizeof(err)));
	CHECK_STR(q.probe[0], "query__start");
	CHECK(q.name_type == SP_SPEC_NAME_STR && q.normalize == SP_NORM_SQL);
	CHECK(q.max_rows == 7 && q.cond.op == SP_OP_NE && q.cond.arg == 1);
	query_spec__free(&q);
}

/* What each probe of a line reads, and the check of a site's count. */
static void test_arg_need(void)
{
	struct query_spec q;
	const char *what;
	char err[256];

	CHECK(!parse_capture("pg:buffer__read__done,name=rel:arg4,kind=cache,hit=arg7!=0,if=arg0>=-2",
			     &q, err, sizeof(err)));
	CHECK(query_spec__arg_need(&q, 0, &what) == 7);
	CHECK_STR(what, "hit=");	/* a cache probe reads hit= too */
	fflush(stderr);
	CHECK(query_spec__args_check(&q, 0, "f", 8) == 0);
	CHECK(query_spec__args_check(&q, 0, "f", 7) == -EINVAL);
	CHECK(query_spec__args_check(&q, 0, "f", -EOPNOTSUPP) == 0);
	query_spec__free(&q);

	CHECK(!parse_capture("pg:q__start,pg:q__done,name=arg3,if=arg1,hit=arg5",
			     &q, err, sizeof(err)));
	CHECK(query_spec__arg_need(&q, 0, &what) == 3);
	CHECK_STR(what, "name=");
	CHECK(query_spec__arg_need(&q, 1, &what) == 5);
	CHECK_STR(what, "hit=");
	CHECK(query_spec__args_check(&q, 0, "f", 4) == 0);
	CHECK(query_spec__args_check(&q, 0, "f", 3) == -EINVAL);
	query_spec__free(&q);

	CHECK(!parse_capture("pg:q__start,pg:q__done,name=q,if=arg2",
			     &q, err, sizeof(err)));
	CHECK(query_spec__arg_need(&q, 0, &what) == 2);
	CHECK_STR(what, "if=");
	CHECK(query_spec__arg_need(&q, 1, &what) == -1);	/* ENDs: none */
	CHECK(query_spec__args_check(&q, 1, "f", 0) == 0);
	query_spec__free(&q);
}

static void norm(unsigned int mode, const char *raw, const char *want)
{
	char buf[512];

	spec_norm__text(mode, raw, buf, sizeof(buf));
	if (strcmp(buf, want)) {
		printf("FAIL normalize %u '%s' -> '%s', want '%s'\n", mode, raw,
		       buf, want);
		check_failed++;
	}
}

static void test_normalize(void)
{
	norm(SP_NORM_SQL, "UPDATE pgbench_accounts SET abalance = abalance + -4242 WHERE aid = 17;",
	     "UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2;");
	norm(SP_NORM_SQL, "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (3, 1, 62, -1, CURRENT_TIMESTAMP);",
	     "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES ($1, CURRENT_TIMESTAMP);");
	norm(SP_NORM_SQL, "  select  'it''s',\n\t1.5e3 ,0x1F from t2   ",
	     "select $1 from t2");
	norm(SP_NORM_SQL, "SELECT a -1, f(-2), x IN (1, 2,3) FROM \"T 9\" WHERE c = $1",
	     "SELECT a -$1, f($2), x IN ($3) FROM \"T 9\" WHERE c = $1");
	norm(SP_NORM_SQL, "VALUES (1, 2), (3)", "VALUES ($1), ($2)");
	norm(SP_NORM_SQL, "select 1,", "select $1,");
	norm(SP_NORM_SQL, "BEGIN;", "BEGIN;");
	norm(SP_NORM_DIGITS, "key-12 of 3x44", "key-? of ?x?");
	norm(SP_NORM_NONE, "  as  is 1 ", "  as  is 1 ");
	/* Cut at the buffer, NUL-terminated. */
	{
		char small[6];

		spec_norm__text(SP_NORM_SQL, "select 1", small, sizeof(small));
		CHECK_STR(small, "selec");
	}
}

/* BPF hashes the normalized stream; two raw strings in one row must give
 * the same stream (and userspace the same text). */
static void test_same_stream(void)
{
	char a[256], b[256];

	spec_norm__text(SP_NORM_SQL, "SELECT x FROM t WHERE id = 5 AND n = 'a'", a, sizeof(a));
	spec_norm__text(SP_NORM_SQL, "SELECT   x FROM t WHERE id = -77 AND n = 'bbb''c'", b, sizeof(b));
	CHECK_STR(a, b);
}

static void test_pop_tag(void)
{
	static struct sp_thread_stack st;
	struct sp_closed c;

	memset(&st, 0, sizeof(st));
	CHECK(!sp_stack_push(&st, 100, SP_FRAME_QUERY, 10));
	st.frames[0].tag = 1;
	CHECK(!sp_stack_push(&st, 200, SP_FRAME_QUERY, 20));
	st.frames[1].tag = 2;
	/* Line 1's END closes line 1's frame; line 2's frame above it is
	 * discarded (they shared a stack and did not nest). */
	CHECK(sp_stack_pop_tag(&st, 1, 50, &c) == SP_POP_OK);
	CHECK_U64(c.name, 100);
	CHECK_U64(c.total_ns, 40);
	CHECK_U64(c.discarded, 1);
	CHECK_U64(st.depth, 0);
	CHECK(sp_stack_pop_tag(&st, 2, 60, &c) == SP_POP_UNMATCHED);
	/* Nested on one stack: the child's time leaves the parent's self. */
	CHECK(!sp_stack_push(&st, 100, SP_FRAME_QUERY, 0));
	st.frames[0].tag = 1;
	CHECK(!sp_stack_push(&st, 200, SP_FRAME_QUERY, 10));
	st.frames[1].tag = 2;
	CHECK(sp_stack_pop_tag(&st, 2, 40, &c) == SP_POP_OK);
	CHECK(sp_stack_pop_tag(&st, 1, 100, &c) == SP_POP_OK);
	CHECK_U64(c.total_ns, 100);
	CHECK_U64(c.self_ns, 70);
	/* A serial line's BEGIN abandons its open frame and what is above
	 * it, never a frame of another line below. */
	CHECK(!sp_stack_push(&st, 300, SP_FRAME_QUERY, 0));
	st.frames[0].tag = 3;
	CHECK(!sp_stack_push(&st, 100, SP_FRAME_QUERY, 10));
	st.frames[1].tag = 1;
	CHECK(!sp_stack_push(&st, 200, SP_FRAME_QUERY, 20));
	st.frames[2].tag = 2;
	CHECK_U64(sp_stack_abandon_tag(&st, 4), 0);
	CHECK_U64(st.depth, 3);
	CHECK_U64(sp_stack_abandon_tag(&st, 1), 2);
	CHECK_U64(st.depth, 1);
	CHECK_U64(st.frames[0].name, 300);
	CHECK_U64(sp_stack_abandon_tag(&st, 3), 1);
	CHECK_U64(st.depth, 0);
	CHECK_U64(sp_stack_abandon_tag(&st, 3), 0);
	/* abandon=: all the line's frames, from its outermost up. */
	CHECK(!sp_stack_push(&st, 300, SP_FRAME_QUERY, 0));
	st.frames[0].tag = 3;
	CHECK(!sp_stack_push(&st, 100, SP_FRAME_QUERY, 10));
	st.frames[1].tag = 1;
	CHECK(!sp_stack_push(&st, 101, SP_FRAME_QUERY, 20));
	st.frames[2].tag = 1;
	st.overflow = 2;
	CHECK_U64(sp_stack_abandon_all(&st, 4), 0);
	CHECK_U64(sp_stack_abandon_all(&st, 1), 4);
	CHECK_U64(st.depth, 1);
	CHECK_U64(st.overflow, 0);
	CHECK_U64(st.frames[0].name, 300);
}

int main(void)
{
	RUN(test_malformed);
	RUN(test_valid);
	RUN(test_arg_need);
	RUN(test_normalize);
	RUN(test_same_stream);
	RUN(test_pop_tag);
	return check_status();
}
