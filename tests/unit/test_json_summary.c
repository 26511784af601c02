// SPDX-License-Identifier: MIT
/*
 * Unit tests of userspace/json_summary.c: a summary written by json_out__write()
 * reads back field for field; every truncation, bad escape, bad number,
 * deep nesting and schema violation is an error with a located message,
 * never a crash.
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>
#include "json_summary.h"
#include "mem_report.h"
#include "csv_out.h"
#include "json_out.h"
#include "summary_writer.h"
#include "table.h"
#include "text.h"
#include "check.h"

static char *write_json(const struct summary *s, size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);

	if (!f) {
		perror("open_memstream");
		exit(2);
	}
	CHECK(json_out__write(f, s) == 0);
	fclose(f);
	return buf;
}

static void add(struct summary *s, const char *name,
		const struct sp_query_stats *st)
{
	CHECK(summary__add_stats(s, name, st) == 0);
}

/* Rows with every figure set, bins at both ends of the bucket range a
 * reader takes (figures up to JSON_SUMMARY_MAX_INT), names that need every
 * kind of escape (all valid UTF-8, so they come back as they went out). */
static void rich_summary(struct summary *s)
{
	struct sp_query_stats a = { .count = 5, .total_ns = 9000, .self_ns = 7000,
				    .min_ns = 3, .max_ns = 4000,
				    .cache_hits = 11, .incr_loads = 2,
				    .incr_load_ns = 300, .blocked_count = 3,
				    .blocked_ns = 1200 };
	struct sp_query_stats b = { .count = 1, .total_ns = JSON_SUMMARY_MAX_INT,
				    .self_ns = 1ULL << 62,
				    .min_ns = JSON_SUMMARY_MAX_INT,
				    .max_ns = JSON_SUMMARY_MAX_INT };
	struct sp_query_stats c = { .cache_hits = 4, .min_ns = 99 };

	summary__init(s);
	s->duration_ns = 123456789012ULL;
	add(s, "plain", &a);
	summary__add_hist(s, "plain", sp_hist_bucket(0), 1);
	summary__add_hist(s, "plain", sp_hist_bucket(31), 1);
	summary__add_hist(s, "plain", sp_hist_bucket(32), 1);
	summary__add_hist(s, "plain", sp_hist_bucket(4000), 2);
	add(s, "q\"b\\s/\n\r\t\b\f\x01\x1f\x7f \xe2\x80\xa8\xe2\x80\xa9 "
	       "\xc3\xa9\xe6\x97\xa5\xf0\x9f\x98\x80", &b);
	summary__add_hist(s, "q\"b\\s/\n\r\t\b\f\x01\x1f\x7f \xe2\x80\xa8"
			  "\xe2\x80\xa9 \xc3\xa9\xe6\x97\xa5\xf0\x9f\x98\x80",
			  sp_hist_bucket(JSON_SUMMARY_MAX_INT), 1);
	add(s, "cache-only", &c);
	add(s, "", &a);
	s->errors[SP_ERR_END_WITHOUT_BEGIN] = 1;
	s->errors[SP_ERR_END_MISMATCH] = 2;
	s->errors[SP_ERR_NAME_READ] = 3;
	s->errors[SP_ERR__MAX - 1] = 4;
	s->lost = 77;
	summary__finish(s);
}

static void check_same(const struct summary *got, const struct summary *want)
{
	unsigned int i, j;

	CHECK_U64(got->duration_ns, want->duration_ns);
	CHECK_U64(got->total_self_ns, want->total_self_ns);
	CHECK_U64(got->lost, want->lost);
	for (i = 0; i < SP_ERR__MAX; i++)
		CHECK_U64(got->errors[i], want->errors[i]);
	CHECK_U64(got->nrows, want->nrows);
	for (i = 0; i < got->nrows && i < want->nrows; i++) {
		const struct sp_query_row *g = &got->rows[i], *w = &want->rows[i];

		CHECK_STR(g->name, w->name);
		CHECK_U64(g->st.count, w->st.count);
		CHECK_U64(g->st.total_ns, w->st.total_ns);
		CHECK_U64(g->st.self_ns, w->st.self_ns);
		/* min_ns is undefined without invocations (written as 0). */
		if (w->st.count)
			CHECK_U64(g->st.min_ns, w->st.min_ns);
		CHECK_U64(g->st.max_ns, w->st.max_ns);
		CHECK_U64(g->st.cache_hits, w->st.cache_hits);
		CHECK_U64(g->st.incr_loads, w->st.incr_loads);
		CHECK_U64(g->st.incr_load_ns, w->st.incr_load_ns);
		CHECK_U64(g->st.blocked_count, w->st.blocked_count);
		CHECK_U64(g->st.blocked_ns, w->st.blocked_ns);
		CHECK_U64(g->p50_ns, w->p50_ns);
		CHECK_U64(g->p90_ns, w->p90_ns);
		CHECK_U64(g->p99_ns, w->p99_ns);
		CHECK_U64(g->nbins, w->nbins);
		for (j = 0; j < g->nbins && j < w->nbins; j++) {
			CHECK_U64(g->bins[j].bucket, w->bins[j].bucket);
			CHECK_U64(g->bins[j].count, w->bins[j].count);
		}
	}
}

