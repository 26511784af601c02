// SPDX-License-Identifier: MIT
/*
 * The trace-file sections of the HTML report (html_trace.h), drawn here as
 * SVG with every name HTML-escaped, so no name reaches the page's script.
 *
 * The icicle is built from export__folded()'s lines rather than from a
 * second walk of replay: its frames are then exactly those `sptrace export
 * --folded` writes (kinds marked "[blocked]"/"[incr]", names cleaned), and
 * a frame's width is the self time of everything under it. The outermost
 * frames hang from one root, "all threads".
 *
 * The thread timeline needs each interval's start and end, which folded
 * stacks drop, so it replays the file itself: each thread's outermost
 * intervals (depth 0) are its busy time. Intervals closer than one drawn
 * unit are merged into one segment, so a run of a million short queries
 * stays a page of a few thousand rectangles.
 */
#include <errno.h>
#include <limits.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "export.h"
#include "html_trace.h"
#include "replay.h"
#include "text.h"
#include "trace_format.h"

#define NS_BUF 24
/* Drawing units of the two charts (their viewBox; the page scales them). */
#define FLAME_W 1200.0
#define FLAME_ROW 18.0
#define FLAME_CELL 6.8		/* one monospace cell at 11px: 0.6em, and room */
#define LANE_LABEL 170.0
#define LANE_NAME_CELLS 18	/* after the tid, in LANE_LABEL */
#define LANE_W 1000.0
#define LANE_H 20.0

static int reader_next(void *ctx, struct trace_event *ev)
{
	return trace_reader__next(ctx, ev);
}

static const char *reader_string(void *ctx, uint32_t id)
{
	return trace_reader__string(ctx, id);
}

/* ---- the icicle ---------------------------------------------------------- */

struct node {
	char *name;
	uint32_t child, next;		/* first child, next sibling; 0: none */
	uint64_t self, total;
};

struct tree {
	struct node *v;
	uint32_t n, cap;
};

