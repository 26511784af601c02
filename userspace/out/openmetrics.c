// SPDX-License-Identifier: MIT
/*
 * The OpenMetrics / Prometheus text exposition of `sptrace serve`.
 *
 * With 10,000 queries a scrape is some 300,000 lines, so lines are built
 * by hand in one buffer: each row's label set is escaped once and copied
 * into every line of that row, numbers are formatted without printf, and
 * seconds are written as exact decimals of the nanosecond counts.
 *
 * The latency histogram has fixed bounds (sptrace/ladder.h). A kernel
 * bucket is counted under an `le` only if its whole range is <= le. serve
 * has the kernel count by ladder slot, one bucket per slot that lies
 * within it, so its counts are exact; from fine buckets an observation
 * within one kernel bucket (3%) below a bound would be counted under the
 * next bound up (never too high, at most one kernel bucket too low).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "mem_report.h"
#include "openmetrics.h"
#include "text.h"
#include "vec.h"

static const char *const bound_str[OM_NBOUNDS] = {
	"1e-06", "2e-06", "5e-06", "1e-05", "2e-05", "5e-05",
	"0.0001", "0.0002", "0.0005", "0.001", "0.002", "0.005",
	"0.01", "0.02", "0.05", "0.1", "0.2", "0.5",
	"1.0", "2.0", "5.0", "10.0",
};

const char *openmetrics__content_type(bool openmetrics)
{
	return openmetrics ?
		"application/openmetrics-text; version=1.0.0; charset=utf-8" :
		"text/plain; version=0.0.4; charset=utf-8";
}

void om_buf__free(struct om_buf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

static bool grow(struct om_buf *b, size_t more)
{
	size_t cap;
	char *p;

	if (b->oom)
		return false;
	if (b->len + more <= b->cap)
		return true;
	cap = b->cap ? b->cap : 65536;
	while (cap < b->len + more)
		cap *= 2;
	p = realloc(b->p, cap);
	if (!p) {
		b->oom = true;
		return false;
	}
	b->p = p;
	b->cap = cap;
	return true;
}

static void put(struct om_buf *b, const char *s, size_t n)
{
	if (!grow(b, n))
		return;
	memcpy(b->p + b->len, s, n);
	b->len += n;
}

static void puts_(struct om_buf *b, const char *s)
{
	put(b, s, strlen(s));
}

/* Longest text of fmt_u64() and fmt_secs(). */
#define OM_NUM_MAX 32

