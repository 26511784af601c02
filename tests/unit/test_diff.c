// SPDX-License-Identifier: MIT
/*
 * Unit tests of userspace/diff.c: rows joined by name with exact changes,
 * new/gone rows, the Total row, the sort by self-time change, the table
 * (exact text, hidden columns, escaping) and the JSON (checked by python3).
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>
#include "diff_writer.h"
#include "check.h"

static void add(struct summary *s, const char *name, uint64_t self,
		uint64_t total, uint64_t count, uint64_t cache,
		uint64_t blocked, uint64_t incr)
{
	struct sp_query_stats st = { .self_ns = self, .total_ns = total,
				     .count = count, .min_ns = 1, .max_ns = 1,
				     .cache_hits = cache, .blocked_ns = blocked,
				     .incr_load_ns = incr };

	CHECK(summary__add_stats(s, name, &st) == 0);
}

/*
 *            base self  new self  change
 * parse        100000    150000   +50000
 * new_q             -     45000   +45000  (new)
 * typeck        50000     10000   -40000
 * gone_q        30000         -   -30000  (gone)
 * tie_b          1000      6000    +5000  ties with tie_a: by name
 * tie_a          6000      1000    -5000
 * same             70        70        0
 */
static void runs(struct summary *b, struct summary *n)
{
	summary__init(b);
	summary__init(n);
	b->duration_ns = 2000000;
	n->duration_ns = 1500000;
	add(b, "parse", 100000, 200000, 2, 1, 0, 0);
	add(n, "parse", 150000, 260000, 3, 4, 0, 0);
	add(n, "new_q", 45000, 45000, 1, 0, 0, 0);
	add(b, "typeck", 50000, 80000, 5, 0, 0, 0);
	add(n, "typeck", 10000, 20000, 5, 0, 0, 0);
	add(b, "gone_q", 30000, 30000, 1, 0, 0, 0);
	add(b, "tie_b", 1000, 1000, 1, 0, 0, 0);
	add(n, "tie_b", 6000, 6000, 1, 0, 0, 0);
	add(b, "tie_a", 6000, 6000, 1, 0, 0, 0);
	add(n, "tie_a", 1000, 1000, 1, 0, 0, 0);
	add(b, "same", 70, 70, 1, 0, 0, 0);
	add(n, "same", 70, 70, 1, 0, 0, 0);
	summary__finish(b);
	summary__finish(n);
}

static char *capture(int (*fn)(FILE *, const struct diff *, const char *,
			       const char *), const struct diff *d,
		     const char *bn, const char *nn)
{
	char *buf = NULL;
	size_t len;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		exit(2);
	CHECK(fn(f, d, bn, nn) == 0);
	fclose(f);
	return buf;
}

static void test_build(void)
{
	static const char *const order[] = {
		"parse", "new_q", "typeck", "gone_q", "tie_a", "tie_b", "same",
	};
	struct summary b, n;
	struct diff d;
	unsigned int i;
	double pct;

	runs(&b, &n);
	CHECK(diff__build(&d, &b, &n) == 0);
	CHECK_U64(d.nrows, 7);
	CHECK_U64(d.nnew, 1);
	CHECK_U64(d.ngone, 1);
	for (i = 0; i < 7 && i < d.nrows; i++)
		CHECK_STR(d.rows[i].name, order[i]);
	if (d.nrows == 7) {
		CHECK(d.rows[0].status == DIFF_BOTH);
		CHECK(d.rows[1].status == DIFF_NEW);
		CHECK(d.rows[3].status == DIFF_GONE);
		CHECK_U64(d.rows[0].base.self_ns, 100000);
		CHECK_U64(d.rows[0].new.self_ns, 150000);
		CHECK_U64(d.rows[0].base.cache_hits, 1);
		CHECK_U64(d.rows[0].new.cache_hits, 4);
		CHECK_U64(d.rows[0].new.count, 3);
		CHECK_U64(d.rows[1].base.self_ns, 0);
		CHECK_U64(d.rows[1].new.total_ns, 45000);
		CHECK_U64(d.rows[3].base.total_ns, 30000);
		CHECK_U64(d.rows[3].new.count, 0);
		CHECK(diff__self_pct(&d.rows[0], &pct) && pct == 50.0);
		CHECK(diff__self_pct(&d.rows[2], &pct) && pct == -80.0);
		CHECK(!diff__self_pct(&d.rows[1], &pct));
		CHECK(diff__self_pct(&d.rows[3], &pct) && pct == -100.0);
	}
	CHECK_STR(d.total.name, "Total");
	CHECK_U64(d.total.base.self_ns, 100000 + 50000 + 30000 + 1000 + 6000 + 70);
	CHECK_U64(d.total.new.self_ns, 150000 + 45000 + 10000 + 6000 + 1000 + 70);
	CHECK_U64(d.total.base.count, 2 + 5 + 1 + 1 + 1 + 1);
	CHECK_U64(d.total.new.count, 3 + 1 + 5 + 1 + 1 + 1);
	CHECK_U64(d.total.new.cache_hits, 4);
	CHECK_U64(d.base_duration_ns, 2000000);
	CHECK_U64(d.new_duration_ns, 1500000);
	diff__free(&d);

	/* Against an empty run: everything is gone; the join is symmetric. */
	summary__free(&n);
	summary__init(&n);
	CHECK(diff__build(&d, &b, &n) == 0);
	CHECK_U64(d.nrows, 6);
	CHECK_U64(d.ngone, 6);
	CHECK_U64(d.nnew, 0);
	diff__free(&d);
	CHECK(diff__build(&d, &n, &b) == 0);
	CHECK_U64(d.nnew, 6);
	diff__free(&d);
	summary__free(&b);
	summary__free(&n);
}

