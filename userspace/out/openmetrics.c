// SPDX-License-Identifier: MIT
/*
 * The OpenMetrics / Prometheus text exposition of `sptrace serve`.
 *
 * With 10,000 queries a scrape is some 300,000 lines, so lines are built
 * by hand in one buffer: each row's label set is escaped once and copied
 * into every line of that row, numbers are formatted without printf, and
 * seconds are written as exact decimals of the nanosecond counts.
 *
 * The latency histogram has fixed bounds (om_bounds_ns). The kernel's
 * log-linear buckets are finer; a kernel bucket is counted under an `le`
 * only if its whole range is <= le, so an observation within one kernel
 * bucket (3%) below a bound may be counted under the next bound up: the
 * cumulative count at a bound is never too high, and at most one kernel
 * bucket's content too low.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "mem_report.h"
#include "openmetrics.h"
#include "text.h"

const uint64_t om_bounds_ns[OM_NBOUNDS] = {
	1000, 2000, 5000, 10000, 20000, 50000,
	100000, 200000, 500000, 1000000, 2000000, 5000000,
	10000000, 20000000, 50000000, 100000000, 200000000, 500000000,
	1000000000, 2000000000, 5000000000, 10000000000,
};

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

/* pid="..",comm="..",binary="..",title=".." */
static void put_proc_labels(struct om_buf *b, uint32_t pid,
			    const struct om_process *p)
{
	puts_(b, "pid=\"");
	put_u64(b, pid);
	puts_(b, "\",comm=");
	put_label_value(b, p ? p->comm : "", false);
	puts_(b, ",binary=");
	put_label_value(b, p ? p->binary : "", false);
	puts_(b, ",title=");
	put_label_value(b, p && p->title ? p->title : "", false);
}

/* # HELP / # TYPE (/ # UNIT) of a family. Counters' samples end in
 * _total; the text format names the counter by its sample. */
