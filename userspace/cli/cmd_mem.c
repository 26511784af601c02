// SPDX-License-Identifier: MIT
/*
 * `sptrace mem -p PID` and `sptrace mem -- CMD`: memory only (the memory
 * provider in a session of its own).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "cli.h"
#include "commands.h"
#include "history_db.h"
#include "log.h"
#include "parse.h"
#include "mem_provider.h"
#include "mem_report.h"
#include "output.h"
#include "summary_writer.h"
#include "session.h"
#include "summary.h"
#include "table.h"

struct mem_env {
	struct session_opts so;
	struct mem_opts mo;
	enum summary_format format;
	const char *output;
	bool force;
	bool wide;			/* --wide: every column */
	unsigned int interval_ms;
	unsigned int max_sites;
	struct db_opts dbo;	/* --db, --label: store the run */
};

static const char usage[] =
"Usage: sptrace mem [OPTIONS] -p PID[,PID...]\n"
"       sptrace mem [OPTIONS] -- CMD [ARGS...]\n"
"Memory of running processes or of a command: typed allocations from\n"
"SP_ALLOC/SP_FREE probes, and the libc allocator (malloc, calloc, realloc,\n"
"free, ...; no rebuild needed). Per type, per allocation site (what is\n"
"still live at the end: what leaks), per thread and over time.\n"
"\n"
"  -p, --pid PID[,PID...]   trace these running processes\n"
"  -d, --duration SECONDS   stop after this long (default: Ctrl-C, or exit)\n"
"  -f, --format FMT         table (default), json or csv\n"
"  -o, --output FILE        write there instead of stdout (0600, no symlink)\n"
"      --force              overwrite an existing output file\n"
"      --wide               every column (default: the tables fit 120\n"
"                           characters, docs/formats.md#fitting-120-characters)\n"
"      --per-thread         break figures down by allocating thread\n"
"      --sample N           count every Nth allocation; figures scaled xN\n"
"      --interval MS        sample RSS and live bytes every MS ms (timeline)\n"
"      --no-libc            only SP_ALLOC/SP_FREE probes, not malloc & co\n"
"      --no-stacks          no allocation sites (cheaper)\n"
"      --sites N            allocation sites in the table (default 20)\n"
"      --max-live N         outstanding allocations tracked (default %u)\n"
"      --max-stacks N       distinct allocation stacks (default %u)\n"
"      --max-threads N      threads inside the allocator at once (default %u)\n"
"      --db FILE            also store the run (types, heap, timeline) in this\n"
"                           history database (docs/database.md)\n"
"      --label LABEL        the stored run's label (with --db)\n"
"  -v, --verbose            say what is attached; show libbpf's messages\n"
"  -h, --help\n"
"\n"
"Stacks need frame pointers in the traced code (-fno-omit-frame-pointer).\n"
"See docs/memory.md.\n";

static void print_usage(FILE *f)
{
	fprintf(f, usage, SP_MEM_DEFAULT_MAX_LIVE, SP_MEM_DEFAULT_MAX_STACKS,
		SP_MEM_DEFAULT_MAX_THREADS);
}


static int parse_count(const char *opt, const char *arg, long min, long max,
		       unsigned int *out)
{
	long v;

	if (parse_long(arg, min, max, &v)) {
		sp_err("invalid %s '%s' (expected %ld..%ld)", opt, arg, min, max);
		return -EINVAL;
	}
	*out = (unsigned int)v;
	return 0;
}

