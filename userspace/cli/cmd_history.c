// SPDX-License-Identifier: MIT
/*
 * `sptrace history --db DB [--label L] [QUERY]`: the runs stored in the
 * history database, or one query's self time, count and p99 in each run
 * with a sparkline of its self time and the runs that broke its trend;
 * `--trends`: every query's trend and its breaks (docs/database.md).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "cli.h"
#include "commands.h"
#include "json_writer.h"
#include "text.h"
#include "history_db.h"
#include "log.h"
#include "output.h"
#include "parse.h"
#include "run_set.h"
#include "text.h"
#include "table.h"
#include "text_table.h"
#include "trend.h"
#include "trend_writer.h"
#include "verdict.h"

static const char usage[] =
"Usage: sptrace history --db DB [OPTIONS] [QUERY]\n"
"       sptrace history --db DB --trends [OPTIONS]\n"
"Without QUERY, list the runs stored in DB. With QUERY, one row per run:\n"
"that query's self time, count and p99, a bar of its self time (a\n"
"sparkline read top to bottom; the line under the table is the same\n"
"series left to right), and whether the run broke the query's trend: its\n"
"self time beyond the noise of the runs before it of the same command.\n"
"--trends: every query's trend, and the runs that broke it.\n"
"\n"
"      --db DB              the history database\n"
"      --label LABEL        only runs with this label\n"
"      --trends             every query: its trend and the runs that broke it\n"
"      --all                --trends: also the queries without a break\n"
"      --threshold PCT      a change under PCT% breaks no trend (default 2)\n"
"  -f, --format FMT         table (default) or json\n"
"  -o, --output FILE        write there instead of stdout (0600, no symlink)\n"
"      --force              overwrite an existing output file\n"
"      --wide               every column, labels and commands uncut (default:\n"
"                           the table fits 120 characters)\n"
"  -h, --help\n";

static void print_usage(FILE *f)
{
	fputs(usage, f);
}


/* started_at as ISO 8601 UTC: "2026-11-29T13:01:34Z". */
static void fmt_time(char *buf, size_t len, int64_t t)
{
	time_t tt = (time_t)t;
	struct tm tm;

	if (!gmtime_r(&tt, &tm) || !strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm))
		snprintf(buf, len, "%" PRId64, t);
}

static void json_str(struct json_writer *w, const char *key, const char *v)
{
	jsonw__name(w, key);
	if (v)
		jsonw__string(w, v);
	else
		jsonw__null(w);
}

/* The run's metadata as the first members of its (open) object. */
static void json_run(struct json_writer *w, const struct history_run *r)
{
	char t[32];

	fmt_time(t, sizeof(t), r->started_at);
	jsonw__start_object(w);
	jsonw__name(w, "id");
	jsonw__i64(w, r->id);
	jsonw__name(w, "started_at");
	jsonw__i64(w, r->started_at);
	jsonw__string_field(w, "started", t);
	jsonw__u64_field(w, "duration_ns", r->duration_ns);
	json_str(w, "label", r->label);
	json_str(w, "command", r->command);
	json_str(w, "pids", r->pids);
	json_str(w, "host", r->host);
	json_str(w, "version", r->version);
	json_str(w, "source", r->source);
}

/* "trend": how the run stands against the runs before it of the same
 * command (null: fewer than 4 of them). */
static void json_trend(struct json_writer *w, const struct trend_point *p)
{
	char num[40];

	jsonw__name(w, "trend");
	if (!p || !p->judged) {
		jsonw__null(w);
		return;
	}
	jsonw__start_object(w);
	jsonw__string_field(w, "verdict", verdict__key(p->v));
	snprintf(num, sizeof(num), "%.10g", p->ratio);
	jsonw__name(w, "ratio");
	jsonw__number(w, num);
	jsonw__name(w, "fence");
	if (isnan(p->fence)) {
		jsonw__null(w);
	} else {
		snprintf(num, sizeof(num), "%.10g", exp(p->fence) - 1);
		jsonw__number(w, num);
	}
	jsonw__end_object(w);
}

/*
 * The tables fit `width` characters (120; --wide: 0, no limit) by the rule
 * of every boxed table (text_table__fit(), docs/formats.md#fitting-120-characters):
 * Label and Command are cut down to 12 and 16 cells, then columns are left
 * out in *_drop order; a line under the table names them.
 */
static const unsigned int list_drop[] = { 4, 3, 5, 1 };
static const unsigned int query_drop[] = { 5, 4, 1 };

