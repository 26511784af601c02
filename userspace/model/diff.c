// SPDX-License-Identifier: MIT
/*
 * Two summaries joined by query name (diff.h); out/diff_writer.c writes
 * the result as a table or JSON. Only the summaries' own figures are compared; nothing is
 * re-derived from events here.
 *
 * Queries present in one run only are kept as rows with zeros on the other
 * side and marked: status "new" (only in NEW) or "gone" (only in BASE), in
 * a Status column of the table (hidden when no row needs it, so a plain
 * before/after comparison stays narrow) and in the JSON "status" field. A
 * column rather than a name suffix: long names are cut at 60 cells, and the
 * mark must not be cut with them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "diff.h"
#include "text.h"

static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static void figs_of(struct diff_figs *f, const struct sp_query_stats *st)
{
	f->self_ns = st->self_ns;
	f->total_ns = st->total_ns;
	f->count = st->count;
	f->cache_hits = st->cache_hits;
	f->blocked_ns = st->blocked_ns;
	f->incr_load_ns = st->incr_load_ns;
}

static void figs_add(struct diff_figs *t, const struct diff_figs *f)
{
	t->self_ns = sat_add(t->self_ns, f->self_ns);
	t->total_ns = sat_add(t->total_ns, f->total_ns);
	t->count = sat_add(t->count, f->count);
	t->cache_hits = sat_add(t->cache_hits, f->cache_hits);
	t->blocked_ns = sat_add(t->blocked_ns, f->blocked_ns);
	t->incr_load_ns = sat_add(t->incr_load_ns, f->incr_load_ns);
}

bool diff__delta(uint64_t base, uint64_t new, uint64_t *mag)
{
	if (new >= base) {
		*mag = new - base;
		return false;
	}
	*mag = base - new;
	return true;
}

bool diff__self_pct(const struct diff_row *r, double *pct)
{
	if (!r->base.self_ns)
		return false;
	*pct = ((double)r->new.self_ns - (double)r->base.self_ns) * 100.0 /
	       (double)r->base.self_ns;
	return true;
}

static int cmp_change(const void *a, const void *b)
{
	const struct diff_row *x = a, *y = b;
	uint64_t dx, dy;

	diff__delta(x->base.self_ns, x->new.self_ns, &dx);
	diff__delta(y->base.self_ns, y->new.self_ns, &dy);
	if (dx != dy)
		return dx < dy ? 1 : -1;
	return strcmp(x->name, y->name);
}

/* One side's rows, keyed by their cleaned name. */
struct side_row {
	char *key;
	struct diff_figs f;
};

static int cmp_side(const void *a, const void *b)
{
	const struct side_row *x = a, *y = b;

	return strcmp(x->key, y->key);
}

char *diff__clean_name(const char *name)
{
	size_t len = strlen(name), at = 0;
	const char *p;
	uint32_t cp;
	char *out;
	int n;

	if (len > (SIZE_MAX - 1) / 3)
		return NULL;
	out = malloc(3 * len + 1);
	if (!out)
		return NULL;
	for (p = name; *p; p += n) {
		n = text__utf8_next(p, &cp);
		if (!n) {
			memcpy(out + at, "\xef\xbf\xbd", 3);
			at += 3;
			n = 1;
		} else {
			memcpy(out + at, p, (size_t)n);
			at += (size_t)n;
		}
	}
	out[at] = '\0';
	return out;
}

static void side_free(struct side_row *v, unsigned int n)
{
	unsigned int i;

	for (i = 0; v && i < n; i++)
		free(v[i].key);
	free(v);
}

/* The summary's rows by cleaned name, equal names summed. 0 or -ENOMEM. */
static int side_rows(const struct summary *s, struct side_row **out,
		     unsigned int *nout)
{
	struct side_row *v;
	unsigned int i, n = 0;

	v = calloc(s->nrows ? s->nrows : 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (i = 0; i < s->nrows; i++) {
		v[i].key = diff__clean_name(s->rows[i].name);
		if (!v[i].key) {
			side_free(v, i);
			return -ENOMEM;
		}
		figs_of(&v[i].f, &s->rows[i].st);
	}
	qsort(v, s->nrows, sizeof(*v), cmp_side);
	for (i = 0; i < s->nrows; i++) {
		if (n && !strcmp(v[n - 1].key, v[i].key)) {
			figs_add(&v[n - 1].f, &v[i].f);
			free(v[i].key);
		} else {
			v[n++] = v[i];
		}
	}
	*out = v;
	*nout = n;
	return 0;
}

int diff__build(struct diff *d, const struct summary *base,
		const struct summary *new)
{
	static char total_name[] = "Total";
	struct side_row *b = NULL, *n = NULL;
	unsigned int nb = 0, nn = 0, i = 0, j = 0;
	struct diff_row *r;
	int err;

	memset(d, 0, sizeof(*d));
	d->total.name = total_name;
	d->base_duration_ns = base->duration_ns;
	d->new_duration_ns = new->duration_ns;
	err = side_rows(base, &b, &nb);
	if (!err)
		err = side_rows(new, &n, &nn);
	if (err)
		goto cleanup;
	d->rows = calloc((size_t)nb + nn + 1, sizeof(*d->rows));
	if (!d->rows) {
		err = -ENOMEM;
		goto cleanup;
	}
	/* Merge join; each key moves to its row or is freed with its side. */
	while (i < nb || j < nn) {
		int c;

		if (i == nb)
			c = 1;
		else if (j == nn)
			c = -1;
		else
			c = strcmp(b[i].key, n[j].key);
		r = &d->rows[d->nrows++];
		if (c <= 0) {
			r->name = b[i].key;
			b[i].key = NULL;
			r->base = b[i++].f;
		}
		if (c >= 0) {
			if (!r->name) {
				r->name = n[j].key;
				n[j].key = NULL;
			}
			r->new = n[j++].f;
		}
		r->status = c < 0 ? DIFF_GONE : c > 0 ? DIFF_NEW : DIFF_BOTH;
		d->nnew += r->status == DIFF_NEW;
		d->ngone += r->status == DIFF_GONE;
		figs_add(&d->total.base, &r->base);
		figs_add(&d->total.new, &r->new);
	}
	qsort(d->rows, d->nrows, sizeof(*d->rows), cmp_change);
cleanup:
	side_free(b, nb);
	side_free(n, nn);
	return err;
}

void diff__free(struct diff *d)
{
	unsigned int i;

	for (i = 0; d->rows && i < d->nrows; i++)
		free(d->rows[i].name);
	free(d->rows);
	memset(d, 0, sizeof(*d));
}
