// SPDX-License-Identifier: MIT
/*
 * Unit tests of userspace/export.c on events built in memory (no trace
 * file): folded stacks exact for a known nesting (blocked and incr-load
 * frames, a query inside an incr load, two threads, names that need
 * cleaning), Chrome JSON checked by python3 (validity, required fields,
 * ts/dur in microseconds), CSV exact with RFC 4180 quoting.
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>
#include "export.h"
#include "check.h"

enum {
	S_OUTER, S_INNER, S_SHARED, S_CODEGEN, S_THREAD, S_MARK, S_BAD,
	S_QUOTE, NSTRINGS,
};

static const char *const strings[NSTRINGS] = {
	[S_OUTER] = "outer",
	[S_INNER] = "inner",
	[S_SHARED] = "shared",
	[S_CODEGEN] = "codegen",
	[S_THREAD] = "main-thread",
	[S_MARK] = "mark;x\n",
	[S_BAD] = "bad\xff;name",
	[S_QUOTE] = "a,\"b\"",
};

#define EV(t, k, n, p, th) \
	{ .ts_ns = (t), .kind = SP_EV_##k, .name_id = (n), .pid = (p), .tid = (th) }

/*
 * Thread 10/11 (base time 1000):
 * outer [1000, 2000) ─ inner [1100, 1300), cache hit inner,
 *   blocked on shared [1400, 1500), incr load codegen [1500, 1700) with
 *   inner [1550, 1600) inside, mark at 1800.
 * Thread 10/12: inner [1000, 1234); cache hit at 999 (before the base);
 *   bad;name [2000, 2010); outer [2100, 2200) with inner [2150, 2160).
 * Thread 10/13: an END without BEGIN, a BEGIN never closed.
 */
static const struct trace_event events[] = {
	EV(1000, THREAD_NAME, S_THREAD, 10, 11),
	EV(1000, QUERY_BEGIN, S_OUTER, 10, 11),
	EV(1000, QUERY_BEGIN, S_INNER, 10, 12),
	EV(999, CACHE_HIT, S_INNER, 10, 12),
	EV(1100, QUERY_BEGIN, S_INNER, 10, 11),
	EV(1234, QUERY_END, S_INNER, 10, 12),
	EV(1300, QUERY_END, S_INNER, 10, 11),
	EV(1300, CACHE_HIT, S_INNER, 10, 11),
	EV(1400, BLOCKED_BEGIN, S_SHARED, 10, 11),
	EV(1500, BLOCKED_END, S_SHARED, 10, 11),
	EV(1500, INCR_LOAD_BEGIN, S_CODEGEN, 10, 11),
	EV(1550, QUERY_BEGIN, S_INNER, 10, 11),
	EV(1600, QUERY_END, S_INNER, 10, 11),
	EV(1700, INCR_LOAD_END, S_CODEGEN, 10, 11),
	{ .ts_ns = 1800, .kind = SP_EV_MARK, .name_id = S_MARK, .pid = 10,
	  .tid = 11, .arg1 = 42 },
	EV(2000, QUERY_END, S_OUTER, 10, 11),
	EV(2000, QUERY_BEGIN, S_BAD, 10, 12),
	EV(2010, QUERY_END, S_BAD, 10, 12),
	EV(2100, QUERY_BEGIN, S_OUTER, 10, 12),
	EV(2150, QUERY_BEGIN, S_INNER, 10, 12),
	EV(2160, QUERY_END, S_INNER, 10, 12),
	EV(2200, QUERY_END, S_OUTER, 10, 12),
	EV(2300, QUERY_END, S_OUTER, 10, 13),
	EV(2400, QUERY_BEGIN, S_OUTER, 10, 13),
};

struct arr_src {
	const struct trace_event *ev;
	size_t n, i;
	int fail_at;		/* -1: never; else return -EIO at that index */
};

static int arr_next(void *ctx, struct trace_event *ev)
{
	struct arr_src *a = ctx;

	if (a->fail_at >= 0 && a->i == (size_t)a->fail_at)
		return -EIO;
	if (a->i == a->n)
		return 0;
	*ev = a->ev[a->i++];
	return 1;
}

static const char *arr_string(void *ctx, uint32_t id)
{
	(void)ctx;
	return id < NSTRINGS ? strings[id] : NULL;
}

