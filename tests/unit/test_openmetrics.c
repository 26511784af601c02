// SPDX-License-Identifier: MIT
/*
 * Unit tests of userspace/openmetrics.c (and the address policy of
 * serve_http.c): every exposition is parsed back by a strict checker
 * (line grammar, escapes, UTF-8, families declared once before their
 * samples, no duplicate series, # EOF), hostile names stay distinct
 * series, histograms are cumulative with +Inf == _count and the sum the
 * row's invocation time, and bucket bounds follow the documented rule;
 * the row cache of serve writes the very bytes of a write without it.
 */
#include <errno.h>
#include <stdlib.h>
#include <arpa/inet.h>
#include "serve_http.h"
#include "mem_report.h"
#include "openmetrics.h"
#include "csv_out.h"
#include "json_out.h"
#include "summary_writer.h"
#include "table.h"
#include "text.h"
#include "summary.h"
#include "check.h"

/* ---- a strict parser of what the writer wrote --------------------------- */

struct sample {
	char name[128];
	char labels[1024];	/* unescaped, as k=v\x01k=v... */
	char le[1024];
	char query[1024];
	char raw[2048];		/* name{labels as written} */
	double value;
};

struct parsed {
	struct sample *v;
	size_t n;
	char families[64][128];
	char types[64][16];
	size_t nfam;
	bool eof;
	int errors;
};

static void perr(struct parsed *p, const char *why, const char *line)
{
	printf("FAIL parse: %s: %.200s\n", why, line);
	p->errors++;
}

static bool valid_utf8(const char *s)
{
	uint32_t cp;
	int n;

	while (*s) {
		n = text__utf8_next(s, &cp);
		if (!n)
			return false;
		s += n;
	}
	return true;
}

/* The family a sample name belongs to, by the declared types. */
static int family_of(struct parsed *p, const char *name, bool om)
{
	static const char *const hsuf[] = { "_bucket", "_count", "_sum" };
	size_t i, k, fl, nl = strlen(name);

	for (i = 0; i < p->nfam; i++) {
		const char *f = p->families[i];

		fl = strlen(f);
		if (!strcmp(p->types[i], "counter")) {
			/* OpenMetrics: family + _total; text: the name. */
			if (om ? nl == fl + 6 && !strncmp(name, f, fl) &&
					 !strcmp(name + fl, "_total")
			       : !strcmp(name, f))
				return (int)i;
		} else if (!strcmp(p->types[i], "info")) {
			/* OpenMetrics only: family + _info. */
			if (nl == fl + 5 && !strncmp(name, f, fl) &&
			    !strcmp(name + fl, "_info"))
				return (int)i;
		} else if (!strcmp(p->types[i], "histogram")) {
			for (k = 0; k < 3; k++)
				if (nl == fl + strlen(hsuf[k]) &&
				    !strncmp(name, f, fl) &&
				    !strcmp(name + fl, hsuf[k]))
					return (int)i;
		} else if (!strcmp(name, f)) {
			return (int)i;
		}
	}
	return -1;
}

