// SPDX-License-Identifier: MIT
/*
 * The JSON form of a finished summary: one object that other tools read as
 * a contract (field names and meanings must not change silently). Strings are
 * valid JSON for a strict parser whatever bytes a query name holds.
 *
 * {"version":"1.4","duration_ns":N,"total_self_ns":N,
 *  "queries":[{"name":"...","count":N,...,"hist":[{"lo_ns":N,"hi_ns":N,
 *              "count":N},...]},...],
 *  "errors":{"unbalanced":N,"map_full":N,"lost":N,"end_without_begin":N,...}}
 */
#include <errno.h>
#include <inttypes.h>
#include "json_out.h"
#include "json_summary.h"
#include "json_writer.h"

static void json_hist(struct json_writer *w, const struct sp_query_row *r)
{
	unsigned int i;

	jsonw__name(w, "hist");
	jsonw__start_array(w);
	for (i = 0; i < r->nbins; i++) {
		uint32_t b = r->bins[i].bucket;

		jsonw__start_object(w);
		jsonw__u64_field(w, "lo_ns", sp_hist_bucket_lo(b));
		/* Readers take integers up to 2^63-1 (json_summary.h); only
		 * buckets of durations above 287 years go beyond it: their
		 * hi_ns is left out, as readers may (docs/formats.md). */
		if (sp_hist_bucket_hi(b) <= JSON_SUMMARY_MAX_INT)
			jsonw__u64_field(w, "hi_ns", sp_hist_bucket_hi(b));
		jsonw__u64_field(w, "count", r->bins[i].count);
		jsonw__end_object(w);
	}
	jsonw__end_array(w);
}

static void json_query(struct json_writer *w, const struct summary *s,
		       const struct sp_query_row *r)
{
	const struct sp_query_stats *st = &r->st;

	jsonw__start_object(w);
	jsonw__string_field(w, "name", r->name);
	if (s->per_pid) {
		const char *title = summary__title(s, r->pid);

		jsonw__u64_field(w, "pid", r->pid);
		jsonw__string_field(w, "title", title ? title : "");
	}
	jsonw__u64_field(w, "count", st->count);
	jsonw__u64_field(w, "self_ns", st->self_ns);
	jsonw__u64_field(w, "total_ns", st->total_ns);
	/* The stats' min_ns is undefined without invocations. */
	jsonw__u64_field(w, "min_ns", st->count ? st->min_ns : 0);
	jsonw__u64_field(w, "max_ns", st->max_ns);
	jsonw__u64_field(w, "p50_ns", r->p50_ns);
	jsonw__u64_field(w, "p90_ns", r->p90_ns);
	jsonw__u64_field(w, "p99_ns", r->p99_ns);
	jsonw__u64_field(w, "cache_hits", st->cache_hits);
	jsonw__u64_field(w, "incr_loads", st->incr_loads);
	jsonw__u64_field(w, "incr_load_ns", st->incr_load_ns);
	jsonw__u64_field(w, "blocked_count", st->blocked_count);
	jsonw__u64_field(w, "blocked_ns", st->blocked_ns);
	if (r->est_err > 0) {
		/* --max-overhead: scaled from sampled windows. */
		jsonw__name(w, "estimate");
		jsonw__bool(w, true);
		jsonw__double_field(w, "error", r->est_err);
	}
	json_hist(w, r);
	jsonw__end_object(w);
}

/* "sampling": the processes --max-overhead traced in sampled windows. */
static void json_sampling(struct json_writer *w, const struct summary *s)
{
	unsigned int i;

	jsonw__name(w, "sampling");
	jsonw__start_object(w);
	jsonw__u64_field(w, "window_ns", SUMMARY_SAMPLE_WINDOW_NS);
	jsonw__u64_field(w, "cut", s->sample_cut);
	jsonw__name(w, "processes");
	jsonw__start_array(w);
	for (i = 0; i < s->nsampled; i++) {
		jsonw__start_object(w);
		jsonw__u64_field(w, "pid", s->sampled[i].pid);
		jsonw__u64_field(w, "every", s->sampled[i].every);
		jsonw__double_field(w, "traced", s->sampled[i].traced);
		jsonw__double_field(w, "func_traced", s->sampled[i].func_traced);
		jsonw__end_object(w);
	}
	jsonw__end_array(w);
	jsonw__end_object(w);
}

