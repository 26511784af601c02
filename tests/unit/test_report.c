// SPDX-License-Identifier: MIT
/*
 * Unit tests of the output writers (userspace/table.c, json_out.c,
 * csv_out.c): table layout and hidden columns, name escaping, JSON checked by
 * a strict parser (python3), CSV quoting, duration formatting, write errors.
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>
#include "csv_out.h"
#include "json_out.h"
#include "summary_writer.h"
#include "table.h"
#include "text.h"
#include "check.h"

struct capture {
	char *buf;
	size_t len;
	FILE *f;
};

static FILE *cap_open(struct capture *c)
{
	c->buf = NULL;
	c->len = 0;
	c->f = open_memstream(&c->buf, &c->len);
	if (!c->f) {
		perror("open_memstream");
		exit(2);
	}
	return c->f;
}

/* Closes the stream; the caller frees the returned text. */
static char *cap_close(struct capture *c)
{
	fclose(c->f);
	return c->buf;
}

static void add(struct summary *s, const char *name, uint64_t count,
		uint64_t self, uint64_t total, uint64_t min, uint64_t max)
{
	struct sp_query_stats st = { .count = count, .self_ns = self,
				     .total_ns = total, .min_ns = min,
				     .max_ns = max };

	CHECK(summary__add_stats(s, name, &st) == 0);
}

/* parse: 4 calls, 2 at 1ms and 2 at 1.5ms; typeck: 1 call of 1ms. Self time
 * 3ms + 1ms, so 75% / 25%. No cache hits, blocked or incr time anywhere. */
static void basic_summary(struct summary *s)
{
	summary__init(s);
	s->duration_ns = 2010000000;
	add(s, "typeck", 1, 1000000, 1000000, 1000000, 1000000);
	add(s, "parse", 4, 3000000, 5000000, 1000000, 1500000);
	summary__add_hist(s, "parse", sp_hist_bucket(1000000), 2);
	summary__add_hist(s, "parse", sp_hist_bucket(1500000), 2);
	summary__add_hist(s, "typeck", sp_hist_bucket(1000000), 1);
	summary__finish(s);
}

static char *write_table(const struct summary *s, const struct summary_write_opts *o)
{
	struct capture c;

	CHECK(summary_writer__write(cap_open(&c), s, o) == 0);
	return cap_close(&c);
}

static void test_fmt_ns(void)
{
	static const struct { uint64_t ns; const char *want; } cases[] = {
		{ 0, "0ns" }, { 1, "1ns" }, { 999, "999ns" },
		{ 1000, "1.00us" }, { 1004, "1.00us" }, { 1005, "1.01us" },
		{ 1500, "1.50us" }, { 9995, "10.0us" }, { 99949, "99.9us" },
		{ 99950, "100us" }, { 999499, "999us" }, { 999500, "1.00ms" },
		{ 1500000, "1.50ms" }, { 12345678, "12.3ms" },
		{ 123456789, "123ms" }, { 2010000000, "2.01s" },
		{ 59999999999ULL, "60.0s" }, { 999500000000ULL, "1000s" },
		{ UINT64_MAX, "18400000000s" },
	};
	char buf[32];
	unsigned int i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		text__fmt_ns(buf, sizeof(buf), cases[i].ns);
		CHECK_STR(buf, cases[i].want);
	}
	/* A short buffer is cut, never overrun. */
	text__fmt_ns(buf, 4, 1500);
	CHECK_STR(buf, "1.5");
}

static void test_parse_format(void)
{
	enum summary_format f = SUMMARY_CSV;

	CHECK(summary_format__parse("table", &f) == 0 && f == SUMMARY_TABLE);
	CHECK(summary_format__parse("json", &f) == 0 && f == SUMMARY_JSON);
	CHECK(summary_format__parse("csv", &f) == 0 && f == SUMMARY_CSV);
	CHECK(summary_format__parse("JSON", &f) == -EINVAL);
	CHECK(summary_format__parse("tab", &f) == -EINVAL);
	CHECK(summary_format__parse("", &f) == -EINVAL);
}