static void parse(const char *text, bool om, struct parsed *p)
{
	const char *line = text;
	int cur = -1;

	memset(p, 0, sizeof(*p));
	while (*line) {
		const char *nl = strchr(line, '\n');
		char buf[4096], *q;
		size_t len;

		if (!nl) {
			perr(p, "last line without newline", line);
			return;
		}
		len = (size_t)(nl - line);
		if (len >= sizeof(buf)) {
			perr(p, "line too long", line);
			return;
		}
		memcpy(buf, line, len);
		buf[len] = 0;
		line = nl + 1;
		if (p->eof)
			perr(p, "text after # EOF", buf);
		if (!valid_utf8(buf))
			perr(p, "invalid UTF-8", buf);
		if (!strcmp(buf, "# EOF")) {
			p->eof = true;
			continue;
		}
		if (!strncmp(buf, "# ", 2)) {
			char kw[8], name[128], rest[256];

			if (sscanf(buf, "# %7s %127s %255[^\n]", kw, name,
				   rest) != 3) {
				perr(p, "bad comment line", buf);
				continue;
			}
			if (!strcmp(kw, "TYPE")) {
				size_t i;

				for (i = 0; i < p->nfam; i++)
					if (!strcmp(p->families[i], name))
						perr(p, "family declared twice", buf);
				if (p->nfam == 64) {
					perr(p, "too many families", buf);
					continue;
				}
				snprintf(p->families[p->nfam], 128, "%s", name);
				snprintf(p->types[p->nfam], 16, "%s", rest);
				if (strcmp(rest, "counter") && strcmp(rest, "gauge") &&
				    strcmp(rest, "histogram") &&
				    (!om || strcmp(rest, "info")))
					perr(p, "unknown type", buf);
				cur = (int)p->nfam++;
			} else if (!strcmp(kw, "UNIT")) {
				size_t fl = strlen(name), ul = strlen(rest);

				if (!om)
					perr(p, "UNIT in the text format", buf);
				if (fl <= ul || strcmp(name + fl - ul, rest) ||
				    name[fl - ul - 1] != '_')
					perr(p, "family name lacks its unit suffix", buf);
			} else if (strcmp(kw, "HELP")) {
				perr(p, "unknown comment keyword", buf);
			}
			continue;
		}
		/* name{k="v",...} value */
		struct sample s = {};
		size_t n = 0;

		for (q = buf; (*q >= 'a' && *q <= 'z') || *q == '_' ||
			      (*q >= 'A' && *q <= 'Z') || (*q >= '0' && *q <= '9');
		     q++)
			if (n < sizeof(s.name) - 1)
				s.name[n++] = *q;
		if (!n) {
			perr(p, "no metric name", buf);
			continue;
		}
		if (*q == '{') {
			size_t ln = 0;

			q++;
			while (*q && *q != '}') {
				char key[64];
				size_t kn = 0;

				while (*q && *q != '=' && kn < sizeof(key) - 1)
					key[kn++] = *q++;
				key[kn] = 0;
				if (*q++ != '=' || *q++ != '"') {
					perr(p, "bad label", buf);
					break;
				}
				char val[1024];
				size_t vn = 0;

				while (*q && *q != '"' && vn < sizeof(val) - 1) {
					if (*q == '\\') {
						q++;
						if (*q == 'n')
							val[vn++] = '\n';
						else if (*q == '\\' || *q == '"')
							val[vn++] = *q;
						else
							perr(p, "bad escape", buf);
						q++;
						continue;
					}
					val[vn++] = *q++;
				}
				val[vn] = 0;
				if (*q++ != '"') {
					perr(p, "unterminated label value", buf);
					break;
				}
				if (!strcmp(key, "le"))
					snprintf(s.le, sizeof(s.le), "%s", val);
				else {
					if (!strcmp(key, "query"))
						snprintf(s.query, sizeof(s.query),
							 "%s", val);
					ln += (size_t)snprintf(s.labels + ln,
						sizeof(s.labels) - ln,
						"%s=%s\x01", key, val);
				}
				if (*q == ',')
					q++;
				else if (*q != '}')
					perr(p, "expected , or }", buf);
			}
			if (*q++ != '}') {
				perr(p, "unterminated labels", buf);
				continue;
			}
		}
		if (*q++ != ' ') {
			perr(p, "no space before the value", buf);
			continue;
		}
		char *end;

		s.value = strtod(q, &end);
		if (end == q || *end) {
			perr(p, "bad value", buf);
			continue;
		}
		snprintf(s.raw, sizeof(s.raw), "%.*s", (int)(q - buf - 1), buf);
		int f = family_of(p, s.name, om);

		if (f < 0 || f != cur)
			perr(p, "sample outside its family's block", buf);
		for (size_t i = 0; i < p->n; i++)
			if (!strcmp(p->v[i].raw, s.raw))
				perr(p, "duplicate series", buf);
		p->v = realloc(p->v, (p->n + 1) * sizeof(*p->v));
		p->v[p->n++] = s;
	}
	if (om && !p->eof)
		perr(p, "no # EOF", "");
	if (!om && p->eof)
		perr(p, "# EOF in the text format", "");
}

static const struct sample *find(const struct parsed *p, const char *name,
				 const char *query, const char *le)
{
	for (size_t i = 0; i < p->n; i++)
		if (!strcmp(p->v[i].name, name) &&
		    (!query || !strcmp(p->v[i].query, query)) &&
		    (!le || !strcmp(p->v[i].le, le)))
			return &p->v[i];
	return NULL;
}

