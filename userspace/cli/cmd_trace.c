// SPDX-License-Identifier: MIT
/*
 * The live mode: `sptrace -p PID[,PID...]` and `sptrace -- CMD`. A session
 * (session.c) aggregates in the kernel; at the end the maps are read into a
 * summary and written as a table, JSON or CSV.
 */
#include <errno.h>
#include <inttypes.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "cli.h"
#include "commands.h"
#include "exited_rows.h"
#include "history_db.h"
#include "interval.h"
#include "log.h"
#include "parse.h"
#include "mem_provider.h"
#include "output.h"
#include "query_provider.h"
#include "summary_writer.h"
#include "session.h"
#include "summary.h"
#include "table.h"
#include "titles.h"

struct trace_env {
	struct session_opts so;
	const char *output;
	bool force;
	struct summary_write_opts ropts;
	enum summary_sort sort;
	bool per_pid;
	bool mem;		/* --mem: the memory report too */
	double interval;	/* --interval: a report every this many s */
	bool cumulative;	/* --cumulative: totals, not deltas */
	struct db_opts dbo;	/* --db, --label: store the run */
};

static const char usage[] =
"Usage: sptrace [OPTIONS] -p PID[,PID...]\n"
"       sptrace [OPTIONS] -b PATH\n"
"       sptrace [OPTIONS] -- CMD [ARGS...]\n"
"Trace the sp probes of running processes or of a command and print one row\n"
"per query: self and total time, counts, cache hits, blocked and\n"
"incremental-load time, latency percentiles. Tracing starts about 0.1 s\n"
"after sptrace does (more on a busy machine, and with --query or --func;\n"
"-v says how long); a command starts only then.\n"
"\n"
"  -p, --pid PID[,PID...]   trace these running processes\n"
"  -b, --binary PATH        trace every process that runs or maps PATH,\n"
"                           including those started later (repeatable)\n"
"  -d, --duration SECONDS   stop after this long (default: Ctrl-C, or exit)\n"
"  -f, --format FMT         table (default), json or csv\n"
"  -o, --output FILE        write there instead of stdout (0600, no symlink)\n"
"      --force              overwrite an existing output file\n"
"  -s, --sort COLUMN        self (default), total, count, name, cache-hits,\n"
"                           blocked, incr, p50, p99, max\n"
"      --hist               print each query's latency histogram\n"
"      --percent-above P    hide rows with at most P%% of the self time\n"
"      --wide               every column at full width (default: the table\n"
"                           fits 120 characters, docs/formats.md)\n"
"      --per-pid            one row per query and process\n"
"      --interval SECONDS   a report every SECONDS (table, or one JSON line\n"
"                           with -f json), per interval (docs/fleet.md)\n"
"      --cumulative         with --interval: totals since the start\n"
"      --mem                also the memory report of `sptrace mem` (table\n"
"                           or JSON; docs/memory.md)\n"
"      --db FILE            also store the run in this history database\n"
"                           (created if missing; docs/database.md)\n"
"      --label LABEL        the stored run's label (with --db)\n"
"      --func [LIB:]GLOB    also time the functions matching GLOB (entry and\n"
"                           return probes): in the executable, or in the\n"
"                           mapped library LIB (e.g. libc:malloc); repeatable\n"
"      --func-unsafe        allow --func in C++ programs that throw (a throw\n"
"                           through a traced function aborts the program)\n"
"      --query SPEC         rows from any provider's USDT probes:\n"
"                           PROV:BEGIN,PROV:END[|PROV:END2],name=argN|P:argN|NAME\n"
"                           [,kind=blocked|incr][,if=|hit=argN!=0][,normalize=pg|sql]\n"
"                           [,max-rows=N][,stack=S][,outcomes] or\n"
"                           PROV:PROBE,name=...,kind=cache; repeatable\n"
"                           (docs/providers.md)\n"
"      --query-file FILE    the specs of FILE, one a line (examples/specs/)\n"
"      --follow             with -- CMD or -p PID: also the processes it starts,\n"
"                           and theirs (docs/follow.md)\n"
"      --max-queries N      distinct (process, query) rows kept in the\n"
"                           kernel (default %u); with --query-keys, keyed\n"
"                           rows, the rest summed into \"<other>\"\n"
"      --query-keys         a row per query and key of the keyed probes\n"
"                           (SP_QUERY_BEGIN_KEY, sp_query_begin_key!),\n"
"                           named q(key); without it, one row per query\n"
"      --max-threads N      threads with open queries (default %u)\n"
"  -v, --verbose            say what is attached and how long loading,\n"
"                           attaching and detaching took; libbpf's messages\n"
"  -h, --help\n"
"\n"
"Other commands: sptrace help\n";