/* The trend of one query over the runs listed: the set's row and the
 * judgement of each run (NULL when the query is in no run). */
struct query_trend {
	const struct trend *t;
	unsigned int q;
	bool found;
};

static const struct trend_point *trend_at(const struct query_trend *qt,
					  unsigned int run)
{
	if (!qt || !qt->found)
		return NULL;
	return &qt->t->p[(size_t)qt->q * qt->t->nruns + run];
}

static int list_runs(FILE *out, const struct history_entry *v, unsigned int n,
		     bool json, unsigned int width)
{
	static const struct text_col cols[] = {
		{ "Run", TEXT_RIGHT, false, 0, 0 }, { "Started (UTC)", TEXT_LEFT, false, 0, 0 },
		{ "Label", TEXT_LEFT, false, 0, 12 }, { "Duration", TEXT_RIGHT, false, 0, 0 },
		{ "Queries", TEXT_RIGHT, false, 0, 0 }, { "Self", TEXT_RIGHT, false, 0, 0 },
		{ "Command", TEXT_LEFT, false, 0, 16 },
	};
	char id[24], t[32], dur[32], nq[24], self[32];
	struct text_table tt;
	struct json_writer w;
	unsigned int i;
	int err;

	if (json) {
		jsonw__init(&w, out);
		jsonw__start_object(&w);
		jsonw__name(&w, "runs");
		jsonw__start_array(&w);
		for (i = 0; i < n; i++) {
			json_run(&w, &v[i].run);
			jsonw__u64_field(&w, "queries", v[i].nqueries);
			jsonw__u64_field(&w, "total_self_ns", v[i].total_self_ns);
			jsonw__end_object(&w);
		}
		jsonw__end_array(&w);
		jsonw__end_object(&w);
		fputc('\n', out);
		return jsonw__finish(&w);
	}
	err = text_table__init(&tt, cols, sizeof(cols) / sizeof(cols[0]));
	for (i = 0; !err && i < n; i++) {
		const struct history_run *r = &v[i].run;
		const char *cells[] = { id, t, r->label, dur, nq, self,
					r->command };

		snprintf(id, sizeof(id), "%" PRId64, r->id);
		fmt_time(t, sizeof(t), r->started_at);
		text__fmt_ns(dur, sizeof(dur), r->duration_ns);
		snprintf(nq, sizeof(nq), "%" PRIu64, v[i].nqueries);
		text__fmt_ns(self, sizeof(self), v[i].total_self_ns);
		err = text_table__add_row(&tt, cells);
	}
	if (!err)
		err = text_table__print_fitted(out, &tt, width, list_drop,
					       sizeof(list_drop) / sizeof(list_drop[0]));
	text_table__free(&tt);
	if (!err && !n)
		fputs("(no runs)\n", out);
	return err ? err : text__flush(out);
}

