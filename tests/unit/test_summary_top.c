// SPDX-License-Identifier: MIT
/*
 * serve --top N: the N rows of most self time keep their names, the rest
 * fold into one "<other>" row per process with every figure summed.
 */
#include <string.h>
#include "check.h"
#include "summary.h"
#include "summary_top.h"

static void add(struct summary *s, const char *name, uint32_t pid,
		uint64_t self, uint64_t count, uint32_t bucket)
{
	struct sp_query_stats st = {
		.count = count, .total_ns = self * 2, .self_ns = self,
		.min_ns = 1, .max_ns = self, .cache_hits = 1,
	};

	CHECK(!summary__add_stats_pid(s, name, pid, &st));
	CHECK(!summary__add_hist_pid(s, name, pid, bucket, count));
}

static const struct sp_query_row *row(const struct summary *s,
				      const char *name, uint32_t pid)
{
	unsigned int i;

	for (i = 0; i < s->nrows; i++)
		if (!strcmp(s->rows[i].name, name) && s->rows[i].pid == pid)
			return &s->rows[i];
	return NULL;
}

static void test_top(void)
{
	struct summary in, out;
	const struct sp_query_row *o;
	unsigned int folded, i;
	uint64_t count_in = 0, count_out = 0;

	summary__init(&in);
	summary__init(&out);
	in.per_pid = true;
	add(&in, "a", 1, 500, 5, 3);
	add(&in, "b", 1, 400, 4, 3);
	add(&in, "c", 1, 30, 3, 4);
	add(&in, "d", 1, 20, 2, 5);
	add(&in, "e", 2, 10, 1, 5);
	in.errors[0] = 7;
	in.lost = 4;
	in.events_mode = "batched";
	in.batch_fallback = 9;
	CHECK(!summary__top(&in, 2, &out, &folded));
	CHECK_U64(folded, 3);
	CHECK(row(&out, "a", 1) && row(&out, "b", 1));
	CHECK(!row(&out, "c", 1));
	o = row(&out, SUMMARY_TOP_OTHER, 1);
	CHECK(o != NULL);
	if (o) {
		CHECK_U64(o->st.count, 5);
		CHECK_U64(o->st.self_ns, 50);
		CHECK_U64(o->st.max_ns, 30);
		CHECK_U64(o->st.cache_hits, 2);
		CHECK_U64(o->nbins, 2);
	}
	o = row(&out, SUMMARY_TOP_OTHER, 2);
	CHECK(o && o->st.count == 1);
	for (i = 0; i < in.nrows; i++)
		count_in += in.rows[i].st.count;
	for (i = 0; i < out.nrows; i++)
		count_out += out.rows[i].st.count;
	CHECK_U64(count_out, count_in);
	CHECK_U64(out.errors[0], 7);
	/* The figures that are not rows go along (serve --top shows them). */
	CHECK_U64(out.lost, 4);
	CHECK(out.events_mode && !strcmp(out.events_mode, "batched"));
	CHECK_U64(out.batch_fallback, 9);
	CHECK(!out.batch_fallback_unknown);
	summary__free(&out);
	/* N at least the rows: nothing folded. */
	summary__init(&out);
	CHECK(!summary__top(&in, 5, &out, &folded));
	CHECK_U64(folded, 0);
	CHECK_U64(out.nrows, 5);
	summary__free(&out);
	summary__free(&in);
}

int main(void)
{
	RUN(test_top);
	return check_status();
}