static char *render_mode(const struct summary *s,
			 const struct om_process *procs, size_t nprocs,
			 bool om, enum om_proc_labels mode)
{
	struct om_health h = { .attached_probes = 7, .targets_alive = 1 };
	struct om_buf b = {};
	struct om_input in = { .s = s, .procs = procs, .nprocs = nprocs,
			       .h = &h, .openmetrics = om,
			       .proc_labels = mode };
	char *text;

	CHECK(openmetrics__write(&b, &in) == 0);
	text = malloc(b.len + 1);
	if (!text)
		abort();
	memcpy(text, b.p, b.len);
	text[b.len] = 0;
	om_buf__free(&b);
	return text;
}

/* The exposition with the default process labels (info). */
static char *render(const struct summary *s, const struct om_process *procs,
		    size_t nprocs, bool om)
{
	return render_mode(s, procs, nprocs, om, OM_PROC_LABELS_INFO);
}

static void add_row(struct summary *s, const char *name, uint32_t pid,
		    uint64_t count, const uint64_t *ns, size_t nns)
{
	struct sp_query_stats st = { .count = count };
	size_t i;

	for (i = 0; i < nns; i++) {
		st.total_ns += ns[i];
		st.self_ns += ns[i] / 2;
		CHECK(summary__add_hist_pid(s, name, pid, sp_hist_bucket(ns[i]),
					    1) == 0);
	}
	CHECK(summary__add_stats_pid(s, name, pid, &st) == 0);
}

static void test_hostile_names(void)
{
	static const char *const names[] = {
		"quote\"name", "back\\slash", "new\nline", "tab\tname",
		"\xff\xfe invalid", "\xfe\xff invalid", "\xe2\x80\xa8 sep",
		"", "ok", "{brace}=,\"",
	};
	struct om_process procs[] = {
		{ .pid = 10, .comm = "co\"mm\n", .binary = "/bin/\\x\xff",
		  .alive = true, .rss_bytes = 4096 },
	};
	struct summary s;
	struct parsed p;
	uint64_t ns = 1500;
	size_t i;
	char *text;

	summary__init(&s);
	s.per_pid = true;
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		add_row(&s, names[i], 10, 1, &ns, 1);
	for (int om = 0; om < 2; om++) {
		text = render(&s, procs, 1, om);
		parse(text, om, &p);
		CHECK(p.errors == 0);
		/* One series per row: the two invalid names stay apart. */
		size_t n = 0;

		for (i = 0; i < p.n; i++)
			if (!strcmp(p.v[i].name, om ? "sptrace_query_invocations_total"
						    : "sptrace_query_invocations_total"))
				n++;
		CHECK_U64(n, sizeof(names) / sizeof(names[0]));
		CHECK(find(&p, "sptrace_query_invocations_total", "quote\"name", NULL));
		CHECK(find(&p, "sptrace_query_invocations_total", "back\\slash", NULL));
		CHECK(find(&p, "sptrace_query_invocations_total", "new\nline", NULL));
		CHECK(find(&p, "sptrace_query_invocations_total", "{brace}=,\"", NULL));
		CHECK(find(&p, "sptrace_query_invocations_total",
			   "\xe2\x80\xa8 sep", NULL));
		/* Invalid bytes: U+FFFD, and a tag from the raw bytes. */
		CHECK(strstr(text, "\xef\xbf\xbd\xef\xbf\xbd invalid (invalid UTF-8 #"));
		CHECK(strstr(text, "comm=\"co\\\"mm\\n\""));
		CHECK(strstr(text, "binary=\"/bin/\\\\x\xef\xbf\xbd\""));
		CHECK(strstr(text, "sptrace_process_resident_memory_bytes{pid=\"10\""));
		free(p.v);
		free(text);
	}
	summary__free(&s);
}

/*
 * The info metric: per-query series carry query, pid and comm (and, with
 * OM_PROC_LABELS_SERIES, binary and title as before); one
 * sptrace_process_info sample of value 1 per pid that has rows, with all
 * four labels: pid 0, a process with rows, a pid with rows but no process
 * (empty labels, once although its rows are apart), never a process
 * without rows.
 */