static int query_runs(FILE *out, const char *query,
		      const struct history_point *v, unsigned int n, bool json,
		      unsigned int width, const struct query_trend *qt)
{
	struct text_col cols[] = {
		{ "Run", TEXT_RIGHT, false, 0, 0 }, { "Started (UTC)", TEXT_LEFT, false, 0, 0 },
		{ "Label", TEXT_LEFT, false, 0, 12 }, { "Self", TEXT_RIGHT, false, 0, 0 },
		{ "Count", TEXT_RIGHT, false, 0, 0 }, { "p99", TEXT_RIGHT, false, 0, 0 },
		{ "Trend", TEXT_LEFT, false, 0, 0 },
		/* Shown when a run broke the trend. */
		{ "Broke the trend", TEXT_LEFT, true, 0, 0 },
	};
	char id[24], t[32], self[32], cnt[24], p99[32], brk[64];
	uint64_t max = 0, min = UINT64_MAX;
	struct text_table tt;
	struct json_writer w;
	unsigned int i, present = 0;
	char *title;
	int err;

	if (json) {
		jsonw__init(&w, out);
		jsonw__start_object(&w);
		jsonw__string_field(&w, "query", query);
		jsonw__name(&w, "runs");
		jsonw__start_array(&w);
		for (i = 0; i < n; i++) {
			json_run(&w, &v[i].run);
			jsonw__name(&w, "present");
			jsonw__bool(&w, v[i].present);
			if (v[i].present) {
				jsonw__u64_field(&w, "count", v[i].count);
				jsonw__u64_field(&w, "self_ns", v[i].self_ns);
				jsonw__u64_field(&w, "total_ns", v[i].total_ns);
				jsonw__u64_field(&w, "p99_ns", v[i].p99_ns);
			}
			json_trend(&w, trend_at(qt, i));
			jsonw__end_object(&w);
		}
		jsonw__end_array(&w);
		jsonw__end_object(&w);
		fputc('\n', out);
		return jsonw__finish(&w);
	}
	for (i = 0; i < n; i++) {
		if (!v[i].present)
			continue;
		present++;
		if (v[i].self_ns > max)
			max = v[i].self_ns;
		if (v[i].self_ns < min)
			min = v[i].self_ns;
	}
	for (i = 0; i < n; i++) {
		const struct trend_point *tp = trend_at(qt, i);

		if (tp && tp->judged && (tp->v == VERDICT_REGRESSED ||
					 tp->v == VERDICT_IMPROVED))
			cols[7].hidden = false;
	}
	title = text__display(query, 200, &i);
	if (!title)
		return -ENOMEM;
	fprintf(out, "Query %s: %u of %u runs\n", title, present, n);
	free(title);
	err = text_table__init(&tt, cols, sizeof(cols) / sizeof(cols[0]));
	for (i = 0; !err && i < n; i++) {
		const struct history_run *r = &v[i].run;
		const char *cells[] = { id, t, r->label, "-", "-", "-", "", brk };
		const struct trend_point *tp = trend_at(qt, i);

		snprintf(id, sizeof(id), "%" PRId64, r->id);
		fmt_time(t, sizeof(t), r->started_at);
		if (v[i].present) {
			text__fmt_ns(self, sizeof(self), v[i].self_ns);
			snprintf(cnt, sizeof(cnt), "%" PRIu64, v[i].count);
			text__fmt_ns(p99, sizeof(p99), v[i].p99_ns);
			cells[3] = self;
			cells[4] = cnt;
			cells[5] = p99;
			cells[6] = text_table__spark(v[i].self_ns, max);
		}
		brk[0] = 0;
		if (tp)
			trend__fmt_point(brk, sizeof(brk), tp);
		err = text_table__add_row(&tt, cells);
	}
	if (!err)
		err = text_table__print_fitted(out, &tt, width, query_drop,
					       sizeof(query_drop) / sizeof(query_drop[0]));
	text_table__free(&tt);
	if (!err && present) {
		fputs("Self time: ", out);
		for (i = 0; i < n; i++)
			fputs(v[i].present ? text_table__spark(v[i].self_ns, max)
					   : " ", out);
		text__fmt_ns(self, sizeof(self), min);
		text__fmt_ns(p99, sizeof(p99), max);
		fprintf(out, "  min %s, max %s\n", self, p99);
	}
	return err ? err : text__flush(out);
}

struct history_job {
	const char *query;
	const struct history_entry *runs;
	const struct history_point *pts;
	unsigned int n;
	bool json, trends, all;
	unsigned int width;	/* 0: --wide */
	const struct run_set *set;
	const struct trend *t;
	const struct query_trend *qt;
};

static int history_fn(FILE *out, const void *ctx)
{
	const struct history_job *j = ctx;

	if (j->trends)
		return j->json ? trend__write_json(out, j->set, j->t)
			       : trend__write_table(out, j->set, j->t, j->all,
						    j->width);
	return j->query ? query_runs(out, j->query, j->pts, j->n, j->json,
				     j->width, j->qt)
			: list_runs(out, j->runs, j->n, j->json, j->width);
}

/* The runs of the list as a set (of one query, or of every one), each run
 * judged against the runs before it of its command (its group: the index
 * of the first run with the same command line). 0 or -errno (reported). */
static int build_trends(struct history_db *h, const struct history_entry *runs,
			unsigned int n, const char *query, double threshold,
			struct run_set *set, struct trend *t)
{
	unsigned int *group, i, j;
	int64_t *ids;
	int err;

	ids = malloc((n + 1) * sizeof(*ids));
	group = malloc((n + 1) * sizeof(*group));
	if (!ids || !group) {
		free(ids);
		free(group);
		sp_err("history: out of memory");
		return -ENOMEM;
	}
	for (i = 0; i < n; i++) {
		const char *c = runs[i].run.command;

		ids[i] = runs[i].run.id;
		for (j = 0; j < i; j++) {
			const char *d = runs[j].run.command;

			if ((!c && !d) || (c && d && !strcmp(c, d)))
				break;
		}
		group[i] = j;
	}
	err = query ? history_db__load_query_set(h, ids, n, query, set)
		    : history_db__load_set(h, ids, n, set);
	if (!err) {
		err = trend__build(t, set, group, 30, threshold);
		if (err) {
			sp_err("history: out of memory");
			run_set__free(set);
		}
	}
	free(ids);
	free(group);
	return err;
}

