// SPDX-License-Identifier: MIT
/*
 * `sptrace diff BASE NEW`: compare two runs query by query (diff.c). Each
 * side is a trace file (sptrace record) or a JSON summary (sptrace -f json),
 * told apart by content, not by name: a JSON summary's first non-blank byte
 * is '{', which no trace file starts with (its magic begins with 0x89);
 * anything else goes to the trace reader, whose error names the magic it
 * expected and found.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "commands.h"
#include "diff_writer.h"
#include "table.h"
#include "history_db.h"
#include "log.h"
#include "output.h"
#include "parse.h"
#include "run_load.h"
#include "run_set.h"
#include "summary.h"
#include "summary_writer.h"
#include "verdict.h"
#include "verdict_writer.h"

static const char usage[] =
"Usage: sptrace diff [OPTIONS] BASE NEW\n"
"       sptrace diff [OPTIONS] --db DB BASE_RUNS NEW_RUNS\n"
"       sptrace diff [OPTIONS] --db DB --history RUN\n"
"Compare two runs query by query: self time, time, count, cache hits,\n"
"blocked and incremental-load time of NEW and their change from BASE,\n"
"sorted by the size of the self-time change. BASE and NEW are each a trace\n"
"file (sptrace record) or a JSON summary (sptrace -f json); with --db,\n"
"a run stored in that history database: its id, latest or latest~N.\n"
"\n"
"With --db, either side may name several runs (repeated runs: sptrace\n"
"bench): A..B, ID,ID,... or label:NAME. Each query then gets a verdict,\n"
"regressed, improved, unchanged or too noisy to say, with its change and\n"
"95% interval; the table lists the queries that are not unchanged, by\n"
"their effect on the total time (docs/numbers.md). One run against several\n"
"is judged against their run-to-run noise (--history picks them).\n"
"\n"
"      --db FILE            BASE and NEW are runs of this database\n"
"      --history            NEW against the earlier runs of its command\n"
"      --window N           --history: at most N earlier runs (default 30)\n"
"      --all                verdicts: every query, unchanged ones too\n"
"      --threshold PCT      verdicts: a change under PCT% counts as none\n"
"                           (default 2)\n"
"      --fdr Q              verdicts: false discovery rate (default 0.05)\n"
"  -f, --format FMT         table (default) or json; csv for verdicts\n"
"  -o, --output FILE        write there instead of stdout (0600, no symlink)\n"
"      --force              overwrite an existing output file\n"
"      --wide               every column (default: the table fits 120\n"
"                           characters, docs/formats.md)\n"
"  -h, --help\n";

static void print_usage(FILE *f)
{
	fputs(usage, f);
}

/* Both sides from the history database, loaded whole and then handled
 * exactly as files are: finished, their counters warned about. */
static int load_db(const char *path, const char *base, const char *new,
		   struct summary *sb, struct summary *sn)
{
	struct history_db *h;
	int err;

	err = history_db__open(path, false, &h);
	if (err)
		return err;
	err = run_load__db(h, base, sb, NULL, NULL);
	if (!err)
		err = run_load__db(h, new, sn, NULL, NULL);
	history_db__close(h);
	if (!err) {
		run_load__warn(base, sb);
		run_load__warn(new, sn);
	}
	return err;
}

struct diff_job {
	const struct diff *d;
	const char *base, *new;
	bool json;
	unsigned int width;
};

static int diff_fn(FILE *out, const void *ctx)
{
	const struct diff_job *j = ctx;

	if (j->json)
		return diff__write_json(out, j->d, j->base, j->new);
	return diff__write_table_fit(out, j->d, j->base, j->new, j->width);
}


struct diff_env {
	const char *output, *db, *base, *new;
	bool force, history, all;
	enum summary_format format;
	unsigned int width, window;
	struct verdict_opts vo;
};

struct verdict_job {
	const struct verdicts *v;
	struct verdict_side base, new;
	const struct diff_env *env;
};