static void test_table_basic(void)
{
	static const char want[] =
"sptrace: 2 queries, duration 2.01s\n"
"+--------+-----------+-----------------+--------+------------+--------+--------+--------+\n"
"| Item   | Self time | % of total time |   Time | Item count |    p50 |    p99 |    Max |\n"
"+--------+-----------+-----------------+--------+------------+--------+--------+--------+\n"
"| Total  |    4.00ms |          100.00 | 6.00ms |          5 |      - |      - | 1.50ms |\n"
"| parse  |    3.00ms |           75.00 | 5.00ms |          4 | 1.01ms | 1.50ms | 1.50ms |\n"
"| typeck |    1.00ms |           25.00 | 1.00ms |          1 | 1.00ms | 1.00ms | 1.00ms |\n"
"+--------+-----------+-----------------+--------+------------+--------+--------+--------+\n";
	struct summary_write_opts o = { 0 };
	struct summary s;
	char *out;

	/* parse p50: rank 2 of 4 is 3/4 into bucket [999424, 1015808):
	 * 1011712 -> "1.01ms"; p99: rank 4, 3/4 into [1474560, 1507328):
	 * 1499136 -> "1.50ms". Cache/blocked/incr are zero: hidden. */
	basic_summary(&s);
	out = write_table(&s, &o);
	CHECK_STR(out, want);
	free(out);

	/* summary_writer__write with no options is the same table. */
	{
		struct capture c;

		CHECK(summary_writer__write(cap_open(&c), &s, NULL) == 0);
		out = cap_close(&c);
		CHECK_STR(out, want);
		free(out);
	}
	summary__free(&s);
}

static void test_table_columns(void)
{
	struct sp_query_stats hits = { .cache_hits = 7 };
	struct summary_write_opts o = { 0 };
	struct summary s;
	char *out;

	basic_summary(&s);
	/* A row with cache hits but no invocations is still a row. */
	summary__add_stats(&s, "cached", &hits);
	summary__finish(&s);
	out = write_table(&s, &o);
	CHECK(strstr(out, "| Cache hits |") != NULL);
	CHECK(strstr(out, "Blocked time") == NULL);
	CHECK(strstr(out, "Incr. load time") == NULL);
	CHECK(strstr(out, "| cached |") != NULL);
	/* Total sums the cache hits. */
	CHECK(strstr(out, "|          5 |          7 |") != NULL);
	/* No completed invocation: its percentiles and max are undefined,
	 * "-", never "0ns". */
	CHECK(strstr(out, "| cached |       0ns |            0.00 |    0ns |"
		      "          0 |          7 |      - |      - |      - |\n") !=
	      NULL);
	free(out);
	/* all_columns (--interval): the optional columns stay, zero or not,
	 * so every tick's table has the same ones. */
	o.all_columns = true;
	out = write_table(&s, &o);
	CHECK(strstr(out, "| Item   | Self time | % of total time |   Time | "
		      "Item count | Cache hits | Blocked time | Incr. load time "
		      "|    p50 |    p99 |    Max |\n") != NULL);
	free(out);
	summary__free(&s);
}

/* The 120-character rule (docs/formats.md): every optional column in use
 * and a name of 24 cells or more: % of total time, p50 and Incr. load time
 * are left out in that order and named, and the Item column gets the 33
 * cells left; width 0 (--wide) shows all. */
static void test_table_fit(void)
{
	struct sp_query_stats x = { .count = 1, .self_ns = 5, .total_ns = 5,
				    .cache_hits = 3, .blocked_ns = 7,
				    .incr_load_ns = 9, .min_ns = 5,
				    .max_ns = 5 };
	struct summary_write_opts o = { .width = 120 };
	struct summary s;
	char *out;

	basic_summary(&s);
	summary__add_stats(&s, "a_name_forty_cells_long_which_gets_cut", &x);
	summary__finish(&s);
	out = write_table(&s, &o);
	CHECK(strstr(out, "| Item                              | Self time |   Time "
		      "| Item count | Cache hits | Blocked time |    p99 |    Max "
		      "|\n") != NULL);
	CHECK(strstr(out, "| a_name_forty_cells_long_which_... |") != NULL);
	CHECK(strstr(out, "+\n3 columns left out to fit 120 characters: % of "
		      "total time, p50, Incr. load time (--wide shows every "
		      "column)\n") != NULL);
	free(out);
	o.width = 0;
	out = write_table(&s, &o);
	CHECK(strstr(out, "% of total time") && strstr(out, "Incr. load time") &&
	      !strstr(out, "left out"));
	free(out);
	summary__free(&s);
}

