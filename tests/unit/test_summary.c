// SPDX-License-Identifier: MIT
/*
 * Unit tests of userspace/summary.c: rows merged by name, histogram bins
 * merged in order, derived numbers after summary__finish(), sort orders with
 * deterministic ties, a large number of names, and error counter sums.
 */
#include <errno.h>
#include <stdlib.h>
#include "summary.h"
#include "check.h"

static struct sp_query_row *find(struct summary *s, const char *name)
{
	unsigned int i;

	for (i = 0; i < s->nrows; i++) {
		if (!strcmp(s->rows[i].name, name))
			return &s->rows[i];
	}
	return NULL;
}

static void test_merge_stats(void)
{
	struct sp_query_stats a = {
		.count = 2, .total_ns = 100, .self_ns = 60, .min_ns = 10,
		.max_ns = 90, .cache_hits = 1, .incr_loads = 1,
		.incr_load_ns = 5, .blocked_count = 1, .blocked_ns = 7,
	};
	struct sp_query_stats b = {
		.count = 3, .total_ns = 200, .self_ns = 150, .min_ns = 5,
		.max_ns = 50, .cache_hits = 2, .blocked_count = 2,
		.blocked_ns = 3,
	};
	struct sp_query_row *r;
	struct summary s;

	summary__init(&s);
	CHECK(summary__add_stats(&s, "q", &a) == 0);
	CHECK(summary__add_stats(&s, "other", &b) == 0);
	CHECK(summary__add_stats(&s, "q", &b) == 0);
	CHECK_U64(s.nrows, 2);
	r = find(&s, "q");
	CHECK(r != NULL);
	if (r) {
		CHECK_U64(r->st.count, 5);
		CHECK_U64(r->st.total_ns, 300);
		CHECK_U64(r->st.self_ns, 210);
		CHECK_U64(r->st.min_ns, 5);
		CHECK_U64(r->st.max_ns, 90);
		CHECK_U64(r->st.cache_hits, 3);
		CHECK_U64(r->st.incr_loads, 1);
		CHECK_U64(r->st.incr_load_ns, 5);
		CHECK_U64(r->st.blocked_count, 3);
		CHECK_U64(r->st.blocked_ns, 10);
	}
	r = find(&s, "other");
	CHECK(r && r->st.count == 3 && r->st.min_ns == 5);
	CHECK(summary__add_stats(&s, NULL, &a) == -EINVAL);
	summary__free(&s);
	CHECK(s.nrows == 0 && s.rows == NULL);
}

static void test_merge_min_needs_count(void)
{
	struct sp_query_stats hits = { .cache_hits = 4 };	/* min_ns 0 */
	struct sp_query_stats runs = { .count = 1, .total_ns = 20,
				       .self_ns = 20, .min_ns = 20,
				       .max_ns = 20 };
	struct sp_query_row *r;
	struct summary s;

	/* Inputs without invocations carry no minimum: 0 must not win. */
	summary__init(&s);
	CHECK(summary__add_stats(&s, "q", &hits) == 0);
	CHECK(summary__add_stats(&s, "q", &runs) == 0);
	CHECK(summary__add_stats(&s, "q", &hits) == 0);
	r = find(&s, "q");
	CHECK(r != NULL);
	if (r) {
		CHECK_U64(r->st.min_ns, 20);
		CHECK_U64(r->st.count, 1);
		CHECK_U64(r->st.cache_hits, 8);
	}
	summary__free(&s);
}

static void test_merge_hist(void)
{
	static const struct { uint32_t b; uint64_t n; } adds[] = {
		{ 100, 1 }, { 5, 2 }, { 100, 3 }, { SP_HIST_BUCKETS - 1, 4 },
		{ 0, 5 }, { 5, 6 }, { 50, 0 }, { 101, 7 },
	};
	static const struct sp_hist_bin want[] = {
		{ .bucket = 0, .count = 5 }, { .bucket = 5, .count = 8 },
		{ .bucket = 100, .count = 4 }, { .bucket = 101, .count = 7 },
		{ .bucket = SP_HIST_BUCKETS - 1, .count = 4 },
	};
	struct sp_query_row *r;
	struct summary s;
	unsigned int i;

	summary__init(&s);
	for (i = 0; i < sizeof(adds) / sizeof(adds[0]); i++)
		CHECK(summary__add_hist(&s, "h", adds[i].b, adds[i].n) == 0);
	CHECK(summary__add_hist(&s, "h", SP_HIST_BUCKETS, 1) == -EINVAL);
	r = find(&s, "h");
	CHECK(r != NULL);
	if (r) {
		CHECK_U64(r->nbins, 5);
		for (i = 0; i < 5 && i < r->nbins; i++) {
			CHECK_U64(r->bins[i].bucket, want[i].bucket);
			CHECK_U64(r->bins[i].count, want[i].count);
		}
	}
	/* Many buckets in descending order: every insert goes in front. */
	for (i = 1000; i > 0; i--)
		CHECK(summary__add_hist(&s, "many", i, i) == 0);
	r = find(&s, "many");
	CHECK(r && r->nbins == 1000);
	for (i = 0; r && i < r->nbins; i++) {
		if (r->bins[i].bucket != i + 1 || r->bins[i].count != i + 1) {
			CHECK(r->bins[i].bucket == i + 1);
			break;
		}
	}
	summary__free(&s);
}