static int verdict_fn(FILE *out, const void *ctx)
{
	const struct verdict_job *j = ctx;

	switch (j->env->format) {
	case SUMMARY_JSON:
		return verdicts__write_json(out, j->v, &j->base, &j->new);
	case SUMMARY_CSV:
		return verdicts__write_csv(out, j->v);
	default:
		return verdicts__write_table(out, j->v, &j->base, &j->new,
					     j->env->all, j->env->width);
	}
}

/* Sets of runs of the database: their verdicts. */
static int diff_sets(struct history_db *h, const struct diff_env *env,
		     const int64_t *bids, unsigned int nb, const int64_t *nids,
		     unsigned int nn, const char *bref, const char *nref)
{
	struct run_set bs, ns;
	struct verdicts v;
	int err;

	memset(&v, 0, sizeof(v));
	err = history_db__load_set(h, bids, nb, &bs);
	if (err)
		return err;
	err = history_db__load_set(h, nids, nn, &ns);
	if (err) {
		run_set__free(&bs);
		return err;
	}
	err = verdicts__build(&v, &bs, &ns, &env->vo);
	if (err)
		sp_err("diff: %s", strerror(-err));
	else
		err = cli__write(env->output, env->force, false, verdict_fn,
				 &(struct verdict_job){
			.v = &v, .env = env,
			.base = { bref, bids, nb }, .new = { nref, nids, nn } });
	verdicts__free(&v);
	run_set__free(&bs);
	run_set__free(&ns);
	return err;
}

/* NEW against the runs before it of the same command. */
static int diff_history(struct history_db *h, const struct diff_env *env)
{
	int64_t *nids = NULL, *bids = NULL;
	unsigned int nn = 0, nb = 0;
	char bref[64];
	int err;

	err = history_db__resolve_set(h, env->new, &nids, &nn);
	if (!err && nn != 1) {
		sp_err("diff: --history judges one run, and '%s' names %u (give one run)",
		       env->new, nn);
		err = -EINVAL;
	}
	if (!err)
		err = history_db__earlier(h, nids[0], env->window, &bids, &nb);
	if (!err && nb < 2) {
		sp_err("%s: run %" PRId64 " has %u earlier run%s of its command: a history needs at least 2 (4 to see its noise; store more runs, e.g. with sptrace bench)",
		       env->db, nids[0], nb, nb == 1 ? "" : "s");
		err = -ENOENT;
	}
	if (!err) {
		snprintf(bref, sizeof(bref), "%" PRId64 "..%" PRId64, bids[0],
			 bids[nb - 1]);
		err = diff_sets(h, env, bids, nb, nids, nn, bref, env->new);
	}
	free(nids);
	free(bids);
	return err;
}

/* Two references of the database: two runs compared exactly, as two
 * files are; sets of runs, their verdicts. */
static int diff_db(const struct diff_env *env)
{
	int64_t *bids = NULL, *nids = NULL;
	unsigned int nb = 0, nn = 0;
	struct history_db *h;
	int err;

	err = history_db__open(env->db, false, &h);
	if (err)
		return err;
	if (env->history) {
		err = diff_history(h, env);
		history_db__close(h);
		return err;
	}
	err = history_db__resolve_set(h, env->base, &bids, &nb);
	if (!err)
		err = history_db__resolve_set(h, env->new, &nids, &nn);
	if (!err && (nb > 1 || nn > 1))
		err = diff_sets(h, env, bids, nb, nids, nn, env->base, env->new);
	else if (!err)
		err = 1;	/* two runs: below */
	free(bids);
	free(nids);
	history_db__close(h);
	return err;
}

