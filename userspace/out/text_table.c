// SPDX-License-Identifier: MIT
/*
 * The boxed text table shared by the summary table (table.c) and
 * `sptrace diff`; every cell in the display form of common/text.h.
 */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "text.h"
#include "text_table.h"

static int cell_set(struct text_cell *c, const char *str, unsigned int maxw)
{
	c->text = text__display(str ? str : "", maxw ? maxw : UINT_MAX,
				      &c->width);
	return c->text ? 0 : -ENOMEM;
}

int text_table__init(struct text_table *t, const struct text_col *cols,
		     unsigned int ncols)
{
	unsigned int c;

	memset(t, 0, sizeof(*t));
	if (!ncols)
		return -EINVAL;
	t->cols = calloc(ncols, sizeof(*t->cols));
	t->titles = calloc(ncols, sizeof(*t->titles));
	t->width = calloc(ncols, sizeof(*t->width));
	if (!t->cols || !t->titles || !t->width)
		return -ENOMEM;
	t->ncols = ncols;
	memcpy(t->cols, cols, ncols * sizeof(*cols));
	for (c = 0; c < ncols; c++) {
		if (cell_set(&t->titles[c], cols[c].title, 0))
			return -ENOMEM;
		t->width[c] = t->titles[c].width;
	}
	return 0;
}

int text_table__add_row(struct text_table *t, const char *const *cells)
{
	struct text_cell *row;
	unsigned int c;

	if (t->nrows == t->rows_cap) {
		unsigned int cap = t->rows_cap ? t->rows_cap * 2 : 16;
		struct text_cell *v;

		if (cap <= t->rows_cap ||
		    (size_t)cap > SIZE_MAX / t->ncols / sizeof(*v))
			return -ENOMEM;
		v = realloc(t->cells, (size_t)cap * t->ncols * sizeof(*v));
		if (!v)
			return -ENOMEM;
		t->cells = v;
		t->rows_cap = cap;
	}
	row = &t->cells[(size_t)t->nrows * t->ncols];
	for (c = 0; c < t->ncols; c++) {
		row[c].raw = NULL;
		if (cell_set(&row[c], cells[c], t->cols[c].max_width) ||
		    (t->cols[c].min_width &&
		     !(row[c].raw = strdup(cells[c] ? cells[c] : "")))) {
			free(row[c].text);
			while (c--) {
				free(row[c].text);
				free(row[c].raw);
			}
			return -ENOMEM;
		}
	}
	for (c = 0; c < t->ncols; c++)
		if (row[c].width > t->width[c])
			t->width[c] = row[c].width;
	t->nrows++;
	return 0;
}

void text_table__set_hidden(struct text_table *t, unsigned int col,
			    bool hidden)
{
	if (col < t->ncols)
		t->cols[col].hidden = hidden;
}

/* A column's width as the fit counts it. */
static unsigned int fit_cells(const struct text_table *t, unsigned int c)
{
	unsigned int w = t->width[c], m = t->cols[c].min_width;

	if (m && w > m)
		w = m > t->titles[c].width ? m : t->titles[c].width;
	return w;
}

/* Cuts column c's cells to maxw cells, from what they were given. */
static int fit_cut(struct text_table *t, unsigned int c, unsigned int maxw)
{
	struct text_cell *cell;
	unsigned int i, w = t->titles[c].width;
	char *text;

	for (i = 0; i < t->nrows; i++) {
		cell = &t->cells[(size_t)i * t->ncols + c];
		if (cell->width > maxw && cell->raw) {
			text = text__display(cell->raw, maxw,
						   &cell->width);
			if (!text)
				return -ENOMEM;
			free(cell->text);
			cell->text = text;
		}
		if (cell->width > w)
			w = cell->width;
	}
	t->width[c] = w;
	return 0;
}