static char *run(enum export_format fmt, const struct trace_event *ev,
		 size_t n, const struct export_info *info,
		 struct export_stats *st, int want_ret)
{
	struct arr_src a = { .ev = ev, .n = n, .fail_at = -1 };
	struct export_source src = { arr_next, arr_string, &a };
	char *buf = NULL;
	size_t len;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		exit(2);
	CHECK(export__write(f, fmt, &src, info, st) == want_ret);
	fclose(f);
	return buf;
}

#define NEV (sizeof(events) / sizeof(events[0]))

static void test_folded(void)
{
	/* outer (thread 11): 1000 total - inner 200 - shared 100 - codegen
	 * 200 = 500, plus outer on thread 12: 100 - 10 = 90. codegen: 200 -
	 * inner 50. The cache hits and zero-width frames add nothing. */
	static const char want[] =
		"bad\xef\xbf\xbd:name 10\n"
		"inner 234\n"
		"outer 590\n"
		"outer;codegen [incr] 150\n"
		"outer;codegen [incr];inner 50\n"
		"outer;inner 210\n"
		"outer;shared [blocked] 100\n";
	struct export_stats st;
	char *out;

	out = run(EXPORT_FOLDED, events, NEV, NULL, &st, 0);
	CHECK_STR(out, want);
	free(out);
	CHECK_U64(st.events, NEV);
	CHECK_U64(st.errors[SP_ERR_END_WITHOUT_BEGIN], 1);
	CHECK_U64(st.open_at_end, 1);

	/* Nothing in, nothing out. */
	out = run(EXPORT_FOLDED, events, 0, NULL, &st, 0);
	CHECK_STR(out, "");
	free(out);
}

/* A frame kept past an overflowed BEGIN keeps its kind: the shadow stack
 * must not push what replay dropped. */
static void test_folded_overflow(void)
{
	struct trace_event ev[2 * SP_MAX_DEPTH + 8];
	char deepest[16 + 6 * SP_MAX_DEPTH + 8], *p;
	struct export_stats st;
	size_t n = 0, i;
	char *out;

	ev[n++] = (struct trace_event)EV(0, INCR_LOAD_BEGIN, S_CODEGEN, 1, 1);
	for (i = 1; i < SP_MAX_DEPTH + 2; i++)
		ev[n++] = (struct trace_event)EV(i, QUERY_BEGIN, S_INNER, 1, 1);
	for (i = SP_MAX_DEPTH + 1; i >= 1; i--)
		ev[n++] = (struct trace_event)EV(1000 - i, QUERY_END, S_INNER, 1, 1);
	ev[n++] = (struct trace_event)EV(1000, INCR_LOAD_END, S_CODEGEN, 1, 1);
	out = run(EXPORT_FOLDED, ev, n, NULL, &st, 0);
	CHECK_U64(st.errors[SP_ERR_STACK_OVERFLOW], 2);
	CHECK_U64(st.errors[SP_ERR_END_WITHOUT_BEGIN], 0);
	CHECK(strncmp(out, "codegen [incr] ", 15) == 0);
	CHECK(strstr(out, "codegen [incr];inner;inner") != NULL);
	/* The deepest stack holds 127 inner frames under codegen; its
	 * innermost began at 127 and ended at 873 (the first two ENDs close
	 * the dropped BEGINs). */
	p = deepest + sprintf(deepest, "\ncodegen [incr]");
	for (i = 0; i < SP_MAX_DEPTH - 1; i++)
		p += sprintf(p, ";inner");
	sprintf(p, " 746\n");
	CHECK(strstr(out, deepest) != NULL);
	free(out);
}