static int parse_args(int argc, char **argv, struct diff_env *env)
{
	static const struct option opts[] = {
		{ "format", required_argument, NULL, 'f' },
		{ "output", required_argument, NULL, 'o' },
		{ "force", no_argument, NULL, OPT_FORCE },
		{ "db", required_argument, NULL, OPT_DB },
		{ "wide", no_argument, NULL, OPT_WIDE },
		{ "history", no_argument, NULL, OPT_HISTORY },
		{ "window", required_argument, NULL, OPT_WINDOW },
		{ "all", no_argument, NULL, OPT_ALL },
		{ "threshold", required_argument, NULL, OPT_THRESHOLD },
		{ "fdr", required_argument, NULL, OPT_FDR },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	long l;
	int c;

	optind = 1;
	while ((c = cli__getopt(argc, argv, "f:o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'f':
			if (summary_format__parse(optarg, &env->format)) {
				sp_err("diff: unknown format '%s' (expected table, json or csv)",
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
		case OPT_DB:
			env->db = optarg;
			break;
		case OPT_WIDE:
			env->width = 0;
			break;
		case OPT_HISTORY:
			env->history = true;
			break;
		case OPT_WINDOW:
			if (parse_long(optarg, 2, 100000, &l)) {
				sp_err("invalid --window '%s' (expected runs, 2..100000)",
				       optarg);
				return -EINVAL;
			}
			env->window = (unsigned int)l;
			break;
		case OPT_ALL:
			env->all = true;
			break;
		case OPT_THRESHOLD:
		case OPT_FDR:
			if (cli__verdict_option(c, optarg, &env->vo))
				return -EINVAL;
			break;
		default:
			if (cli__option(c, print_usage))
				return -EINVAL;
		}
	}
	if (env->history) {
		if (!env->db) {
			sp_err("diff: --history reads the runs of a history database (give --db DB)");
			return -EINVAL;
		}
		if (argc - optind != 1) {
			sp_err("diff: --history judges one run: give RUN (see sptrace diff --help)");
			return -EINVAL;
		}
		env->new = argv[optind];
		return 0;
	}
	if (argc - optind != 2) {
		sp_err("diff: give two runs, BASE and NEW (see sptrace diff --help)");
		return -EINVAL;
	}
	env->base = argv[optind];
	env->new = argv[optind + 1];
	return 0;
}

int cmd_diff(int argc, char **argv)
{
	struct diff_env env = {
		.width = TABLE_DEFAULT_WIDTH, .window = 30,
		.vo = { VERDICT_DEFAULT_THRESHOLD, VERDICT_DEFAULT_FDR },
	};
	struct summary sb, sn;
	struct diff d;
	int err;

	if (parse_args(argc, argv, &env))
		return 1;
	if (output__check(&(struct output_spec){ env.output, "-o", env.force,
						 false }, 1,
			  (const char *const[]){ env.db ? env.db : env.base,
						 env.db ? NULL : env.new }, 2))
		return 1;
	if (env.db) {
		err = diff_db(&env);
		if (err <= 0)
			return err ? 1 : 0;
	} else if (env.format == SUMMARY_CSV) {
		sp_err("diff: -f csv writes verdicts, which compare sets of runs of a history database (give --db DB)");
		return 1;
	}
	/* Two runs: every figure's change, exactly. */
	if (env.format == SUMMARY_CSV) {
		sp_err("diff: -f csv writes verdicts, and '%s' and '%s' are one run each (give several runs a side, or use -f json)",
		       env.base, env.new);
		return 1;
	}
	summary__init(&sb);
	summary__init(&sn);
	memset(&d, 0, sizeof(d));
	if (env.db)
		err = load_db(env.db, env.base, env.new, &sb, &sn);
	else if (!(err = run_load__file(env.base, &sb)))
		err = run_load__file(env.new, &sn);
	if (!err) {
		err = diff__build(&d, &sb, &sn);
		if (err)
			sp_err("diff: %s", strerror(-err));
	}
	if (!err)
		err = cli__write(env.output, env.force, false, diff_fn, &(struct diff_job){
			.d = &d, .base = env.base, .new = env.new,
			.json = env.format == SUMMARY_JSON, .width = env.width });
	diff__free(&d);
	summary__free(&sb);
	summary__free(&sn);
	return err ? 1 : 0;
}