static void test_table_percent_above(void)
{
	struct summary_write_opts o = { .percent_above = 30.0 };
	struct summary s;
	char *out;

	basic_summary(&s);
	out = write_table(&s, &o);
	CHECK(strstr(out, "typeck") == NULL);
	CHECK(strstr(out, "| parse ") != NULL);
	/* Total still covers hidden rows, and a line says what was hidden. */
	CHECK(strstr(out, "| Total |    4.00ms |") != NULL);
	CHECK(strstr(out, "+\n1 row with at most 30% of the self time each not "
		      "shown (self time 1.00ms, 25.00% in all; --percent-above "
		      "30)\n") != NULL);
	free(out);
	/* Nothing hidden: no such line. */
	o.percent_above = 20.0;
	out = write_table(&s, &o);
	CHECK(strstr(out, "not shown") == NULL);
	free(out);
	/* 25% is not above 25: hidden too. */
	o.percent_above = 25.0;
	out = write_table(&s, &o);
	CHECK(strstr(out, "typeck") == NULL);
	free(out);
	summary__free(&s);
}

/* Line `n` (0-based) of text, copied into buf. */
static const char *line_of(const char *text, unsigned int n, char *buf,
			   size_t len)
{
	const char *end;
	size_t l;

	for (; n && text; n--) {
		text = strchr(text, '\n');
		if (text)
			text++;
	}
	if (!text)
		return "";
	end = strchr(text, '\n');
	l = end ? (size_t)(end - text) : strlen(text);
	if (l >= len)
		l = len - 1;
	memcpy(buf, text, l);
	buf[l] = '\0';
	return buf;
}

static void test_table_names(void)
{
	struct summary_write_opts o = { 0 };
	struct summary s;
	char longname[101], want[64], buf[512];
	const char *l;
	size_t seplen;
	char *out;

	memset(longname, 'a', 100);
	longname[100] = '\0';
	summary__init(&s);
	add(&s, "esc\x1b[31m\\x", 1, 40, 40, 40, 40);
	add(&s, "bad\xff\xc3", 1, 30, 30, 30, 30);
	add(&s, "\xe6\x97\xa5\xe6\x9c\xac", 1, 20, 20, 20, 20);	/* 日本 */
	add(&s, longname, 1, 10, 10, 10, 10);
	summary__finish(&s);
	out = write_table(&s, &o);
	/* Terminal escapes, backslashes and invalid bytes are made visible. */
	CHECK(strstr(out, "| esc\\x1b[31m\\\\x ") != NULL);
	CHECK(strstr(out, "| bad\\xff\\xc3 ") != NULL);
	CHECK(strchr(out, '\x1b') == NULL);
	CHECK(strchr(out, '\xff') == NULL);
	/* 100 chars cut to 57 + "..." = 60 columns. */
	memset(want, 'a', 57);
	memcpy(want + 57, "... |", 6);
	CHECK(strstr(out, want) != NULL);
	/* Boxes line up: ASCII rows as long as the separator; the 2-wide
	 * CJK row is 6 bytes for 4 columns, so 2 bytes longer. */
	seplen = strlen(line_of(out, 1, buf, sizeof(buf)));
	/* Item 60+2, Self time 9+2, % 15+2, Time "100ns" 5+2, Item count
	 * 10+2, Max "40ns" 4+2 (p50/p99 hidden: no histograms), 7 '+'. */
	CHECK_U64(seplen, 62 + 11 + 17 + 7 + 12 + 6 + 7);
	CHECK_U64(strlen(line_of(out, 2, buf, sizeof(buf))), seplen);
	CHECK_U64(strlen(line_of(out, 4, buf, sizeof(buf))), seplen);
	CHECK_U64(strlen(line_of(out, 5, buf, sizeof(buf))), seplen);
	CHECK_U64(strlen(line_of(out, 6, buf, sizeof(buf))), seplen);
	l = line_of(out, 7, buf, sizeof(buf));
	CHECK(strncmp(l, "| \xe6\x97\xa5\xe6\x9c\xac ", 8) == 0);
	CHECK_U64(strlen(l), seplen + 2);
	CHECK_U64(strlen(line_of(out, 8, buf, sizeof(buf))), seplen);
	free(out);
	summary__free(&s);
}

