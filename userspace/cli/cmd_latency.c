// SPDX-License-Identifier: MIT
/*
 * `sptrace latency --from START --to END (-p PID | -- CMD)`: the time from
 * each start event to the end event with the same key, as a histogram with
 * percentiles and counts of what did not pair, in a table or as JSON.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "commands.h"
#include "text.h"
#include "latency_provider.h"
#include "log.h"
#include "parse.h"
#include "output.h"
#include "json_writer.h"
#include "table.h"
#include "text.h"
#include "session.h"
#include "text_table.h"

enum lat_format { LAT_TABLE = 0, LAT_JSON };

struct latency_env {
	struct session_opts so;
	struct latency_opts lo;
	bool have_from, have_to;
	enum lat_format format;
	const char *output;
	bool force;
};

static const char usage[] =
"Usage: sptrace latency --from START --to END [OPTIONS] -p PID[,PID...]\n"
"       sptrace latency --from START --to END [OPTIONS] -- CMD [ARGS...]\n"
"Time from each START event to the END event with the same key, in the same\n"
"process (any threads): count, min, p50, p90, p99, max, a histogram, and\n"
"the starts and ends that found no partner.\n"
"\n"
"START and END are each\n"
"  NAME                        SP_MARK(name, key) sites passing this name\n"
"  PROVIDER:PROBE[,key=argN]   a USDT probe; argument N (default 0) is the key\n"
"\n"
"      --from START\n"
"      --to END\n"
"  -p, --pid PID[,PID...]   trace these running processes\n"
"  -b, --binary PATH        every process of PATH, now or later (USDT\n"
"                           endpoints only)\n"
"  -d, --duration SECONDS   stop after this long (default: Ctrl-C, or exit)\n"
"  -f, --format FMT         table (default) or json\n"
"  -o, --output FILE        write there instead of stdout (0600, no symlink)\n"
"      --force              overwrite an existing output file\n"
"      --max-pending N      starts waiting for their end, kept in the kernel\n"
"                           (default %u)\n"
"  -v, --verbose            say what is attached; show libbpf's messages\n"
"  -h, --help\n";

static void print_usage(FILE *f)
{
	fprintf(f, usage, SP_LAT_DEFAULT_MAX_PENDING);
}


static int parse_endpoint(struct latency_env *env, int c, const char *arg)
{
	struct lat_endpoint *e = c == OPT_FROM ? &env->lo.from : &env->lo.to;
	bool *have = c == OPT_FROM ? &env->have_from : &env->have_to;

	lat_endpoint__free(e);
	*have = false;
	if (lat_endpoint__parse(e, c == OPT_FROM ? "--from" : "--to", arg))
		return -EINVAL;
	*have = true;
	return 0;
}

static int parse_args(int argc, char **argv, struct latency_env *env)
{
	static const struct option opts[] = {
		SESSION_LONG_OPTS,
		{ "from", required_argument, NULL, OPT_FROM },
		{ "to", required_argument, NULL, OPT_TO },
		{ "format", required_argument, NULL, 'f' },
		{ "output", required_argument, NULL, 'o' },
		{ "force", no_argument, NULL, OPT_FORCE },
		{ "max-pending", required_argument, NULL, OPT_MAX_PENDING },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	long v;
	int c, r;

	optind = 1;
	while ((c = cli__getopt(argc, argv, "+" SESSION_SHORT_OPTS "f:o:vh",
				opts, NULL)) != -1) {
		r = session_opts__parse(&env->so, c, optarg);
		if (r < 0)
			return r;
		if (r)
			continue;
		switch (c) {
		case OPT_FROM:
		case OPT_TO:
			if (parse_endpoint(env, c, optarg))
				return -EINVAL;
			break;
		case 'f':
			if (!strcmp(optarg, "table")) {
				env->format = LAT_TABLE;
			} else if (!strcmp(optarg, "json")) {
				env->format = LAT_JSON;
			} else {
				sp_err("unknown format '%s' (expected table or json)",
				       optarg);
				return -EINVAL;
			}
			break;
		case 'o':
			env->output = optarg;
			break;
		case OPT_FORCE:
			env->force = true;
			break;
		case OPT_MAX_PENDING:
			if (parse_long(optarg, 16, 1 << 24, &v)) {
				sp_err("invalid --max-pending '%s' (expected 16..16777216)",
				       optarg);
				return -EINVAL;
			}
			env->lo.max_pending = (unsigned int)v;
			break;
		default:
			if (cli__option(c, print_usage))
				return -EINVAL;
		}
	}
	if (optind < argc)
		env->so.cmd = &argv[optind];
	if (!env->have_from || !env->have_to) {
		sp_err("latency: give both --from START and --to END (see sptrace latency --help)");
		return -EINVAL;
	}
	if (!strcmp(env->lo.from.spec, env->lo.to.spec)) {
		sp_err("latency: --from and --to are the same event '%s' (give two different events)",
		       env->lo.from.spec);
		return -EINVAL;
	}
	if (env->so.nfuncs) {
		sp_err("latency: --func is not an event of sptrace latency (give --from and --to)");
		return -EINVAL;
	}
	/* -b meets its processes only once they run, too late to find a
	 * mark name before the process passes it. */
	if (env->so.nbinaries && (env->lo.from.kind == LAT_MARK ||
				  env->lo.to.kind == LAT_MARK)) {
		sp_err("latency: -b works with USDT endpoints only; SP_MARK names are found per process (use -p PID or -- CMD)");
		return -EINVAL;
	}
	return session_opts__check(&env->so);
}