static void test_process_info(void)
{
	struct om_process procs[] = {
		{ .pid = 0, .comm = "(exited)", .binary = "" },
		{ .pid = 7, .comm = "a", .binary = "/bin/a", .title = "a -x \"y\"",
		  .alive = true, .rss_bytes = 4096 },
		{ .pid = 8, .comm = "idle", .binary = "/bin/idle",
		  .alive = true, .rss_bytes = 8192 },
	};
	static const char *const want_info[] = {
		"pid=0\001comm=(exited)\001binary=\001title=\001",
		"pid=7\001comm=a\001binary=/bin/a\001title=a -x \"y\"\001",
		"pid=9\001comm=\001binary=\001title=\001",
	};
	struct summary s;
	struct parsed p;
	uint64_t ns = 1500;
	size_t i, k, ninfo, nq;
	char *text;

	summary__init(&s);
	s.per_pid = true;
	add_row(&s, "q1", 7, 1, &ns, 1);
	add_row(&s, "q1", 9, 1, &ns, 1);
	add_row(&s, "q1", 0, 1, &ns, 1);
	add_row(&s, "q2", 7, 1, &ns, 1);
	add_row(&s, "q2", 9, 1, &ns, 1);
	for (int mode = 0; mode < 2; mode++) {
		for (int om = 0; om < 2; om++) {
			text = render_mode(&s, procs, 3, om, mode ?
					   OM_PROC_LABELS_SERIES :
					   OM_PROC_LABELS_INFO);
			parse(text, om, &p);
			CHECK(p.errors == 0);
			CHECK(strstr(text, om ? "# TYPE sptrace_process info\n" :
					"# TYPE sptrace_process_info gauge\n"));
			ninfo = nq = 0;
			for (i = 0; i < p.n; i++) {
				const struct sample *v = &p.v[i];

				if (!strcmp(v->name, "sptrace_process_info")) {
					CHECK(v->value == 1);
					CHECK(ninfo < 3);
					if (ninfo < 3 &&
					    strcmp(v->labels, want_info[ninfo])) {
						printf("FAIL info %zu: %s\n", ninfo,
						       v->labels);
						check_failed++;
					}
					ninfo++;
				} else if (!strncmp(v->name, "sptrace_query_", 14)) {
					const char *l = v->labels;

					nq++;
					/* query=..,pid=..,comm=..[,binary,title] */
					for (k = 0; *l; l++)
						k += *l == '\x01';
					CHECK_U64(k, mode ? 5 : 3);
					CHECK(!strstr(v->labels, "binary=") == !mode);
					CHECK(!strstr(v->labels, "title=") == !mode);
				}
			}
			CHECK_U64(ninfo, 3);
			CHECK_U64(nq, 5 * (8 + 25));
			/* Untouched by the mode: every label of the process. */
			CHECK(strstr(text, "sptrace_process_resident_memory_bytes{pid=\"8\",comm=\"idle\",binary=\"/bin/idle\",title=\"\"} 8192\n"));
			free(p.v);
			free(text);
		}
	}
	summary__free(&s);
}