/* "overhead": what sptrace's probes cost the traced processes. */
static void json_overhead(struct json_writer *w, const struct summary_overhead *o)
{
	uint64_t probe, cpu;
	double share = summary__overhead_share(o, &probe, &cpu);
	unsigned int i, k;

	jsonw__name(w, "overhead");
	jsonw__start_object(w);
	if (share >= 0)
		jsonw__double_field(w, "share", share);
	jsonw__u64_field(w, "probe_ns", probe);
	jsonw__u64_field(w, "cpu_ns", cpu);
	jsonw__name(w, "bpf_timed");
	jsonw__bool(w, o->bpf_timed);
	jsonw__u64_field(w, "system_bpf_ns", o->system_bpf_ns);
	jsonw__name(w, "unit_ns");
	jsonw__start_object(w);
	for (k = 0; k < SP_HIT__MAX; k++)
		if (k != SP_HIT_PAUSE_NS)
			jsonw__double_field(w, summary__hit_name(k), o->unit_ns[k]);
	jsonw__end_object(w);
	jsonw__name(w, "processes");
	jsonw__start_array(w);
	for (i = 0; i < o->nprocs; i++) {
		const struct summary_cost *c = &o->procs[i];

		jsonw__break(w);
		jsonw__start_object(w);
		jsonw__u64_field(w, "pid", c->pid);
		if (c->win_cpu_ns)
			jsonw__double_field(w, "share", (double)c->win_probe_ns /
							(double)c->win_cpu_ns);
		jsonw__u64_field(w, "probe_ns", c->probe_ns);
		jsonw__u64_field(w, "window_probe_ns", c->win_probe_ns);
		jsonw__u64_field(w, "window_cpu_ns", c->win_cpu_ns);
		jsonw__name(w, "hits");
		jsonw__start_object(w);
		for (k = 0; k < SP_HIT__MAX; k++)
			jsonw__u64_field(w, summary__hit_name(k), c->hits[k]);
		jsonw__end_object(w);
		jsonw__end_object(w);
	}
	jsonw__end_array(w);
	jsonw__end_object(w);
}

int json_out__write(FILE *out, const struct summary *s)
{
	return json_out__write_with(out, s, NULL, NULL);
}

int json_out__write_with(FILE *out, const struct summary *s,
			 int (*extra)(FILE *, void *), void *ctx)
{
	struct json_writer w;
	char version[32];
	unsigned int i;
	int err;

	if (!s->finished)
		return -EINVAL;
	jsonw__init(&w, out);
	snprintf(version, sizeof(version), "%u.%u", JSON_SUMMARY_VERSION_MAJOR,
		 JSON_SUMMARY_VERSION_MINOR);
	jsonw__start_object(&w);
	jsonw__string_field(&w, "version", version);
	jsonw__u64_field(&w, "duration_ns", s->duration_ns);
	jsonw__u64_field(&w, "total_self_ns", s->total_self_ns);
	if (s->events_mode) {
		jsonw__string_field(&w, "events", s->events_mode);
		if (!s->batch_fallback_unknown)
			jsonw__u64_field(&w, "batch_fallback",
					 s->batch_fallback);
	}
	jsonw__break(&w);
	jsonw__name(&w, "queries");
	jsonw__start_array(&w);
	for (i = 0; i < s->nrows; i++) {
		jsonw__break(&w);
		json_query(&w, s, &s->rows[i]);
	}
	jsonw__break(&w);
	jsonw__end_array(&w);
	jsonw__break(&w);
	jsonw__name(&w, "errors");
	jsonw__start_object(&w);
	jsonw__u64_field(&w, "unbalanced", summary__unbalanced(s));
	jsonw__u64_field(&w, "map_full", summary__map_full(s));
	jsonw__u64_field(&w, "lost", s->lost);
	for (i = 0; i < SP_ERR__MAX; i++)
		jsonw__u64_field(&w, summary__error_name(i), s->errors[i]);
	jsonw__end_object(&w);
	if (s->overhead.known) {
		jsonw__break(&w);
		json_overhead(&w, &s->overhead);
	}
	if (s->nsampled) {
		jsonw__break(&w);
		json_sampling(&w, s);
	}
	if (extra) {
		/* More members, written by the caller's own code. */
		jsonw__break(&w);
		err = extra(jsonw__raw_members(&w), ctx);
		if (err)
			return err;
	}
	jsonw__end_object(&w);
	fputc('\n', out);
	return jsonw__finish(&w);
}
