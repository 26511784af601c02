// SPDX-License-Identifier: MIT
/*
 * Tables fitted in 120 characters (text_table__fit(),
 * docs/formats.md#fitting-120-characters): the memory tables by type and
 * by thread, on data as wide as it gets (long type and thread names, 20-digit figures): every line at
 * most 120 characters by default with the columns left out named under the
 * table, and every column, whole, with width 0 (--wide).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "mem_report.h"
#include "mem_writer.h"
#include "text_table.h"

/* Terminal cells of one line: UTF-8 continuation bytes take none. */
static unsigned int cells(const char *s, size_t len)
{
	unsigned int n = 0;
	size_t i;

	for (i = 0; i < len; i++)
		if (((unsigned char)s[i] & 0xc0) != 0x80)
			n++;
	return n;
}

static unsigned int widest(const char *text)
{
	const char *p = text, *nl;
	unsigned int w, max = 0;

	while (*p) {
		nl = strchr(p, '\n');
		w = cells(p, nl ? (size_t)(nl - p) : strlen(p));
		if (w > max)
			max = w;
		if (!nl)
			break;
		p = nl + 1;
	}
	return max;
}

static char *render(const struct mem_report *r, unsigned int width)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	CHECK(f != NULL);
	if (!f)
		return NULL;
	CHECK(mem_report__write_table(f, r, width) == 0);
	fclose(f);
	return buf;
}

static void fill(struct mem_report *r)
{
	const struct mem_figures big = {
		.allocs = UINT64_MAX - 1, .alloc_bytes = UINT64_MAX - 2,
		.frees = UINT64_MAX - 3, .free_bytes = 1,
		.live = UINT64_MAX - 4, .live_bytes = UINT64_MAX - 5,
		.peak_live_bytes = UINT64_MAX - 6,
	};
	char name[80];

	mem_report__init(r);
	r->per_thread = true;
	r->heap_traced = true;
	r->heap = big;
	memset(name, 'T', 70);
	name[70] = 0;
	memcpy(name, "struct ", 7);
	CHECK(mem_report__add_type(r, name, &big) == 0);
	CHECK(mem_report__add_type(r, "int", &big) == 0);
	CHECK(mem_report__add_thread(r, 4000000, 4000001,
				     "a-thread-name-of-many-letters-in-a-cell",
				     name, &big) == 0);
	CHECK(mem_report__add_thread(r, 4000000, 4000002, "w", NULL, &big) == 0);
	mem_report__finish(r);
}

static void test_mem_default(void)
{
	struct mem_report r;
	char *out;

	fill(&r);
	out = render(&r, 120);
	if (out) {
		if (getenv("TABLE_FIT_SHOW"))
			fputs(out, stdout);
		CHECK(widest(out) <= 120);
		/* What was left out is named, for each table. */
		CHECK(strstr(out, "left out to fit 120 characters: Avg size") != NULL);
		CHECK(strstr(out, "(--wide shows every column)") != NULL);
		/* What stays: the names (cut), Bytes and Live bytes. */
		CHECK(strstr(out, "| struct TTTTTTTT") != NULL);
		CHECK(strstr(out, "...") != NULL);
		CHECK(strstr(out, "Live bytes") != NULL);
		CHECK(strstr(out, "| Bytes ") != NULL ||
		      strstr(out, " Bytes |") != NULL);
		CHECK(strstr(out, "Memory by allocating thread") != NULL);
	}
	free(out);
	mem_report__free(&r);
}

static void test_mem_wide(void)
{
	static const char *const titles[] = {
		"Allocs", "Frees", "Live bytes", "Peak live bytes", "Avg size",
		"TID", "Thread",
	};
	struct mem_report r;
	unsigned int i;
	char *out;

	fill(&r);
	out = render(&r, 0);
	if (out) {
		CHECK(widest(out) > 120);
		for (i = 0; i < sizeof(titles) / sizeof(titles[0]); i++)
			CHECK(strstr(out, titles[i]) != NULL);
		CHECK(strstr(out, "left out") == NULL);
		/* Names whole. */
		CHECK(strstr(out, "a-thread-name-of-many-letters-in-a-cell") != NULL);
		CHECK(strstr(out, "18446744073709551609") != NULL);	/* peak */
	}
	free(out);
	mem_report__free(&r);
}

/* The rule itself: cut first, then drop in order, then the cut column
 * gets what is left; a table that fits is left alone. */
static void test_fit_rule(void)
{
	static const struct text_col cols[] = {
		{ "Name", TEXT_LEFT, false, 0, 10 },
		{ "A", TEXT_RIGHT, false, 0, 0 },
		{ "B", TEXT_RIGHT, false, 0, 0 },
	};
	static const unsigned int drop[] = { 2, 1 };
	const char *row[] = { "abcdefghijklmnopqrstuvwxyz", "1234567890",
			      "1234567890" };
	const char *dropped[2];
	struct text_table t;

	/* Fits: 1 + 29 + 13 + 13 = 56. */
	CHECK(text_table__init(&t, cols, 3) == 0);
	CHECK(text_table__add_row(&t, row) == 0);
	CHECK_U64(text_table__fit(&t, 56, drop, 2, dropped), 0);
	CHECK_U64(t.width[0], 26);
	text_table__free(&t);
	/* 50: the name is cut to 20 cells (50 - 1 - 13 - 13 - 3). */
	CHECK(text_table__init(&t, cols, 3) == 0);
	CHECK(text_table__add_row(&t, row) == 0);
	CHECK_U64(text_table__fit(&t, 50, drop, 2, dropped), 0);
	CHECK_U64(t.width[0], 20);
	CHECK_STR(t.cells[0].text, "abcdefghijklmnopq...");
	text_table__free(&t);
	/* 30: the name at 10 and both figures need 40: B goes, then the
	 * name gets 30 - 1 - 13 - 3 = 13. */
	CHECK(text_table__init(&t, cols, 3) == 0);
	CHECK(text_table__add_row(&t, row) == 0);
	CHECK_U64(text_table__fit(&t, 30, drop, 2, dropped), 1);
	CHECK_STR(dropped[0], "B");
	CHECK(t.cols[2].hidden && !t.cols[1].hidden);
	CHECK_U64(t.width[0], 13);
	text_table__free(&t);
	/* 0: --wide, nothing changes. */
	CHECK(text_table__init(&t, cols, 3) == 0);
	CHECK(text_table__add_row(&t, row) == 0);
	CHECK_U64(text_table__fit(&t, 0, drop, 2, dropped), 0);
	CHECK_U64(t.width[0], 26);
	text_table__free(&t);
}

int main(void)
{
	RUN(test_fit_rule);
	RUN(test_mem_default);
	RUN(test_mem_wide);
	return check_status();
}
