// SPDX-License-Identifier: MIT
/*
 * The JSON form of a finished summary: one object that other tools read as
 * a contract (field names and meanings must not change silently). Strings are
 * valid JSON for a strict parser whatever bytes a query name holds.
 *
 * {"version":"1.0","duration_ns":N,"total_self_ns":N,
 *  "queries":[{"name":"...","count":N,...,"hist":[{"lo_ns":N,"hi_ns":N,
 *              "count":N},...]},...],
 *  "errors":{"unbalanced":N,"map_full":N,"lost":N,"end_without_begin":N,...}}
 */
#include <errno.h>
#include <inttypes.h>
#include "text.h"
#include "json_out.h"
#include "json_summary.h"
#include "text.h"

static void json_u64(FILE *out, const char *key, uint64_t v, bool comma)
{
	fprintf(out, "%s\"%s\":%" PRIu64, comma ? "," : "", key, v);
}

static void json_hist(FILE *out, const struct sp_query_row *r)
{
	unsigned int i;

	fputs(",\"hist\":[", out);
	for (i = 0; i < r->nbins; i++) {
		uint32_t b = r->bins[i].bucket;

		fputs(i ? ",{" : "{", out);
		json_u64(out, "lo_ns", sp_hist_bucket_lo(b), false);
		json_u64(out, "hi_ns", sp_hist_bucket_hi(b), true);
		json_u64(out, "count", r->bins[i].count, true);
		fputc('}', out);
	}
	fputc(']', out);
}

static void json_query(FILE *out, const struct summary *s,
		       const struct sp_query_row *r)
{
	const struct sp_query_stats *st = &r->st;

	fputs("{\"name\":", out);
	text__json_string(out, r->name);
	if (s->per_pid)
		json_u64(out, "pid", r->pid, true);
	json_u64(out, "count", st->count, true);
	json_u64(out, "self_ns", st->self_ns, true);
	json_u64(out, "total_ns", st->total_ns, true);
	/* The stats' min_ns is undefined without invocations. */
	json_u64(out, "min_ns", st->count ? st->min_ns : 0, true);
	json_u64(out, "max_ns", st->max_ns, true);
	json_u64(out, "p50_ns", r->p50_ns, true);
	json_u64(out, "p90_ns", r->p90_ns, true);
	json_u64(out, "p99_ns", r->p99_ns, true);
	json_u64(out, "cache_hits", st->cache_hits, true);
	json_u64(out, "incr_loads", st->incr_loads, true);
	json_u64(out, "incr_load_ns", st->incr_load_ns, true);
	json_u64(out, "blocked_count", st->blocked_count, true);
	json_u64(out, "blocked_ns", st->blocked_ns, true);
	json_hist(out, r);
	fputc('}', out);
}

int json_out__write(FILE *out, const struct summary *s)
{
	return json_out__write_with(out, s, NULL, NULL);
}

int json_out__write_with(FILE *out, const struct summary *s,
		     int (*extra)(FILE *, void *), void *ctx)
{
	unsigned int i;
	int err;

	if (!s->finished)
		return -EINVAL;
	fprintf(out, "{\"version\":\"%u.%u\"", JSON_SUMMARY_VERSION_MAJOR,
		JSON_SUMMARY_VERSION_MINOR);
	json_u64(out, "duration_ns", s->duration_ns, true);
	json_u64(out, "total_self_ns", s->total_self_ns, true);
	fputs(",\n\"queries\":[", out);
	for (i = 0; i < s->nrows; i++) {
		fputs(i ? ",\n" : "\n", out);
		json_query(out, s, &s->rows[i]);
	}
	fputs("\n],\n\"errors\":{", out);
	json_u64(out, "unbalanced", summary__unbalanced(s), false);
	json_u64(out, "map_full", summary__map_full(s), true);
	json_u64(out, "lost", s->lost, true);
	for (i = 0; i < SP_ERR__MAX; i++)
		json_u64(out, summary__error_name(i), s->errors[i], true);
	fputc('}', out);
	if (extra) {
		fputs(",\n", out);
		err = extra(out, ctx);
		if (err)
			return err;
	}
	fputs("}\n", out);
	return text__flush(out);
}