static void test_round_trip(void)
{
	struct summary want, got;
	char err[256] = "x";
	size_t len;
	char *json;

	rich_summary(&want);
	json = write_json(&want, &len);
	summary__init(&got);
	CHECK(json_summary__parse(json, len, "mem.json", &got, err,
				  sizeof(err)) == 0);
	CHECK_STR(err, "");
	CHECK(!got.finished);
	summary__finish(&got);
	check_same(&got, &want);
	summary__free(&got);
	/* The highest bucket a reader takes: its hi_ns (2^63) is left out. */
	CHECK(strstr(json, "{\"lo_ns\":9079256848778919936,\"count\":1}") != NULL);
	free(json);
	summary__free(&want);

	/* An empty summary too. */
	summary__init(&want);
	summary__finish(&want);
	json = write_json(&want, &len);
	summary__init(&got);
	CHECK(json_summary__parse(json, len, "e.json", &got, err,
				  sizeof(err)) == 0);
	summary__finish(&got);
	check_same(&got, &want);
	summary__free(&got);
	free(json);
	summary__free(&want);
}

/* Through a real file, and twice into one summary: sources add up. */
static void test_read_file(void)
{
	char path[] = "/tmp/sptrace-test-jsum-XXXXXX";
	struct summary want, got;
	char err[256];
	size_t len;
	char *json;
	int fd;

	rich_summary(&want);
	json = write_json(&want, &len);
	fd = mkstemp(path);
	CHECK(fd >= 0 && write(fd, json, len) == (ssize_t)len);
	close(fd);
	summary__init(&got);
	CHECK(json_summary__read(path, &got, err, sizeof(err)) == 0);
	CHECK(json_summary__read(path, &got, err, sizeof(err)) == 0);
	summary__finish(&got);
	CHECK_U64(got.nrows, want.nrows);
	CHECK_U64(got.duration_ns, 2 * want.duration_ns);
	CHECK_U64(got.lost, 2 * want.lost);
	CHECK_U64(got.errors[SP_ERR_END_MISMATCH], 4);
	CHECK_STR(got.rows[0].name, want.rows[0].name);
	CHECK_U64(got.rows[0].st.count, 2 * want.rows[0].st.count);
	CHECK_U64(got.rows[0].bins[0].count, 2 * want.rows[0].bins[0].count);
	summary__free(&got);
	unlink(path);
	free(json);
	summary__free(&want);

	summary__init(&got);
	CHECK(json_summary__read("/nonexistent/x.json", &got, err,
				 sizeof(err)) == -ENOENT);
	CHECK_STR(err, "/nonexistent/x.json: cannot open: No such file or directory");
	CHECK(json_summary__read("/", &got, err, sizeof(err)) == -EISDIR);
	CHECK_U64(got.nrows, 0);
	summary__free(&got);
}

/* Invalid UTF-8 in a name comes back as the U+FFFD the writer put there. */
static void test_invalid_utf8_name(void)
{
	struct sp_query_stats st = { .count = 1, .min_ns = 1, .max_ns = 1 };
	struct summary s, got;
	char err[256];
	size_t len;
	char *json;

	summary__init(&s);
	add(&s, "a\xff" "b", &st);
	summary__finish(&s);
	json = write_json(&s, &len);
	summary__init(&got);
	CHECK(json_summary__parse(json, len, "u.json", &got, err,
				  sizeof(err)) == 0);
	CHECK_U64(got.nrows, 1);
	if (got.nrows)
		CHECK_STR(got.rows[0].name, "a\xef\xbf\xbd" "b");
	summary__free(&got);
	free(json);
	summary__free(&s);
}

/* Every proper prefix of a valid document is an error, the document with
 * its final newline removed is still valid. */
static void test_truncated(void)
{
	struct summary want, got;
	char err[256];
	size_t len, n;
	char *json;
	int ret;

	rich_summary(&want);
	json = write_json(&want, &len);
	/* (0 bytes: "empty file", see test_syntax.) */
	for (n = 1; n < len - 1; n++) {
		summary__init(&got);
		ret = json_summary__parse(json, n, "t.json", &got, err,
					  sizeof(err));
		if (ret != -EINVAL)
			printf("FAIL prefix %zu: %d\n", n, ret);
		CHECK(ret == -EINVAL);
		/* On error the summary is untouched. */
		CHECK_U64(got.nrows, 0);
		CHECK(strncmp(err, "t.json: line ", 13) == 0);
		if (!strstr(err, ": unexpected end of file, "))
			printf("FAIL prefix %zu: %s\n", n, err);
		CHECK(strstr(err, ": unexpected end of file, ") != NULL);
		summary__free(&got);
	}
	summary__init(&got);
	CHECK(json_summary__parse(json, len - 1, "t.json", &got, err,
				  sizeof(err)) == 0);
	summary__free(&got);
	free(json);
	summary__free(&want);
}