static void test_histogram(void)
{
	/* 980 ns is in [976, 992), wholly <= 1 us; 1000 is in [992, 1008),
	 * which is not, so it counts from le=2e-06. 20 s only in +Inf. */
	uint64_t ns[] = { 5, 980, 1000, 1500, 3000000, 3000000, 20000000000ull };
	static const char *const le[] = {
		"1e-06", "2e-06", "5e-06", "1e-05", "2e-05", "5e-05",
		"0.0001", "0.0002", "0.0005", "0.001", "0.002", "0.005",
		"0.01", "0.02", "0.05", "0.1", "0.2", "0.5",
		"1.0", "2.0", "5.0", "10.0", "+Inf",
	};
	const struct sample *b, *c, *sum;
	struct sp_query_stats st;
	struct summary s;
	struct parsed p;
	double prev = 0;
	char *text;
	size_t i;

	summary__init(&s);
	s.per_pid = true;
	add_row(&s, "h", 42, 7, ns, 7);
	/* Blocked and incremental-load time are in total_ns, not in the
	 * histogram's sum. */
	memset(&st, 0, sizeof(st));
	st.blocked_ns = 1000000;
	st.total_ns = 1000000;
	st.incr_load_ns = 2000000;
	st.total_ns += 2000000;
	CHECK(summary__add_stats_pid(&s, "h", 42, &st) == 0);
	text = render(&s, NULL, 0, true);
	parse(text, true, &p);
	CHECK(p.errors == 0);
	for (i = 0; i < sizeof(le) / sizeof(le[0]); i++) {
		b = find(&p, "sptrace_query_latency_seconds_bucket", "h", le[i]);
		CHECK(b != NULL);
		if (!b)
			continue;
		CHECK(b->value >= prev);	/* cumulative */
		prev = b->value;
	}
	CHECK_U64((uint64_t)find(&p, "sptrace_query_latency_seconds_bucket", "h", "1e-06")->value, 2);
	CHECK_U64((uint64_t)find(&p, "sptrace_query_latency_seconds_bucket", "h", "2e-06")->value, 4);
	CHECK_U64((uint64_t)find(&p, "sptrace_query_latency_seconds_bucket", "h", "0.005")->value, 6);
	CHECK_U64((uint64_t)find(&p, "sptrace_query_latency_seconds_bucket", "h", "10.0")->value, 6);
	c = find(&p, "sptrace_query_latency_seconds_count", "h", NULL);
	b = find(&p, "sptrace_query_latency_seconds_bucket", "h", "+Inf");
	CHECK(c && b && c->value == b->value && c->value == 7);
	sum = find(&p, "sptrace_query_latency_seconds_sum", "h", NULL);
	CHECK(sum != NULL);
	CHECK(strstr(text, "sptrace_query_latency_seconds_sum{query=\"h\",pid=\"42\",comm=\"\"} 20.006003485\n"));
	CHECK(strstr(text, "sptrace_query_time_seconds_total{query=\"h\",pid=\"42\",comm=\"\"} 20.009003485\n"));
	CHECK(strstr(text, "# UNIT sptrace_query_latency_seconds seconds\n"));
	CHECK(strstr(text, "# TYPE sptrace_query_invocations counter\n"));
	CHECK(strstr(text, "sptrace_attached_probes 7\n"));
	free(p.v);
	free(text);
	/* The text format: counters typed by their _total name, no UNIT. */
	text = render(&s, NULL, 0, false);
	parse(text, false, &p);
	CHECK(p.errors == 0);
	CHECK(strstr(text, "# TYPE sptrace_query_invocations_total counter\n"));
	CHECK(!strstr(text, "# UNIT"));
	CHECK(!strstr(text, "# EOF"));
	free(p.v);
	free(text);
	summary__free(&s);
}

/* Every kernel bucket is counted under the first bound >= its largest
 * value: never too high; too low only for the values of a bucket that
 * straddles a bound, and a bucket is at most 1/32 of its values wide. */
static void test_bound_rule(void)
{
	for (uint32_t bkt = 0; bkt < SP_HIST_BUCKETS - 1; bkt++) {
		uint64_t top = sp_hist_bucket_hi(bkt) - 1;
		uint64_t lo = sp_hist_bucket_lo(bkt);
		int k;

		for (k = 0; k < OM_NBOUNDS && top > sp_ladder_ns[k]; k++)
			;
		if (k < OM_NBOUNDS)
			CHECK(top <= sp_ladder_ns[k]);
		if (k > 0)
			CHECK(top > sp_ladder_ns[k - 1]);
		if (lo >= SP_HIST_SUB)
			CHECK((top - lo + 1) * SP_HIST_SUB <= lo);
	}
}