/* A trace keeps a name's raw bytes, its JSON summary has U+FFFD for each
 * invalid one: both must meet in one row. */
static void test_names_cleaned(void)
{
	struct summary b, n;
	struct diff d;

	summary__init(&b);
	summary__init(&n);
	add(&b, "a\xff", 10, 10, 1, 0, 0, 0);
	add(&b, "a\xfe", 5, 5, 1, 0, 0, 0);
	add(&b, "ok", 1, 1, 1, 0, 0, 0);
	add(&n, "a\xef\xbf\xbd", 20, 20, 1, 0, 0, 0);
	add(&n, "ok", 1, 1, 1, 0, 0, 0);
	CHECK(diff__build(&d, &b, &n) == 0);
	CHECK_U64(d.nrows, 2);
	CHECK_U64(d.nnew + d.ngone, 0);
	if (d.nrows == 2) {
		CHECK_STR(d.rows[0].name, "a\xef\xbf\xbd");
		CHECK_U64(d.rows[0].base.self_ns, 15);
		CHECK_U64(d.rows[0].base.count, 2);
		CHECK_U64(d.rows[0].new.self_ns, 20);
	}
	diff__free(&d);
	summary__free(&b);
	summary__free(&n);
}

static void test_delta(void)
{
	uint64_t m;

	CHECK(!diff__delta(5, 7, &m) && m == 2);
	CHECK(diff__delta(7, 5, &m) && m == 2);
	CHECK(!diff__delta(3, 3, &m) && m == 0);
	CHECK(!diff__delta(0, UINT64_MAX, &m) && m == UINT64_MAX);
	CHECK(diff__delta(UINT64_MAX, 0, &m) && m == UINT64_MAX);
}