static const char minimal_head[] = "{\"duration_ns\":1,\"queries\":[";
static const char q_head[] =
	"{\"count\":1,\"self_ns\":2,\"total_ns\":3,\"min_ns\":3,\"max_ns\":3,"
	"\"cache_hits\":0,\"incr_loads\":0,\"incr_load_ns\":0,"
	"\"blocked_count\":0,\"blocked_ns\":0,";

/* Parses text; returns the result, the message in err. */
static int parse(const char *text, char *err, size_t errlen,
		 struct summary *out)
{
	struct summary s;
	int ret;

	summary__init(&s);
	ret = json_summary__parse(text, strlen(text), "m.json", &s, err,
				  errlen);
	if (out)
		*out = s;
	else
		summary__free(&s);
	return ret;
}

/* A document with one query whose remaining members are `rest`. */
static char *one_query(const char *name_json, const char *rest)
{
	char *doc;

	if (asprintf(&doc, "%s%s\"name\":%s%s]}", minimal_head, q_head,
		     name_json, rest) < 0)
		exit(2);
	return doc;
}

static void test_strings(void)
{
	static const struct { const char *json, *want; } ok[] = {
		{ "\"\\u00e9\"", "\xc3\xa9" },
		{ "\"\\u65e5\"", "\xe6\x97\xa5" },
		{ "\"\\ud83d\\ude00\"", "\xf0\x9f\x98\x80" },
		{ "\"\\uD83D\\uDE00x\"", "\xf0\x9f\x98\x80x" },
		{ "\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"", "\"\\/\b\f\n\r\t" },
		{ "\"\\u0041\"", "A" },
		{ "\"\xf4\x8f\xbf\xbf\"", "\xf4\x8f\xbf\xbf" },
	};
	static const char *const bad[] = {
		"\"\\x\"", "\"\\u12\"", "\"\\u12g4\"", "\"\\ud800\"",
		"\"\\ud800x\"", "\"\\ud800\\u0041\"", "\"\\udc00\"",
		"\"\\u0000\"", "\"a\x01\"", "\"a\tb\"", "\"\xff\"",
		"\"\xc0\xaf\"", "\"\xed\xa0\x80\"", "\"\xf4\x90\x80\x80\"",
		"\"\xe6\x97\"", "\"\\", "\"abc", "'x'", "x", "1",
	};
	char err[256];
	struct summary s;
	unsigned int i;
	char *doc;

	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		doc = one_query(ok[i].json, ",\"hist\":[]}");
		CHECK(parse(doc, err, sizeof(err), &s) == 0);
		CHECK_U64(s.nrows, 1);
		if (s.nrows)
			CHECK_STR(s.rows[0].name, ok[i].want);
		summary__free(&s);
		free(doc);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		doc = one_query(bad[i], ",\"hist\":[]}");
		if (parse(doc, err, sizeof(err), NULL) != -EINVAL)
			printf("FAIL accepted name %s\n", bad[i]);
		CHECK(parse(doc, err, sizeof(err), NULL) == -EINVAL);
		free(doc);
	}
	/* No string holds \u0000, not even one nobody reads (jansson's
	 * rule; summary strings are C strings). */
	CHECK(parse("{\"duration_ns\":1,\"queries\":[],\"x\\u0000\":1}", err,
		    sizeof(err), NULL) == -EINVAL);
	CHECK_STR(err, "m.json: line 1, column 39: key holds \\u0000 "
		  "(not an sptrace -f json summary)");
	CHECK(parse("{\"duration_ns\":1,\"queries\":[],\"x\":\"\\u0000\"}", err,
		    sizeof(err), NULL) == -EINVAL);
	CHECK_STR(err, "m.json: line 1, column 42: string holds \\u0000 "
		  "(not an sptrace -f json summary)");
}