static void test_empty(void)
{
	struct summary s;
	struct parsed p;
	char *text;

	summary__init(&s);
	s.per_pid = true;
	s.lost = 3;
	s.errors[SP_ERR_QUERIES_FULL] = 2;
	text = render(&s, NULL, 0, true);
	parse(text, true, &p);
	CHECK(p.errors == 0);
	CHECK(strstr(text, "sptrace_lost_events_total 3\n"));
	CHECK(strstr(text, "sptrace_map_full_total 2\n"));
	CHECK(strstr(text, "sptrace_errors_total{kind=\"queries_map_full\"} 2\n"));
	CHECK(strstr(text, "\n# EOF\n"));
	/* Counted: one series, 0 included; not among the errors. */
	CHECK(strstr(text, "# TYPE sptrace_batch_fallback counter\n"));
	CHECK(strstr(text, "\nsptrace_batch_fallback_total 0\n"));
	CHECK(!strstr(text, "kind=\"batch_fallback\""));
	free(p.v);
	free(text);
	s.batch_fallback = 12;
	text = render(&s, NULL, 0, false);
	CHECK(strstr(text, "# TYPE sptrace_batch_fallback_total counter\n"));
	CHECK(strstr(text, "\nsptrace_batch_fallback_total 12\n"));
	free(text);
	/* Not counted (sp:tsc held by another session): no series at all,
	 * not a 0. */
	s.batch_fallback = 0;
	s.batch_fallback_unknown = true;
	text = render(&s, NULL, 0, true);
	parse(text, true, &p);
	CHECK(p.errors == 0);
	CHECK(!strstr(text, "sptrace_batch_fallback"));
	free(p.v);
	free(text);
	summary__free(&s);
}

static void test_mem(void)
{
	struct mem_report r;
	struct summary s;
	struct parsed p;
	struct mem_figures f = { .allocs = 5, .alloc_bytes = 500, .frees = 2,
				 .free_bytes = 200, .live = 3,
				 .live_bytes = 300, .peak_live_bytes = 400 };
	char *text;

	summary__init(&s);
	s.per_pid = true;
	mem_report__init(&r);
	CHECK(mem_report__add_type(&r, "Wid\"get\n", &f) == 0);
	r.heap_traced = true;
	r.heap = f;
	r.heap.live_bytes = 7;
	struct om_buf b = {};
	struct om_input in = { .s = &s, .mem = &r, .openmetrics = true };

	CHECK(openmetrics__write(&b, &in) == 0);
	text = calloc(1, b.len + 1);
	memcpy(text, b.p, b.len);
	parse(text, true, &p);
	CHECK(p.errors == 0);
	CHECK(strstr(text, "sptrace_mem_allocations_total{type=\"Wid\\\"get\\n\"} 5\n"));
	CHECK(strstr(text, "sptrace_mem_live_bytes{type=\"(heap)\"} 7\n"));
	CHECK(strstr(text, "sptrace_mem_peak_live_bytes{type=\"Wid\\\"get\\n\"} 400\n"));
	CHECK(strstr(text, "# UNIT sptrace_mem_freed_bytes bytes\n"));
	free(p.v);
	free(text);
	om_buf__free(&b);
	mem_report__free(&r);
	summary__free(&s);
}

/* The exposition of s, without a cache and with c: the same bytes. */
static void same_with_cache(const struct summary *s,
			    const struct om_process *procs, size_t nprocs,
			    struct om_cache *c, const char *what)
{
	struct om_buf a = {}, b = {};
	struct om_input in = { .s = s, .procs = procs, .nprocs = nprocs,
			       .openmetrics = true };

	CHECK(openmetrics__write(&a, &in) == 0);
	in.cache = c;
	CHECK(openmetrics__write(&b, &in) == 0);
	if (a.len != b.len || memcmp(a.p, b.p, a.len)) {
		size_t i = 0;

		while (i < a.len && i < b.len && a.p[i] == b.p[i])
			i++;
		printf("FAIL %s: cached exposition differs at byte %zu: "
		       "'%.60s' vs '%.60s'\n", what, i, a.p + i, b.p + i);
		check_failed++;
	}
	om_buf__free(&a);
	om_buf__free(&b);
}

/* A row's figures as a scrape reads them. */
static void add_scraped(struct summary *s, const char *name, uint32_t pid,
		    uint64_t count, uint64_t hits, uint32_t bucket,
		    uint64_t n)
{
	struct sp_query_stats st = { .count = count, .total_ns = 1000 * count,
				     .self_ns = 900 * count, .min_ns = 1000,
				     .max_ns = 1000, .cache_hits = hits };

	CHECK(summary__add_stats_pid(s, name, pid, &st) == 0);
	if (n)
		CHECK(summary__add_hist_pid(s, name, pid, bucket, n) == 0);
}

/*
 * serve keeps a row's text between scrapes (om_input.cache) and formats
 * it again only when its figures change: every change must show, however
 * small; rows that come and go, and processes whose labels appear later.
 */