static void test_table(void)
{
	static const char want[] =
"sptrace diff: base.spt -> new.json: 7 queries (1 new, 1 gone), duration 2.00ms -> 1.50ms\n"
"+--------+--------+-----------+-------------+---------------+--------+-------------+------------+--------------+------------+-------------+\n"
"| Item   | Status | Self time | Self change | Self change % |   Time | Time change | Item count | Count change | Cache hits | Hits change |\n"
"+--------+--------+-----------+-------------+---------------+--------+-------------+------------+--------------+------------+-------------+\n"
"| Total  |        |     212us |     +25.0us |       +13.36% |  332us |     +15.0us |         12 |           +1 |          4 |          +3 |\n"
"| parse  |        |     150us |     +50.0us |       +50.00% |  260us |     +60.0us |          3 |           +1 |          4 |          +3 |\n"
"| new_q  | new    |    45.0us |     +45.0us |           new | 45.0us |     +45.0us |          1 |           +1 |          0 |           0 |\n"
"| typeck |        |    10.0us |     -40.0us |       -80.00% | 20.0us |     -60.0us |          5 |            0 |          0 |           0 |\n"
"| gone_q | gone   |       0ns |     -30.0us |      -100.00% |    0ns |     -30.0us |          0 |           -1 |          0 |           0 |\n"
"| tie_a  |        |    1.00us |     -5.00us |       -83.33% | 1.00us |     -5.00us |          1 |            0 |          0 |           0 |\n"
"| tie_b  |        |    6.00us |     +5.00us |      +500.00% | 6.00us |     +5.00us |          1 |            0 |          0 |           0 |\n"
"| same   |        |      70ns |         0ns |         0.00% |   70ns |         0ns |          1 |            0 |          0 |           0 |\n"
"+--------+--------+-----------+-------------+---------------+--------+-------------+------------+--------------+------------+-------------+\n";
	struct summary b, n;
	struct diff d;
	char *out;

	runs(&b, &n);
	CHECK(diff__build(&d, &b, &n) == 0);
	out = capture(diff__write_table, &d, "base.spt", "new.json");
	CHECK_STR(out, want);
	free(out);
	/* Fitted to 120 characters (the default of `sptrace diff`): the cache
	 * pair, then Time change, are left out and named; no line is wider. */
	{
		char *buf = NULL, *line, *save = NULL;
		size_t len = 0, widest = 0;
		FILE *f = open_memstream(&buf, &len);

		CHECK(diff__write_table_fit(f, &d, "base.spt", "new.json",
					    120) == 0);
		fclose(f);
		CHECK(strstr(buf, "| Item   | Status | Self time | Self change | "
			      "Self change % |   Time | Item count | Count change "
			      "|\n") != NULL);
		CHECK(strstr(buf, "\n3 columns left out to fit 120 characters: "
			      "Cache hits, Hits change, Time change (--wide shows "
			      "every column)\n") != NULL);
		for (line = strtok_r(buf, "\n", &save); line;
		     line = strtok_r(NULL, "\n", &save))
			if (line[0] == '|' && strlen(line) > widest)
				widest = strlen(line);
		CHECK(widest > 0 && widest <= 120);
		free(buf);
	}
	diff__free(&d);
	summary__free(&b);
	summary__free(&n);
}

/* Status hidden when every row is in both runs; blocked/incr shown when
 * any run has them; names and paths made terminal-safe. */
static void test_table_columns(void)
{
	struct summary b, n;
	struct diff d;
	char *out;

	summary__init(&b);
	summary__init(&n);
	add(&b, "q\x1b[31m", 10, 10, 1, 0, 5, 0);
	add(&n, "q\x1b[31m", 20, 20, 1, 0, 0, 7);
	summary__finish(&b);
	summary__finish(&n);
	CHECK(diff__build(&d, &b, &n) == 0);
	out = capture(diff__write_table, &d, "a\nb", "c");
	CHECK(strstr(out, "Status") == NULL);
	CHECK(strstr(out, "Cache hits") == NULL);
	CHECK(strstr(out, "| Blocked time | Blocked change | Incr. load time |"
		      " Incr. change |") != NULL);
	CHECK(strstr(out, "|          0ns |           -5ns |             7ns |"
		      "         +7ns |") != NULL);
	CHECK(strstr(out, "| q\\x1b[31m |") != NULL);
	CHECK(strncmp(out, "sptrace diff: a\\x0ab -> c: 1 queries", 36) == 0);
	CHECK(strchr(out, '\x1b') == NULL);
	free(out);
	diff__free(&d);
	summary__free(&b);
	summary__free(&n);
}