/* ---- writers ------------------------------------------------------------- */

#define NS_BUF 24

static int latency_json(FILE *out, const struct latency_result *r)
{
	const struct sp_query_row *row = &r->s.rows[0];
	struct json_writer w;
	unsigned int i;

	jsonw__init(&w, out);
	jsonw__start_object(&w);
	jsonw__string_field(&w, "from", r->lo->from.spec);
	jsonw__string_field(&w, "to", r->lo->to.spec);
	jsonw__u64_field(&w, "duration_ns", r->duration_ns);
	jsonw__u64_field(&w, "count", row->st.count);
	jsonw__u64_field(&w, "total_ns", row->st.total_ns);
	/* min_ns means nothing without pairs. */
	jsonw__u64_field(&w, "min_ns", row->st.count ? row->st.min_ns : 0);
	jsonw__u64_field(&w, "max_ns", row->st.max_ns);
	jsonw__u64_field(&w, "p50_ns", row->p50_ns);
	jsonw__u64_field(&w, "p90_ns", row->p90_ns);
	jsonw__u64_field(&w, "p99_ns", row->p99_ns);
	jsonw__u64_field(&w, "unmatched_from", r->unmatched_from);
	jsonw__u64_field(&w, "unmatched_to", r->unmatched_to);
	jsonw__name(&w, "hist");
	jsonw__start_array(&w);
	for (i = 0; i < row->nbins; i++) {
		uint32_t b = row->bins[i].bucket;

		jsonw__start_object(&w);
		jsonw__u64_field(&w, "lo_ns", sp_hist_bucket_lo(b));
		jsonw__u64_field(&w, "hi_ns", sp_hist_bucket_hi(b));
		jsonw__u64_field(&w, "count", row->bins[i].count);
		jsonw__end_object(&w);
	}
	jsonw__end_array(&w);
	jsonw__name(&w, "errors");
	jsonw__start_object(&w);
	for (i = 0; i < SP_LAT_ERR__MAX; i++)
		jsonw__u64_field(&w, latency__error_name(i), r->errors[i]);
	jsonw__end_object(&w);
	jsonw__end_object(&w);
	fputc('\n', out);
	return jsonw__finish(&w);
}

static const char *const error_hints[SP_LAT_ERR__MAX] = {
	[SP_LAT_ERR_PENDING_FULL] =
		"starts not kept: too many waiting for their end, raise --max-pending",
	[SP_LAT_ERR_KEY_READ] =
		"events whose key argument could not be read: not counted",
};

static void latency_warn(FILE *f, const struct latency_result *r)
{
	unsigned int i;

	for (i = 0; i < SP_LAT_ERR__MAX; i++)
		if (r->errors[i])
			fprintf(f, "sptrace: warning: %" PRIu64 " %s events (%s)\n",
				r->errors[i], latency__error_name(i),
				error_hints[i]);
}