static void test_numbers(void)
{
	static const char *const bad[] = {
		"9223372036854775808", "18446744073709551616",
		"99999999999999999999999", "-1",
		"1.5", "1e3", "1E3", "01", "00", "+1", "0x10", "\"1\"",
		"true", "null", "[]", "{}", "",
	};
	struct summary s;
	char doc[256], err[256];
	unsigned int i;

	/* Integers are 0..2^63-1 (jansson's json_int_t). */
	snprintf(doc, sizeof(doc), "{\"queries\":[],\"duration_ns\":%s}",
		 "9223372036854775807");
	CHECK(parse(doc, err, sizeof(err), &s) == 0);
	CHECK_U64(s.duration_ns, INT64_MAX);
	summary__free(&s);
	/* jansson reads -0 as the integer 0: nothing tells them apart. */
	snprintf(doc, sizeof(doc), "{\"queries\":[],\"duration_ns\":-0}");
	CHECK(parse(doc, err, sizeof(err), &s) == 0);
	CHECK_U64(s.duration_ns, 0);
	summary__free(&s);
	snprintf(doc, sizeof(doc), "{\"queries\":[],\"duration_ns\":0}");
	CHECK(parse(doc, err, sizeof(err), NULL) == 0);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(doc, sizeof(doc), "{\"queries\":[],\"duration_ns\":%s}",
			 bad[i]);
		if (parse(doc, err, sizeof(err), NULL) != -EINVAL)
			printf("FAIL accepted number %s\n", bad[i]);
		CHECK(parse(doc, err, sizeof(err), NULL) == -EINVAL);
	}
	/* The message says where (the number's last digit) and what. */
	CHECK(parse("{\"queries\":[],\n \"duration_ns\":9223372036854775808}",
		    err, sizeof(err), NULL) == -EINVAL);
	CHECK_STR(err, "m.json: line 2, column 34: number above 2^63-1 "
		  "(not an sptrace -f json summary)");
	CHECK(parse("{\"queries\":[],\n \"duration_ns\":18446744073709551616}",
		    err, sizeof(err), NULL) == -EINVAL);
	CHECK_STR(err, "m.json: line 2, column 35: number above 2^63-1 "
		  "(not an sptrace -f json summary)");
	/* Whatever key holds it. */
	CHECK(parse("{\"queries\":[],\"duration_ns\":1,\"x\":[9223372036854775808]}",
		    err, sizeof(err), NULL) == -EINVAL);
	CHECK_STR(err, "m.json: line 1, column 54: number above 2^63-1 "
		  "(not an sptrace -f json summary)");
	/* Numbers of unknown keys follow the full grammar. */
	CHECK(parse("{\"queries\":[],\"duration_ns\":1,\"x\":[-0.5e+3,0,1E9]}",
		    err, sizeof(err), NULL) == 0);
	CHECK(parse("{\"queries\":[],\"duration_ns\":1,\"x\":1.}",
		    err, sizeof(err), NULL) == -EINVAL);
	CHECK(parse("{\"queries\":[],\"duration_ns\":1,\"x\":01}",
		    err, sizeof(err), NULL) == -EINVAL);
	CHECK(parse("{\"queries\":[],\"duration_ns\":1,\"x\":-}",
		    err, sizeof(err), NULL) == -EINVAL);
}

static void test_nesting(void)
{
	size_t n = 100000, i;
	char *doc = malloc(n + 64), *p, err[256], ok[256];

	/* Far too deep: an error, not a stack overflow. */
	p = doc + sprintf(doc, "{\"duration_ns\":1,\"queries\":[],\"x\":");
	for (i = 0; i < n; i++)
		*p++ = '[';
	*p = '\0';
	CHECK(parse(doc, err, sizeof(err), NULL) == -EINVAL);
	CHECK(strstr(err, "nested deeper than 32 levels") != NULL);
	p = doc + sprintf(doc, "{\"duration_ns\":1,\"queries\":[],\"x\":");
	for (i = 0; i < n / 8; i++)
		p += sprintf(p, "{\"a\":");
	CHECK(parse(doc, err, sizeof(err), NULL) == -EINVAL);
	CHECK(strstr(err, "nested deeper than 32 levels") != NULL);
	free(doc);

	/* 32 levels in all are fine: top object + 31 arrays; 33 are not. */
	p = ok + sprintf(ok, "{\"duration_ns\":1,\"queries\":[],\"x\":");
	for (i = 0; i < 31; i++)
		*p++ = '[';
	for (i = 0; i < 31; i++)
		*p++ = ']';
	strcpy(p, "}");
	CHECK(parse(ok, err, sizeof(err), NULL) == 0);
	p = ok + sprintf(ok, "{\"duration_ns\":1,\"queries\":[],\"x\":");
	for (i = 0; i < 32; i++)
		*p++ = '[';
	for (i = 0; i < 32; i++)
		*p++ = ']';
	strcpy(p, "}");
	CHECK(parse(ok, err, sizeof(err), NULL) == -EINVAL);
}