static void test_json(void)
{
	static const char py[] =
"import json, sys\n"
"def bad(x): raise ValueError(x)\n"
"d = json.loads(sys.stdin.buffer.read().decode(\"utf-8\"), parse_constant=bad)\n"
"print(d[\"base\"], d[\"new\"], list(d.keys()))\n"
"print(d[\"duration_ns\"])\n"
"t = d[\"total\"]\n"
"print(t[\"base\"][\"self_ns\"], t[\"new\"][\"self_ns\"], t[\"delta\"][\"self_ns\"], t[\"self_pct\"])\n"
"for q in d[\"queries\"]:\n"
"    assert sorted(q[\"base\"]) == sorted(q[\"new\"]) == sorted(q[\"delta\"])\n"
"    for k in q[\"delta\"]:\n"
"        assert q[\"delta\"][k] == q[\"new\"][k] - q[\"base\"][k], (q, k)\n"
"    print(q[\"name\"], q[\"status\"], q[\"delta\"][\"self_ns\"], q[\"delta\"][\"count\"], q[\"self_pct\"])\n";
	static const char want[] =
"b\"1 n\xc3\xa9 ['base', 'new', 'duration_ns', 'total', 'queries']\n"
"{'base': 2000000, 'new': 1500000, 'delta': -500000}\n"
"187070 212070 25000 13.36\n"
"parse both 50000 1 50.0\n"
"new_q new 45000 1 None\n"
"typeck both -40000 0 -80.0\n"
"gone_q gone -30000 -1 -100.0\n"
"tie_a both -5000 0 -83.33\n"
"tie_b both 5000 0 500.0\n"
"same both 0 0 0.0\n";
	struct summary b, n;
	struct diff d;
	char res[4096], *out;

	runs(&b, &n);
	add(&b, "huge", UINT64_MAX, 0, 0, 0, 0, 0);
	add(&n, "huge", 0, 0, UINT64_MAX, 0, 0, 0);
	summary__finish(&b);
	summary__finish(&n);
	CHECK(diff__build(&d, &b, &n) == 0);
	out = capture(diff__write_json, &d, "b\"1", "n\xc3\xa9");
	CHECK(check_python(py, out, res, sizeof(res)) == 0);
	/* Exact beyond int64 and double range; the biggest change first. */
	CHECK(strstr(res, "]\n{'base': 2000000, 'new': 1500000, 'delta': -500000}\n"
		      "18446744073709551615 212070 -18446744073709339545 -100.0\n"
		      "huge both -18446744073709551615 18446744073709551615 -100.0\n"
		      "parse both") != NULL);
	/* Total self saturates at 2^64-1 with "huge" in the base. */
	CHECK(strstr(out, "\"total\":{\"base\":{\"self_ns\":18446744073709551615,")
	      != NULL);
	free(out);
	diff__free(&d);
	summary__free(&b);
	summary__free(&n);

	/* The same without "huge", for exact totals. */
	runs(&b, &n);
	CHECK(diff__build(&d, &b, &n) == 0);
	out = capture(diff__write_json, &d, "b\"1", "n\xc3\xa9");
	CHECK(check_python(py, out, res, sizeof(res)) == 0);
	CHECK_STR(res, want);
	CHECK(strstr(out, "{\"name\":\"new_q\",\"status\":\"new\",\"base\":{"
		      "\"self_ns\":0,\"total_ns\":0,\"count\":0,\"cache_hits\":0,"
		      "\"blocked_ns\":0,\"incr_load_ns\":0},\"new\":{\"self_ns\":45000,"
		      "\"total_ns\":45000,\"count\":1,\"cache_hits\":0,"
		      "\"blocked_ns\":0,\"incr_load_ns\":0},\"delta\":{\"self_ns\":45000,"
		      "\"total_ns\":45000,\"count\":1,\"cache_hits\":0,"
		      "\"blocked_ns\":0,\"incr_load_ns\":0},\"self_pct\":null}")
	      != NULL);
	free(out);
	diff__free(&d);
	summary__free(&b);
	summary__free(&n);
}

static void test_write_error(void)
{
	struct summary b, n;
	struct diff d;
	FILE *full;

	runs(&b, &n);
	CHECK(diff__build(&d, &b, &n) == 0);
	full = fopen("/dev/full", "w");
	CHECK(full != NULL);
	if (full) {
		CHECK(diff__write_table(full, &d, "a", "b") == -EIO);
		clearerr(full);
		CHECK(diff__write_json(full, &d, "a", "b") == -EIO);
		fclose(full);
	}
	diff__free(&d);
	summary__free(&b);
	summary__free(&n);
}

int main(void)
{
	RUN(test_build);
	RUN(test_names_cleaned);
	RUN(test_delta);
	RUN(test_table);
	RUN(test_table_columns);
	RUN(test_json);
	RUN(test_write_error);
	return check_status();
}
