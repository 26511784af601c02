// SPDX-License-Identifier: MIT
/*
 * Unit tests of userspace/html_report.c: hostile names escaped and inert,
 * the Total row, the delta classes of each threshold case, the memory
 * timeline, and nothing in the file that could reach the network.
 */
#include <errno.h>
#include <stdlib.h>
#include "html_report.h"
#include "mem_report.h"
#include "csv_out.h"
#include "json_out.h"
#include "summary_writer.h"
#include "table.h"
#include "html_trace.h"
#include "text.h"
#include "trace_format.h"
#include "check.h"

#define PAYLOAD "</script><img src=x onerror=window.__pwned=1>"

static const char *const hostile[] = {
	PAYLOAD, "\"'&<>", "new\nline", "bell\a\x01\x1b[31mred\r",
	"\xff\xfe invalid", "\xe2\x80\xa8 sep", "", "<!-- c -->",
};

static void add(struct summary *s, const char *name, uint64_t self,
		uint64_t count)
{
	struct sp_query_stats st = { .self_ns = self, .total_ns = self,
				     .count = count, .min_ns = 10,
				     .max_ns = 1000 };

	CHECK(summary__add_stats(s, name, &st) == 0);
	if (count)
		CHECK(summary__add_hist(s, name, sp_hist_bucket(500),
					count) == 0);
}

static char *render(const struct html_run *run, const struct html_run *base)
{
	char *buf = NULL;
	size_t len;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		exit(2);
	CHECK(html_report__write(f, "report <title>", run, base) == 0);
	fclose(f);
	return buf;
}

static unsigned int count_of(const char *hay, const char *needle)
{
	unsigned int n = 0;

	while ((hay = strstr(hay, needle))) {
		n++;
		hay += strlen(needle);
	}
	return n;
}

/* The whole file is valid UTF-8 without raw controls but tab and LF. */
static bool clean_utf8(const char *s)
{
	uint32_t cp;
	int n;

	for (; *s; s += n) {
		n = text__utf8_next(s, &cp);
		if (!n || (cp < 0x20 && cp != '\t' && cp != '\n') || cp == 0x7f)
			return false;
	}
	return true;
}

static void test_hostile_names(void)
{
	struct summary s;
	struct html_run run = { .name = "run<1>.json", .info = "a&b", .s = &s };
	unsigned int i;
	char *out;

	summary__init(&s);
	for (i = 0; i < sizeof(hostile) / sizeof(hostile[0]); i++)
		add(&s, hostile[i], 1000 * (i + 1), i + 1);
	summary__finish(&s);
	out = render(&run, NULL);
	if (!out)
		return;
	/* Our two script elements, nothing a name opened or closed. */
	CHECK_U64(count_of(out, "<script"), 2);
	CHECK_U64(count_of(out, "</script"), 2);
	CHECK(!strstr(out, "<img"));
	CHECK(!strstr(out, "<!-- c"));
	CHECK(strstr(out, "<td class=\"name\">&lt;/script&gt;&lt;img src=x "
			  "onerror=window.__pwned=1&gt;</td>") != NULL);
	CHECK(strstr(out, ">&quot;&#39;&amp;&lt;&gt;</td>") != NULL);
	/* Controls, invalid UTF-8 and separators in the display form the
	 * terminal table shows (text__display()), not as raw glyphs. */
	CHECK(strstr(out, ">new\\x0aline</td>") != NULL);
	CHECK(strstr(out, ">bell\\x07\\x01\\x1b[31mred\\x0d</td>") != NULL);
	CHECK(strstr(out, ">\\xff\\xfe invalid</td>") != NULL);
	CHECK(strstr(out, ">\\xe2\\x80\\xa8 sep</td>") != NULL);
	CHECK(!strstr(out, "\x1b") && !strstr(out, "&#x1b;"));
	CHECK(strstr(out, "<td class=\"name\"></td>") != NULL);
	CHECK(strstr(out, "<title>report &lt;title&gt;</title>") != NULL);
	CHECK(strstr(out, "run&lt;1&gt;.json") != NULL);
	CHECK(strstr(out, "a&amp;b") != NULL);
	CHECK(clean_utf8(out));
	/* Nothing fetched, nothing linked. */
	CHECK(strstr(out, "default-src 'none'") != NULL);
	CHECK(!strstr(out, "://"));
	CHECK(!strstr(out, "url("));
	CHECK(!strstr(out, "@import"));
	CHECK(!strstr(out, "<link"));
	CHECK(!strstr(out, " src=\""));
	CHECK(!strstr(out, "href"));
	/* The data block: no letter of any name in it. */
	{
		const char *d = strstr(out, "id=\"sp-data\">");
		const char *e = d ? strstr(d, "</script>") : NULL;

		CHECK(d && e);
		if (d && e) {
			char *block = strndup(d, (size_t)(e - d));

			CHECK(!strstr(block, "onerror"));
			CHECK(!strstr(block, "line"));
			CHECK(!strchr(block, '<'));
			free(block);
		}
	}
	free(out);
	summary__free(&s);
}