static void test_syntax(void)
{
	static const char *const bad[] = {
		"", " ", "null", "\xef\xbb\xbf{\"duration_ns\":1,\"queries\":[]}",
		"{\"duration_ns\":1,\"queries\":[]}x",
		"{\"duration_ns\":1,\"queries\":[]}{}",
		"{\"duration_ns\":1,\"queries\":[],}",
		"{\"duration_ns\":1,\"queries\":[], }",
		"{\"duration_ns\":1,\"queries\":[],\"x\":[1,]}",
		"{\"duration_ns\":1,\"queries\":[],\"x\":[1 , ]}",
		"{\"duration_ns\":1,\"queries\":[],\"x\":[,1]}",
		"{\"duration_ns\":1,\"queries\":[],\"x\":{\"a\"}}",
		"{\"duration_ns\":1,\"queries\":[],\"x\":{\"a\":}}",
		"{\"duration_ns\":1,\"queries\":[],\"x\":{1:2}}",
		"{\"duration_ns\":1,\"queries\":[],\"x\":tru}",
		"{\"duration_ns\":1,\"queries\":[],\"x\":nul}",
		"{\"duration_ns\":1,\"queries\":[] \"x\":1}",
		"{\"duration_ns\":1,\"queries\":[]",
		/* Found by the parser, so located by line and column too. */
		"{\"duration_ns\":1,\"duration_ns\":1,\"queries\":[]}",
		"{\"duration_ns\":1,\"queries\":[],\"errors\":{\"lost\":1,\"lost\":1}}",
	};
	/* Schema: located by the path of the value. */
	static const struct { const char *json, *want; } schema[] = {
		{ "[]", "m.json: top level: expected an object" },
		{ "{\"queries\":[]}",
		  "m.json: top level: summary without \"duration_ns\"" },
		{ "{\"duration_ns\":1}",
		  "m.json: top level: summary without \"queries\"" },
		{ "{\"duration_ns\":1,\"queries\":{}}",
		  "m.json: queries: expected an array" },
		{ "{\"duration_ns\":1,\"queries\":[1]}",
		  "m.json: queries[0]: expected an object" },
		{ "{\"duration_ns\":1,\"queries\":[{}]}",
		  "m.json: queries[0]: query without \"name\"" },
		{ "{\"duration_ns\":1,\"queries\":[],\"errors\":[]}",
		  "m.json: errors: expected an object" },
		{ "{\"duration_ns\":1,\"queries\":[],\"errors\":{\"lost\":-1}}",
		  "m.json: errors.lost: expected an unsigned integer" },
		{ "{\"duration_ns\":\"1\",\"queries\":[]}",
		  "m.json: duration_ns: expected an unsigned integer" },
	};
	char err[256], want[256];
	unsigned int i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		if (parse(bad[i], err, sizeof(err), NULL) != -EINVAL)
			printf("FAIL accepted %s\n", bad[i]);
		CHECK(parse(bad[i], err, sizeof(err), NULL) == -EINVAL);
		CHECK(strncmp(err, "m.json: line 1, column ", 23) == 0);
	}
	for (i = 0; i < sizeof(schema) / sizeof(schema[0]); i++) {
		snprintf(want, sizeof(want), "%s (not an sptrace -f json "
			 "summary)", schema[i].want);
		CHECK(parse(schema[i].json, err, sizeof(err), NULL) == -EINVAL);
		CHECK_STR(err, want);
	}
	CHECK(parse("", err, sizeof(err), NULL) == -EINVAL);
	CHECK_STR(err, "m.json: line 1, column 1: empty file "
		  "(not an sptrace -f json summary)");
	CHECK(parse("{,}", err, sizeof(err), NULL) == -EINVAL);
	CHECK_STR(err, "m.json: line 1, column 2: string or '}' expected "
		  "near ',' (not valid JSON)");
	CHECK(parse("{\"duration_ns\":1,\n\"queries\":[", err, sizeof(err),
		    NULL) == -EINVAL);
	CHECK_STR(err, "m.json: line 2, column 11: unexpected end of file, "
		  "']' expected (not valid JSON)");
	CHECK(parse("{\"duration_ns\":1,\"queries\":[],\"errors\":{\"lost\":1,"
		    "\"lost\":1}}", err, sizeof(err), NULL) == -EINVAL);
	CHECK_STR(err, "m.json: line 1, column 55: duplicate key \"lost\" "
		  "(not an sptrace -f json summary)");
	/* A short err buffer is cut, never overrun; none at all is fine. */
	CHECK(parse("{,}", err, 8, NULL) == -EINVAL);
	CHECK_STR(err, "m.json:");
	CHECK(parse("{,}", NULL, 0, NULL) == -EINVAL);
	/* A NUL byte is no whitespace. */
	{
		static const char nul[] = "{\"duration_ns\":1,\"queries\":[]}\0";
		struct summary s;

		summary__init(&s);
		CHECK(json_summary__parse(nul, sizeof(nul) - 2, "m.json", &s,
					  err, sizeof(err)) == 0);
		CHECK(json_summary__parse(nul, sizeof(nul) - 1, "m.json", &s,
					  err, sizeof(err)) == -EINVAL);
		CHECK_STR(err, "m.json: line 1, column 31: data after the "
			  "top-level object (not valid JSON)");
		summary__free(&s);
	}

	/* Whitespace everywhere, unknown keys of every type, known ones in
	 * any order: fine. */
	CHECK(parse(" \t\r\n{ \"x\" : [ true , false , null , { \"y\" : "
		    "\"z\" } , -1.5e-3 ] , \"errors\" : { \"lost\" : 2 , "
		    "\"future\" : {} } , \"queries\" : [ ] , \"duration_ns\""
		    " : 5 } \n", err, sizeof(err), NULL) == 0);
}

