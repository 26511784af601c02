// SPDX-License-Identifier: MIT
/*
 * `sptrace report`: a run (a trace file, a JSON summary, or a run of the
 * history database) as one self-contained HTML file (html_report.c),
 * optionally compared with a base run.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "cli.h"
#include "commands.h"
#include "history_db.h"
#include "html_report.h"
#include "html_verdicts.h"
#include "json_summary.h"
#include "log.h"
#include "mem_report.h"
#include "output.h"
#include "run_load.h"
#include "parse.h"
#include "run_set.h"
#include "run_store.h"
#include "summary.h"
#include "verdict.h"

static const char usage[] =
"Usage: sptrace report [OPTIONS] FILE\n"
"       sptrace report [OPTIONS] --db DB RUN\n"
"       sptrace report [OPTIONS] --mem MEM.json\n"
"Write a run as one self-contained HTML file: the per-query table (every\n"
"column sortable), each query's histogram and percentiles on click, the\n"
"memory timeline when the run has one and, with --base, each query's change.\n"
"FILE is a trace file (sptrace record) or a JSON summary (sptrace -f json);\n"
"with --db, RUN is a run of that history database: its id, latest or\n"
"latest~N. --mem draws the memory timeline of a sptrace mem --interval run.\n"
"With --db, RUN and BASE may each name several runs (A..B, ID,ID,...,\n"
"label:NAME; or --history: the runs before RUN of its command): the page\n"
"then opens with each query's verdict, its change and interval, and its\n"
"self time run by run (docs/report.md).\n"
"\n"
"  -o, --output FILE        write there instead of stdout (0600, no symlink)\n"
"      --force              overwrite an existing output file\n"
"      --base BASE          compare with BASE (a file; with --db, a run)\n"
"      --db DB              read RUN and BASE from this history database\n"
"      --mem FILE           the memory timeline of FILE (sptrace mem\n"
"                           --interval MS -f json), instead of the run's own\n"
"      --title TEXT         the report's title (default: names the run)\n"
"      --history            with --db: RUN against the earlier runs of its\n"
"                           command\n"
"      --threshold PCT, --fdr Q   verdicts: as for sptrace diff\n"
"  -h, --help\n";

static void print_usage(FILE *f)
{
	fputs(usage, f);
}

/* One side of the report and what it owns. */
struct side {
	struct summary s;
	struct mem_report mr;
	struct history_run meta;
	char *name, *info;
	struct html_run run;
};

static void side_init(struct side *sd)
{
	memset(sd, 0, sizeof(*sd));
	summary__init(&sd->s);
	mem_report__init(&sd->mr);
}

static void side_free(struct side *sd)
{
	summary__free(&sd->s);
	mem_report__free(&sd->mr);
	history_run__free(&sd->meta);
	free(sd->name);
	free(sd->info);
}

static int load_file(struct side *sd, const char *path)
{
	int err = run_load__file(path, &sd->s);

	if (err)
		return err;
	sd->run = (struct html_run){ .name = path, .s = &sd->s, .trace = path };
	return 0;
}

/* "DB run 12 (label)" and "command, on host, at 2026-11-29 13:05:00 UTC". */
static int describe(struct side *sd, const char *db)
{
	const struct history_run *m = &sd->meta;
	char when[64] = "";
	time_t t = (time_t)m->started_at;
	struct tm tm;

	if (m->started_at && gmtime_r(&t, &tm))
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm);
	if (asprintf(&sd->name, "%s run %" PRId64 "%s%s%s", db, m->id,
		     m->label ? " (" : "", m->label ? m->label : "",
		     m->label ? ")" : "") < 0) {
		sd->name = NULL;
		return -ENOMEM;
	}
	if (asprintf(&sd->info, "%s%s%s%s%s", m->command ? m->command : "",
		     m->host ? (m->command ? ", on " : "on ") : "",
		     m->host ? m->host : "",
		     when[0] ? (m->command || m->host ? ", at " : "at ") : "",
		     when) < 0) {
		sd->info = NULL;
		return -ENOMEM;
	}
	return 0;
}

static int load_db(struct history_db *h, const char *db, const char *ref,
		   struct side *sd, bool mem)
{
	int err;

	err = run_load__db(h, ref, &sd->s, mem ? &sd->mr : NULL, &sd->meta);
	if (err)
		return err;
	err = describe(sd, db);
	if (err) {
		sp_err("report: %s", strerror(-err));
		return err;
	}
	sd->run = (struct html_run){
		.name = sd->name, .info = sd->info[0] ? sd->info : NULL,
		.s = &sd->s, .mr = mem ? &sd->mr : NULL,
	};
	return 0;
}

/* The timeline of a `sptrace mem --interval` JSON file, in place of any
 * the run has. 0 or -errno (reported). */