static int parse_args(int argc, char **argv, struct mem_env *env)
{
	static const struct option opts[] = {
		SESSION_LONG_OPTS,
		{ "format", required_argument, NULL, 'f' },
		{ "output", required_argument, NULL, 'o' },
		{ "force", no_argument, NULL, OPT_FORCE },
		{ "wide", no_argument, NULL, OPT_WIDE },
		{ "per-thread", no_argument, NULL, OPT_PER_THREAD },
		{ "sample", required_argument, NULL, OPT_SAMPLE },
		{ "interval", required_argument, NULL, OPT_INTERVAL },
		{ "no-libc", no_argument, NULL, OPT_NO_LIBC },
		{ "no-stacks", no_argument, NULL, OPT_NO_STACKS },
		{ "sites", required_argument, NULL, OPT_SITES },
		{ "max-live", required_argument, NULL, OPT_MAX_LIVE },
		{ "max-stacks", required_argument, NULL, OPT_MAX_STACKS },
		DB_LONG_OPTS,
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	unsigned int sample;
	int c, r;

	optind = 1;
	while ((c = cli__getopt(argc, argv, "+" SESSION_SHORT_OPTS "f:o:vh",
				opts, NULL)) != -1) {
		r = session_opts__parse(&env->so, c, optarg);
		if (r < 0)
			return r;
		if (r)
			continue;
		if (db_opts__parse(&env->dbo, c, optarg))
			continue;
		switch (c) {
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
		case OPT_WIDE:
			env->wide = true;
			break;
		case OPT_FORCE:
			env->force = true;
			break;
		case OPT_PER_THREAD:
			env->mo.per_thread = true;
			break;
		case OPT_SAMPLE:
			if (parse_count("--sample", optarg, 1, 1 << 30, &sample))
				return -EINVAL;
			env->mo.sample = sample;
			break;
		case OPT_INTERVAL:
			if (parse_count("--interval", optarg, 1, 3600000,
					&env->interval_ms))
				return -EINVAL;
			break;
		case OPT_NO_LIBC:
			env->mo.no_libc = true;
			break;
		case OPT_NO_STACKS:
			env->mo.no_stacks = true;
			break;
		case OPT_SITES:
			if (parse_count("--sites", optarg, 1, 1 << 20,
					&env->max_sites))
				return -EINVAL;
			break;
		case OPT_MAX_LIVE:
			if (parse_count("--max-live", optarg, 16, 1 << 26,
					&env->mo.max_live))
				return -EINVAL;
			break;
		case OPT_MAX_STACKS:
			if (parse_count("--max-stacks", optarg, 16, 1 << 22,
					&env->mo.max_stacks))
				return -EINVAL;
			break;
		default:
			if (cli__option(c, print_usage))
				return -EINVAL;
		}
	}
	if (optind < argc)
		env->so.cmd = &argv[optind];
	if (db_opts__check(&env->dbo))
		return -EINVAL;
	return session_opts__check(&env->so);
}

int cmd_mem(int argc, char **argv)
{
	struct mem_env env = {};
	struct summary_write_opts ropts = {};
	struct session_provider p;
	struct mem_provider mp;
	struct mem_report r;
	struct history_db *db = NULL;
	struct session ss;
	struct summary s;
	int64_t started;
	bool db_created, stored = false;
	int err, status;

	if (parse_args(argc, argv, &env))
		return 1;
	{
		const struct output_spec outs[] = {
			{ env.output, "-o", env.force, false },
			{ env.dbo.db, "--db", false, true },
		};
		int e1 = output__check(outs, 2, NULL, 0);
		int e2 = session_opts__precheck(&env.so);

		if (e1 || e2 || cli__db_open(env.dbo.db, &db, &db_created))
			return 1;
	}
	summary__init(&s);
	mem_report__init(&r);
	r.max_sites = env.max_sites;
	session__init(&ss, &env.so);
	mem_provider__init(&mp, &env.mo, &p);
	err = session__add(&ss, &p);
	if (!err)
		err = session__start(&ss);
	started = (int64_t)(ss.start_realtime_ns / 1000000000ull);
	/* Kept in the JSON, so `report --mem` knows whose memory it is. */
	if (!err)
		err = session__describe(&ss, &r.tl.command);
	if (!err)
		err = mem_provider__run(&mp, &ss, &r, env.interval_ms);
	if (!err)
		err = mem_provider__read(&mp, &ss, &r);
	if (!err && !env.mo.no_libc && !mp.heap_traced)
		sp_warn("no libc allocator was found in the target%s: only SP_ALLOC/SP_FREE probes were traced",
			env.so.npids > 1 ? "s" : "");
	if (!err) {
		ropts.format = env.format;
		ropts.width = env.wide ? 0 : TABLE_DEFAULT_WIDTH;
		err = cli__write_mem(env.output, env.force, NULL, &ropts, &r);
		/* A memory-only run: no query rows, the report's duration. */
		s.duration_ns = r.duration_ns;
		summary__finish(&s);
		if (db && session__store(&ss, db, env.dbo.label, "mem", started,
					 &s, &r, NULL)) {
			if (!err)
				err = -EIO;
		} else if (db) {
			stored = true;
		}
	}
	cli__db_close(db, env.dbo.db, db_created, !stored);
	summary__free(&s);
	session__destroy(&ss);
	status = session__exit_status(&ss, err);
	mem_report__free(&r);
	session_opts__free(&env.so);
	return status;
}