static void test_finish(void)
{
	struct sp_query_stats st = { 0 };
	struct sp_query_stats one = { .count = 1000, .total_ns = 12345000,
				      .self_ns = 60, .min_ns = 12345,
				      .max_ns = 12345 };
	struct summary s;

	summary__init(&s);
	st.self_ns = 30;
	summary__add_stats(&s, "thirty", &st);
	st.self_ns = 10;
	summary__add_stats(&s, "ten", &st);
	summary__add_stats(&s, "sixty", &one);
	summary__add_hist(&s, "sixty", sp_hist_bucket(12345), 1000);
	CHECK(!s.finished);
	summary__finish(&s);
	CHECK(s.finished);
	CHECK_U64(s.total_self_ns, 100);
	CHECK_U64(s.nrows, 3);
	CHECK_STR(s.rows[0].name, "sixty");
	CHECK_STR(s.rows[1].name, "thirty");
	CHECK_STR(s.rows[2].name, "ten");
	/* All samples one value: percentiles clamp to it exactly. */
	CHECK_U64(s.rows[0].p50_ns, 12345);
	CHECK_U64(s.rows[0].p90_ns, 12345);
	CHECK_U64(s.rows[0].p99_ns, 12345);
	/* No invocations, no percentiles. */
	CHECK_U64(s.rows[1].p50_ns, 0);
	CHECK_U64(s.rows[2].p99_ns, 0);
	/* Adding after finish makes the derived numbers stale. */
	summary__add_stats(&s, "ten", &st);
	CHECK(!s.finished);
	summary__finish(&s);
	CHECK_U64(s.total_self_ns, 110);
	summary__free(&s);
}

static void add_row(struct summary *s, const char *name, uint64_t self,
		    uint64_t count, uint64_t max)
{
	struct sp_query_stats st = { .count = count, .self_ns = self,
				     .total_ns = 2 * self, .min_ns = 1,
				     .max_ns = max, .cache_hits = count,
				     .blocked_ns = self, .incr_load_ns = max };

	CHECK(summary__add_stats(s, name, &st) == 0);
}

static void check_order(struct summary *s, enum summary_sort key,
			const char *a, const char *b, const char *c)
{
	summary__sort(s, key);
	if (strcmp(s->rows[0].name, a) || strcmp(s->rows[1].name, b) ||
	    strcmp(s->rows[2].name, c))
		printf("FAIL sort %d: got %s %s %s, want %s %s %s\n", key,
		       s->rows[0].name, s->rows[1].name, s->rows[2].name,
		       a, b, c);
	CHECK_STR(s->rows[0].name, a);
	CHECK_STR(s->rows[1].name, b);
	CHECK_STR(s->rows[2].name, c);
}

static void test_sort(void)
{
	static const char *const keys[] = {
		"self", "total", "count", "name", "cache-hits", "blocked",
		"incr", "p50", "p99", "max",
	};
	enum summary_sort key;
	struct summary s;
	unsigned int i;

	summary__init(&s);
	/* Added out of order so ties cannot pass by insertion order. */
	add_row(&s, "c", 5, 5, 300);
	add_row(&s, "b", 10, 5, 100);
	add_row(&s, "a", 10, 1, 100);
	summary__add_hist(&s, "c", sp_hist_bucket(100), 5);
	summary__finish(&s);
	check_order(&s, SORT_SELF, "a", "b", "c");	/* a, b tie on 10 */
	check_order(&s, SORT_TOTAL, "a", "b", "c");
	check_order(&s, SORT_COUNT, "b", "c", "a");	/* b, c tie on 5 */
	check_order(&s, SORT_NAME, "a", "b", "c");
	check_order(&s, SORT_CACHE_HITS, "b", "c", "a");
	check_order(&s, SORT_BLOCKED, "a", "b", "c");
	check_order(&s, SORT_INCR, "c", "a", "b");
	check_order(&s, SORT_MAX, "c", "a", "b");
	check_order(&s, SORT_P50, "c", "a", "b");	/* only c has samples */
	check_order(&s, SORT_P99, "c", "a", "b");

	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		key = SORT_MAX + 1;
		CHECK(summary__parse_sort(keys[i], &key) == 0);
		CHECK_U64(key, i);
	}
	CHECK(summary__parse_sort("Self", &key) == -EINVAL);
	CHECK(summary__parse_sort("", &key) == -EINVAL);
	CHECK(summary__parse_sort("selfish", &key) == -EINVAL);
	CHECK(summary__parse_sort("cache_hits", &key) == -EINVAL);
	summary__free(&s);
}