static void test_query_schema(void)
{
	struct summary s;
	char err[256];
	char *doc;

	/* Every required field, one at a time. */
	doc = one_query("\"q\"", ",\"hist\":[]}");
	CHECK(parse(doc, err, sizeof(err), NULL) == 0);
	free(doc);
	{
		static const char *const fields[] = {
			"\"count\":1,", "\"self_ns\":2,", "\"total_ns\":3,",
			"\"min_ns\":3,", "\"max_ns\":3,", "\"cache_hits\":0,",
			"\"incr_loads\":0,", "\"incr_load_ns\":0,",
			"\"blocked_count\":0,", "\"blocked_ns\":0,",
		};
		unsigned int i;

		for (i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
			char *q = strdup(q_head), *at = strstr(q, fields[i]);

			memmove(at, at + strlen(fields[i]),
				strlen(at + strlen(fields[i])) + 1);
			if (asprintf(&doc, "%s%s\"name\":\"q\",\"hist\":[]}]}",
				     minimal_head, q) < 0)
				exit(2);
			CHECK(parse(doc, err, sizeof(err), NULL) == -EINVAL);
			CHECK(strstr(err, "query without \"") != NULL);
			free(doc);
			free(q);
		}
	}
	doc = one_query("\"q\"", "}");	/* no hist */
	CHECK(parse(doc, err, sizeof(err), NULL) == -EINVAL);
	CHECK(strstr(err, "query without \"hist\"") != NULL);
	free(doc);
	doc = one_query("1", ",\"hist\":[]}");
	CHECK(parse(doc, err, sizeof(err), NULL) == -EINVAL);
	free(doc);
	doc = one_query("\"q\"", ",\"hist\":[],\"count\":1}");
	CHECK(parse(doc, err, sizeof(err), NULL) == -EINVAL);
	CHECK(strstr(err, "duplicate key \"count\"") != NULL);
	free(doc);

	/* Histogram bins: by bucket bound, hi_ns optional but checked. */
	doc = one_query("\"q\"", ",\"hist\":[{\"count\":2,\"lo_ns\":64},"
			"{\"lo_ns\":0,\"hi_ns\":1,\"count\":1},"
			"{\"lo_ns\":64,\"count\":1,\"future\":[]}]}");
	CHECK(parse(doc, err, sizeof(err), &s) == 0);
	CHECK_U64(s.nrows, 1);
	if (s.nrows) {
		CHECK_U64(s.rows[0].nbins, 2);
		CHECK_U64(s.rows[0].bins[0].bucket, 0);
		CHECK_U64(s.rows[0].bins[1].bucket, sp_hist_bucket(64));
		CHECK_U64(s.rows[0].bins[1].count, 3);
	}
	summary__free(&s);
	free(doc);
	{
		static const char *const bad[] = {
			"{\"lo_ns\":65,\"count\":1}",
			"{\"lo_ns\":64,\"hi_ns\":65,\"count\":1}",
			"{\"lo_ns\":64}", "{\"count\":1}",
			"{\"lo_ns\":64,\"lo_ns\":64,\"count\":1}",
			"{\"lo_ns\":64,\"count\":1.0}", "1", "[]",
		};
		unsigned int i;
		char rest[128];

		for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			snprintf(rest, sizeof(rest), ",\"hist\":[%s]}", bad[i]);
			doc = one_query("\"q\"", rest);
			CHECK(parse(doc, err, sizeof(err), NULL) == -EINVAL);
			free(doc);
		}
	}
	/* A schema error names the path of the value. */
	doc = one_query("\"q\"", ",\"hist\":[{\"lo_ns\":0,\"count\":1},"
			"{\"lo_ns\":64,\"hi_ns\":70,\"count\":1}]}");
	CHECK(parse(doc, err, sizeof(err), NULL) == -EINVAL);
	CHECK_STR(err, "m.json: queries[0].hist[1].hi_ns: 70 does not match "
		  "lo_ns 64 (not an sptrace -f json summary)");
	free(doc);
	/* The highest bucket a reader takes: lo_ns 63 * 2^57, hi_ns 2^63,
	 * which only fits when left out (json_out.c does). */
	doc = one_query("\"q\"", ",\"hist\":[{\"lo_ns\":9079256848778919936,"
			"\"count\":1}]}");
	CHECK(parse(doc, err, sizeof(err), &s) == 0);
	if (s.nrows && s.rows[0].nbins)
		CHECK_U64(s.rows[0].bins[0].bucket,
			  sp_hist_bucket(JSON_SUMMARY_MAX_INT));
	summary__free(&s);
	free(doc);
	doc = one_query("\"q\"", ",\"hist\":[{\"lo_ns\":9079256848778919936,"
			"\"hi_ns\":9223372036854775808,\"count\":1}]}");
	CHECK(parse(doc, err, sizeof(err), NULL) == -EINVAL);
	CHECK(strstr(err, ": number above 2^63-1 (") != NULL);
	free(doc);
}