int cmd_history(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "db", required_argument, NULL, OPT_DB },
		{ "label", required_argument, NULL, OPT_LABEL },
		{ "format", required_argument, NULL, 'f' },
		{ "output", required_argument, NULL, 'o' },
		{ "force", no_argument, NULL, OPT_FORCE },
		{ "wide", no_argument, NULL, OPT_WIDE },
		{ "trends", no_argument, NULL, OPT_TRENDS },
		{ "all", no_argument, NULL, OPT_ALL },
		{ "threshold", required_argument, NULL, OPT_THRESHOLD },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	const char *db = NULL, *label = NULL, *output = NULL, *query = NULL;
	struct history_entry *runs = NULL;
	struct history_point *pts = NULL;
	bool json = false, force = false, wide = false, trends = false;
	bool all = false, have_set = false;
	double threshold = VERDICT_DEFAULT_THRESHOLD, d;
	struct query_trend qt = { 0 };
	struct run_set set = { 0 };
	struct trend t = { 0 };
	struct history_db *h;
	unsigned int n = 0, nruns = 0;
	int c, err;

	optind = 1;
	while ((c = cli__getopt(argc, argv, "f:o:h", opts, NULL)) != -1) {
		switch (c) {
		case OPT_DB:
			db = optarg;
			break;
		case OPT_LABEL:
			label = optarg;
			break;
		case 'f':
			if (!strcmp(optarg, "json")) {
				json = true;
			} else if (!strcmp(optarg, "table")) {
				json = false;
			} else {
				sp_err("history: unknown format '%s' (expected table or json)",
				       optarg);
				return 1;
			}
			break;
		case 'o':
			output = optarg;
			break;
		case OPT_FORCE:
			force = true;
			break;
		case OPT_WIDE:
			wide = true;
			break;
		case OPT_TRENDS:
			trends = true;
			break;
		case OPT_ALL:
			all = true;
			break;
		case OPT_THRESHOLD:
			if (parse_double(optarg, 0, 1000, &d)) {
				sp_err("invalid --threshold '%s' (expected a percentage, 0..1000)",
				       optarg);
				return 1;
			}
			threshold = d / 100;
			break;
		default:
			if (cli__option(c, print_usage))
				return 1;
		}
	}
	if (!db) {
		sp_err("history: give the database with --db FILE (see sptrace history --help)");
		return 1;
	}
	if (argc - optind > 1) {
		sp_err("history: give at most one query name (see sptrace history --help)");
		return 1;
	}
	if (optind < argc)
		query = argv[optind];
	if (trends && query) {
		sp_err("history: --trends shows every query; without it, QUERY shows one (give one or the other)");
		return 1;
	}
	if (output__check(&(struct output_spec){ output, "-o", force, false }, 1,
			  (const char *const[]){ db }, 1))
		return 1;
	err = history_db__open(db, false, &h);
	if (err)
		return 1;
	/* The runs, and for trends and a query's breaks, their figures. */
	err = history_db__list(h, label, &runs, &nruns);
	if (!err && (trends || query) && nruns) {
		err = build_trends(h, runs, nruns, query, threshold, &set, &t);
		have_set = !err;
	}
	if (!err && query && have_set) {
		char *clean = diff__clean_name(query);
		const struct run_set_query *q = clean ? run_set__find(&set, clean) : NULL;

		free(clean);
		qt = (struct query_trend){ &t, q ? (unsigned int)(q - set.q) : 0,
					   q != NULL };
	}
	if (!err && query)
		err = history_db__query(h, label, query, &pts, &n);
	history_db__close(h);
	if (!err)
		err = cli__write(output, force, false, history_fn, &(struct history_job){
			.query = query, .runs = runs, .pts = pts,
			.n = query ? n : nruns, .json = json, .trends = trends,
			.all = all, .width = wide ? 0 : TABLE_DEFAULT_WIDTH,
			.set = &set, .t = &t, .qt = have_set ? &qt : NULL });
	if (have_set) {
		trend__free(&t);
		run_set__free(&set);
	}
	history_entries__free(runs, nruns);
	history_points__free(pts, query ? n : 0);
	return err ? 1 : 0;
}
