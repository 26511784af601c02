// SPDX-License-Identifier: MIT
/*
 * `sptrace bench -n N --db DB --label L -- CMD [::: CMD2]`: repeated runs.
 * Each run is traced as `sptrace -- CMD` traces it (live/bench_run.c) and
 * stored in the history database under its command's label; two commands
 * run in turn, A B A B ..., so that a machine's slow minute slows both
 * alike. At the end, each set's per-query statistics and, with two
 * commands, the verdicts of the second against the first (the same as
 * `sptrace diff --db DB label:A label:B`).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bench_run.h"
#include "cli.h"
#include "commands.h"
#include "history_db.h"
#include "log.h"
#include "output.h"
#include "parse.h"
#include "run_set.h"
#include "run_stats.h"
#include "session.h"
#include "stats_writer.h"
#include "summary_writer.h"
#include "table.h"
#include "text.h"
#include "verdict.h"
#include "verdict_writer.h"

/* The word between the two commands (GNU parallel's separator). */
#define CMD_SEP ":::"


struct bench_env {
	struct session_opts so[2];	/* one per command; so[1] shares so[0]'s specs */
	int ncmds;
	long runs;
	const char *db, *labels[2];
	int nlabels;
	const char *output;
	bool force;
	enum summary_format format;
	unsigned int width;
	struct verdict_opts vo;
};

static const char usage[] =
"Usage: sptrace bench [OPTIONS] --db DB [--label L] -- CMD [ARGS...]\n"
"       sptrace bench [OPTIONS] --db DB --label A --label B -- CMD_A [ARGS...] ::: CMD_B [ARGS...]\n"
"Run CMD N times, each run traced as sptrace -- CMD traces it, and store\n"
"every run in the history database DB under its label (progress on\n"
"stderr). With a second command after :::, run them in turn, A B A B ...\n"
"Then print each set's per-query statistics (median, spread, 95% interval)\n"
"and, with two commands, the verdicts of B against A, as sptrace diff --db\n"
"DB label:A label:B prints them (docs/numbers.md).\n"
"\n"
"  -n, --runs N             runs of each command (default 10)\n"
"      --db FILE            the history database (created if missing)\n"
"      --label LABEL        the runs' label; with two commands, one each\n"
"  -f, --format FMT         table (default), json or csv (the statistics)\n"
"  -o, --output FILE        write there instead of stdout (0600, no symlink)\n"
"      --force              overwrite an existing output file\n"
"      --wide               every column (default: tables fit 120 characters)\n"
"      --threshold PCT      verdicts: a change under PCT% counts as none\n"
"                           (default 2)\n"
"      --fdr Q              verdicts: false discovery rate (default 0.05)\n"
"      --query SPEC, --query-file FILE, --func [LIB:]GLOB, --follow, --query-keys,\n"
"      --max-queries N, --max-threads N, -v, -h as for sptrace\n";

static void print_usage(FILE *f)
{
	fputs(usage, f);
}