static void test_table_hist(void)
{
	struct summary_write_opts o = { .hist = true };
	struct summary s;
	char *out;

	summary__init(&s);
	add(&s, "h", 151, 100, 100, 100, 1000);
	summary__add_hist(&s, "h", sp_hist_bucket(100), 100);
	summary__add_hist(&s, "h", sp_hist_bucket(300), 50);
	summary__add_hist(&s, "h", sp_hist_bucket(1000), 1);
	add(&s, "nohist", 1, 1, 1, 1, 1);
	summary__finish(&s);
	out = write_table(&s, &o);
	CHECK(strstr(out, "\nh  (count 151, p50 ") != NULL);
	/* Power-of-two rows, empty middle row kept, bars scaled to the
	 * largest row; a row with samples gets at least one star. */
	CHECK(strstr(out,
"  [64ns, 128ns)   100 |****************************************|\n"
"  [128ns, 256ns)    0 |                                        |\n"
"  [256ns, 512ns)   50 |********************                    |\n"
"  [512ns, 1.02us)   1 |*                                       |\n")
	      != NULL);
	CHECK(strstr(out, "nohist  (") == NULL);
	free(out);
	/* Without the option, no histograms. */
	o.hist = false;
	out = write_table(&s, &o);
	CHECK(strstr(out, "(count") == NULL);
	free(out);
	summary__free(&s);
}

static void test_warnings(void)
{
	struct summary_write_opts o = { 0 };
	struct capture c;
	struct summary s;
	char *out;

	basic_summary(&s);
	CHECK(table__warn_errors(cap_open(&c), &s) == 0);
	out = cap_close(&c);
	CHECK_STR(out, "");
	free(out);

	s.errors[SP_ERR_END_WITHOUT_BEGIN] = 3;
	s.errors[SP_ERR_HIST_FULL] = 1;
	s.lost = 2;
	out = write_table(&s, &o);
	CHECK(strstr(out, "+\nsptrace: warning: 3 end_without_begin events (")
	      != NULL);
	CHECK(strstr(out, "\nsptrace: warning: 1 hist_map_full events (")
	      != NULL);
	CHECK(strstr(out, "\nsptrace: warning: 2 lost events (") != NULL);
	CHECK(strstr(out, "end_mismatch") == NULL);
	CHECK(strstr(out, "intern-full") == NULL);
	free(out);
	summary__free(&s);

	/* Rows of a full table of run-time names (C's and Rust's fixed
	 * names, as a name and as a text key): one line with their events. */
	summary__init(&s);
	add(&s, "<intern-full>", 2, 10, 10, 5, 5);
	add(&s, "load(<intern-full>)", 3, 10, 10, 3, 4);
	add(&s, "sp_probe: names full", 1, 10, 10, 10, 10);
	add(&s, "parse", 7, 10, 10, 1, 2);
	summary__finish(&s);
	CHECK(table__warn_errors(cap_open(&c), &s) == 0);
	out = cap_close(&c);
	CHECK(strstr(out, "sptrace: warning: 6 events named <intern-full> (")
	      != NULL);
	free(out);
	summary__free(&s);
}

/* JSON and CSV stay pure data: the warnings go to stderr. */
static void test_warnings_stderr(void)
{
	struct summary_write_opts o = { .format = SUMMARY_CSV };
	char err[1024] = "";
	struct capture c;
	struct summary s;
	FILE *tmp;
	size_t n;
	char *out;
	int saved;

	basic_summary(&s);
	s.errors[SP_ERR_STACK_OVERFLOW] = 4;
	tmp = tmpfile();
	CHECK(tmp != NULL);
	if (!tmp)
		return;
	fflush(stderr);
	saved = dup(STDERR_FILENO);
	dup2(fileno(tmp), STDERR_FILENO);
	CHECK(summary_writer__write(cap_open(&c), &s, &o) == 0);
	out = cap_close(&c);
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	rewind(tmp);
	n = fread(err, 1, sizeof(err) - 1, tmp);
	err[n] = '\0';
	fclose(tmp);
	CHECK(strstr(out, "warning") == NULL);
	CHECK(strncmp(err, "sptrace: warning: 4 stack_overflow events (", 43)
	      == 0);
	free(out);
	summary__free(&s);
}

/* Strict check in python3: valid UTF-8, ends in a newline, no duplicate
 * keys, only integers and strings as values. Prints facts to compare. */