static void print_usage(FILE *f)
{
	fprintf(f, usage, SP_DEFAULT_MAX_QUERIES, SP_DEFAULT_MAX_THREADS);
}


static int parse_args(int argc, char **argv, struct trace_env *env)
{
	static const struct option opts[] = {
		SESSION_LONG_OPTS,
		SESSION_QUERY_OPTS,
		{ "format", required_argument, NULL, 'f' },
		{ "output", required_argument, NULL, 'o' },
		{ "force", no_argument, NULL, OPT_FORCE },
		{ "sort", required_argument, NULL, 's' },
		{ "hist", no_argument, NULL, OPT_HIST },
		{ "percent-above", required_argument, NULL, OPT_PERCENT_ABOVE },
		{ "wide", no_argument, NULL, OPT_WIDE },
		{ "per-pid", no_argument, NULL, OPT_PER_PID },
		{ "mem", no_argument, NULL, OPT_MEM },
		{ "interval", required_argument, NULL, OPT_INTERVAL },
		{ "cumulative", no_argument, NULL, OPT_CUMULATIVE },
		DB_LONG_OPTS,
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	int c, r;

	optind = 1;
	while ((c = cli__getopt(argc, argv, "+" SESSION_SHORT_OPTS "f:o:s:vh",
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
			if (summary_format__parse(optarg, &env->ropts.format)) {
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
		case 's':
			if (summary__parse_sort(optarg, &env->sort)) {
				sp_err("unknown sort column '%s' (see --help)",
				       optarg);
				return -EINVAL;
			}
			break;
		case OPT_HIST:
			env->ropts.hist = true;
			break;
		case OPT_WIDE:
			env->ropts.width = 0;
			break;
		case OPT_PER_PID:
			env->per_pid = true;
			break;
		case OPT_MEM:
			env->mem = true;
			break;
		case OPT_INTERVAL:
			if (parse_double(optarg, 0.05, 86400, &env->interval)) {
				sp_err("invalid --interval '%s' (expected seconds, 0.05..86400)",
				       optarg);
				return -EINVAL;
			}
			break;
		case OPT_CUMULATIVE:
			env->cumulative = true;
			break;
		case OPT_PERCENT_ABOVE:
			if (parse_double(optarg, 0, 100,
					 &env->ropts.percent_above)) {
				sp_err("invalid --percent-above '%s' (expected 0..100)",
				       optarg);
				return -EINVAL;
			}
			break;
		default:
			if (cli__option(c, print_usage))
				return -EINVAL;
		}
	}
	if (optind < argc)
		env->so.cmd = &argv[optind];
	if (env->mem && env->ropts.format == SUMMARY_CSV) {
		sp_err("--mem: a CSV file holds one table (use -f json, or sptrace mem -f csv)");
		return -EINVAL;
	}
	if (env->interval && (env->mem || env->ropts.format == SUMMARY_CSV ||
			      env->dbo.db)) {
		sp_err("--interval: reports are tables or JSON lines (not with -f csv, --mem or --db)");
		return -EINVAL;
	}
	if (env->cumulative && !env->interval) {
		sp_err("--cumulative goes with --interval SECONDS");
		return -EINVAL;
	}
	if (db_opts__check(&env->dbo))
		return -EINVAL;
	return session_opts__check(&env->so);
}

/* --per-pid: a process's title when first seen, even if it exits. */
/* What a one-shot run does while it traces: the titles of --per-pid,
 * and the rows of exited processes moved out of the maps. */
struct trace_poll {
	struct titles *titles;		/* NULL without --per-pid */
	struct exited_rows *rows;	/* NULL with --mem */
	/* Processes may exit while the session goes on (-b, --follow,
	 * several -p): only then are the maps read to move their rows. One
	 * -p target or a command alone ends the session as it exits. */
	bool churn;
};

/* How often a one-shot run moves the rows of exited processes out (every
 * 25 ms while processes exit: 5,000 pgbench -C connections in 25 s filled
 * the maps with reads every second). */
#define EVICT_PERIOD_NS 250000000ull

static int trace_poll(void *ctx)
{
	struct trace_poll *tp = ctx;
	int err = tp->titles ? titles__poll(tp->titles) : 0;

	if (err) {
		sp_err("out of memory reading process titles");
		return err;
	}
	if (!tp->rows)
		return 0;
	if (tp->churn)
		return exited_rows__tick(tp->rows, EVICT_PERIOD_NS);
	err = exited_rows__poll(tp->rows);	/* the labels, without a read */
	if (err)
		sp_err("out of memory tracking the traced processes");
	return err;
}

int cmd_trace(int argc, char **argv)
{
	struct trace_env env = {
		.sort = SORT_SELF,
		.ropts = { .width = TABLE_DEFAULT_WIDTH },
	};
	struct query_provider qp;
	struct session_provider p, mem_p;
	struct mem_opts mem_o = {};
	struct mem_provider mp;
	struct mem_report mr;
	struct history_db *db = NULL;
	struct session ss;
	struct summary s;
	struct titles titles;
	struct exited_rows rows;
	struct trace_poll tp = {};
	int64_t started;
	bool db_created, stored = false;
	int err, status;

	if (parse_args(argc, argv, &env)) {
		session_opts__free(&env.so);
		return 1;
	}
	/* Every output and target in one pass, then the database (opened,
	 * and created, before the trace): a bad path fails now, not after
	 * the data is collected. Without --mem, sp probes are all it counts. */
	env.so.need_sp = !env.mem;
	{
		const struct output_spec outs[] = {
			{ env.output, "-o", env.force, false },
			{ env.dbo.db, "--db", false, true },
		};
		int e1 = output__check(outs, 2, NULL, 0);
		int e2 = session_opts__precheck(&env.so);

		if (e1 || e2 || cli__db_open(env.dbo.db, &db, &db_created)) {
			session_opts__free(&env.so);
			return 1;
		}
	}
	summary__init(&s);
	mem_report__init(&mr);
	s.per_pid = env.per_pid;
	session__init(&ss, &env.so);
	titles__init(&titles, &s, &ss);
	query_provider__init(&qp, &p);
	/* With --per-pid every exited process keeps its own rows. --mem
	 * names its rows through the snapshots of exited processes. */
	exited_rows__init(&rows, &qp, &ss, env.per_pid ? 1e9 : 0);
	tp.titles = env.per_pid ? &titles : NULL;
	tp.rows = env.mem ? NULL : &rows;
	tp.churn = env.so.follow || env.so.nbinaries || env.so.npids > 1;
	err = session__add(&ss, &p);
	if (!err && tp.titles && !env.interval)
		err = titles__watch_exits(&titles);
	if (!err && env.mem) {
		mem_provider__init(&mp, &mem_o, &mem_p);
		err = session__add(&ss, &mem_p);
	}
	if (!err)
		err = session__start(&ss);
	if (!err && tp.titles && !env.interval)
		err = titles__watch_command(&titles);
	started = (int64_t)(ss.start_realtime_ns / 1000000000ull);
	if (!err && env.mem)	/* whose memory it is, in the JSON */
		err = session__describe(&ss, &mr.tl.command);
	if (!err && env.interval)
		err = interval__run(&ss, &qp, &(struct interval_opts){
			.seconds = env.interval, .cumulative = env.cumulative,
			.per_pid = env.per_pid, .sort = env.sort,
			.ropts = &env.ropts, .output = env.output,
			.force = env.force });
	else if (!err)
		err = session__run(&ss, -1, tp.titles || tp.rows ? trace_poll : NULL,
				   &tp);
	if (!err && (ss.launched || env.so.nbinaries))
		err = query_provider__check(&qp, env.so.cmd ? session__command(&ss)
						       : env.so.binaries[0]);
	if (!err && !env.interval && tp.rows) {	/* else at every tick */
		err = exited_rows__collect(&rows, &s);
		if (!err && rows.evicted_rows)
			sp_info("%" PRIu64 " rows of %" PRIu64 " exited processes moved out of the BPF maps while tracing",
				rows.evicted_rows, rows.exited);
	} else if (!err && !env.interval) {
		err = query_provider__read(&qp, &ss, &s);
	}
	if (!err && !env.interval && env.per_pid) {
		err = titles__refresh(&titles);
		if (err)
			sp_err("out of memory reading process titles");
	}
	if (!err && env.mem)
		err = mem_provider__read(&mp, &ss, &mr);
	if (!err && !env.interval) {
		summary__finish(&s);
		summary__sort(&s, env.sort);
		err = env.mem ? cli__write_mem(env.output, env.force, &s,
					       &env.ropts, &mr)
			      : cli__write_summary(env.output, env.force, true, &s,
						   &env.ropts);
		/* Stored even if the report could not be written: the data
		 * is kept wherever it can be. */
		if (db && session__store(&ss, db, env.dbo.label, "live", started,
					 &s, env.mem ? &mr : NULL, NULL)) {
			if (!err)
				err = -EIO;
		} else if (db) {
			stored = true;
		}
	}
	cli__db_close(db, env.dbo.db, db_created, !stored);
	exited_rows__free(&rows);
	titles__free(&titles);
	session__destroy(&ss);
	status = session__exit_status(&ss, err);
	summary__free(&s);
	mem_report__free(&mr);
	session_opts__free(&env.so);
	return status;
}