static const char py_chrome[] =
"import json, sys\n"
"def bad(x): raise ValueError(x)\n"
"d = json.loads(sys.stdin.buffer.read().decode(\"utf-8\"), parse_constant=bad)\n"
"assert d[\"displayTimeUnit\"] == \"ns\"\n"
"ev = d[\"traceEvents\"]\n"
"for e in ev:\n"
"    for k in (\"ph\", \"ts\", \"pid\", \"tid\", \"name\"):\n"
"        assert k in e, (k, e)\n"
"    assert e[\"ph\"] in \"XiM\", e\n"
"    if e[\"ph\"] == \"X\": assert e[\"dur\"] >= 0 and e[\"cat\"] in (\"query\", \"blocked\", \"incr_load\")\n"
"    if e[\"ph\"] == \"i\": assert e[\"s\"] == \"t\"\n"
"def fmt(e): return \"%s %s %s %s %r %s %s\" % (e[\"ph\"], e.get(\"cat\", \"-\"), e[\"tid\"], e[\"name\"], e[\"ts\"], e.get(\"dur\", \"-\"), json.dumps(e.get(\"args\", {}), sort_keys=True))\n"
"for e in sorted(ev, key=lambda e: (e[\"tid\"], e[\"ts\"], -e.get(\"dur\", 0))): print(fmt(e))\n"
"print(json.dumps(d[\"otherData\"], sort_keys=True))\n";

static void test_chrome(void)
{
	static const char want[] =
"M - 10 process_name 0.0 - {\"name\": \"./a \\\"b\\\"\"}\n"
"X query 11 outer 0.0 1.0 {\"self_ns\": 500}\n"
"M - 11 thread_name 0.0 - {\"name\": \"main-thread\"}\n"
"X query 11 inner 0.1 0.2 {\"self_ns\": 200}\n"
"i cache_hit 11 inner 0.3 - {}\n"
"X blocked 11 shared 0.4 0.1 {\"self_ns\": 100}\n"
"X incr_load 11 codegen 0.5 0.2 {\"self_ns\": 150}\n"
"X query 11 inner 0.55 0.05 {\"self_ns\": 50}\n"
"i mark 11 mark;x\n 0.8 - {\"key\": 42}\n"
"i cache_hit 12 inner -0.001 - {}\n"
"X query 12 inner 0.0 0.234 {\"self_ns\": 234}\n"
"X query 12 bad\xef\xbf\xbd;name 1.0 0.01 {\"self_ns\": 10}\n"
"X query 12 outer 1.1 0.1 {\"self_ns\": 90}\n"
"X query 12 inner 1.15 0.01 {\"self_ns\": 10}\n"
"{\"base_monotonic_ns\": \"1000\", \"cmdline\": \"./a \\\"b\\\"\", "
"\"end_without_begin\": \"1\", \"open_at_end\": \"1\", \"producer\": "
"\"sptrace\", \"source\": \"t.spt\", \"start_realtime_ns\": "
"\"1700000000000000000\", \"version\": \"0.1\"}\n";
	struct export_info info = {
		.base_ns = 1000, .start_realtime_ns = 1700000000000000000ULL,
		.source = "t.spt", .cmdline = "./a \"b\"", .version = "0.1",
	};
	struct export_stats st;
	char res[8192], *out;

	out = run(EXPORT_CHROME, events, NEV, &info, &st, 0);
	CHECK_U64(check_python(py_chrome, out, res, sizeof(res)), 0);
	CHECK_STR(res, want);
	/* Exact text of one event: ns precision, fixed field order. */
	CHECK(strstr(out, "{\"name\":\"inner\",\"cat\":\"query\",\"ph\":\"X\","
		      "\"ts\":0.550,\"pid\":10,\"tid\":11,\"dur\":0.050,"
		      "\"args\":{\"self_ns\":50}}") != NULL);
	CHECK(strstr(out, "\"ts\":-0.001,") != NULL);
	CHECK(strstr(out, "\"name\":\"bad\\ufffd;name\"") != NULL);
	free(out);

	/* A process_name per process, in order of first event: the command
	 * line names the first, later ones are its descendants (--follow);
	 * without a command line (-p) they are "traced process". */
	{
		static const struct trace_event two[] = {
			EV(1000, QUERY_BEGIN, S_INNER, 20, 20),
			EV(1010, QUERY_BEGIN, S_INNER, 21, 22),
			EV(1020, QUERY_END, S_INNER, 21, 22),
			EV(1030, QUERY_END, S_INNER, 20, 20),
		};
		struct export_info ci = { .cmdline = "/usr/bin/prog -x" };

		out = run(EXPORT_CHROME, two, 4, &ci, &st, 0);
		CHECK(strstr(out, "{\"name\":\"process_name\",\"ph\":\"M\","
			      "\"ts\":0.000,\"pid\":20,\"tid\":20,\"args\":"
			      "{\"name\":\"/usr/bin/prog -x\"}}") != NULL);
		CHECK(strstr(out, "\"pid\":21,\"tid\":21,\"args\":{\"name\":"
			      "\"prog: descendant\"}}") != NULL);
		free(out);
		out = run(EXPORT_CHROME, two, 4, NULL, &st, 0);
		CHECK(strstr(out, "\"pid\":20,\"tid\":20,\"args\":{\"name\":"
			      "\"traced process\"}}") != NULL);
		free(out);
	}

	/* No events and no info: still a valid, loadable document. */
	out = run(EXPORT_CHROME, events, 0, NULL, &st, 0);
	CHECK_STR(out, "{\"traceEvents\":[\n],\n\"displayTimeUnit\":\"ns\",\n"
		  "\"otherData\":{\"producer\":\"sptrace\","
		  "\"base_monotonic_ns\":\"0\"}}\n");
	CHECK_U64(check_python(py_chrome, out, res, sizeof(res)), 0);
	free(out);
}