static void test_cache(void)
{
	struct om_process procs[] = {
		{ .pid = 0, .comm = "(exited)", .binary = "" },
		{ .pid = 7, .comm = "a", .binary = "/bin/a", .title = "a -x",
		  .alive = true, .rss_bytes = 4096 },
		{ .pid = 8, .comm = "b\"", .binary = "/bin/b", .alive = true },
	};
	struct om_cache *c = om_cache__new();
	unsigned int round;
	struct summary s;

	CHECK(c != NULL);
	for (round = 0; c && round < 8; round++) {
		summary__init(&s);
		s.per_pid = true;
		add_scraped(&s, "q1", 7, 5, 1, 300, 5);
		/* Round 1 on: only the histogram changes (same stats, the
		 * observations one bucket up, across a bound, then back). */
		add_scraped(&s, "hist only", 7, 3, 0,
			round % 2 ? sp_hist_bucket(60000) : sp_hist_bucket(40000),
			3);
		/* Only a counter changes. */
		add_scraped(&s, "hits only", 8, 1, round, 10, 1);
		/* Appears in round 2, gone in round 5. */
		if (round >= 2 && round < 5)
			add_scraped(&s, "new \xff name", 7, round, 0, 500, round);
		/* A pid with no labels until round 3. */
		add_scraped(&s, "q1", 9, 2, 0, 200, 2);
		/* Everything at once in round 6. */
		if (round == 6)
			add_scraped(&s, "q1", 7, 1, 1, 900, 1);
		same_with_cache(&s, procs, 3, c, "round");
		if (round >= 3) {
			struct om_process more[] = {
				procs[0], procs[1], procs[2],
				{ .pid = 9, .comm = "late", .binary = "/x",
				  .alive = true },
			};

			same_with_cache(&s, more, 4, c, "labels appear");
		}
		summary__free(&s);
	}
	om_cache__free(c);
}

/* All of a snapshot, read max bytes at a time. */
static char *read_all(const struct om_snapshot *sn, size_t max, size_t *len)
{
	struct om_cursor cur = {};
	size_t cap = om_snapshot__len(sn) + max + 1, n;
	char *buf = malloc(cap);

	*len = 0;
	if (!buf)
		abort();
	while ((n = om_snapshot__read(sn, &cur, buf + *len, max)) > 0) {
		CHECK(n <= max);
		*len += n;
		if (*len > cap - max)
			break;	/* more than it said: reported below */
	}
	CHECK(cur.pos == *len);
	return buf;
}

static void same_bytes(const char *a, size_t alen, const char *b, size_t blen,
		       const char *what, size_t max)
{
	size_t i = 0;

	if (alen == blen && !memcmp(a, b, alen))
		return;
	while (i < alen && i < blen && a[i] == b[i])
		i++;
	printf("FAIL %s (reads of %zu): %zu vs %zu bytes, differ at byte %zu\n",
	       what, max, alen, blen, i);
	check_failed++;
}

/*
 * serve sends a scrape from a snapshot, a piece at a time, while the next
 * scrapes render into the same cache: the bytes are those of the whole
 * exposition whatever the size of each read (a sample line cut anywhere),
 * its length is known before, and a snapshot keeps its rows' texts when
 * the cache formats every row again and drops some.
 */