static const char py_check[] =
"import json, sys\n"
"b = sys.stdin.buffer.read()\n"
"assert b.endswith(b\"\\n\")\n"
"def bad(x): raise ValueError(x)\n"
"def pairs(kv):\n"
"    keys = [k for k, _ in kv]\n"
"    assert len(keys) == len(set(keys)), keys\n"
"    return dict(kv)\n"
"d = json.loads(b.decode(\"utf-8\"), parse_float=bad, parse_constant=bad,\n"
"               object_pairs_hook=pairs)\n"
"def walk(o):\n"
"    if isinstance(o, dict): [walk(v) for v in o.values()]\n"
"    elif isinstance(o, list): [walk(v) for v in o]\n"
"    elif isinstance(o, bool) or not isinstance(o, (int, str)): bad(o)\n"
"walk(d)\n"
"print(\",\".join(d.keys()))\n"
"print(json.dumps([q[\"name\"] for q in d[\"queries\"]]))\n"
"print(\",\".join(d[\"queries\"][0].keys()) if d[\"queries\"] else \"-\")\n"
"print(\",\".join(\"%s=%d\" % kv for kv in d[\"errors\"].items()))\n";

static void test_json(void)
{
	static const char want_q0[] =
"{\"name\":\"parse\",\"count\":4,\"self_ns\":3000000,\"total_ns\":5000000,"
"\"min_ns\":1000000,\"max_ns\":1500000,\"p50_ns\":1011712,"
"\"p90_ns\":1499136,\"p99_ns\":1499136,\"cache_hits\":0,\"incr_loads\":0,"
"\"incr_load_ns\":0,\"blocked_count\":0,\"blocked_ns\":0,"
"\"hist\":[{\"lo_ns\":999424,\"hi_ns\":1015808,\"count\":2},"
"{\"lo_ns\":1474560,\"hi_ns\":1507328,\"count\":2}]}";
	static const char want_py[] =
"version,duration_ns,total_self_ns,queries,errors\n"
"[\"parse\", \"typeck\"]\n"
"name,count,self_ns,total_ns,min_ns,max_ns,p50_ns,p90_ns,p99_ns,"
"cache_hits,incr_loads,incr_load_ns,blocked_count,blocked_ns,hist\n"
"unbalanced=4,map_full=5,lost=6,end_without_begin=1,end_mismatch=3,"
"stack_overflow=0,thread_exit_open=0,queries_map_full=0,hist_map_full=5,"
"names_map_full=0,threads_map_full=0,name_read_failed=0,events_lost=0,func_unwound=0,batch_lost=0,async_map_full=0,abandoned=0\n";
	char py[4096];
	struct capture c;
	struct summary s;
	char *out;

	basic_summary(&s);
	s.errors[SP_ERR_END_WITHOUT_BEGIN] = 1;
	s.errors[SP_ERR_END_MISMATCH] = 3;
	s.errors[SP_ERR_HIST_FULL] = 5;
	s.lost = 6;
	CHECK(json_out__write(cap_open(&c), &s) == 0);
	out = cap_close(&c);
	CHECK(strncmp(out, "{\"version\":\"1.5\",\"duration_ns\":2010000000,"
		      "\"total_self_ns\":4000000,", 65) == 0);
	CHECK(strstr(out, want_q0) != NULL);
	CHECK_U64(check_python(py_check, out, py, sizeof(py)), 0);
	CHECK_STR(py, want_py);
	CHECK(strstr(out, "batch_fallback") == NULL);	/* live only */
	free(out);
	/* A live summary says how its events came, and how many of a
	 * batched file's fell back to per-event sites (1.2). */
	s.events_mode = "batched";
	s.batch_fallback = 7;
	CHECK(json_out__write(cap_open(&c), &s) == 0);
	out = cap_close(&c);
	CHECK(strstr(out, "\"events\":\"batched\",\"batch_fallback\":7") != NULL);
	free(out);
	summary__free(&s);
}