unsigned int text_table__fit(struct text_table *t, unsigned int width,
			     const unsigned int *drop, unsigned int ndrop,
			     const char **dropped)
{
	unsigned int total = 1, c, i, n = 0, room, want, nwant, share;
	unsigned int give[64];	/* per cut column: its width after */

	if (!width)
		return 0;
	for (c = 0; c < t->ncols; c++)
		if (!t->cols[c].hidden)
			total += fit_cells(t, c) + 3;
	for (i = 0; total > width && i < ndrop; i++) {
		c = drop[i];
		if (c >= t->ncols || t->cols[c].hidden)
			continue;
		t->cols[c].hidden = true;
		total -= fit_cells(t, c) + 3;
		dropped[n++] = t->cols[c].title;
	}
	/* What is left, shared evenly between the columns that are cut
	 * (a column needing less than its share leaves the rest to the
	 * others). */
	room = width > total ? width - total : 0;
	for (c = 0; c < t->ncols && c < 64; c++)
		give[c] = t->cols[c].hidden || !t->cols[c].min_width ?
				  0 : fit_cells(t, c);
	do {
		for (nwant = 0, c = 0; c < t->ncols && c < 64; c++)
			nwant += give[c] && give[c] < t->width[c];
		share = nwant ? room / nwant : 0;
		for (c = 0; share && c < t->ncols && c < 64; c++) {
			if (!give[c] || give[c] >= t->width[c])
				continue;
			want = t->width[c] - give[c];
			want = want < share ? want : share;
			give[c] += want;
			room -= want;
		}
	} while (share);
	for (c = 0; c < t->ncols && c < 64; c++)
		if (give[c] && give[c] < t->width[c])
			/* Out of memory: cells stay whole, the table wider. */
			fit_cut(t, c, give[c]);
	return n;
}

void text_table__fit_footer(FILE *out, const char *const *dropped,
			    unsigned int n, unsigned int width)
{
	unsigned int i;

	if (!n)
		return;
	fprintf(out, "%u %s left out to fit %u characters:", n,
		n == 1 ? "column" : "columns", width);
	for (i = 0; i < n; i++)
		fprintf(out, "%s %s", i ? "," : "", dropped[i]);
	fputs(" (--wide shows every column)\n", out);
}

int text_table__print_fitted(FILE *out, struct text_table *t,
			     unsigned int width, const unsigned int *drop,
			     unsigned int ndrop)
{
	const char *dropped[64];
	unsigned int n;
	int err;

	n = text_table__fit(t, width, drop, ndrop < 64 ? ndrop : 64, dropped);
	err = text_table__print(out, t);
	if (!err)
		text_table__fit_footer(out, dropped, n, width);
	return err;
}

static void print_sep(FILE *out, const struct text_table *t)
{
	unsigned int c, i;

	for (c = 0; c < t->ncols; c++) {
		if (t->cols[c].hidden)
			continue;
		fputc('+', out);
		for (i = 0; i < t->width[c] + 2; i++)
			fputc('-', out);
	}
	fputs("+\n", out);
}

static void print_row(FILE *out, const struct text_table *t,
		      const struct text_cell *row)
{
	unsigned int c;

	for (c = 0; c < t->ncols; c++) {
		int pad = (int)(t->width[c] - row[c].width);

		if (t->cols[c].hidden)
			continue;
		if (t->cols[c].align == TEXT_LEFT)
			fprintf(out, "| %s%*s ", row[c].text, pad, "");
		else
			fprintf(out, "| %*s%s ", pad, "", row[c].text);
	}
	fputs("|\n", out);
}

int text_table__print(FILE *out, const struct text_table *t)
{
	unsigned int i;

	print_sep(out, t);
	print_row(out, t, t->titles);
	print_sep(out, t);
	for (i = 0; i < t->nrows; i++)
		print_row(out, t, &t->cells[(size_t)i * t->ncols]);
	print_sep(out, t);
	return ferror(out) ? -EIO : 0;
}

void text_table__free(struct text_table *t)
{
	size_t i;

	for (i = 0; t->cells && i < (size_t)t->nrows * t->ncols; i++) {
		free(t->cells[i].text);
		free(t->cells[i].raw);
	}
	for (i = 0; t->titles && i < t->ncols; i++)
		free(t->titles[i].text);
	free(t->cells);
	free(t->titles);
	free(t->cols);
	free(t->width);
	memset(t, 0, sizeof(*t));
}

const char *text_table__spark(uint64_t v, uint64_t max)
{
	static const char *const bars[] = { "\u2581", "\u2582", "\u2583",
					     "\u2584", "\u2585", "\u2586",
					     "\u2587", "\u2588" };

	if (!max || v >= max)
		return bars[max ? 7 : 0];
	return bars[(unsigned int)((unsigned __int128)v * 7 / max)];
}