static int load_mem(struct side *sd, const char *path)
{
	char msg[512];
	int err;

	err = json_summary__read_timeline(path, &sd->mr.tl, msg, sizeof(msg));
	if (err) {
		sp_err("%s", msg);
		return err;
	}
	if (!sd->mr.tl.n) {
		sp_err("%s: no memory timeline (sptrace mem --interval MS -f json "
		       "writes one)", path);
		return -EINVAL;
	}
	sd->mr.timeline_on = true;
	sd->run.mr = &sd->mr;
	return 0;
}

/* Memory data of another program would be drawn under this run's name
 * without a word: refuse when both commands are known and differ, warn
 * when one is not (JSON summaries, memory files from before the command
 * was kept). path: the run file (NULL for a database run, whose command
 * is in sd->meta). 0 or -errno (reported). */
static int check_same_program(struct side *sd, const char *path,
			      const char *mem)
{
	const char *mine = sd->mr.tl.command, *theirs = sd->meta.command;
	struct history_run fr = { 0 };
	int err = 0;

	if (path) {
		err = run_store__describe(path, &fr);
		if (err) {
			sp_err("report: %s", strerror(-err));
			return err;
		}
		theirs = fr.command;
	}
	if (!mine || !theirs || !theirs[0])
		sp_warn("report: cannot tell whether %s and %s traced the same program (%s has no command line)",
			path ? path : sd->name, mem,
			!mine ? mem : path ? path : sd->name);
	else if (strcmp(mine, theirs)) {
		sp_err("report: %s traced '%s', but %s traced '%s' (give the memory file of the same run)",
		       mem, mine, path ? path : sd->name, theirs);
		err = -EINVAL;
	}
	history_run__free(&fr);
	return err;
}

struct report_job {
	const char *title;
	const struct html_run *run, *base;
	const struct html_verdicts *hv;
};

static int report_fn(FILE *out, const void *ctx)
{
	const struct report_job *j = ctx;

	if (j->hv)
		return html_report__write_verdicts(out, j->title, j->run, j->hv);
	return html_report__write(out, j->title, j->run, j->base);
}

/* The sets of a verdict report and what they own. */
struct sets {
	int64_t *bids, *nids;
	unsigned int nb, nn;
	struct run_set bs, ns;
	bool loaded;
	struct verdicts v;
	char bref[64];
};

static void sets_free(struct sets *st)
{
	free(st->bids);
	free(st->nids);
	if (st->loaded) {
		run_set__free(&st->bs);
		run_set__free(&st->ns);
	}
	verdicts__free(&st->v);
}

/*
 * With --db: whether RUN and BASE name sets (more than one run on a side,
 * or --history), and if so their verdicts, and the newest run of RUN
 * loaded into `run` for the rest of the page. 1: plain runs (nothing
 * done), 0: sets, or -errno (reported).
 */
static int load_sets(struct history_db *h, const char *db, const char *ref,
		     const char *base, bool history, unsigned int window,
		     const struct verdict_opts *vo, struct sets *st,
		     struct side *run)
{
	char last[32];
	int err;

	err = history_db__resolve_set(h, ref, &st->nids, &st->nn);
	if (err)
		return err;
	if (history) {
		if (st->nn != 1) {
			sp_err("report: --history judges one run, and '%s' names %u (give one run)",
			       ref, st->nn);
			return -EINVAL;
		}
		err = history_db__earlier(h, st->nids[0], window, &st->bids,
					  &st->nb);
		if (!err && st->nb < 2) {
			sp_err("%s: run %" PRId64 " has %u earlier runs of its command: a history needs at least 2 (store more runs, e.g. with sptrace bench)",
			       db, st->nids[0], st->nb);
			err = -ENOENT;
		}
		if (err)
			return err;
		snprintf(st->bref, sizeof(st->bref), "%" PRId64 "..%" PRId64,
			 st->bids[0], st->bids[st->nb - 1]);
	} else {
		if (!base)
			return 1;
		err = history_db__resolve_set(h, base, &st->bids, &st->nb);
		if (err)
			return err;
		if (st->nb == 1 && st->nn == 1)
			return 1;
	}
	err = history_db__load_set(h, st->bids, st->nb, &st->bs);
	if (err)
		return err;
	err = history_db__load_set(h, st->nids, st->nn, &st->ns);
	if (err) {
		run_set__free(&st->bs);
		return err;
	}
	st->loaded = true;
	err = verdicts__build(&st->v, &st->bs, &st->ns, vo);
	if (err) {
		sp_err("report: %s", strerror(-err));
		return err;
	}
	snprintf(last, sizeof(last), "%" PRId64, st->nids[st->nn - 1]);
	return load_db(h, db, last, run, true);
}