static void test_total_row(void)
{
	struct summary s;
	struct html_run run = { .name = "r", .s = &s };
	char *out;

	summary__init(&s);
	add(&s, "a", 3000, 2);
	add(&s, "b", 1000, 5);
	summary__finish(&s);
	out = render(&run, NULL);
	if (!out)
		return;
	/* First in its own tbody, before every query row: count 7, self 4us,
	 * 100%, no percentiles. */
	CHECK(strstr(out, "<tbody class=\"total\"><tr data-i=\"-1\">"
			  "<td class=\"name\">Total</td><td data-v=\"7\">7</td>"
			  "<td data-v=\"4000\">4.00us</td>"
			  "<td data-v=\"100.000000\">100.00</td>") != NULL);
	CHECK(strstr(out, "<tbody class=\"total\">") <
	      strstr(out, "<tbody id=\"rows\">"));
	CHECK(strstr(out, "<td class=\"name\">a</td><td data-v=\"2\">2</td>"
			  "<td data-v=\"3000\">3.00us</td>"
			  "<td data-v=\"75.000000\">75.00</td>") != NULL);
	CHECK_U64(count_of(out, "<tr tabindex=\"0\" data-i="), 2);
	/* Every column sortable; the rows come by self time, and only that
	 * column says so (the order is shown before any click). */
	CHECK_U64(count_of(out, "<th scope=\"col\" tabindex=\"0\""), 12);
	CHECK_U64(count_of(out, "aria-sort="), 1);
	CHECK(strstr(out, "data-col=\"self\" data-type=\"num\" data-title=\"Self\" "
			  "aria-sort=\"descending\">Self<span class=\"ind\">\xe2\x96\xbc"
			  "</span></th>") != NULL);
	CHECK(strstr(out, "<p id=\"order\">Rows by self time, largest first;") !=
	      NULL);
	/* No base: no delta columns. */
	CHECK(!strstr(out, "class=\"d "));
	free(out);
	summary__free(&s);
}

static void test_delta_class(void)
{
	CHECK(html_report__delta_class(100000, 150000, 1000) == HTML_UP);
	CHECK(html_report__delta_class(100000, 50000, 1000) == HTML_DOWN);
	CHECK(html_report__delta_class(100000, 100000, 1000) == HTML_NEUTRAL);
	/* 4.99%: neutral; 5%: coloured. */
	CHECK(html_report__delta_class(100000, 104990, 1000) == HTML_NEUTRAL);
	CHECK(html_report__delta_class(100000, 105000, 1000) == HTML_UP);
	CHECK(html_report__delta_class(100000, 95000, 1000) == HTML_DOWN);
	/* Large in percent, below the floor: neutral. */
	CHECK(html_report__delta_class(100, 900, 1000) == HTML_NEUTRAL);
	CHECK(html_report__delta_class(0, 999, 1000) == HTML_NEUTRAL);
	CHECK(html_report__delta_class(0, 1000, 1000) == HTML_UP);
	CHECK(html_report__delta_class(1, 2, 1) == HTML_UP);
	CHECK(html_report__delta_class(40, 41, 1) == HTML_NEUTRAL);
	CHECK(html_report__delta_class(UINT64_MAX, 0, 1) == HTML_DOWN);
	CHECK_STR(html_report__delta_name(HTML_UP), "up");
	CHECK_STR(html_report__delta_name(HTML_DOWN), "down");
	CHECK_STR(html_report__delta_name(HTML_NEUTRAL), "neutral");
}

/* The self-delta cell of the row named `name` holds `want`. */
static void check_cell(const char *out, const char *name, const char *want)
{
	char key[128];
	const char *row, *end;

	snprintf(key, sizeof(key), "<td class=\"name\">%s</td>", name);
	row = strstr(out, key);
	CHECK(row != NULL);
	if (!row)
		return;
	end = strstr(row, "</tr>");
	row = strstr(row, "<td class=\"d ");
	CHECK(row && end && row < end);
	if (row && end && row < end && strncmp(row, want, strlen(want))) {
		printf("FAIL %s: got %.*s\n     want %s\n", name,
		       (int)strlen(want), row, want);
		check_failed++;
	}
}