static int parse_args(int argc, char **argv, struct bench_env *env)
{
	static const struct option opts[] = {
		SESSION_LONG_OPTS,
		SESSION_QUERY_OPTS,
		{ "runs", required_argument, NULL, 'n' },
		{ "db", required_argument, NULL, OPT_DB },
		{ "label", required_argument, NULL, OPT_LABEL },
		{ "format", required_argument, NULL, 'f' },
		{ "output", required_argument, NULL, 'o' },
		{ "force", no_argument, NULL, OPT_FORCE },
		{ "wide", no_argument, NULL, OPT_WIDE },
		{ "threshold", required_argument, NULL, OPT_THRESHOLD },
		{ "fdr", required_argument, NULL, OPT_FDR },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	struct session_opts *so = &env->so[0];
	int c, r, i;

	optind = 1;
	while ((c = cli__getopt(argc, argv, "+" SESSION_SHORT_OPTS "n:f:o:vh",
				opts, NULL)) != -1) {
		r = session_opts__parse(so, c, optarg);
		if (r < 0)
			return r;
		if (r)
			continue;
		switch (c) {
		case 'n':
			if (parse_long(optarg, 1, 100000, &env->runs)) {
				sp_err("invalid --runs '%s' (expected 1..100000)",
				       optarg);
				return -EINVAL;
			}
			break;
		case OPT_DB:
			env->db = optarg;
			break;
		case OPT_LABEL:
			if (env->nlabels == 2) {
				sp_err("bench: --label: one per command, and there are at most two");
				return -EINVAL;
			}
			env->labels[env->nlabels++] = optarg;
			break;
		case 'f':
			if (summary_format__parse(optarg, &env->format)) {
				sp_err("unknown format '%s' (expected table, json or csv)",
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
		case OPT_WIDE:
			env->width = 0;
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
	if (so->npids || so->nbinaries) {
		sp_err("bench: it launches its command: -p and -b do not apply (give -- CMD)");
		return -EINVAL;
	}
	if (so->duration_s) {
		sp_err("bench: -d: each run ends with its command");
		return -EINVAL;
	}
	if (!env->db) {
		sp_err("bench: give the history database the runs go to with --db FILE");
		return -EINVAL;
	}
	if (optind >= argc) {
		sp_err("bench: give the command to run: -- CMD [ARGS...] (see sptrace bench --help)");
		return -EINVAL;
	}
	so->cmd = &argv[optind];
	env->ncmds = 1;
	for (i = optind; i < argc; i++) {
		if (strcmp(argv[i], CMD_SEP))
			continue;
		if (env->ncmds == 2) {
			sp_err("bench: at most two commands (one '" CMD_SEP "' between them)");
			return -EINVAL;
		}
		/* The first command's argv ends here; the second follows. */
		argv[i] = NULL;
		env->so[1] = *so;
		env->so[1].cmd = &argv[i + 1];
		env->ncmds = 2;
	}
	for (i = 0; i < env->ncmds; i++) {
		if (!env->so[i].cmd[0]) {
			sp_err("bench: an empty command %s '" CMD_SEP "' (give a command on each side)",
			       i ? "after" : "before");
			return -EINVAL;
		}
	}
	if (env->ncmds == 2 && env->nlabels != 2) {
		sp_err("bench: two commands need two labels, one each (--label A --label B), to tell their runs apart");
		return -EINVAL;
	}
	if (env->ncmds == 1 && env->nlabels > 1) {
		sp_err("bench: one command, one --label");
		return -EINVAL;
	}
	if (env->ncmds == 2 && env->labels[0] && env->labels[1] &&
	    !strcmp(env->labels[0], env->labels[1])) {
		sp_err("bench: the two commands have the same label '%s' (give each its own)",
		       env->labels[0]);
		return -EINVAL;
	}
	return session_opts__check(so);
}

/* The ids stored for each command. */
struct bench_ids {
	int64_t *v;
	unsigned int n;
};

struct bench_out {
	const struct bench_env *env;
	struct run_stats_side sides[2];
	char refs[2][300];
	const struct verdicts *v;	/* NULL with one command */
};

static int out_fn(FILE *out, const void *ctx)
{
	const struct bench_out *o = ctx;
	const struct bench_env *env = o->env;
	int err;

	switch (env->format) {
	case SUMMARY_JSON:
		return run_stats__write_json(out, o->sides, (unsigned)env->ncmds);
	case SUMMARY_CSV:
		return run_stats__write_csv(out, o->sides, (unsigned)env->ncmds);
	default:
		err = run_stats__write_table(out, o->sides, (unsigned)env->ncmds,
					     env->width);
		if (!err && o->v) {
			struct verdict_side b = { o->refs[0], o->sides[0].ids,
						  o->sides[0].nids };
			struct verdict_side n = { o->refs[1], o->sides[1].ids,
						  o->sides[1].nids };

			fputc('\n', out);
			err = verdicts__write_table(out, o->v, &b, &n, false,
						    env->width);
		}
		return err;
	}
}

/* The statistics of the runs made, and the verdicts of two commands. */
static int report(struct history_db *db, const struct bench_env *env,
		  const struct bench_ids *ids)
{
	struct run_set sets[2];
	struct run_stats st[2];
	struct verdicts v;
	struct bench_out o = { .env = env };
	int i, n = 0, err = 0;

	memset(&v, 0, sizeof(v));
	memset(st, 0, sizeof(st));
	for (i = 0; !err && i < env->ncmds; i++) {
		err = history_db__load_set(db, ids[i].v, ids[i].n, &sets[i]);
		if (err)
			break;
		n++;
		err = run_stats__build(&st[i], &sets[i]);
		if (env->labels[i])
			snprintf(o.refs[i], sizeof(o.refs[i]), "label:%s",
				 env->labels[i]);
		else
			snprintf(o.refs[i], sizeof(o.refs[i]), "%" PRId64 "..%" PRId64,
				 ids[i].v[0], ids[i].v[ids[i].n - 1]);
		o.sides[i] = (struct run_stats_side){ o.refs[i], ids[i].v,
						      ids[i].n, &st[i] };
	}
	if (!err && env->ncmds == 2) {
		err = verdicts__build(&v, &sets[0], &sets[1], &env->vo);
		o.v = &v;
	}
	if (err == -ENOMEM)
		sp_err("bench: out of memory");
	if (!err)
		err = cli__write(env->output, env->force, false, out_fn, &o);
	verdicts__free(&v);
	for (i = 0; i < n; i++) {
		run_stats__free(&st[i]);
		run_set__free(&sets[i]);
	}
	return err;
}

int cmd_bench(int argc, char **argv)
{
	struct bench_env env = {
		.runs = 10, .width = TABLE_DEFAULT_WIDTH,
		.vo = { VERDICT_DEFAULT_THRESHOLD, VERDICT_DEFAULT_FDR },
	};
	struct bench_ids ids[2] = { { 0 } };
	struct history_db *db = NULL;
	struct bench_result r;
	bool created = false;
	long i, total;
	int c, err = 0, status = 0;

	if (parse_args(argc, argv, &env)) {
		session_opts__free(&env.so[0]);
		return 1;
	}
	{
		const struct output_spec outs[] = {
			{ env.output, "-o", env.force, false },
			{ env.db, "--db", false, true },
		};
		int e1 = output__check(outs, 2, NULL, 0);
		int e2 = session_opts__precheck(&env.so[0]);
		int e3 = env.ncmds == 2 ? session_opts__precheck(&env.so[1]) : 0;

		if (e1 || e2 || e3 || cli__db_open(env.db, &db, &created)) {
			cli__db_close(db, env.db, created, true);
			session_opts__free(&env.so[0]);
			return 1;
		}
	}
	for (c = 0; c < env.ncmds; c++) {
		ids[c].v = calloc((size_t)env.runs, sizeof(*ids[c].v));
		if (!ids[c].v) {
			sp_err("bench: out of memory");
			err = -ENOMEM;
		}
	}
	total = env.runs * env.ncmds;
	for (i = 0; !err && !status && i < total; i++) {
		c = (int)(i % env.ncmds);
		err = bench_run__once(&env.so[c], db, env.labels[c], &r);
		if (err)
			break;
		if (r.interrupted) {
			sp_err("bench: interrupted in run %ld of %ld: stopped (%u runs stored; not the one cut short)",
			       i + 1, total, ids[0].n + ids[1].n);
			status = r.status ? r.status : 130;
		} else if (r.status) {
			sp_err("bench: run %ld of %ld%s%s%s: '%s' exited with status %d: stopped (%u runs stored; not this one)",
			       i + 1, total, env.labels[c] ? " (" : "",
			       env.labels[c] ? env.labels[c] : "",
			       env.labels[c] ? ")" : "", env.so[c].cmd[0],
			       r.status, ids[0].n + ids[1].n);
			status = 1;
		} else {
			char dur[24];

			ids[c].v[ids[c].n++] = r.id;
			text__fmt_ns(dur, sizeof(dur), r.duration_ns);
			sp_note("bench: run %ld of %ld%s%s%s: %s, %u queries, stored as run %" PRId64,
				i + 1, total, env.labels[c] ? " (" : "",
				env.labels[c] ? env.labels[c] : "",
				env.labels[c] ? ")" : "", dur, r.queries, r.id);
		}
	}
	if (!err && !status)
		err = report(db, &env, ids);
	if (!err && !status && env.ncmds == 2)
		sp_note("bench: compare them again with: sptrace diff --db %s label:%s label:%s",
			env.db, env.labels[0], env.labels[1]);
	cli__db_close(db, env.db, created, !ids[0].n && !ids[1].n);
	free(ids[0].v);
	free(ids[1].v);
	session_opts__free(&env.so[0]);
	return err ? 1 : status;
}