static void test_many_names(void)
{
	struct sp_query_stats st = { .count = 1, .min_ns = 1, .max_ns = 1 };
	struct sp_query_row *r;
	unsigned int i, bad = 0;
	struct summary s;
	char name[32];

	summary__init(&s);
	for (i = 0; i < 10000; i++) {
		snprintf(name, sizeof(name), "query::%u", i);
		st.self_ns = i;
		bad += summary__add_stats(&s, name, &st) != 0;
		bad += summary__add_hist(&s, name, i % SP_HIST_BUCKETS, 1) != 0;
	}
	/* Second pass must find every row, not add new ones. */
	for (i = 0; i < 10000; i++) {
		snprintf(name, sizeof(name), "query::%u", i);
		st.self_ns = 0;
		bad += summary__add_stats(&s, name, &st) != 0;
	}
	CHECK(bad == 0);
	CHECK_U64(s.nrows, 10000);
	for (i = 0; i < s.nrows; i++)
		bad += s.rows[i].st.count != 2 || s.rows[i].nbins != 1;
	CHECK(bad == 0);
	summary__finish(&s);
	CHECK_U64(s.total_self_ns, 9999ULL * 10000 / 2);
	CHECK_STR(s.rows[0].name, "query::9999");
	/* Rows moved in the sort: lookups must still land on the right row. */
	CHECK(summary__add_stats(&s, "query::42", &st) == 0);
	CHECK(summary__add_stats(&s, "query::9999", &st) == 0);
	CHECK_U64(s.nrows, 10000);
	r = find(&s, "query::42");
	CHECK(r && r->st.count == 3 && r->st.self_ns == 42);
	CHECK_U64(s.rows[0].st.count, 3);
	CHECK(summary__add_stats(&s, "query::10000", &st) == 0);
	CHECK_U64(s.nrows, 10001);
	summary__free(&s);
}

static void test_errors(void)
{
	static const char *const names[SP_ERR__MAX] = {
		"end_without_begin", "end_mismatch", "stack_overflow",
		"thread_exit_open", "queries_map_full", "hist_map_full",
		"names_map_full", "threads_map_full", "name_read_failed",
		"events_lost", "func_unwound", "batch_lost", "async_map_full",
		"abandoned",
	};
	struct summary s;
	unsigned int i;

	summary__init(&s);
	for (i = 0; i < SP_ERR__MAX; i++) {
		CHECK_STR(summary__error_name(i), names[i]);
		s.errors[i] = (uint64_t)1 << i;
	}
	CHECK_STR(summary__error_name(SP_ERR__MAX), "unknown");
	CHECK_U64(summary__unbalanced(&s), 1 + 2 + 4 + 8);
	CHECK_U64(summary__map_full(&s), 16 + 32 + 64 + 128 + 4096);
	summary__free(&s);
	CHECK_U64(summary__unbalanced(&s), 0);
}

/* The share of the CPU time: over the processes with a reading only,
 * never above the whole; a copy owns its processes. */
static void test_overhead_share(void)
{
	struct summary_cost procs[3] = {
		{ .pid = 7, .win_probe_ns = 10, .win_cpu_ns = 1000 },
		{ .pid = 8, .win_probe_ns = 30, .win_cpu_ns = 1000 },
		{ .pid = 9, .probe_ns = 500 },	/* no CPU time read */
	};
	struct summary_overhead o = { .known = true, .procs = procs,
				      .nprocs = 3 };
	struct summary s;
	uint64_t p, c;

	CHECK(summary__overhead_share(&o, &p, &c) == 0.02);
	CHECK_U64(p, 40);
	CHECK_U64(c, 2000);
	procs[0].win_probe_ns = 5000;
	CHECK(summary__overhead_share(&o, NULL, NULL) == 1.0);
	o.nprocs = 0;
	CHECK(summary__overhead_share(&o, &p, &c) == -1);
	o.nprocs = 3;
	summary__init(&s);
	CHECK(!summary__set_overhead(&s, &o));
	CHECK(s.overhead.procs != procs && s.overhead.nprocs == 3);
	CHECK_U64(s.overhead.procs[2].probe_ns, 500);
	CHECK_STR(summary__hit_name(SP_HIT_PAUSE_NS), "flush_host_ns");
	summary__free(&s);
}

int main(void)
{
	RUN(test_merge_stats);
	RUN(test_merge_min_needs_count);
	RUN(test_merge_hist);
	RUN(test_finish);
	RUN(test_sort);
	RUN(test_many_names);
	RUN(test_errors);
	RUN(test_overhead_share);
	return check_status();
}