static int tree_add(struct tree *t, const char *name, size_t len,
		    uint32_t *idx)
{
	struct node *v;

	if (t->n == t->cap) {
		uint32_t cap = t->cap ? t->cap * 2 : 64;

		v = realloc(t->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		t->v = v;
		t->cap = cap;
	}
	v = &t->v[t->n];
	memset(v, 0, sizeof(*v));
	v->name = strndup(name, len);
	if (!v->name)
		return -ENOMEM;
	*idx = t->n++;
	return 0;
}

/* The child of parent called name[0..len), created if missing. */
static int tree_child(struct tree *t, uint32_t parent, const char *name,
		      size_t len, uint32_t *idx)
{
	uint32_t c, last = 0;
	int err;

	for (c = t->v[parent].child; c; c = t->v[c].next) {
		if (strlen(t->v[c].name) == len && !memcmp(t->v[c].name, name, len)) {
			*idx = c;
			return 0;
		}
		last = c;
	}
	err = tree_add(t, name, len, idx);
	if (err)
		return err;
	if (last)
		t->v[last].next = *idx;
	else
		t->v[parent].child = *idx;
	return 0;
}

/* One folded line "a;b;c WEIGHT" into the tree. */
static int tree_line(struct tree *t, char *line)
{
	char *sp = strrchr(line, ' '), *p, *semi, *end;
	uint32_t cur = 0, idx;
	uint64_t w;
	int err;

	if (!sp)
		return 0;
	errno = 0;
	w = strtoull(sp + 1, &end, 10);
	if (errno || end == sp + 1)
		return 0;
	*sp = '\0';
	t->v[0].total += w;
	for (p = line; ; p = semi + 1) {
		semi = strchr(p, ';');
		err = tree_child(t, cur, p, semi ? (size_t)(semi - p) : strlen(p),
				 &idx);
		if (err)
			return err;
		cur = idx;
		t->v[cur].total += w;
		if (!semi)
			break;
	}
	t->v[cur].self += w;
	return 0;
}

static void tree_free(struct tree *t)
{
	uint32_t i;

	for (i = 0; i < t->n; i++)
		free(t->v[i].name);
	free(t->v);
}

/* A colour class that stays the same for a name across runs. */
static unsigned int name_class(const char *s)
{
	unsigned int h = 5381;

	while (*s)
		h = h * 33 + (unsigned char)*s++;
	return h % 4;
}

struct flame_draw {
	FILE *out;
	const struct tree *t;
	double scale;			/* units per ns of self time */
	uint32_t depth_max;
	uint64_t hidden;		/* frames too narrow to draw */
};

/*
 * A frame's label: its name whole if it fits the frame, else cut with
 * "..." (the display form of text.h: the table's, with \xHH for controls),
 * else none; the title shows it whole on hover. Labels are monospace
 * (the CSS), so the cells that fit are known here: FLAME_CELL units each
 * at 11px, after a 3-unit margin on either side. Returns the cells
 * (UINT_MAX: no cut needed), 0 for no label.
 */
static unsigned int label_fit(const char *name, double w)
{
	unsigned int cells = w > 6 ? (unsigned int)((w - 6) / FLAME_CELL) : 0;
	unsigned int width;
	char *full = text__display(name, UINT_MAX, &width);

	free(full);
	if (full && width <= cells)
		return UINT_MAX;
	/* Cut: at least one character before the "...". */
	return cells >= 4 ? cells : 0;
}

static void flame_node(struct flame_draw *d, uint32_t i, double x,
		       uint32_t depth)
{
	const struct node *v = &d->t->v[i];
	double w = (double)v->total * d->scale, y = depth * FLAME_ROW;
	char tot[NS_BUF], self[NS_BUF];
	unsigned int cells;
	uint32_t c;

	if (w < 0.3) {
		d->hidden++;
		return;
	}
	if (depth > d->depth_max)
		d->depth_max = depth;
	text__fmt_ns(tot, sizeof(tot), v->total);
	text__fmt_ns(self, sizeof(self), v->self);
	fprintf(d->out, "<g class=\"fr %s\" data-depth=\"%u\" data-total=\"%"
		PRIu64 "\" data-self=\"%" PRIu64 "\"><title>", i ? (name_class(
		v->name) == 0 ? "k0" : name_class(v->name) == 1 ? "k1" :
		name_class(v->name) == 2 ? "k2" : "k3") : "root", depth,
		v->total, v->self);
	text__html_display(d->out, v->name, UINT_MAX);
	fprintf(d->out, ": %s, self %s (%.2f%% of all)</title><rect x=\"%.2f\" "
		"y=\"%.0f\" width=\"%.2f\" height=\"%.0f\"/><svg x=\"%.2f\" y=\"%.0f\""
		" width=\"%.2f\" height=\"%.0f\"><text x=\"3\" y=\"13\">", tot, self,
		d->t->v[0].total ? (double)v->total * 100.0 /
		(double)d->t->v[0].total : 0.0, x, y, w, FLAME_ROW, x, y, w,
		FLAME_ROW);
	cells = label_fit(v->name, w);
	if (cells)
		text__html_display(d->out, v->name, cells);
	fputs("</text></svg>", d->out);
	for (c = v->child; c; c = d->t->v[c].next) {
		flame_node(d, c, x, depth + 1);
		x += (double)d->t->v[c].total * d->scale;
	}
	fputs("</g>", d->out);
}

static int write_flame(FILE *out, const char *path)
{
	struct export_source src = { reader_next, reader_string, NULL };
	struct flame_draw d = { .out = out };
	struct tree t = { 0 };
	struct trace_reader *r;
	char msg[512], *buf = NULL, *line, *save = NULL;
	size_t len = 0;
	uint32_t root;
	FILE *mem;
	int err;

	if (trace_reader__open(path, &r, msg, sizeof(msg)))
		return 0;
	mem = open_memstream(&buf, &len);
	if (!mem) {
		err = -errno;
		goto cleanup;
	}
	src.ctx = r;
	err = export__folded(mem, &src, NULL);
	if (fclose(mem) && !err)
		err = -ENOMEM;
	if (!err)
		err = tree_add(&t, "all threads", strlen("all threads"), &root);
	for (line = buf ? strtok_r(buf, "\n", &save) : NULL; !err && line;
	     line = strtok_r(NULL, "\n", &save))
		err = tree_line(&t, line);
	if (err)
		goto cleanup;
	fputs("<section id=\"flame\"><h2>Where the time went: recorded stacks"
	      "</h2>\n<p>Each bar is a query inside the one above it; its width "
	      "is its self time plus that of everything it called, on every "
	      "thread (as <code>sptrace export --folded</code> counts it). "
	      "Hover for figures.</p>\n", out);
	if (!t.v[0].total) {
		fputs("<p class=\"empty\">No completed intervals.</p></section>\n",
		      out);
		goto cleanup;
	}
	d.t = &t;
	d.scale = FLAME_W / (double)t.v[0].total;
	/* Drawn into a buffer first: the height is known only at the end. */
	free(buf);
	buf = NULL;
	mem = open_memstream(&buf, &len);
	if (!mem) {
		err = -errno;
		goto cleanup;
	}
	d.out = mem;
	flame_node(&d, 0, 0.0, 0);
	if (fclose(mem)) {
		err = -ENOMEM;
		goto cleanup;
	}
	fprintf(out, "<svg class=\"icicle\" viewBox=\"0 0 %.0f %.0f\" role=\"img\" "
		"aria-label=\"icicle of recorded stacks\">", FLAME_W,
		(d.depth_max + 1) * FLAME_ROW);
	fwrite(buf, 1, len, out);
	fputs("</svg>\n", out);
	if (d.hidden)
		fprintf(out, "<p class=\"note\">%" PRIu64 " frames narrower than "
			"0.03%% not drawn.</p>\n", d.hidden);
	fputs("</section>\n", out);
cleanup:
	free(buf);
	tree_free(&t);
	trace_reader__close(r);
	return err;
}

/* ---- the thread timeline ------------------------------------------------- */

struct lane {
	uint32_t pid, tid;
	uint32_t name_id;		/* SP_EV_THREAD_NAME; TRACE_NO_STRING */
	uint64_t busy_ns, n;		/* outermost intervals */
	int32_t open;			/* its last segment; -1: none */
};

struct segment {
	uint32_t lane;
	uint32_t name_id;		/* of its first interval */
	uint64_t start, end, n;
};

struct lanes {
	struct lane *v;
	uint32_t n, cap;
	struct segment *s;
	uint32_t ns, scap;
	uint64_t t0, unit_ns;		/* time of x = 0; ns per drawn unit */
	uint64_t dropped;		/* segments past the cap */
	uint64_t tmax;			/* last end seen */
};

static int lane_get(struct lanes *l, uint32_t pid, uint32_t tid, uint32_t *idx)
{
	uint32_t i;

	for (i = l->n; i-- > 0; ) {
		if (l->v[i].pid == pid && l->v[i].tid == tid) {
			*idx = i;
			return 0;
		}
	}
	if (l->n == l->cap) {
		uint32_t cap = l->cap ? l->cap * 2 : 16;
		struct lane *v = realloc(l->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n] = (struct lane){ .pid = pid, .tid = tid,
				    .name_id = TRACE_NO_STRING, .open = -1 };
	*idx = l->n++;
	return 0;
}

static int lanes_interval(void *ctx, const struct replay_interval *iv)
{
	struct lanes *l = ctx;
	struct segment *sg;
	struct lane *ln;
	uint32_t i;
	int err;

	if (iv->cache_hit || iv->depth)
		return 0;
	err = lane_get(l, iv->pid, iv->tid, &i);
	if (err)
		return err;
	ln = &l->v[i];
	ln->busy_ns += iv->total_ns;
	ln->n++;
	if (iv->end_ns > l->tmax)
		l->tmax = iv->end_ns;
	if (ln->open >= 0) {
		sg = &l->s[ln->open];
		if (iv->start_ns < sg->end + l->unit_ns) {
			if (iv->end_ns > sg->end)
				sg->end = iv->end_ns;
			sg->n++;
			return 0;
		}
	}
	if (l->ns == HTML_TRACE_MAX_SEGMENTS) {
		l->dropped++;
		return 0;
	}
	if (l->ns == l->scap) {
		uint32_t cap = l->scap ? l->scap * 2 : 256;

		sg = realloc(l->s, cap * sizeof(*sg));
		if (!sg)
			return -ENOMEM;
		l->s = sg;
		l->scap = cap;
	}
	l->s[l->ns] = (struct segment){ .lane = i, .name_id = iv->name_id,
				       .start = iv->start_ns, .end = iv->end_ns,
				       .n = 1 };
	ln->open = (int32_t)l->ns++;
	return 0;
}

static double lane_x(const struct lanes *l, uint64_t t, uint64_t span)
{
	if (t < l->t0)
		return LANE_LABEL;
	return LANE_LABEL + LANE_W * (double)(t - l->t0) / (double)span;
}

static void write_lanes(FILE *out, const struct lanes *l,
			const struct trace_reader *r, uint64_t span)
{
	uint32_t i, j, nl = l->n < HTML_TRACE_MAX_LANES ? l->n :
			      HTML_TRACE_MAX_LANES;
	char a[NS_BUF], b[NS_BUF];
	const char *name;
	double x0, x1;

	fprintf(out, "<svg class=\"threads\" viewBox=\"0 0 %.0f %.0f\" role=\"img\" "
		"aria-label=\"timeline of threads\">", LANE_LABEL + LANE_W + 10,
		nl * LANE_H + 24);
	text__fmt_ns(a, sizeof(a), span);
	fprintf(out, "<line class=\"axis\" x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" "
		"y2=\"%.0f\"/><text class=\"xl\" x=\"%.0f\" y=\"%.0f\">0s</text>"
		"<text class=\"xl\" x=\"%.0f\" y=\"%.0f\">%s</text>", LANE_LABEL,
		nl * LANE_H + 2, LANE_LABEL + LANE_W, nl * LANE_H + 2, LANE_LABEL,
		nl * LANE_H + 16, LANE_LABEL + LANE_W - 10, nl * LANE_H + 16, a);
	for (i = 0; i < nl; i++) {
		const struct lane *ln = &l->v[i];

		text__fmt_ns(a, sizeof(a), ln->busy_ns);
		fprintf(out, "<g class=\"lane\" data-pid=\"%u\" data-tid=\"%u\" "
			"data-busy=\"%" PRIu64 "\" data-n=\"%" PRIu64 "\"><text "
			"x=\"0\" y=\"%.0f\">", ln->pid, ln->tid, ln->busy_ns, ln->n,
			i * LANE_H + 14);
		name = ln->name_id == TRACE_NO_STRING ? NULL :
		       trace_reader__string(r, ln->name_id);
		fprintf(out, "%u", ln->tid);
		if (name && *name) {
			fputc(' ', out);
			text__html_display(out, name, LANE_NAME_CELLS);
		}
		fprintf(out, "<title>pid %u, thread %u: busy %s in %" PRIu64
			" outermost intervals</title></text>", ln->pid, ln->tid, a,
			ln->n);
		for (j = 0; j < l->ns; j++) {
			const struct segment *sg = &l->s[j];

			if (sg->lane != i)
				continue;
			x0 = lane_x(l, sg->start, span);
			x1 = lane_x(l, sg->end, span);
			text__fmt_ns(a, sizeof(a), sg->start - l->t0);
			text__fmt_ns(b, sizeof(b), sg->end - sg->start);
			fprintf(out, "<rect class=\"sl\" x=\"%.2f\" y=\"%.0f\" "
				"width=\"%.2f\" height=\"%.0f\" data-n=\"%" PRIu64
				"\"><title>", x0, i * LANE_H + 3,
				x1 - x0 < 0.5 ? 0.5 : x1 - x0, LANE_H - 6, sg->n);
			name = trace_reader__string(r, sg->name_id);
			text__html_display(out, name ? name : "[unknown]",
					   UINT_MAX);
			if (sg->n > 1)
				fprintf(out, " and %" PRIu64 " more", sg->n - 1);
			fprintf(out, ": at %s for %s</title></rect>", a, b);
		}
		fputs("</g>", out);
	}
	fputs("</svg>\n", out);
	if (l->n > nl || l->dropped)
		fprintf(out, "<p class=\"note\">Not drawn: %u threads, %" PRIu64
			" segments.</p>\n", l->n - nl, l->dropped);
}

static int write_threads(FILE *out, const char *path, uint64_t duration_ns)
{
	struct lanes l = { 0 };
	struct trace_event ev;
	struct trace_reader *r;
	struct replay rp;
	uint64_t span;
	char msg[512];
	uint32_t i, j;
	int ret;

	if (trace_reader__open(path, &r, msg, sizeof(msg)))
		return 0;
	l.t0 = trace_reader__header(r)->start_mono_ns;
	l.unit_ns = duration_ns / (uint64_t)LANE_W;
	replay__init(&rp, lanes_interval, &l);
	while ((ret = trace_reader__next(r, &ev)) == 1) {
		if (ev.kind == SP_EV_THREAD_NAME) {
			ret = lane_get(&l, ev.pid, ev.tid, &i);
			if (ret)
				break;
			l.v[i].name_id = ev.name_id;
		}
		ret = replay__event(&rp, &ev);
		if (ret)
			break;
	}
	replay__finish(&rp);
	replay__free(&rp);
	if (ret < 0 && ret != -EIO)
		goto cleanup;
	ret = 0;
	span = duration_ns;
	if (l.tmax > l.t0 && l.tmax - l.t0 > span)
		span = l.tmax - l.t0;
	if (!span)
		span = 1;
	fputs("<section id=\"threads\"><h2>Threads over time</h2>\n<p>Each "
	      "thread's outermost queries; intervals less than 0.1% of the run "
	      "apart are drawn as one bar. Hover for names and times.</p>\n", out);
	/* Threads that only named themselves have an empty lane: left out. */
	for (i = 0; i < l.n; ) {
		if (!l.v[i].n) {
			memmove(&l.v[i], &l.v[i + 1], (l.n - i - 1) * sizeof(*l.v));
			l.n--;
			for (j = 0; j < l.ns; j++)
				if (l.s[j].lane > i)
					l.s[j].lane--;
			continue;
		}
		i++;
	}
	if (!l.n)
		fputs("<p class=\"empty\">No completed intervals.</p>", out);
	else
		write_lanes(out, &l, r, span);
	fputs("</section>\n", out);
cleanup:
	free(l.v);
	free(l.s);
	trace_reader__close(r);
	return ret;
}

int html_trace__write(FILE *out, const char *path, uint64_t duration_ns)
{
	int err = write_flame(out, path);

	if (!err)
		err = write_threads(out, path, duration_ns);
	return err;
}
