// SPDX-License-Identifier: MIT
/*
 * The CSV form of a finished summary: a pure table, one line per query with
 * the JSON query fields except the histogram. Error counters are not rows
 * here; summary_writer__write() prints them to stderr as warnings.
 *
 * Quoting follows RFC 4180 (a field holding a comma, quote, CR or LF is
 * quoted, quotes doubled); lines end in LF, which every CSV reader accepts.
 * Invalid UTF-8 bytes become U+FFFD so the file is valid UTF-8.
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include "text.h"
#include "csv_out.h"
#include "text.h"

static const char csv_header[] =
	"name,count,self_ns,total_ns,min_ns,max_ns,p50_ns,p90_ns,p99_ns,"
	"cache_hits,incr_loads,incr_load_ns,blocked_count,blocked_ns\n";

/* uint64_t, not __u64: that is unsigned long long on some ABIs, and PRIu64
 * matches only uint64_t. */
static void csv_u64(FILE *out, uint64_t v)
{
	fprintf(out, ",%" PRIu64, v);
}

static void csv_query(FILE *out, const struct summary *s,
		      const struct sp_query_row *r)
{
	const struct sp_query_stats *st = &r->st;

	text__csv_field(out, r->name);
	if (s->per_pid) {
		const char *title = summary__title(s, r->pid);

		csv_u64(out, r->pid);
		fputc(',', out);
		text__csv_field(out, title ? title : "");
	}
	csv_u64(out, st->count);
	csv_u64(out, st->self_ns);
	csv_u64(out, st->total_ns);
	csv_u64(out, st->count ? st->min_ns : 0);
	csv_u64(out, st->max_ns);
	csv_u64(out, r->p50_ns);
	csv_u64(out, r->p90_ns);
	csv_u64(out, r->p99_ns);
	csv_u64(out, st->cache_hits);
	csv_u64(out, st->incr_loads);
	csv_u64(out, st->incr_load_ns);
	csv_u64(out, st->blocked_count);
	csv_u64(out, st->blocked_ns);
	fputc('\n', out);
}

int csv_out__write(FILE *out, const struct summary *s)
{
	unsigned int i;

	if (!s->finished)
		return -EINVAL;
	/* --per-pid adds the process and its title after the name. */
	fputs(s->per_pid ? "name,pid,title" : "name", out);
	fputs(csv_header + strlen("name"), out);
	for (i = 0; i < s->nrows; i++)
		csv_query(out, s, &s->rows[i]);
	return text__flush(out);
}
