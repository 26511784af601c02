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

static void put_u64(struct om_buf *b, uint64_t v)
{
	char tmp[24];
	int i = sizeof(tmp);

	do {
		tmp[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	put(b, tmp + i, sizeof(tmp) - (size_t)i);
}

/* ns as seconds, exactly: "12.000345678". */
static void put_secs(struct om_buf *b, uint64_t ns)
{
	char frac[10];
	uint64_t f = ns % 1000000000ull;
	int i;

	put_u64(b, ns / 1000000000ull);
	frac[0] = '.';
	for (i = 9; i >= 1; i--) {
		frac[i] = (char)('0' + f % 10);
		f /= 10;
	}
	put(b, frac, sizeof(frac));
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

/* Where each row's label set starts in `lab` (lab->p + off[i]), NUL-ended. */
struct labels {
	struct om_buf lab;
	size_t *off;
};

static int make_labels(const struct om_input *in, struct labels *l)
{
	const struct summary *s = in->s;
	unsigned int i;

	l->off = calloc(s->nrows + 1, sizeof(*l->off));
	if (!l->off)
		return -ENOMEM;
	for (i = 0; i < s->nrows; i++) {
		const struct sp_query_row *r = &s->rows[i];

		l->off[i] = l->lab.len;
		puts_(&l->lab, "query=");
		put_label_value(&l->lab, r->name, true);
		put(&l->lab, ",", 1);
		put_proc_labels(&l->lab, r->pid, proc_of(in, r->pid));
		put(&l->lab, "", 1);
	}
	return l->lab.oom ? -ENOMEM : 0;
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

static void sample_start(struct om_buf *b, const char *name,
			 const char *suffix, const char *labels)
{
	puts_(b, name);
	puts_(b, suffix);
	put(b, "{", 1);
	puts_(b, labels);
}

static void write_histograms(struct om_buf *b, const struct om_input *in,
			     const struct labels *l)
{
	static const char *const name = "sptrace_query_latency_seconds";
	const struct summary *s = in->s;
	uint64_t cum[OM_NBOUNDS + 1];
	unsigned int i, j;
	int k;

	family(b, in, name, "histogram", "seconds",
	       "Latency (total time) of each invocation of the query.");
	for (i = 0; i < s->nrows; i++) {
		const struct sp_query_row *r = &s->rows[i];
		const char *lab = l->lab.p + l->off[i];
		uint64_t total = 0, sum_ns;

		memset(cum, 0, sizeof(cum));
		for (j = 0, k = 0; j < r->nbins; j++) {
			uint64_t top = sp_hist_bucket_hi(r->bins[j].bucket) - 1;

			/* Bins are sorted: the bound index only grows. */
			while (k < OM_NBOUNDS && top > om_bounds_ns[k])
				k++;
			cum[k] += r->bins[j].count;
		}
		for (k = 0; k <= OM_NBOUNDS; k++) {
			total += cum[k];
			sample_start(b, name, "_bucket", lab);
			puts_(b, ",le=\"");
			puts_(b, k < OM_NBOUNDS ? bound_str[k] : "+Inf");
			puts_(b, "\"} ");
			put_u64(b, total);
			put(b, "\n", 1);
		}
		sample_start(b, name, "_count", lab);
		puts_(b, "} ");
		put_u64(b, total);
		put(b, "\n", 1);
		/* Every observation is an invocation's total time: the
		 * row's time minus its blocked and incremental-load time. */
		sum_ns = r->st.total_ns - r->st.blocked_ns - r->st.incr_load_ns;
		if (sum_ns > r->st.total_ns)
			sum_ns = 0;
		sample_start(b, name, "_sum", lab);
		puts_(b, "} ");
		put_secs(b, sum_ns);
		put(b, "\n", 1);
	}
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
	const struct summary *s = in->s;
	struct labels l = {};
	unsigned int i, c;

	if (make_labels(in, &l)) {
		om_buf__free(&l.lab);
		free(l.off);
		return -ENOMEM;
	}
	for (c = 0; c < sizeof(counters) / sizeof(counters[0]); c++) {
		bool secs = counters[c].unit != NULL;

		family(b, in, counters[c].name, "counter", counters[c].unit,
		       counters[c].help);
		for (i = 0; i < s->nrows; i++) {
			uint64_t v = field_of(&s->rows[i].st, counters[c].f);

			sample_start(b, counters[c].name, "_total",
				     l.lab.p + l.off[i]);
			puts_(b, "} ");
			if (secs)
				put_secs(b, v);
			else
				put_u64(b, v);
			put(b, "\n", 1);
		}
	}
	write_histograms(b, in, &l);
	if (in->mem)
		write_mem(b, in);
	write_health(b, in);
	if (in->openmetrics)
		puts_(b, "# EOF\n");
	om_buf__free(&l.lab);
	free(l.off);
	return b->oom ? -ENOMEM : 0;
}