static void test_long_string(void)
{
	size_t n = JSON_SUMMARY_MAX_STRING;
	char *doc, *name = malloc(n + 4), err[256];

	memset(name + 1, 'a', n);
	name[0] = '"';
	strcpy(name + 1 + n, "\"");
	doc = one_query(name, ",\"hist\":[]}");
	CHECK(parse(doc, err, sizeof(err), NULL) == 0);
	free(doc);
	name[n] = 'a';
	strcpy(name + 1 + n, "a\"");
	doc = one_query(name, ",\"hist\":[]}");
	CHECK(parse(doc, err, sizeof(err), NULL) == -EINVAL);
	CHECK(strstr(err, "string longer than 65536 bytes") != NULL);
	free(doc);
	free(name);
}

/* A tree many times larger than its text (an empty object is 3 bytes of
 * text, over 200 of tree) stops at the memory budget: 32 times the file
 * plus 64 MiB. */
static void test_memory_budget(void)
{
	size_t n = 4u << 20, i, at;
	char *doc = malloc(n * 3 + 64), err[256], want[256];
	struct mem_timeline tl = { 0 };

	at = (size_t)sprintf(doc, "{\"duration_ns\":1,\"queries\":[],\"x\":[");
	for (i = 0; i < n; i++)
		at += (size_t)sprintf(doc + at, "%s{}", i ? "," : "");
	strcpy(doc + at, "]}");
	at += 2;
	snprintf(want, sizeof(want), "m.json: needs more than %zu MiB of memory "
		 "to read, 32 times its size (not an sptrace -f json summary)",
		 (at * 32 + (64u << 20)) >> 20);
	CHECK(parse(doc, err, sizeof(err), NULL) == -EFBIG);
	CHECK_STR(err, want);
	CHECK(json_summary__parse_timeline(doc, at, "m.json", &tl, err,
					   sizeof(err)) == -EFBIG);
	CHECK_STR(err, want);
	CHECK(!tl.v);
	/* Bins as sptrace writes them, all 1 ns (its densest output, 18
	 * times its size in tree), are read. */
	at = (size_t)sprintf(doc, "%s%s\"name\":\"q\",\"hist\":[", minimal_head,
			     q_head);
	for (i = 0; i < n / 32; i++)
		at += (size_t)sprintf(doc + at, "%s{\"lo_ns\":1,\"hi_ns\":2,"
				      "\"count\":1}", i ? "," : "");
	strcpy(doc + at, "]}]}");
	CHECK(parse(doc, err, sizeof(err), NULL) == 0);
	free(doc);
}

/* The memory timeline of `sptrace mem --interval -f json`, for the HTML
 * report: points read as written, everything else skipped; bad points,
 * disorder and too many points are errors that leave tl as it was. */
static void test_timeline(void)
{
	static const char ok[] =
		"{\"duration_ns\":5,\"sites\":[{\"stack\":[\"a\"]}],"
		"\"timeline_step_ns\":2000000,\"timeline\":["
		"{\"t_ns\":1,\"rss_bytes\":10,\"rss_anon_bytes\":4,"
		"\"rss_file_bytes\":6,\"heap_live_bytes\":3,"
		"\"typed_live_bytes\":2,\"future\":[1]},{\"t_ns\":1}]}";
	struct mem_timeline tl = { 0 };
	char err[256], *doc;
	size_t at, i;

	CHECK(json_summary__parse_timeline(ok, strlen(ok), "t", &tl, err,
					   sizeof(err)) == 0);
	CHECK_U64(tl.n, 2);
	CHECK_U64(tl.interval_ns, 2000000);
	if (tl.n == 2) {
		CHECK_U64(tl.v[0].t_ns, 1);
		CHECK_U64(tl.v[0].rss_bytes, 10);
		CHECK_U64(tl.v[0].rss_anon_bytes, 4);
		CHECK_U64(tl.v[0].rss_file_bytes, 6);
		CHECK_U64(tl.v[0].heap_live_bytes, 3);
		CHECK_U64(tl.v[0].typed_live_bytes, 2);
		CHECK_U64(tl.v[1].rss_bytes, 0);
	}
	/* Errors leave the points read before untouched. */
	CHECK(json_summary__parse_timeline("{\"timeline\":[{\"rss_bytes\":1}]}",
					   30, "t", &tl, err, sizeof(err)) == -EINVAL);
	CHECK_STR(err, "t: timeline[0]: timeline point without \"t_ns\" "
		  "(not an sptrace -f json summary)");
	CHECK(json_summary__parse_timeline("{\"timeline\":[{\"t_ns\":2},"
					   "{\"t_ns\":1}]}", 36, "t", &tl, err,
					   sizeof(err)) == -EINVAL);
	CHECK(strstr(err, "not in time order") != NULL);
	CHECK(json_summary__parse_timeline("{\"timeline\":{}}", 15, "t", &tl,
					   err, sizeof(err)) == -EINVAL);
	CHECK(strstr(err, "expected an array") != NULL);
	CHECK_U64(tl.n, 2);
	/* A file without a timeline has none. */
	CHECK(json_summary__parse_timeline("{\"queries\":[]}", 14, "t", &tl,
					   err, sizeof(err)) == 0);
	CHECK_U64(tl.n, 0);
	/* One point more than the writer ever keeps. */
	doc = malloc(32 + (MEM_TIMELINE_MAX + 1) * 16);
	at = (size_t)sprintf(doc, "{\"timeline\":[");
	for (i = 0; i <= MEM_TIMELINE_MAX; i++)
		at += (size_t)sprintf(doc + at, "%s{\"t_ns\":%zu}", i ? "," : "", i);
	strcpy(doc + at, "]}");
	CHECK(json_summary__parse_timeline(doc, strlen(doc), "t", &tl, err,
					   sizeof(err)) == -EINVAL);
	CHECK(strstr(err, "more than 1024 timeline points") != NULL);
	free(doc);
	free(tl.v);
}