int cmd_report(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "force", no_argument, NULL, OPT_FORCE },
		{ "base", required_argument, NULL, OPT_BASE },
		{ "db", required_argument, NULL, OPT_DB },
		{ "title", required_argument, NULL, OPT_TITLE },
		{ "mem", required_argument, NULL, OPT_MEM },
		{ "history", no_argument, NULL, OPT_HISTORY },
		{ "threshold", required_argument, NULL, OPT_THRESHOLD },
		{ "fdr", required_argument, NULL, OPT_FDR },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	struct verdict_opts vo = { VERDICT_DEFAULT_THRESHOLD,
				   VERDICT_DEFAULT_FDR };
	struct html_verdicts hv;
	struct sets st;
	bool history = false, sets = false;
	double d;
	const char *output = NULL, *base = NULL, *db = NULL, *title = NULL;
	const char *mem = NULL;
	struct history_db *h = NULL;
	struct side run, bside;
	char *deftitle = NULL;
	bool force = false;
	int c, err;

	optind = 1;
	while ((c = cli__getopt(argc, argv, "o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'o':
			output = optarg;
			break;
		case OPT_FORCE:
			force = true;
			break;
		case OPT_BASE:
			if (cli__set_once(&base, "--base", optarg))
				return 1;
			break;
		case OPT_DB:
			if (cli__set_once(&db, "--db", optarg))
				return 1;
			break;
		case OPT_TITLE:
			title = optarg;
			break;
		case OPT_MEM:
			if (cli__set_once(&mem, "--mem", optarg))
				return 1;
			break;
		case OPT_HISTORY:
			history = true;
			break;
		case OPT_THRESHOLD:
			if (parse_double(optarg, 0, 1000, &d)) {
				sp_err("invalid --threshold '%s' (expected a percentage, 0..1000)",
				       optarg);
				return 1;
			}
			vo.threshold = d / 100;
			break;
		case OPT_FDR:
			if (parse_double(optarg, 1e-9, 0.5, &d)) {
				sp_err("invalid --fdr '%s' (expected a rate above 0, at most 0.5)",
				       optarg);
				return 1;
			}
			vo.fdr = d;
			break;
		default:
			if (cli__option(c, print_usage))
				return 1;
		}
	}
	if (argc - optind > 1 || (argc == optind && (!mem || db || base))) {
		sp_err("report: give one run: FILE, --db DB RUN or --mem FILE (see sptrace report --help)");
		return 1;
	}
	if (history && (!db || base || mem)) {
		sp_err("report: --history judges a run of a history database against its earlier runs (give --db DB RUN, without --base or --mem)");
		return 1;
	}
	if (output__check(&(struct output_spec){ output, "-o", force, false }, 1,
			  (const char *const[]){ db ? db : argv[optind],
						 db ? NULL : base, mem }, 3))
		return 1;
	side_init(&run);
	side_init(&bside);
	memset(&st, 0, sizeof(st));
	if (db) {
		err = history_db__open(db, false, &h);
		if (!err && !mem) {
			err = load_sets(h, db, argv[optind], base, history,
					30, &vo, &st, &run);
			sets = !err;
			if (err == 1)
				err = 0;
		}
		if (!err && !sets)
			err = load_db(h, db, argv[optind], &run, true);
		if (!err && !sets && base)
			err = load_db(h, db, base, &bside, false);
	} else if (optind < argc) {
		err = load_file(&run, argv[optind]);
		if (!err && base)
			err = load_file(&bside, base);
	} else {
		/* Only a memory run: its timeline, and no queries. */
		err = 0;
		summary__finish(&run.s);
		run.run = (struct html_run){ .name = mem, .s = &run.s };
	}
	if (!err && mem)
		err = load_mem(&run, mem);
	if (!err && mem && (db || optind < argc))
		err = check_same_program(&run, db ? NULL : argv[optind], mem);
	if (!err && !title) {
		int r = sets ? asprintf(&deftitle, "sptrace report: %s -> %s",
					history ? st.bref : base, argv[optind]) :
			       asprintf(&deftitle, "sptrace report: %s",
					run.run.name);

		if (r < 0) {
			deftitle = NULL;
			err = -ENOMEM;
			sp_err("report: %s", strerror(ENOMEM));
		}
		title = deftitle;
	}
	if (sets)
		hv = (struct html_verdicts){ .v = &st.v, .base = &st.bs,
					     .new = &st.ns,
					     .base_ref = history ? st.bref : base,
					     .new_ref = argv[optind] };
	if (!err)
		err = cli__write(output, force, false, report_fn, &(struct report_job){
			.title = title, .run = &run.run,
			.base = base && !sets ? &bside.run : NULL,
			.hv = sets ? &hv : NULL });
	if (h)
		history_db__close(h);
	free(deftitle);
	sets_free(&st);
	side_free(&run);
	side_free(&bside);
	return err ? 1 : 0;
}