enum { C_COUNT, C_MIN, C_P50, C_P90, C_P99, C_MAX, C_UFROM, C_UTO, NCOLS };

static int latency_table(FILE *out, const struct latency_result *r)
{
	static const char *const titles[NCOLS] = {
		"Count", "Min", "p50", "p90", "p99", "Max", "Unmatched from",
		"Unmatched to",
	};
	const struct sp_query_row *row = &r->s.rows[0];
	char bufs[NCOLS][NS_BUF], dur[NS_BUF];
	const char *cells[NCOLS];
	struct text_col cols[NCOLS];
	struct text_table t;
	char *title;
	unsigned int c, w;
	int err;

	for (c = 0; c < NCOLS; c++) {
		cols[c] = (struct text_col){ .title = titles[c],
					     .align = TEXT_RIGHT };
		cells[c] = bufs[c];
	}
	snprintf(bufs[C_COUNT], NS_BUF, "%" PRIu64, (uint64_t)row->st.count);
	if (row->st.count) {
		text__fmt_ns(bufs[C_MIN], NS_BUF, row->st.min_ns);
		text__fmt_ns(bufs[C_P50], NS_BUF, row->p50_ns);
		text__fmt_ns(bufs[C_P90], NS_BUF, row->p90_ns);
		text__fmt_ns(bufs[C_P99], NS_BUF, row->p99_ns);
		text__fmt_ns(bufs[C_MAX], NS_BUF, row->st.max_ns);
	} else {
		for (c = C_MIN; c <= C_MAX; c++)
			snprintf(bufs[c], NS_BUF, "-");
	}
	snprintf(bufs[C_UFROM], NS_BUF, "%" PRIu64, r->unmatched_from);
	snprintf(bufs[C_UTO], NS_BUF, "%" PRIu64, r->unmatched_to);

	err = text_table__init(&t, cols, NCOLS);
	if (!err)
		err = text_table__add_row(&t, cells);
	title = err ? NULL : text__display(row->name, 200, &w);
	if (!err && !title)
		err = -ENOMEM;
	if (!err) {
		text__fmt_ns(dur, sizeof(dur), r->duration_ns);
		fprintf(out, "sptrace latency: %s, duration %s\n", title, dur);
		text_table__print(out, &t);
		latency_warn(out, r);
		err = table__hist_print(out, row);
	}
	free(title);
	text_table__free(&t);
	return err ? err : text__flush(out);
}

static int json_fn(FILE *out, const void *ctx)
{
	int err = latency_json(out, ctx);

	latency_warn(stderr, ctx);
	return err;
}

static int table_fn(FILE *out, const void *ctx)
{
	return latency_table(out, ctx);
}

int cmd_latency(int argc, char **argv)
{
	struct latency_env env = { 0 };
	struct latency_provider lp;
	struct latency_result r = { 0 };
	struct session_provider p;
	struct session ss;
	int err = -EINVAL, status = 1;

	summary__init(&r.s);
	if (parse_args(argc, argv, &env))
		goto out;
	{
		int e1 = output__check(&(struct output_spec){ env.output, "-o",
							      env.force, false },
				       1, NULL, 0);
		int e2 = session_opts__precheck(&env.so);

		if (e1 || e2)
			goto out;
	}
	session__init(&ss, &env.so);
	latency_provider__init(&lp, &env.lo, &p);
	err = session__add(&ss, &p);
	if (!err)
		err = session__start(&ss);
	if (!err)
		err = session__run(&ss, -1, NULL, NULL);
	/* -p checked every endpoint when attaching; a command's libraries
	 * could bring them up to its end. */
	if (!err && env.so.cmd)
		err = latency_provider__check(&lp, session__command(&ss));
	if (!err)
		err = latency_provider__read(&lp, &ss, &r);
	if (!err)
		err = cli__write(env.output, env.force, true,
				 env.format == LAT_JSON ? json_fn : table_fn, &r);
	session__destroy(&ss);
	status = session__exit_status(&ss, err);
out:
	latency_result__free(&r);
	lat_endpoint__free(&env.lo.from);
	lat_endpoint__free(&env.lo.to);
	session_opts__free(&env.so);
	return status;
}