/* v in decimal at o; its length. */
static size_t fmt_u64(char *o, uint64_t v)
{
	char tmp[24];
	int i = sizeof(tmp);

	do {
		tmp[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	memcpy(o, tmp + i, sizeof(tmp) - (size_t)i);
	return sizeof(tmp) - (size_t)i;
}

/* ns as seconds, exactly: "12.000345678". */
static size_t fmt_secs(char *o, uint64_t ns)
{
	uint64_t f = ns % 1000000000ull;
	size_t n = fmt_u64(o, ns / 1000000000ull);
	int i;

	o[n] = '.';
	for (i = 9; i >= 1; i--) {
		o[n + (size_t)i] = (char)('0' + f % 10);
		f /= 10;
	}
	return n + 10;
}

static void put_u64(struct om_buf *b, uint64_t v)
{
	char tmp[OM_NUM_MAX];

	put(b, tmp, fmt_u64(tmp, v));
}

static void put_secs(struct om_buf *b, uint64_t ns)
{
	char tmp[OM_NUM_MAX];

	put(b, tmp, fmt_secs(tmp, ns));
}

static uint32_t fnv1a32(const char *s)
{
	uint32_t h = 2166136261u;

	while (*s) {
		h ^= (unsigned char)*s++;
		h *= 16777619u;
	}
	return h;
}

/*
 * A label value: \ " and LF escaped, each byte of invalid UTF-8 as U+FFFD.
 * A name with invalid bytes also gets the hash of its raw bytes, so two
 * such names stay two series, the same ones at every scrape.
 */
static void put_label_value(struct om_buf *b, const char *s, bool tag)
{
	const char *p = s;
	bool bad = false;
	uint32_t cp;
	int n;

	put(b, "\"", 1);
	while (*p) {
		n = text__utf8_next(p, &cp);
		if (!n) {
			put(b, "\xef\xbf\xbd", 3);
			bad = true;
			p++;
			continue;
		}
		if (*p == '\\')
			put(b, "\\\\", 2);
		else if (*p == '"')
			put(b, "\\\"", 2);
		else if (*p == '\n')
			put(b, "\\n", 2);
		else
			put(b, p, (size_t)n);
		p += n;
	}
	if (bad && tag) {
		static const char hex[] = "0123456789abcdef";
		char h[] = " (invalid UTF-8 #00000000)";
		uint32_t v = fnv1a32(s);
		int i;

		for (i = 0; i < 8; i++)
			h[24 - i] = hex[(v >> (4 * i)) & 15];
		put(b, h, sizeof(h) - 1);
	}
	put(b, "\"", 1);
}

static const struct om_process *proc_of(const struct om_input *in,
					uint32_t pid)
{
	size_t lo = 0, hi = in->nprocs;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (in->procs[mid].pid == pid)
			return &in->procs[mid];
		if (in->procs[mid].pid < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* pid="..",comm=".." and, if `all`, ,binary="..",title=".." */
static void put_labels_of(struct om_buf *b, uint32_t pid,
			  const struct om_process *p, bool all)
{
	puts_(b, "pid=\"");
	put_u64(b, pid);
	puts_(b, "\",comm=");
	put_label_value(b, p ? p->comm : "", false);
	if (!all)
		return;
	puts_(b, ",binary=");
	put_label_value(b, p ? p->binary : "", false);
	puts_(b, ",title=");
	put_label_value(b, p && p->title ? p->title : "", false);
}

/* Every label of a process: pid, comm, binary, title. */
static void put_proc_labels(struct om_buf *b, uint32_t pid,
			    const struct om_process *p)
{
	put_labels_of(b, pid, p, true);
}

/*
 * The process labels of a per-query series. binary and title are more
 * than half of such a line's bytes, on some 33 lines per row: by default
 * they are left to sptrace_process_info, once per process.
 */
static void put_row_proc_labels(struct om_buf *b, const struct om_input *in,
				uint32_t pid, const struct om_process *p)
{
	put_labels_of(b, pid, p, in->proc_labels == OM_PROC_LABELS_SERIES);
}

/* # HELP / # TYPE (/ # UNIT) of a family. Counters' samples end in
 * _total, info metrics' in _info; the text format names the family by
 * its sample, and has no info type: a gauge of value 1. */
static void family(struct om_buf *b, const struct om_input *in,
		   const char *name, const char *type, const char *unit,
		   const char *help)
{
	bool counter = !strcmp(type, "counter");
	bool info = !strcmp(type, "info");
	const char *suffix = in->openmetrics ? "" :
			     counter ? "_total" : info ? "_info" : "";

	if (info && !in->openmetrics)
		type = "gauge";

	puts_(b, "# HELP ");
	puts_(b, name);
	puts_(b, suffix);
	put(b, " ", 1);
	puts_(b, help);
	puts_(b, "\n# TYPE ");
	puts_(b, name);
	puts_(b, suffix);
	put(b, " ", 1);
	puts_(b, type);
	put(b, "\n", 1);
	if (unit && in->openmetrics) {
		puts_(b, "# UNIT ");
		puts_(b, name);
		put(b, " ", 1);
		puts_(b, unit);
		put(b, "\n", 1);
	}
}

enum field {
	F_COUNT, F_CACHE_HITS, F_BLOCKED, F_BLOCKED_NS, F_INCR, F_INCR_NS,
	F_SELF_NS, F_TOTAL_NS,
};

static const struct {
	const char *name, *unit, *help;
	enum field f;
} counters[] = {
	{ "sptrace_query_invocations", NULL,
	  "Completed invocations of the query.", F_COUNT },
	{ "sptrace_query_cache_hits", NULL,
	  "Cache hits of the query (SP_CACHE_HIT).", F_CACHE_HITS },
	{ "sptrace_query_blocked", NULL,
	  "Times a thread blocked waiting for the query.", F_BLOCKED },
	{ "sptrace_query_blocked_seconds", "seconds",
	  "Time threads spent blocked waiting for the query.", F_BLOCKED_NS },
	{ "sptrace_query_incr_loads", NULL,
	  "Incremental loads of the query's result.", F_INCR },
	{ "sptrace_query_incr_load_seconds", "seconds",
	  "Time spent in incremental loads of the query's result.", F_INCR_NS },
	{ "sptrace_query_self_seconds", "seconds",
	  "Self time of the query: its time minus its nested queries'.",
	  F_SELF_NS },
	{ "sptrace_query_time_seconds", "seconds",
	  "Total (inclusive) time of the query, nested queries included.",
	  F_TOTAL_NS },
};

#define OM_NCOUNTERS (sizeof(counters) / sizeof(counters[0]))
/* A row's numbers: its counters, its cumulative bucket counts (+Inf
 * last), _count and _sum. */
#define OM_NUM_BUCKET OM_NCOUNTERS
#define OM_NUM_COUNT (OM_NUM_BUCKET + OM_NBOUNDS + 1)
#define OM_NUM_SUM (OM_NUM_COUNT + 1)
#define OM_NNUMS (OM_NUM_SUM + 1)

static uint64_t field_of(const struct sp_query_stats *st, enum field f)
{
	switch (f) {
	case F_COUNT: return st->count;
	case F_CACHE_HITS: return st->cache_hits;
	case F_BLOCKED: return st->blocked_count;
	case F_BLOCKED_NS: return st->blocked_ns;
	case F_INCR: return st->incr_loads;
	case F_INCR_NS: return st->incr_load_ns;
	case F_SELF_NS: return st->self_ns;
	case F_TOTAL_NS: return st->total_ns;
	}
	return 0;
}

/*
 * A row's text: its escaped `query` label and its numbers as text. With
 * 10,000 rows most of an exposition is copying these, and formatting them
 * is most of a render: a row's numbers are formatted again only when its
 * figures changed, else its last text is copied.
 *
 * Every write puts the texts of all its rows into one new block, a
 * generation (om_gen), never written again: the cache's rows point into
 * the last one, and each snapshot holds the one it was made with. A
 * scrape still sending an older snapshot keeps that block whole while
 * later writes make new ones; the block goes when its last holder does,
 * in one free (one mapping, for 10,000 rows), so a burst of slow scrapes
 * leaves no texts scattered in the heap. Copying an unchanged text costs
 * less than formatting it. Reference counts are plain: serve's one
 * thread.
 */
struct om_text {
	uint32_t qlab_len;		/* data starts with query="..." */
	uint16_t end[OM_NNUMS];		/* number i ends at data[qlab_len +
					 * end[i]] */
	char data[];
};

struct om_gen {
	unsigned int refs;
	char *p;
	size_t len, cap;
};

static void gen_put(struct om_gen *g)
{
	if (g && !--g->refs) {
		free(g->p);
		free(g);
	}
}

static const struct om_text *text_at(const struct om_gen *g, size_t off)
{
	return (const struct om_text *)(const void *)(g->p + off);
}

/* Room for a text of len bytes at the end of g (aligned for om_text);
 * its offset, or -ENOMEM. */
static long gen_alloc(struct om_gen *g, size_t len)
{
	size_t off = (g->len + 3) & ~(size_t)3;

	if (VEC_RESERVE_MIN(g->p, g->cap, off + len, 65536))
		return -ENOMEM;
	g->len = off + len;
	return (long)off;
}

struct om_row {
	char *name;			/* the key, with pid (owned) */
	uint32_t pid;
	uint32_t seen;			/* the last write that had it */
	char *qlab;			/* query="..." (owned) */
	size_t qlab_len;
	struct sp_query_stats st;	/* what its text says */
	uint64_t cum[OM_NBOUNDS + 1];	/* per bound, not yet cumulative */
	bool formatted;			/* it has a text, in the cache's block */
	size_t toff;			/* where */
};

struct om_cache {
	struct om_row *rows;
	size_t n, cap;
	uint32_t *slots;		/* (name, pid) -> row + 1 */
	size_t nslots;			/* a power of two, >= 2 * cap */
	uint32_t gen;
	struct om_gen *texts;		/* the last write's texts, or NULL */
};

struct om_cache *om_cache__new(void)
{
	return calloc(1, sizeof(struct om_cache));
}

static void row_free(struct om_row *r)
{
	free(r->name);
	free(r->qlab);
}

void om_cache__free(struct om_cache *c)
{
	size_t i;

	if (!c)
		return;
	for (i = 0; i < c->n; i++)
		row_free(&c->rows[i]);
	free(c->rows);
	free(c->slots);
	gen_put(c->texts);
	free(c);
}

static uint64_t row_hash(const char *name, uint32_t pid)
{
	uint64_t h = 0xcbf29ce484222325ull;

	while (*name) {
		h ^= (unsigned char)*name++;
		h *= 0x100000001b3ull;
	}
	return h ^ ((uint64_t)pid * 0x9e3779b97f4a7c15ull);
}

static uint32_t *slot_of(const struct om_cache *c, const char *name,
			 uint32_t pid)
{
	size_t mask = c->nslots - 1, i = row_hash(name, pid) & mask;

	while (c->slots[i] && (c->rows[c->slots[i] - 1].pid != pid ||
			       strcmp(c->rows[c->slots[i] - 1].name, name)))
		i = (i + 1) & mask;
	return &c->slots[i];
}

static int slots_rebuild(struct om_cache *c, size_t nslots)
{
	uint32_t *slots = calloc(nslots, sizeof(*slots));
	size_t i;

	if (!slots)
		return -ENOMEM;
	free(c->slots);
	c->slots = slots;
	c->nslots = nslots;
	for (i = 0; i < c->n; i++)
		*slot_of(c, c->rows[i].name, c->rows[i].pid) = (uint32_t)i + 1;
	return 0;
}

/* The cached row (name, pid), made on first sight; its index or -ENOMEM. */
static long cache_row(struct om_cache *c, const char *name, uint32_t pid)
{
	struct om_buf q = {};
	struct om_row *r;
	uint32_t *slot;

	if (c->nslots) {
		slot = slot_of(c, name, pid);
		if (*slot)
			return (long)*slot - 1;
	}
	if (c->n == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 256;
		struct om_row *rows;

		if (cap > UINT32_MAX / 4)
			return -ENOMEM;
		rows = realloc(c->rows, cap * sizeof(*rows));
		if (!rows)
			return -ENOMEM;
		c->rows = rows;
		c->cap = cap;
		if (slots_rebuild(c, 2 * cap))
			return -ENOMEM;
	}
	puts_(&q, "query=");
	put_label_value(&q, name, true);
	r = &c->rows[c->n];
	memset(r, 0, sizeof(*r));
	r->name = strdup(name);
	r->pid = pid;
	/* Its own size: an om_buf starts at 64 KiB. */
	r->qlab = q.oom || q.len > UINT32_MAX ? NULL : malloc(q.len);
	r->qlab_len = q.len;
	if (r->qlab)
		memcpy(r->qlab, q.p, q.len);
	om_buf__free(&q);
	if (!r->name || !r->qlab) {
		row_free(r);
		return -ENOMEM;
	}
	*slot_of(c, name, pid) = (uint32_t)++c->n;
	return (long)c->n - 1;
}

/* The row's text into the new block g: copied from the cache's block
 * (old), or made again if its figures are not those it says. */
static int row_format(struct om_row *e, const struct sp_query_row *r,
		      const struct om_gen *old, struct om_gen *g)
{
	uint64_t cum[OM_NBOUNDS + 1] = { 0 }, total = 0, sum_ns;
	char t[OM_NNUMS * OM_NUM_MAX];
	uint16_t end[OM_NNUMS];
	struct om_text *txt;
	size_t len = 0;
	unsigned int j, i;
	long off;
	int k;

	/* Each bin under the first bound at or above its largest value:
	 * ladder.h's rule, the one its unit test holds the BPF side to. */
	for (j = 0; j < r->nbins; j++)
		cum[sp_ladder_bucket_slot(r->bins[j].bucket)] +=
			r->bins[j].count;
	if (e->formatted && old && !memcmp(&e->st, &r->st, sizeof(e->st)) &&
	    !memcmp(e->cum, cum, sizeof(cum))) {
		const struct om_text *was = text_at(old, e->toff);

		len = sizeof(*was) + was->qlab_len + was->end[OM_NNUMS - 1];
		off = gen_alloc(g, len);
		if (off < 0)
			return (int)off;
		memcpy(g->p + off, was, len);
		e->toff = (size_t)off;
		return 0;
	}
	for (i = 0; i < OM_NCOUNTERS; i++) {
		uint64_t v = field_of(&r->st, counters[i].f);

		len += counters[i].unit ? fmt_secs(t + len, v)
					: fmt_u64(t + len, v);
		end[i] = (uint16_t)len;
	}
	for (k = 0; k <= OM_NBOUNDS; k++) {
		total += cum[k];
		len += fmt_u64(t + len, total);
		end[OM_NUM_BUCKET + k] = (uint16_t)len;
	}
	len += fmt_u64(t + len, total);
	end[OM_NUM_COUNT] = (uint16_t)len;
	/* Every observation is an invocation's total time: the row's time
	 * minus its blocked and incremental-load time. */
	sum_ns = r->st.total_ns - r->st.blocked_ns - r->st.incr_load_ns;
	if (sum_ns > r->st.total_ns)
		sum_ns = 0;
	len += fmt_secs(t + len, sum_ns);
	end[OM_NUM_SUM] = (uint16_t)len;
	off = gen_alloc(g, sizeof(*txt) + e->qlab_len + len);
	if (off < 0)
		return (int)off;
	txt = (struct om_text *)(void *)(g->p + off);
	txt->qlab_len = (uint32_t)e->qlab_len;
	memcpy(txt->end, end, sizeof(end));
	memcpy(txt->data, e->qlab, e->qlab_len);
	memcpy(txt->data + e->qlab_len, t, len);
	e->toff = (size_t)off;
	e->formatted = true;
	e->st = r->st;
	memcpy(e->cum, cum, sizeof(cum));
	return 0;
}

/* Drops the rows the last write did not have. */
static int cache_sweep(struct om_cache *c)
{
	size_t i, j;

	for (i = j = 0; i < c->n; i++) {
		if (c->rows[i].seen == c->gen)
			c->rows[j++] = c->rows[i];
		else
			row_free(&c->rows[i]);
	}
	if (j == c->n)
		return 0;
	c->n = j;
	return slots_rebuild(c, c->nslots);
}

/*
 * The text that does not depend on the rows: the families' # HELP/# TYPE
 * lines and each sample's name up to its labels, and after the labels.
 * Kept as offsets into one buffer (`fixed`).
 */
enum {
	FX_HDR,				/* + family: OM_NCOUNTERS + 1 of them */
	FX_PRE = FX_HDR + OM_NCOUNTERS + 1,	/* + counter: "name_total{" */
	FX_BPRE = FX_PRE + OM_NCOUNTERS,	/* "..._bucket{" */
	FX_CPRE, FX_SPRE,		/* "..._count{", "..._sum{" */
	FX_MID,				/* + k: ",le=\"..\"} " */
	FX_CLOSE = FX_MID + OM_NBOUNDS + 1,	/* "} " */
	FX_N,
};

/* The lines a row has in the histogram family: buckets, _count, _sum. */
#define OM_HIST_LINES (OM_NBOUNDS + 1 + 2)

struct om_snap_row {
	size_t toff;			/* its text, in `texts` */
	uint32_t plab, plab_len;	/* its process labels, in `plab` */
};

struct om_snapshot {
	unsigned int refs;
	size_t nrows;
	struct om_snap_row *rows;
	struct om_gen *texts;
	struct om_buf plab;		/* every process's labels */
	struct om_buf fixed;
	size_t fx_off[FX_N + 1];	/* piece i: [fx_off[i], fx_off[i + 1]) */
	struct om_buf tail;		/* --mem, sptrace's own figures, # EOF */
	size_t len;			/* of the whole exposition */
};

struct piece {
	const char *p;
	size_t n;
};

static struct piece fx(const struct om_snapshot *sn, unsigned int i)
{
	return (struct piece){ sn->fixed.p + sn->fx_off[i],
			       sn->fx_off[i + 1] - sn->fx_off[i] };
}

/*
 * The item at the cursor as pieces (at most 6): a family's header, one
 * sample line (6 pieces, then a newline), or the tail. 0 past the end. Items in order: per counter,
 * its header then a line per row; the histogram's header then
 * OM_HIST_LINES per row; the tail.
 */
static unsigned int item_pieces(const struct om_snapshot *sn,
				const struct om_cursor *c, struct piece *pc)
{
	const struct om_snap_row *r;
	const struct om_text *t;
	unsigned int num, pre, mid;
	size_t n0;

	if (c->sect > OM_NCOUNTERS) {
		if (c->sect > OM_NCOUNTERS + 1)
			return 0;
		pc[0] = (struct piece){ sn->tail.p, sn->tail.len };
		return 1;
	}
	if (!c->in_rows) {
		pc[0] = fx(sn, FX_HDR + c->sect);
		return 1;
	}
	r = &sn->rows[c->row];
	t = text_at(sn->texts, r->toff);
	if (c->sect < OM_NCOUNTERS) {
		num = c->sect;
		pre = FX_PRE + c->sect;
		mid = FX_CLOSE;
	} else if (c->line <= OM_NBOUNDS) {
		num = OM_NUM_BUCKET + c->line;
		pre = FX_BPRE;
		mid = FX_MID + c->line;
	} else {
		num = c->line == OM_NBOUNDS + 1 ? OM_NUM_COUNT : OM_NUM_SUM;
		pre = num == OM_NUM_COUNT ? FX_CPRE : FX_SPRE;
		mid = FX_CLOSE;
	}
	n0 = num ? t->end[num - 1] : 0;
	pc[0] = fx(sn, pre);
	pc[1] = (struct piece){ t->data, t->qlab_len };
	pc[2] = (struct piece){ ",", 1 };
	pc[3] = (struct piece){ sn->plab.p + r->plab, r->plab_len };
	pc[4] = fx(sn, mid);
	pc[5] = (struct piece){ t->data + t->qlab_len + n0,
				t->end[num] - n0 };
	return 6;
}

static void item_next(const struct om_snapshot *sn, struct om_cursor *c)
{
	if (c->sect > OM_NCOUNTERS) {
		c->sect++;
		return;
	}
	if (!c->in_rows) {
		c->in_rows = true;
		c->row = 0;
		c->line = 0;
	} else if (c->sect == OM_NCOUNTERS &&
		   ++c->line < OM_HIST_LINES) {
		return;
	} else {
		c->line = 0;
		c->row++;
	}
	if (c->row >= sn->nrows) {
		c->sect++;
		c->in_rows = false;
		c->row = 0;
	}
}

size_t om_snapshot__read(const struct om_snapshot *sn, struct om_cursor *c,
			 char *buf, size_t max)
{
	struct piece pc[6];
	size_t got = 0, len, skip, k;
	unsigned int n, i;

	while (got < max && (n = item_pieces(sn, c, pc))) {
		/* A sample line ends with its number's newline. */
		bool nl = n == 6;

		for (i = 0, len = nl; i < n; i++)
			len += pc[i].n;
		if (!c->off && len <= max - got) {
			char *o = buf + got;

			for (i = 0; i < n; i++) {
				memcpy(o, pc[i].p, pc[i].n);
				o += pc[i].n;
			}
			if (nl)
				*o = '\n';
			got += len;
			item_next(sn, c);
			continue;
		}
		/* Cut: what fits of the item from c->off on. */
		skip = c->off;
		for (i = 0; i <= n && got < max; i++) {
			const char *p = i < n ? pc[i].p : "\n";
			size_t pn = i < n ? pc[i].n : nl;

			if (skip >= pn) {
				skip -= pn;
				continue;
			}
			k = pn - skip < max - got ? pn - skip : max - got;
			memcpy(buf + got, p + skip, k);
			got += k;
			c->off += k;
			skip = 0;
		}
		if (c->off == len) {
			c->off = 0;
			item_next(sn, c);
		}
	}
	c->pos += got;
	return got;
}

size_t om_snapshot__len(const struct om_snapshot *sn)
{
	return sn->len;
}

struct om_snapshot *om_snapshot__get(struct om_snapshot *sn)
{
	sn->refs++;
	return sn;
}

bool om_snapshot__put(struct om_snapshot *sn)
{
	if (!sn || --sn->refs)
		return false;
	gen_put(sn->texts);
	free(sn->rows);
	om_buf__free(&sn->plab);
	om_buf__free(&sn->fixed);
	om_buf__free(&sn->tail);
	free(sn);
	return true;
}

/* The families' headers and the samples' fixed parts. */
static void fixed_prepare(struct om_snapshot *sn, const struct om_input *in)
{
	static const char *const hname = "sptrace_query_latency_seconds";
	struct om_buf *b = &sn->fixed;
	unsigned int c;
	int k;

	for (c = 0; c < OM_NCOUNTERS; c++) {
		sn->fx_off[FX_HDR + c] = b->len;
		family(b, in, counters[c].name, "counter", counters[c].unit,
		       counters[c].help);
	}
	sn->fx_off[FX_HDR + OM_NCOUNTERS] = b->len;
	family(b, in, hname, "histogram", "seconds",
	       "Latency (total time) of each invocation of the query.");
	for (c = 0; c < OM_NCOUNTERS; c++) {
		sn->fx_off[FX_PRE + c] = b->len;
		puts_(b, counters[c].name);
		puts_(b, "_total{");
	}
	sn->fx_off[FX_BPRE] = b->len;
	puts_(b, hname);
	puts_(b, "_bucket{");
	sn->fx_off[FX_CPRE] = b->len;
	puts_(b, hname);
	puts_(b, "_count{");
	sn->fx_off[FX_SPRE] = b->len;
	puts_(b, hname);
	puts_(b, "_sum{");
	for (k = 0; k <= OM_NBOUNDS; k++) {
		sn->fx_off[FX_MID + k] = b->len;
		puts_(b, ",le=\"");
		puts_(b, k < OM_NBOUNDS ? bound_str[k] : "+Inf");
		puts_(b, "\"} ");
	}
	sn->fx_off[FX_CLOSE] = b->len;
	puts_(b, "} ");
	sn->fx_off[FX_N] = b->len;
}

/* The snapshot's length, piece by piece as item_pieces() lays it out. */
static size_t snapshot_len(const struct om_snapshot *sn)
{
	size_t len = sn->tail.len, per_row = 0, i;
	unsigned int c;
	int k;

	for (c = 0; c <= OM_NCOUNTERS; c++)
		len += fx(sn, FX_HDR + c).n;
	/* What every row's lines have besides its own text and labels. */
	for (c = 0; c < OM_NCOUNTERS; c++)
		per_row += fx(sn, FX_PRE + c).n + fx(sn, FX_CLOSE).n;
	for (k = 0; k <= OM_NBOUNDS; k++)
		per_row += fx(sn, FX_BPRE).n + fx(sn, FX_MID + k).n;
	per_row += fx(sn, FX_CPRE).n + fx(sn, FX_SPRE).n +
		   2 * fx(sn, FX_CLOSE).n;
	for (i = 0; i < sn->nrows; i++) {
		const struct om_snap_row *r = &sn->rows[i];
		const struct om_text *t = text_at(sn->texts, r->toff);

		/* Per line: label, ",", process labels, newline. */
		len += per_row + t->end[OM_NNUMS - 1] +
		       (OM_NCOUNTERS + OM_HIST_LINES) *
			       ((size_t)t->qlab_len + 1 + r->plab_len + 1);
	}
	return len;
}

/* The rows' texts, from the cache or made now, and every process's
 * labels once, into sn. */
static int rows_prepare(const struct om_input *in, struct om_cache *c,
			struct om_snapshot *sn)
{
	const struct summary *s = in->s;
	struct om_buf *plab = &sn->plab;
	struct om_gen *g;
	size_t *poff, p, at, i;
	long e;
	int err = 0;

	c->gen++;
	g = calloc(1, sizeof(*g));
	poff = calloc(in->nprocs + 1, sizeof(*poff));
	if (!g || !poff) {
		free(g);
		free(poff);
		return -ENOMEM;
	}
	g->refs = 1;
	/* About the last block's size: no copies while it fills. */
	if (c->texts && c->texts->len) {
		g->cap = c->texts->len + c->texts->len / 8;
		g->p = malloc(g->cap);
		if (!g->p)
			g->cap = 0;
	}
	for (p = 0; p < in->nprocs; p++) {
		poff[p] = plab->len;
		put_row_proc_labels(plab, in, in->procs[p].pid, &in->procs[p]);
	}
	poff[in->nprocs] = plab->len;
	for (i = 0; !err && i < s->nrows; i++) {
		const struct sp_query_row *r = &s->rows[i];
		const struct om_process *op = proc_of(in, r->pid);
		struct om_snap_row *sr = &sn->rows[i];

		e = cache_row(c, r->name, r->pid);
		if (e < 0) {
			err = (int)e;
			break;
		}
		if (op) {
			p = (size_t)(op - in->procs);
			at = poff[p];
			sr->plab_len = (uint32_t)(poff[p + 1] - poff[p]);
		} else {
			/* Not among the processes: labels of its own. */
			at = plab->len;
			put_row_proc_labels(plab, in, r->pid, NULL);
			sr->plab_len = (uint32_t)(plab->len - at);
		}
		sr->plab = (uint32_t)at;
		/* A row twice in one write keeps the text it got first. */
		if (c->rows[e].seen != c->gen) {
			c->rows[e].seen = c->gen;
			err = row_format(&c->rows[e], r, c->texts, g);
			if (err)
				break;
		}
		sr->toff = c->rows[e].toff;
		sn->nrows = i + 1;
	}
	free(poff);
	if (!err && (plab->oom || plab->len > UINT32_MAX))
		err = -ENOMEM;
	if (err) {
		/* Rows moved to g already: every row is formatted anew. */
		for (i = 0; i < c->n; i++)
			c->rows[i].formatted = false;
		gen_put(g);
		g = NULL;
	}
	gen_put(c->texts);
	c->texts = g;
	sn->texts = g;
	if (g)
		g->refs++;
	return err;
}

static int pid_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * sptrace_process_info: one sample of value 1 per process that has rows
 * in the exposition, with all its labels, for PromQL to join the
 * per-query series to on their pid (docs/fleet.md):
 *   ... * on(instance, pid) group_left(binary) sptrace_process_info
 * pid 0 (every exited process) is one of them. A pid among the rows but
 * not among the processes (gone before sptrace saw it) gets the empty
 * labels its rows have, so that the join keeps its rows too. Written in
 * both --process-labels modes: dashboards can move to the join first.
 */
static int write_process_info(struct om_buf *b, const struct om_input *in)
{
	const struct summary *s = in->s;
	uint32_t *other = NULL, pid;
	size_t nother = 0, other_cap = 0, i, j;
	const struct om_process *op;
	bool *used;
	int err = 0;

	used = calloc(in->nprocs + 1, sizeof(*used));
	if (!used)
		return -ENOMEM;
	for (i = 0; i < s->nrows; i++) {
		pid = s->rows[i].pid;
		if (i && pid == s->rows[i - 1].pid)
			continue;	/* a process's rows are mostly together */
		op = proc_of(in, pid);
		if (op) {
			used[op - in->procs] = true;
		} else if (VEC_RESERVE(other, other_cap, nother + 1)) {
			err = -ENOMEM;
			goto cleanup;
		} else {
			other[nother++] = pid;
		}
	}
	if (nother)
		qsort(other, nother, sizeof(*other), pid_cmp);
	family(b, in, "sptrace_process", "info", NULL,
	       "Labels of each traced process that has series: join on pid for binary and title.");
	/* Both lists are sorted by pid and have no pid in common. */
	for (i = j = 0; i < in->nprocs || j < nother;) {
		if (j < nother && (i == in->nprocs ||
				   other[j] < in->procs[i].pid)) {
			pid = other[j++];
			op = NULL;
			if (j > 1 && other[j - 2] == pid)
				continue;
		} else {
			op = &in->procs[i];
			pid = op->pid;
			if (!used[i++])
				continue;
		}
		puts_(b, "sptrace_process_info{");
		put_proc_labels(b, pid, op);
		puts_(b, "} 1\n");
	}
	err = b->oom ? -ENOMEM : 0;
cleanup:
	free(other);
	free(used);
	return err;
}

static void scalar(struct om_buf *b, const struct om_input *in,
		   const char *name, const char *type, const char *unit,
		   const char *help, uint64_t v, bool secs)
{
	family(b, in, name, type, unit, help);
	puts_(b, name);
	if (!strcmp(type, "counter"))
		puts_(b, "_total");
	put(b, " ", 1);
	if (secs)
		put_secs(b, v);
	else
		put_u64(b, v);
	put(b, "\n", 1);
}

static void write_health(struct om_buf *b, const struct om_input *in)
{
	const struct om_health *h = in->h;
	const struct summary *s = in->s;
	static const struct om_health none;
	unsigned int i;
	size_t p;

	if (!h)
		h = &none;
	scalar(b, in, "sptrace_lost_events", "counter", NULL,
	       "Probe events the kernel side could not take.", s->lost, false);
	/* Not a loss: events counted like the rest, each through a trap.
	 * No series where sptrace could not count them (never a made-up 0). */
	if (!s->batch_fallback_unknown)
		scalar(b, in, "sptrace_batch_fallback", "counter", NULL,
		       "Events of batched files that fired their per-event site instead (their thread's ring was gone); counted like the rest.",
		       s->batch_fallback, false);
	if (s->overhead.known) {
		uint64_t probe, cpu;
		double share = summary__overhead_share(&s->overhead, &probe,
						       &cpu);

		/* rate() of the two is the overhead now; the gauge is the
		 * session's so far (docs/numbers.md, "Overhead"). */
		scalar(b, in, "sptrace_probe_cost_seconds", "counter", "seconds",
		       "Estimated CPU time the traced processes spent in sptrace's probes, over the time their CPU time was read.",
		       probe, true);
		scalar(b, in, "sptrace_traced_cpu_seconds", "counter", "seconds",
		       "CPU time of the traced processes over the same time.",
		       cpu, true);
		if (share >= 0) {
			char num[32];

			family(b, in, "sptrace_overhead_ratio", "gauge", NULL,
			       "Estimated share of the traced processes' CPU time spent in sptrace's probes, this session.");
			snprintf(num, sizeof(num), "%.6f", share);
			puts_(b, "sptrace_overhead_ratio ");
			puts_(b, num);
			put(b, "\n", 1);
		}
	}
	if (s->nsampled) {
		unsigned int i, every = 1;

		for (i = 0; i < s->nsampled; i++)
			if (s->sampled[i].every > every)
				every = s->sampled[i].every;
		scalar(b, in, "sptrace_sampled_processes", "gauge", NULL,
		       "Processes --max-overhead traced in sampled windows; their counts are those windows' own.",
		       s->nsampled, false);
		scalar(b, in, "sptrace_sampling_every", "gauge", NULL,
		       "The sparsest sampling so far: 1 window of 100 ms in this many.",
		       every, false);
	}
	scalar(b, in, "sptrace_map_full", "counter", NULL,
	       "Events not counted because a BPF map was full (raise --max-queries).",
	       summary__map_full(s), false);
	family(b, in, "sptrace_errors", "counter", NULL,
	       "Events counted as errors, by kind (docs/numbers.md).");
	for (i = 0; i < SP_ERR__MAX; i++) {
		puts_(b, "sptrace_errors_total{kind=\"");
		puts_(b, summary__error_name(i));
		puts_(b, "\"} ");
		put_u64(b, s->errors[i]);
		put(b, "\n", 1);
	}
	scalar(b, in, "sptrace_evicted_rows", "counter", NULL,
	       "Rows of exited processes moved out of the BPF maps.",
	       h->evicted_rows, false);
	scalar(b, in, "sptrace_exited_processes", "counter", NULL,
	       "Traced processes seen exiting.", h->exited_processes, false);
	scalar(b, in, "sptrace_attached_probes", "gauge", NULL,
	       "Probe sites attached.", h->attached_probes, false);
	scalar(b, in, "sptrace_targets_alive", "gauge", NULL,
	       "Traced processes alive at this scrape.", h->targets_alive,
	       false);
	scalar(b, in, "sptrace_folded_rows", "gauge", NULL,
	       "Rows summed into \"<other>\" rows by --top at this scrape.",
	       h->folded_rows, false);
	scalar(b, in, "sptrace_http_dropped_connections", "counter", NULL,
	       "Scrape connections closed for being slow, idle or over the limit.",
	       h->http_dropped, false);
	scalar(b, in, "sptrace_http_rejected_requests", "counter", NULL,
	       "Requests answered 4xx or 505, and connections closed unanswered before their timeout.", h->http_rejected, false);
	scalar(b, in, "sptrace_read_duration_seconds", "gauge", "seconds",
	       "Time the last read of the BPF maps took.",
	       (uint64_t)(h->read_seconds * 1e9), true);
	scalar(b, in, "sptrace_resident_memory_bytes", "gauge", "bytes",
	       "Resident memory of sptrace itself.", h->self_rss_bytes, false);
	family(b, in, "sptrace_process_resident_memory_bytes", "gauge",
	       "bytes", "Resident memory of each traced process alive.");
	for (p = 0; p < in->nprocs; p++) {
		const struct om_process *op = &in->procs[p];

		if (!op->alive || !op->rss_bytes)
			continue;
		puts_(b, "sptrace_process_resident_memory_bytes{");
		put_proc_labels(b, op->pid, op);
		puts_(b, "} ");
		put_u64(b, op->rss_bytes);
		put(b, "\n", 1);
	}
}

/* --mem: per type (summed over processes), the libc heap as "(heap)". */
static void write_mem(struct om_buf *b, const struct om_input *in)
{
	static const struct {
		const char *name, *type, *unit, *help;
	} fam[] = {
		{ "sptrace_mem_allocations", "counter", NULL,
		  "Allocations of the type (scaled when --sample)." },
		{ "sptrace_mem_allocated_bytes", "counter", "bytes",
		  "Bytes allocated for the type." },
		{ "sptrace_mem_frees", "counter", NULL,
		  "Frees of the type's allocations." },
		{ "sptrace_mem_freed_bytes", "counter", "bytes",
		  "Bytes of the type freed." },
		{ "sptrace_mem_live_allocations", "gauge", NULL,
		  "Allocations of the type not freed yet." },
		{ "sptrace_mem_live_bytes", "gauge", "bytes",
		  "Bytes of the type not freed yet." },
		{ "sptrace_mem_peak_live_bytes", "gauge", "bytes",
		  "Highest live bytes of the type (summed over processes)." },
	};
	const struct mem_report *r = in->mem;
	unsigned int k, i;

	for (k = 0; k < sizeof(fam) / sizeof(fam[0]); k++) {
		family(b, in, fam[k].name, fam[k].type, fam[k].unit,
		       fam[k].help);
		for (i = 0; i <= r->ntypes; i++) {
			const struct mem_figures *f;
			const uint64_t *v;

			if (i == r->ntypes && !r->heap_traced)
				break;
			f = i < r->ntypes ? &r->types[i].f : &r->heap;
			v = (const uint64_t[]){ f->allocs, f->alloc_bytes,
						f->frees, f->free_bytes, f->live,
						f->live_bytes,
						f->peak_live_bytes };
			puts_(b, fam[k].name);
			if (!strcmp(fam[k].type, "counter"))
				puts_(b, "_total");
			puts_(b, "{type=");
			put_label_value(b, i < r->ntypes ? r->types[i].name
							 : "(heap)", true);
			puts_(b, "} ");
			put_u64(b, v[k]);
			put(b, "\n", 1);
		}
	}
}

int openmetrics__snapshot(const struct om_input *in,
			  struct om_snapshot **out)
{
	struct om_cache *c = in->cache ? in->cache : om_cache__new();
	struct om_snapshot *sn;
	int err;

	*out = NULL;
	sn = calloc(1, sizeof(*sn));
	if (sn) {
		sn->refs = 1;
		sn->rows = calloc(in->s->nrows + 1, sizeof(*sn->rows));
	}
	if (!c || !sn || !sn->rows) {
		err = -ENOMEM;
		goto cleanup;
	}
	err = rows_prepare(in, c, sn);
	if (err)
		goto cleanup;
	fixed_prepare(sn, in);
	err = write_process_info(&sn->tail, in);
	if (err)
		goto cleanup;
	if (in->mem)
		write_mem(&sn->tail, in);
	write_health(&sn->tail, in);
	if (in->openmetrics)
		puts_(&sn->tail, "# EOF\n");
	err = sn->fixed.oom || sn->tail.oom ? -ENOMEM : 0;
	if (!err)
		sn->len = snapshot_len(sn);
cleanup:
	/* Rows that went (their process evicted, --top) are forgotten. */
	if (c && !err)
		err = cache_sweep(c);
	if (c != in->cache)
		om_cache__free(c);	/* the snapshot holds its texts */
	if (err)
		om_snapshot__put(sn);
	else
		*out = sn;
	return err;
}

int openmetrics__write(struct om_buf *b, const struct om_input *in)
{
	struct om_cursor cur = {};
	struct om_snapshot *sn;
	size_t len;
	int err;

	err = openmetrics__snapshot(in, &sn);
	if (err)
		return err;
	len = om_snapshot__len(sn);
	if (grow(b, len)) {
		b->len += om_snapshot__read(sn, &cur, b->p + b->len, len);
		err = 0;
	} else {
		err = -ENOMEM;
	}
	om_snapshot__put(sn);
	return err;
}