static void test_json_strings(void)
{
	/* quote, backslash, LF, 0x01, DEL, a lone 0xff, valid é, U+2028,
	 * a UTF-8-encoded surrogate (3 bad bytes), an overlong '/' (2). */
	static const char name[] = "a\"b\\c\n\x01\x7f\xff\xc3\xa9"
				   "\xe2\x80\xa8\xed\xa0\x80\xc0\xaf";
	static const char want_raw[] =
		"\"name\":\"a\\\"b\\\\c\\n\\u0001\\u007f\\ufffd\xc3\xa9"
		"\\u2028\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\"";
	static const char want_py[] =
		"[\"a\\\"b\\\\c\\n\\u0001\\u007f\\ufffd\\u00e9\\u2028"
		"\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\"]\n";
	struct sp_query_stats hits = { .cache_hits = 1, .min_ns = 77 };
	char py[4096];
	const char *l2;
	struct capture c;
	struct summary s;
	char *out;

	summary__init(&s);
	summary__add_stats(&s, name, &hits);
	summary__finish(&s);
	CHECK(json_out__write(cap_open(&c), &s) == 0);
	out = cap_close(&c);
	CHECK(strstr(out, want_raw) != NULL);
	/* No invocations: min_ns is 0 whatever the source said. */
	CHECK(strstr(out, "\"min_ns\":0,") != NULL);
	CHECK(strstr(out, "\"hist\":[]") != NULL);
	CHECK_U64(check_python(py_check, out, py, sizeof(py)), 0);
	l2 = strchr(py, '\n');
	CHECK(l2 && strncmp(l2 + 1, want_py, strlen(want_py)) == 0);
	free(out);
	summary__free(&s);

	/* An empty summary is a valid document too. */
	summary__init(&s);
	summary__finish(&s);
	CHECK(json_out__write(cap_open(&c), &s) == 0);
	out = cap_close(&c);
	CHECK_U64(check_python(py_check, out, py, sizeof(py)), 0);
	free(out);
	summary__free(&s);
}

static void test_csv(void)
{
	static const char want[] =
"name,count,self_ns,total_ns,min_ns,max_ns,p50_ns,p90_ns,p99_ns,"
"cache_hits,incr_loads,incr_load_ns,blocked_count,blocked_ns\n"
"\"a,\"\"b\"\"\n\xef\xbf\xbdz\",2,30,40,10,20,0,0,0,1,2,3,4,5\n"
"=plain,0,0,0,0,0,0,0,0,9,0,0,0,0\n";
	struct sp_query_stats a = { .count = 2, .self_ns = 30, .total_ns = 40,
				    .min_ns = 10, .max_ns = 20,
				    .cache_hits = 1, .incr_loads = 2,
				    .incr_load_ns = 3, .blocked_count = 4,
				    .blocked_ns = 5 };
	struct sp_query_stats b = { .cache_hits = 9, .min_ns = 5 };
	struct capture c;
	struct summary s;
	char *out;

	summary__init(&s);
	summary__add_stats(&s, "a,\"b\"\n\xffz", &a);
	summary__add_stats(&s, "=plain", &b);
	summary__finish(&s);
	s.errors[SP_ERR_END_MISMATCH] = 1;	/* never in the CSV */
	CHECK(csv_out__write(cap_open(&c), &s) == 0);
	out = cap_close(&c);
	CHECK_STR(out, want);
	free(out);
	summary__free(&s);
}

static void test_write_errors(void)
{
	struct summary_write_opts o = { 0 };
	struct capture c;
	struct summary s;
	FILE *full;
	char *out;

	/* Not finished: refuse rather than print stale numbers. */
	summary__init(&s);
	add(&s, "x", 1, 1, 1, 1, 1);
	CHECK(summary_writer__write(cap_open(&c), &s, &o) == -EINVAL);
	free(cap_close(&c));
	CHECK(json_out__write(cap_open(&c), &s) == -EINVAL);
	free(cap_close(&c));
	CHECK(csv_out__write(cap_open(&c), &s) == -EINVAL);
	free(cap_close(&c));
	summary__finish(&s);
	o.format = (enum summary_format)42;
	CHECK(summary_writer__write(cap_open(&c), &s, &o) == -EINVAL);
	out = cap_close(&c);
	CHECK_STR(out, "");
	free(out);

	/* /dev/full fails every flush with ENOSPC. */
	full = fopen("/dev/full", "w");
	CHECK(full != NULL);
	if (full) {
		for (o.format = SUMMARY_TABLE; o.format <= SUMMARY_CSV;
		     o.format++) {
			CHECK(summary_writer__write(full, &s, &o) == -EIO);
			clearerr(full);
		}
		fclose(full);
	}
	summary__free(&s);
}

int main(void)
{
	RUN(test_fmt_ns);
	RUN(test_parse_format);
	RUN(test_table_basic);
	RUN(test_table_columns);
	RUN(test_table_fit);
	RUN(test_table_percent_above);
	RUN(test_table_names);
	RUN(test_table_hist);
	RUN(test_warnings);
	RUN(test_warnings_stderr);
	RUN(test_json);
	RUN(test_json_strings);
	RUN(test_csv);
	RUN(test_write_errors);
	return check_status();
}