static void family(struct om_buf *b, const struct om_input *in,
		   const char *name, const char *type, const char *unit,
		   const char *help)
{
	bool counter = !strcmp(type, "counter");
	const char *suffix = counter && !in->openmetrics ? "_total" : "";

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
 * The pieces of a row's samples that do not depend on the family: its
 * escaped `query` label and its numbers as text. With 10,000 rows most
 * of a write is copying these; a row whose figures are those of the
 * last write keeps its text (a scrape re-formats only the rows that
 * changed).
 */
struct om_row {
	char *name;			/* the key, with pid (owned) */
	uint32_t pid;
	uint32_t seen;			/* the last write that had it */
	char *qlab;			/* query="..." (owned) */
	size_t qlab_len;
	struct sp_query_stats st;	/* what `num` says */
	uint64_t cum[OM_NBOUNDS + 1];	/* per bound, not yet cumulative */
	char *num;			/* number i ends at end[i] (owned) */
	uint16_t end[OM_NNUMS];
	bool formatted;
};

struct om_cache {
	struct om_row *rows;
	size_t n, cap;
	uint32_t *slots;		/* (name, pid) -> row + 1 */
	size_t nslots;			/* a power of two, >= 2 * cap */
	uint32_t gen;
};

struct om_cache *om_cache__new(void)
{
	return calloc(1, sizeof(struct om_cache));
}

static void row_free(struct om_row *r)
{
	free(r->name);
	free(r->qlab);
	free(r->num);
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
	r->qlab = q.oom ? NULL : malloc(q.len);
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

/* The row's numbers as text, unless they are those already written. */
static int row_format(struct om_row *e, const struct sp_query_row *r)
{
	uint64_t cum[OM_NBOUNDS + 1] = { 0 }, total = 0, sum_ns;
	char t[OM_NNUMS * OM_NUM_MAX], *num;
	size_t len = 0;
	unsigned int j, i;
	int k;

	for (j = 0, k = 0; j < r->nbins; j++) {
		uint64_t top = sp_hist_bucket_hi(r->bins[j].bucket) - 1;

		/* Bins are sorted: the bound index only grows. */
		while (k < OM_NBOUNDS && top > om_bounds_ns[k])
			k++;
		cum[k] += r->bins[j].count;
	}
	if (e->formatted && !memcmp(&e->st, &r->st, sizeof(e->st)) &&
	    !memcmp(e->cum, cum, sizeof(cum)))
		return 0;
	for (i = 0; i < OM_NCOUNTERS; i++) {
		uint64_t v = field_of(&r->st, counters[i].f);

		len += counters[i].unit ? fmt_secs(t + len, v)
					: fmt_u64(t + len, v);
		e->end[i] = (uint16_t)len;
	}
	for (k = 0; k <= OM_NBOUNDS; k++) {
		total += cum[k];
		len += fmt_u64(t + len, total);
		e->end[OM_NUM_BUCKET + k] = (uint16_t)len;
	}
	len += fmt_u64(t + len, total);
	e->end[OM_NUM_COUNT] = (uint16_t)len;
	/* Every observation is an invocation's total time: the row's time
	 * minus its blocked and incremental-load time. */
	sum_ns = r->st.total_ns - r->st.blocked_ns - r->st.incr_load_ns;
	if (sum_ns > r->st.total_ns)
		sum_ns = 0;
	len += fmt_secs(t + len, sum_ns);
	e->end[OM_NUM_SUM] = (uint16_t)len;
	num = realloc(e->num, len);
	if (!num) {
		e->formatted = false;
		return -ENOMEM;
	}
	memcpy(num, t, len);
	e->num = num;
	e->st = r->st;
	memcpy(e->cum, cum, sizeof(cum));
	e->formatted = true;
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

/* A sample's text is found, per row, at these. */
struct row_ref {
	size_t row;			/* in the cache */
	const struct om_row *e;
	size_t plab;			/* offset of its process labels */
	size_t plab_len;
};

/* name{query="..",pid="..",...MID NUMBER\n */
static void put_sample(struct om_buf *b, const char *pre, size_t pre_len,
		       const struct row_ref *r, const char *plab,
		       const char *mid, size_t mid_len, unsigned int num)
{
	size_t n0 = num ? r->e->end[num - 1] : 0;
	size_t nlen = r->e->end[num] - n0;
	size_t len = pre_len + r->e->qlab_len + 1 + r->plab_len + mid_len +
		     nlen + 1;
	char *o;

	if (!grow(b, len))
		return;
	o = b->p + b->len;
	memcpy(o, pre, pre_len);
	o += pre_len;
	memcpy(o, r->e->qlab, r->e->qlab_len);
	o += r->e->qlab_len;
	*o++ = ',';
	memcpy(o, plab + r->plab, r->plab_len);
	o += r->plab_len;
	memcpy(o, mid, mid_len);
	o += mid_len;
	memcpy(o, r->e->num + n0, nlen);
	o[nlen] = '\n';
	b->len += len;
}

static void write_rows(struct om_buf *b, const struct om_input *in,
		       const struct row_ref *refs, const char *plab)
{
	static const char *const hname = "sptrace_query_latency_seconds";
	const struct summary *s = in->s;
	char pre[96], bpre[96], cpre[96], spre[96];
	char mid[OM_NBOUNDS + 1][24];
	size_t pre_len, bpre_len, cpre_len, spre_len;
	size_t mid_len[OM_NBOUNDS + 1];
	unsigned int i, c;
	int k;

	for (c = 0; c < OM_NCOUNTERS; c++) {
		family(b, in, counters[c].name, "counter", counters[c].unit,
		       counters[c].help);
		pre_len = (size_t)snprintf(pre, sizeof(pre), "%s_total{",
					   counters[c].name);
		for (i = 0; i < s->nrows; i++)
			put_sample(b, pre, pre_len, &refs[i], plab, "} ", 2, c);
	}
	family(b, in, hname, "histogram", "seconds",
	       "Latency (total time) of each invocation of the query.");
	bpre_len = (size_t)snprintf(bpre, sizeof(bpre), "%s_bucket{", hname);
	cpre_len = (size_t)snprintf(cpre, sizeof(cpre), "%s_count{", hname);
	spre_len = (size_t)snprintf(spre, sizeof(spre), "%s_sum{", hname);
	for (k = 0; k <= OM_NBOUNDS; k++)
		mid_len[k] = (size_t)snprintf(mid[k], sizeof(mid[k]),
					      ",le=\"%s\"} ",
					      k < OM_NBOUNDS ? bound_str[k]
							     : "+Inf");
	for (i = 0; i < s->nrows; i++) {
		for (k = 0; k <= OM_NBOUNDS; k++)
			put_sample(b, bpre, bpre_len, &refs[i], plab, mid[k],
				   mid_len[k], OM_NUM_BUCKET + (unsigned int)k);
		put_sample(b, cpre, cpre_len, &refs[i], plab, "} ", 2,
			   OM_NUM_COUNT);
		put_sample(b, spre, spre_len, &refs[i], plab, "} ", 2,
			   OM_NUM_SUM);
	}
}

/* The rows' pieces, from the cache or made now, and every process's
 * labels once: refs[i] for row i, labels in *plab. */
static int rows_prepare(const struct om_input *in, struct om_cache *c,
			struct row_ref *refs, struct om_buf *plab)
{
	const struct summary *s = in->s;
	size_t *poff, p;
	unsigned int i;
	long e;
	int err = 0;

	c->gen++;
	poff = calloc(in->nprocs + 1, sizeof(*poff));
	if (!poff)
		return -ENOMEM;
	for (p = 0; p < in->nprocs; p++) {
		poff[p] = plab->len;
		put_proc_labels(plab, in->procs[p].pid, &in->procs[p]);
	}
	poff[in->nprocs] = plab->len;
	for (i = 0; !err && i < s->nrows; i++) {
		const struct sp_query_row *r = &s->rows[i];
		const struct om_process *op = proc_of(in, r->pid);

		e = cache_row(c, r->name, r->pid);
		if (e < 0) {
			err = (int)e;
			break;
		}
		refs[i].row = (size_t)e;
		if (op) {
			p = (size_t)(op - in->procs);
			refs[i].plab = poff[p];
			refs[i].plab_len = poff[p + 1] - poff[p];
		} else {
			/* Not among the processes: labels of its own. */
			refs[i].plab = plab->len;
			put_proc_labels(plab, r->pid, NULL);
			refs[i].plab_len = plab->len - refs[i].plab;
		}
		c->rows[e].seen = c->gen;
		err = row_format(&c->rows[e], r);
	}
	free(poff);
	if (!err && plab->oom)
		err = -ENOMEM;
	/* The cache's array has stopped moving. */
	for (i = 0; !err && i < s->nrows; i++)
		refs[i].e = &c->rows[refs[i].row];
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

int openmetrics__write(struct om_buf *b, const struct om_input *in)
{
	struct om_cache *c = in->cache ? in->cache : om_cache__new();
	struct row_ref *refs;
	struct om_buf plab = {};
	int err;

	refs = calloc(in->s->nrows + 1, sizeof(*refs));
	if (!c || !refs) {
		err = -ENOMEM;
		goto cleanup;
	}
	err = rows_prepare(in, c, refs, &plab);
	if (err)
		goto cleanup;
	write_rows(b, in, refs, plab.p);
	if (in->mem)
		write_mem(b, in);
	write_health(b, in);
	if (in->openmetrics)
		puts_(b, "# EOF\n");
	err = b->oom ? -ENOMEM : 0;
cleanup:
	/* Rows that went (their process evicted, --top) are forgotten. */
	if (c && !err)
		err = cache_sweep(c);
	if (c != in->cache)
		om_cache__free(c);
	om_buf__free(&plab);
	free(refs);
	return err;
}