static void test_snapshot_stream(void)
{
	static const size_t reads[] = { 1, 2, 7, 64, 100, 4096, 1 << 20 };
	struct om_process procs[] = {
		{ .pid = 0, .comm = "(exited)", .binary = "" },
		{ .pid = 7, .comm = "a", .binary = "/bin/a", .title = "a -x",
		  .alive = true, .rss_bytes = 4096 },
	};
	struct om_health h = { .attached_probes = 3 };
	struct om_cache *c = om_cache__new();
	struct om_snapshot *old = NULL, *sn = NULL;
	struct om_buf whole = {}, again = {};
	struct summary s;
	size_t k, len;
	char *text;
	bool om;

	CHECK(c != NULL);
	for (om = false; c; om = true) {
		struct om_input in = { .s = &s, .procs = procs, .nprocs = 2,
				       .h = &h, .openmetrics = om };

		summary__init(&s);
		s.per_pid = true;
		add_scraped(&s, "q1", 7, 5, 1, 300, 5);
		add_scraped(&s, "a \"long\" name \xff", 7, 3, 0, sp_hist_bucket(70000), 3);
		add_scraped(&s, "gone next", 9, 1, 0, 10, 1);
		CHECK(openmetrics__write(&whole, &in) == 0);
		in.cache = c;
		CHECK(openmetrics__snapshot(&in, &old) == 0);
		summary__free(&s);
		if (!old)
			break;
		CHECK(om_snapshot__len(old) == whole.len);
		for (k = 0; k < sizeof(reads) / sizeof(reads[0]); k++) {
			text = read_all(old, reads[k], &len);
			same_bytes(whole.p, whole.len, text, len, "streamed",
				   reads[k]);
			free(text);
		}
		/* The next scrape: every row's figures changed, one row gone. */
		summary__init(&s);
		s.per_pid = true;
		add_scraped(&s, "q1", 7, 6, 2, 300, 6);
		add_scraped(&s, "a \"long\" name \xff", 7, 4, 0, sp_hist_bucket(900000), 4);
		CHECK(openmetrics__snapshot(&in, &sn) == 0);
		in.cache = NULL;
		CHECK(openmetrics__write(&again, &in) == 0);
		summary__free(&s);
		if (sn) {
			text = read_all(sn, 100, &len);
			same_bytes(again.p, again.len, text, len, "next", 100);
			free(text);
		}
		/* The older one, still sent: as it was. */
		text = read_all(old, 100, &len);
		same_bytes(whole.p, whole.len, text, len, "older, after the next",
			   100);
		free(text);
		CHECK(!om_snapshot__put(om_snapshot__get(old)));
		CHECK(om_snapshot__put(old));
		CHECK(om_snapshot__put(sn));
		om_buf__free(&whole);
		om_buf__free(&again);
		if (om)
			break;
	}
	om_cache__free(c);
}

static void test_listen_policy(void)
{
	struct sockaddr_storage ss;
	socklen_t len;
	char err[256];

	CHECK(serve_http__parse_addr("127.0.0.1:9464", &ss, &len, err, sizeof(err)) == 0);
	CHECK(serve_http__is_loopback(&ss));
	CHECK(serve_http__parse_addr("localhost:0", &ss, &len, err, sizeof(err)) == 0);
	CHECK(serve_http__is_loopback(&ss));
	CHECK(serve_http__parse_addr("[::1]:9464", &ss, &len, err, sizeof(err)) == 0);
	CHECK(serve_http__is_loopback(&ss));
	CHECK(serve_http__parse_addr("0.0.0.0:9464", &ss, &len, err, sizeof(err)) == 0);
	CHECK(!serve_http__is_loopback(&ss));
	CHECK(serve_http__parse_addr("[::]:9464", &ss, &len, err, sizeof(err)) == 0);
	CHECK(!serve_http__is_loopback(&ss));
	CHECK(serve_http__parse_addr("10.1.2.3:80", &ss, &len, err, sizeof(err)) == 0);
	CHECK(!serve_http__is_loopback(&ss));
	/* Never an address sptrace would have to choose. */
	CHECK(serve_http__parse_addr(":9464", &ss, &len, err, sizeof(err)) == -EINVAL);
	CHECK(serve_http__parse_addr("example.com:80", &ss, &len, err, sizeof(err)) == -EINVAL);
	CHECK(serve_http__parse_addr("9464", &ss, &len, err, sizeof(err)) == -EINVAL);
	CHECK(serve_http__parse_addr("127.0.0.1:65536", &ss, &len, err, sizeof(err)) == -EINVAL);
	CHECK(serve_http__parse_addr("127.0.0.1:", &ss, &len, err, sizeof(err)) == -EINVAL);
	CHECK(serve_http__parse_addr("[::1]9464", &ss, &len, err, sizeof(err)) == -EINVAL);
}

int main(void)
{
	RUN(test_hostile_names);
	RUN(test_histogram);
	RUN(test_process_info);
	RUN(test_bound_rule);
	RUN(test_empty);
	RUN(test_mem);
	RUN(test_cache);
	RUN(test_snapshot_stream);
	RUN(test_listen_policy);
	return check_status();
}
