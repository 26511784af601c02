/* SPDX-License-Identifier: MIT */
/*
 * The boxed text table (+---+ borders, measureme `summarize` layout) shared
 * by the summary table and `sptrace diff`: columns with a title, an
 * alignment and a hidden flag, rows of cell strings. Every cell and title is
 * made terminal-safe (controls, bidi controls and invalid UTF-8 shown as
 * \xHH, '\' as \\) and measured in terminal cells without the locale.
 */
#ifndef SPTRACE_TEXT_TABLE_H
#define SPTRACE_TEXT_TABLE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

enum text_align { TEXT_LEFT = 0, TEXT_RIGHT };

struct text_col {
	const char *title;
	enum text_align align;
	bool hidden;
	/* Cells wider than this many terminal cells are cut and end in
	 * "..."; 0 means no limit. */
	unsigned int max_width;
	/* text_table__fit() may cut this column's cells down to this many
	 * cells (0: it never cuts this column). */
	unsigned int min_width;
};

struct text_cell {
	char *text;		/* display form, owned */
	unsigned int width;	/* in terminal cells */
	char *raw;		/* as given, kept where min_width is set */
};

struct text_table {
	struct text_col *cols;	/* copy of the caller's columns */
	struct text_cell *titles;
	unsigned int ncols;
	struct text_cell *cells;	/* nrows * ncols, row-major */
	unsigned int nrows, rows_cap;
	unsigned int *width;	/* per column: widest title or cell */
};

/* 0 or -ENOMEM (-EINVAL for no columns). t is ready for text_table__free()
 * whatever the result. */
int text_table__init(struct text_table *t, const struct text_col *cols,
		     unsigned int ncols);
/* Appends one row of ncols strings (NULL: empty), copied in display form.
 * 0 or -ENOMEM. */
int text_table__add_row(struct text_table *t, const char *const *cells);
void text_table__set_hidden(struct text_table *t, unsigned int col,
			    bool hidden);
/*
 * Fits the table built so far in `width` terminal characters (0: no limit,
 * --wide), the rule of every boxed table (docs/formats.md#fitting-120-characters):
 * each column counts as its widest cell or title plus 3 for its border, a
 * column with min_width as at most min_width; while that is wider than
 * `width`, the columns drop[0..ndrop-1] are left out in that order; then
 * the min_width columns (among the first 64) share what is left evenly,
 * and their longer cells end in "...". The titles of the columns left out go to
 * dropped[] (room for ndrop); returns how many.
 */
unsigned int text_table__fit(struct text_table *t, unsigned int width,
			     const unsigned int *drop, unsigned int ndrop,
			     const char **dropped);
/* The line under a table that names the columns text_table__fit() left
 * out ("2 columns left out to fit 120 characters: A, B (--wide shows
 * every column)"); nothing when n is 0. */
void text_table__fit_footer(FILE *out, const char *const *dropped,
			    unsigned int n, unsigned int width);
/* text_table__fit(), text_table__print() and text_table__fit_footer() in
 * one, for a table with nothing between them. 0 or -EIO. */
int text_table__print_fitted(FILE *out, struct text_table *t,
			     unsigned int width, const unsigned int *drop,
			     unsigned int ndrop);
/* Separator, title row, separator, rows, separator. Left-aligned cells are
 * padded after, right-aligned ones before, both by display width.
 * 0 or -EIO if the stream is in error. */
int text_table__print(FILE *out, const struct text_table *t);
void text_table__free(struct text_table *t);

/* The sparkline bar (U+2581..U+2588, one terminal cell) of v on a scale
 * from 0 to max: v * 7 / max eighths, rounded down; the lowest bar when max
 * is 0. One scale for every sparkline sptrace prints. */
const char *text_table__spark(uint64_t v, uint64_t max);

#endif /* SPTRACE_TEXT_TABLE_H */