static void test_deltas(void)
{
	struct summary b, n;
	struct html_run rb = { .name = "base", .s = &b };
	struct html_run rn = { .name = "new", .s = &n };
	char *out;

	summary__init(&b);
	summary__init(&n);
	add(&b, "slow", 100000, 10);
	add(&n, "slow", 150000, 10);
	add(&b, "fast", 100000, 10);
	add(&n, "fast", 50000, 12);
	add(&b, "same", 100000, 10);
	add(&n, "same", 100000, 10);
	add(&b, "tiny", 100000, 10);
	add(&n, "tiny", 103000, 10);
	add(&b, "floor", 100, 1);
	add(&n, "floor", 900, 1);
	add(&n, "new_q", 5000, 1);
	add(&b, "gone_q", 5000, 1);
	/* Two rows of one name in the base (invalid UTF-8 both ways) join
	 * the run's one row, as diff__build() joins them. */
	add(&b, "x\xff", 1000, 1);
	add(&b, "x\xfe", 1000, 1);
	add(&n, "x\xef\xbf\xbd", 2000, 2);
	summary__finish(&b);
	summary__finish(&n);
	out = render(&rn, &rb);
	if (!out)
		return;
	check_cell(out, "slow", "<td class=\"d up\" data-v=\"50000\" "
		   "data-base=\"100000\" data-new=\"150000\" title=\"from "
		   "100us -&gt; to 150us\">+50.0us</td><td class=\"d up\" "
		   "data-v=\"50\" title=\"from 100us -&gt; to 150us\">+50.00%"
		   "</td>");
	check_cell(out, "fast", "<td class=\"d down\" data-v=\"-50000\" "
		   "data-base=\"100000\" data-new=\"50000\" title=\"from 100us "
		   "-&gt; to 50.0us\">-50.0us</td><td class=\"d down\" "
		   "data-v=\"-50\" title=\"from 100us -&gt; to 50.0us\">-50.00%"
		   "</td>");
	check_cell(out, "same", "<td class=\"d neutral\" data-v=\"0\" "
		   "data-base=\"100000\" data-new=\"100000\" title=\"from 100us "
		   "-&gt; to 100us\">0ns</td><td class=\"d neutral\" data-v=\"0\""
		   " title=\"from 100us -&gt; to 100us\">0.00%</td>");
	check_cell(out, "tiny", "<td class=\"d neutral\" data-v=\"3000\"");
	check_cell(out, "floor", "<td class=\"d neutral\" data-v=\"800\"");
	check_cell(out, "new_q", "<td class=\"d up\" data-v=\"5000\" "
		   "data-base=\"0\" data-new=\"5000\" title=\"from 0ns -&gt; to "
		   "5.00us\">+5.00us</td><td class=\"d up\" data-v=\"1e300\" "
		   "title=\"from 0ns -&gt; to 5.00us\">new</td>");
	check_cell(out, "gone_q", "<td class=\"d down\" data-v=\"-5000\"");
	check_cell(out, "x\xef\xbf\xbd", "<td class=\"d neutral\" data-v=\"0\" "
		   "data-base=\"2000\" data-new=\"2000\"");
	/* The count delta of "fast": 10 -> 12 is +20%. */
	CHECK(strstr(out, "<td class=\"d up\" data-v=\"2\" data-base=\"10\" "
			  "data-new=\"12\" title=\"from 10 -&gt; to 12\">+2</td>"
			  "<td class=\"d up\" data-v=\"20\" title=\"from 10 -&gt; "
			  "to 12\">+20.00%</td>") != NULL);
	CHECK(strstr(out, "<td>new</td>") != NULL);
	CHECK(strstr(out, "<td>gone</td>") != NULL);
	/* Both sides' histograms reach the page for the overlay. */
	CHECK(strstr(out, "{\"base\":true,") != NULL);
	free(out);
	summary__free(&b);
	summary__free(&n);
}