static void test_csv(void)
{
	static const struct trace_event ev[] = {
		EV(1000, QUERY_BEGIN, S_OUTER, 10, 11),
		{ .ts_ns = 1001, .kind = SP_EV_MARK, .name_id = S_QUOTE,
		  .pid = 10, .tid = 11, .arg1 = 7, .arg2 = UINT64_MAX },
		EV(1002, MARK, S_MARK, 10, 11),
		EV(1003, ALLOC, TRACE_NO_STRING, 10, 11),
		EV(1004, QUERY_END, S_BAD, 4294967295u, 4294967295u),
		{ .ts_ns = UINT64_MAX, .kind = 99, .name_id = 12345 },
		EV(1005, THREAD_EXIT, S_OUTER, 1, 2),
	};
	static const char want[] =
		"ts_ns,pid,tid,kind,name,arg1,arg2\n"
		"1000,10,11,query_begin,outer,0,0\n"
		"1001,10,11,mark,\"a,\"\"b\"\"\",7,18446744073709551615\n"
		"1002,10,11,mark,\"mark;x\n\",0,0\n"
		"1003,10,11,alloc,,0,0\n"
		"1004,4294967295,4294967295,query_end,bad\xef\xbf\xbd;name,0,0\n"
		"18446744073709551615,0,0,unknown_99,,0,0\n"
		"1005,1,2,thread_exit,outer,0,0\n";
	struct export_stats st;
	char *out;

	out = run(EXPORT_CSV, ev, sizeof(ev) / sizeof(ev[0]), NULL, &st, 0);
	CHECK_STR(out, want);
	CHECK_U64(st.events, 7);
	free(out);
	CHECK_STR(export__kind_name(SP_EV_INCR_LOAD_END), "incr_load_end");
	CHECK(export__kind_name(0) == NULL);
	CHECK(export__kind_name(SP_EV__MAX) == NULL);
}

/* A source error stops every writer with that error. */
static void test_errors(void)
{
	enum export_format f;

	for (f = EXPORT_CHROME; f <= EXPORT_CSV; f++) {
		struct arr_src a = { .ev = events, .n = NEV, .fail_at = 5 };
		struct export_source src = { arr_next, arr_string, &a };
		char *buf = NULL;
		size_t len;
		FILE *out = open_memstream(&buf, &len);

		CHECK(export__write(out, f, &src, NULL, NULL) == -EIO);
		fclose(out);
		free(buf);
	}
	{
		struct arr_src a = { .ev = events, .n = NEV, .fail_at = -1 };
		struct export_source src = { arr_next, arr_string, &a };
		FILE *full = fopen("/dev/full", "w");

		CHECK(full != NULL);
		if (!full)
			return;
		for (f = EXPORT_CHROME; f <= EXPORT_CSV; f++) {
			a.i = 0;
			CHECK(export__write(full, f, &src, NULL, NULL) == -EIO);
			clearerr(full);
		}
		CHECK(export__write(full, (enum export_format)9, &src, NULL,
				    NULL) == -EINVAL);
		fclose(full);
	}
}

int main(void)
{
	RUN(test_folded);
	RUN(test_folded_overflow);
	RUN(test_chrome);
	RUN(test_csv);
	RUN(test_errors);
	return check_status();
}