/* "version": this reader's major in any minor, or none (files written
 * before the field); another major, or a malformed version, is refused
 * with a message that says which version the file has. */
static void test_version(void)
{
	static const char *const ok[] = {
		"{\"version\":\"1.0\",\"duration_ns\":1,\"queries\":[]}",
		("{\"duration_ns\":1,\"queries\":[],\"version\":\"1.7\","
		 "\"new_in_1_7\":{\"x\":[1]}}"),
		"{\"version\":\"1.123456789\",\"duration_ns\":1,\"queries\":[]}",
		"{\"duration_ns\":1,\"queries\":[]}",
	};
	static const char *const bad[] = {
		"\"0.9\"", "\"1\"", "\"1.\"", "\".1\"", "\"1.0.0\"", "\"v1.0\"",
		"\"1.x\"", "\"1.-1\"", "\"1234567890.0\"", "1", "1.0", "null",
	};
	struct mem_timeline tl = { 0 };
	char doc[256], err[256];
	unsigned int i;

	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		if (parse(ok[i], err, sizeof(err), NULL))
			printf("FAIL refused %s: %s\n", ok[i], err);
		CHECK(parse(ok[i], err, sizeof(err), NULL) == 0);
	}
	CHECK(parse("{\"version\":\"2.0\",\"duration_ns\":1,\"queries\":[]}",
		    err, sizeof(err), NULL) == -EINVAL);
	CHECK_STR(err, "m.json: version: format version 2.0, this "
		  "sptrace reads 1.x (written by a newer sptrace: upgrade "
		  "sptrace to read it)");
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(doc, sizeof(doc), "{\"duration_ns\":1,\"queries\":[],"
			 "\"version\":%s}", bad[i]);
		if (parse(doc, err, sizeof(err), NULL) != -EINVAL)
			printf("FAIL accepted version %s\n", bad[i]);
		CHECK(parse(doc, err, sizeof(err), NULL) == -EINVAL);
		CHECK(!strncmp(err, "m.json: version: expected ", 26) ||
		      strstr(err, "format version"));
	}
	/* jansson refuses \u0000 in any string, before the version is read. */
	CHECK(parse("{\"duration_ns\":1,\"queries\":[],\"version\":\"1\\u0000.0\"}",
		    err, sizeof(err), NULL) == -EINVAL);
	CHECK_STR(err, "m.json: line 1, column 51: string holds \\u0000 "
		  "(not an sptrace -f json summary)");
	/* The memory timeline is the same document: the same rule. */
	snprintf(doc, sizeof(doc), "{\"version\":\"1.3\",\"timeline\":[]}");
	CHECK(json_summary__parse_timeline(doc, strlen(doc), "t", &tl, err,
					   sizeof(err)) == 0);
	snprintf(doc, sizeof(doc), "{\"version\":\"3.0\",\"timeline\":[]}");
	CHECK(json_summary__parse_timeline(doc, strlen(doc), "t", &tl, err,
					   sizeof(err)) == -EINVAL);
	CHECK(strstr(err, "format version 3.0") != NULL);
	free(tl.v);
}

int main(void)
{
	RUN(test_round_trip);
	RUN(test_read_file);
	RUN(test_invalid_utf8_name);
	RUN(test_truncated);
	RUN(test_strings);
	RUN(test_numbers);
	RUN(test_nesting);
	RUN(test_syntax);
	RUN(test_query_schema);
	RUN(test_long_string);
	RUN(test_memory_budget);
	RUN(test_timeline);
	RUN(test_version);
	return check_status();
}