static void test_timeline(void)
{
	struct summary s;
	struct mem_report mr;
	struct html_run run = { .name = "r", .s = &s, .mr = &mr };
	struct mem_point p = { 0 };
	unsigned int i;
	char *out;

	summary__init(&s);
	add(&s, "q", 1000, 1);
	summary__finish(&s);
	mem_report__init(&mr);
	mr.timeline_on = true;
	mr.tl.interval_ns = 1000000;
	for (i = 0; i < 3; i++) {
		p.t_ns = (i + 1) * 1000000ull;
		p.rss_bytes = (i + 1) << 20;
		p.heap_live_bytes = (i + 1) << 10;
		CHECK(mem_timeline__add(&mr.tl, &p) == 0);
	}
	out = render(&run, NULL);
	if (out) {
		CHECK(strstr(out, "data-points=\"3\"") != NULL);
		CHECK(strstr(out, "<polyline class=\"s-rss\" data-peak=\"3145728\"")
		      != NULL);
		CHECK(strstr(out, "<polyline class=\"s-heap\" data-peak=\"3072\"")
		      != NULL);
		/* Nothing typed: no flat line. */
		CHECK(!strstr(out, "s-typed\" data-peak"));
		CHECK(strstr(out, "RSS, peak 3.0 MiB") != NULL);
		free(out);
	}
	run.mr = NULL;
	out = render(&run, NULL);
	if (out) {
		CHECK(!strstr(out, "id=\"memory\""));
		free(out);
	}
	mem_report__free(&mr);
	summary__free(&s);
}

static void test_unfinished(void)
{
	struct summary s;
	struct html_run run = { .name = "r", .s = &s };

	summary__init(&s);
	add(&s, "q", 1000, 1);
	CHECK(html_report__write(stdout, "t", &run, NULL) == -EINVAL);
	summary__free(&s);
}

/*
 * The icicle's labels fit their frames: whole, cut with "..." (room for a
 * character before it), or none; the title always has the whole name. A
 * trace of four top-level queries of known durations (of 1 ms, over the
 * 1200-unit icicle): about 73% (whole), 6% (cut), 0.4% (none) and 21%,
 * the last named with an escape sequence, which reaches the page as no
 * raw control.
 */
static void test_flame_labels(void)
{
	static const struct { const char *name; uint64_t ns; } q[] = {
		{ "persistence_layer_flush_all", 700000 },
		{ "typecheck_everything_now", 60000 },
		{ "open_the_door", 4000 },
		{ "\x1b[31mred", 200000 },
	};
	char path[] = "/tmp/sptrace_test_flame.XXXXXX";
	struct trace_header h = { .start_mono_ns = 1000, .cmdline = "t",
				  .version = "t" };
	struct trace_event e = { .pid = 7, .tid = 7 };
	struct trace_writer *w;
	uint64_t t = 1000;
	char *buf = NULL;
	size_t len, i;
	uint32_t id;
	FILE *f;
	int fd = mkstemp(path);

	CHECK(fd >= 0);
	close(fd);
	if (trace_writer__open(path, true, &h, &w)) {
		CHECK(0);
		return;
	}
	for (i = 0; i < sizeof(q) / sizeof(q[0]); i++) {
		CHECK(!trace_writer__string(w, q[i].name, &id));
		e = (struct trace_event){ .pid = 7, .tid = 7, .name_id = id,
					  .kind = SP_EV_QUERY_BEGIN, .ts_ns = t };
		CHECK(!trace_writer__event(w, &e));
		t += q[i].ns;
		e.kind = SP_EV_QUERY_END;
		e.ts_ns = t;
		CHECK(!trace_writer__event(w, &e));
	}
	CHECK(!trace_writer__close(w, 0));
	f = open_memstream(&buf, &len);
	if (!f)
		exit(2);
	CHECK(html_trace__write(f, path, t - 1000) == 0);
	fclose(f);
	unlink(path);
	CHECK(strstr(buf, "\"13\">persistence_layer_flush_all</text>") != NULL);
	/* 74.7 units: (74.7 - 6) / 6.8 = 10 cells, 7 and "...". */
	CHECK(strstr(buf, "\"13\">typeche...</text>") != NULL);
	CHECK(strstr(buf, "<title>open_the_door: ") != NULL);
	CHECK(strstr(buf, "\"13\"></text>") != NULL);	/* open_the_door */
	/* The icicle's names are export --folded's, where a control is '?'. */
	CHECK(strstr(buf, "\"13\">?[31mred</text>") != NULL);
	CHECK(strstr(buf, "<title>typecheck_everything_now: ") != NULL);
	CHECK(!strstr(buf, "\x1b") && !strstr(buf, "&#x1b;"));
	free(buf);
}

int main(void)
{
	RUN(test_hostile_names);
	RUN(test_total_row);
	RUN(test_delta_class);
	RUN(test_deltas);
	RUN(test_timeline);
	RUN(test_unfinished);
	RUN(test_flame_labels);
	return check_status();
}
