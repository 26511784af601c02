// SPDX-License-Identifier: MIT
/*
 * `sptrace record -p PID|-- CMD -o FILE`: every probe event of the session
 * into a trace file (the recorder, live/recorder.c). `--summary FILE`
 * writes the live summary of the same run, which `sptrace summarize` of
 * the trace must agree with; --db stores the run as the trace holds it.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <sptrace/record_abi.h>
#include <sptrace/spec_norm.h>
#include "cli.h"
#include "commands.h"
#include "history_db.h"
#include "log.h"
#include "output.h"
#include "parse.h"
#include "query_provider.h"
#include "query_spec.h"
#include "recorder.h"
#include "session.h"
#include "summary.h"
#include "summary_writer.h"
#include "trace_format.h"
#include "trace_summary.h"

struct record_env {
	struct session_opts so;
	const char *output;
	const char *summary;
	bool force;
	const char *only_arg;
	struct db_opts dbo;	/* --db, --label: store the recorded run */
};

static const char usage[] =
"Usage: sptrace record [OPTIONS] -o FILE -p PID[,PID...]\n"
"       sptrace record [OPTIONS] -o FILE -- CMD [ARGS...]\n"
"Record every probe event into a trace file for summarize, diff, export.\n"
"\n"
"  -o, --output FILE        the trace file (created 0600, never a symlink)\n"
"      --force              overwrite an existing file\n"
"  -p, --pid PID[,PID...]   record these running processes\n"
"  -b, --binary PATH        record every process of PATH (repeatable)\n"
"  -d, --duration SECONDS   stop after this long\n"
"  -e, --events LIST        query,cache,blocked,incr,mark,alloc (default:\n"
"                           all but alloc); only these probes are attached\n"
"      --only NAME[,NAME]   keep events of these names only\n"
"      --ringbuf-size MB    kernel ring buffer (power of two, default 4)\n"
"      --summary FILE       also write the live JSON summary of the run\n"
"      --db FILE            also store the recorded run (as sptrace summarize\n"
"                           reads it) in this history database\n"
"      --label LABEL        the stored run's label (with --db)\n"
"      --query SPEC, --query-file FILE, --func [LIB:]GLOB, --follow,\n"
"      --max-queries N, --max-threads N, -v, -h as for sptrace\n";

static int parse_events(const char *arg, uint32_t *classes)
{
	static const char *const names[SP_EVC__MAX] = {
		[SP_EVC_QUERY] = "query", [SP_EVC_CACHE] = "cache",
		[SP_EVC_BLOCKED] = "blocked", [SP_EVC_INCR] = "incr",
		[SP_EVC_MARK] = "mark", [SP_EVC_ALLOC] = "alloc",
	};
	char *copy = strdup(arg), *tok, *save = NULL;
	int err = 0, i;

	if (!copy)
		return -ENOMEM;
	*classes = 0;
	for (tok = strtok_r(copy, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		for (i = 0; i < SP_EVC__MAX; i++)
			if (!strcmp(tok, names[i]))
				break;
		if (i == SP_EVC__MAX) {
			sp_err("unknown event class '%s' (expected query, cache, blocked, incr, mark, alloc)",
			       tok);
			err = -EINVAL;
			break;
		}
		*classes |= 1u << i;
	}
	free(copy);
	if (!err && !*classes) {
		sp_err("--events: nothing to record");
		err = -EINVAL;
	}
	return err;
}

static void print_usage(FILE *f)
{
	fputs(usage, f);
}

/* --only NAME[,NAME...]: no name empty (--only '' would keep nothing, and
 * record an empty trace). */
static int check_only(const char *arg)
{
	const char *p = arg, *end;

	do {
		end = strchrnul(p, ',');
		if (end == p) {
			sp_err("invalid --only '%s': %s (expected NAME[,NAME...])",
			       arg, !*arg ? "no name" : p == arg ?
			       "nothing before the first comma" : *end ?
			       "nothing between two commas" :
			       "nothing after the last comma");
			return -EINVAL;
		}
		p = end + 1;
	} while (*end);
	return 0;
}

static int parse_args(int argc, char **argv, struct record_env *env)
{
	static const struct option opts[] = {
		SESSION_LONG_OPTS,
		SESSION_QUERY_OPTS,
		{ "output", required_argument, NULL, 'o' },
		{ "force", no_argument, NULL, OPT_FORCE },
		{ "events", required_argument, NULL, 'e' },
		{ "only", required_argument, NULL, OPT_ONLY },
		{ "ringbuf-size", required_argument, NULL, OPT_RINGBUF },
		{ "summary", required_argument, NULL, OPT_SUMMARY },
		DB_LONG_OPTS,
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	long v;
	int c, r;

	env->so.record = true;
	env->so.need_sp = true;	/* every event class is an sp probe */
	env->so.classes = ~(1u << SP_EVC_ALLOC) & ((1u << SP_EVC__MAX) - 1);
	optind = 1;
	while ((c = cli__getopt(argc, argv, "+" SESSION_SHORT_OPTS "o:e:vh",
				opts, NULL)) != -1) {
		r = session_opts__parse(&env->so, c, optarg);
		if (r < 0)
			return r;
		if (r)
			continue;
		if (db_opts__parse(&env->dbo, c, optarg))
			continue;
		switch (c) {
		case 'o':
			env->output = optarg;
			break;
		case OPT_FORCE:
			env->force = true;
			break;
		case 'e':
			if (parse_events(optarg, &env->so.classes))
				return -EINVAL;
			break;
		case OPT_ONLY:
			if (check_only(optarg) ||
			    cli__set_once(&env->only_arg, "--only", optarg))
				return -EINVAL;
			break;
		case OPT_RINGBUF:
			if (parse_long(optarg, 1, 1024, &v) || (v & (v - 1))) {
				sp_err("invalid --ringbuf-size '%s' (MiB, a power of two from 1 to 1024)",
				       optarg);
				return -EINVAL;
			}
			env->so.ringbuf_bytes = (uint32_t)v << 20;
			break;
		case OPT_SUMMARY:
			env->summary = optarg;
			break;
		default:
			if (cli__option(c, print_usage))
				return -EINVAL;
		}
	}
	if (optind < argc)
		env->so.cmd = &argv[optind];
	if (!env->output) {
		sp_err("record: give the trace file with -o FILE");
		return -EINVAL;
	}
	if (db_opts__check(&env->dbo))
		return -EINVAL;
	return session_opts__check(&env->so);
}


static void fill_header(struct trace_header *h, const struct record_env *env,
			char *cmdline, size_t len)
{
	size_t off = 0;
	int i;

	/* The start is set when counting is armed (recorder.c). */
	memset(h, 0, sizeof(*h));
	for (i = 0; i < env->so.npids && i < TRACE_MAX_PIDS; i++)
		h->pids[h->npids++] = (uint32_t)env->so.pids[i];
	cmdline[0] = 0;
	for (i = 0; env->so.cmd && env->so.cmd[i] && off + 1 < len; i++)
		off += (size_t)snprintf(cmdline + off, len - off, "%s%s",
					i ? " " : "", env->so.cmd[i]);
	h->cmdline = cmdline;
	h->version = (char *)SPTRACE_VERSION;
}

static int write_live_summary(struct recorder *rec, const char *path)
{
	struct summary_write_opts ro = { .format = SUMMARY_JSON };
	struct summary s;
	int err;

	summary__init(&s);
	err = query_provider__read(&rec->qp, &rec->ss, &s);
	if (!err) {
		summary__finish(&s);
		err = cli__write_summary(path, true, true, &s, &ro);
	}
	summary__free(&s);
	return err;
}

/* The run as the trace file holds it (--only, lost events and all): the
 * same summary `sptrace summarize` and `sptrace import` make of it. */
static int store_recorded(struct history_db *db, const struct record_env *env,
			  const struct session *ss)
{
	struct summary s;
	int err;

	summary__init(&s);
	err = trace_summary__read(env->output, &s);
	if (!err) {
		summary__finish(&s);
		err = session__store(ss, db, env->dbo.label, "record",
				     (int64_t)(ss->start_realtime_ns /
					       1000000000ull), &s, NULL, NULL);
	}
	summary__free(&s);
	return err;
}

/*
 * A kind=cache line with hit= counts every event in `count` and only the
 * true ones as hits; the trace file has an event for a hit only, so its
 * replay would show count 0. Likewise normalize=pg. Refused before tracing
 * rather than summarized wrong. 0 or -EINVAL (reported).
 */
static int check_recordable(const struct session_opts *so)
{
	char where[512];
	int i;

	for (i = 0; i < so->nqspecs; i++) {
		const struct query_spec *q = &so->qspecs[i];

		if (q->normalize == SP_NORM_PG) {
			/* A name goes into the file at its first event, before
			 * the strings that choose its text were seen, and a
			 * multi-statement string has one event, not one per
			 * statement. */
			sp_err("record: %s: normalize=pg names rows from every string seen, at the end (use sptrace trace for this line, or normalize=sql)",
			       query_spec__where(q, where, sizeof(where)));
			return -EINVAL;
		}
		if (!q->cache || q->hit.op == SP_OP_NONE)
			continue;
		sp_err("record: %s: kind=cache with hit= counts events that are not hits, which a trace file does not carry (use sptrace trace for this line, or drop hit= to record the hits)",
		       query_spec__where(q, where, sizeof(where)));
		return -EINVAL;
	}
	return 0;
}

int cmd_record(int argc, char **argv)
{
	struct record_env env = { 0 };
	struct recorder rec;
	struct trace_writer *w;
	struct history_db *db = NULL;
	struct trace_header h;
	char cmdline[4096];
	uint64_t lost = 0;
	bool db_created = false, stored = false;
	int err, status;

	if (parse_args(argc, argv, &env)) {
		session_opts__free(&env.so);
		return 1;
	}
	/* Every output and target in one pass, before anything is loaded. */
	{
		const struct output_spec o[] = {
			{ env.output, "-o", env.force, false },
			{ env.summary, "--summary", env.force, false },
			{ env.dbo.db, "--db", false, true },
		};
		int e1, e2, e3;

		e1 = output__check(o, 3, NULL, 0);
		e2 = session_opts__precheck(&env.so);
		e3 = check_recordable(&env.so);
		if (e1 || e2 || e3 || cli__db_open(env.dbo.db, &db, &db_created)) {
			cli__db_close(db, env.dbo.db, db_created, true);
			session_opts__free(&env.so);
			return 1;
		}
	}
	fill_header(&h, &env, cmdline, sizeof(cmdline));
	err = trace_writer__open(env.output, env.force, &h, &w);
	if (err) {
		sp_err("%s: cannot create: %s", env.output, strerror(-err));
		cli__db_close(db, env.dbo.db, db_created, true);
		session_opts__free(&env.so);
		return 1;
	}
	err = recorder__init(&rec, &env.so, w, env.only_arg);
	if (!err)
		err = recorder__run(&rec);
	if (!err && (rec.ss.launched || env.so.nbinaries))
		err = query_provider__check(&rec.qp, env.so.cmd ?
					    session__command(&rec.ss) :
					    env.so.binaries[0]);
	if (!err && env.summary)
		err = write_live_summary(&rec, env.summary);
	/* The ring buffer's losses, summed over CPUs, go in the footer. */
	lost = recorder__lost(&rec);
	if (lost)
		sp_warn("%llu events lost: the ring buffer was full (raise --ringbuf-size)",
			(unsigned long long)lost);
	/* Whatever happened, close the file properly: what was recorded is
	 * kept, with its footer. */
	if (trace_writer__close(w, lost) && !err) {
		sp_err("%s: cannot finish the trace file", env.output);
		err = -EIO;
	}
	/* How the events came: batched recording sends one ring-buffer
	 * record per drain of a thread's rings, not one per event. */
	sp_info("%llu events in %llu ring-buffer records (%llu of them batches)",
		(unsigned long long)rec.events, (unsigned long long)rec.records,
		(unsigned long long)rec.batches);
	if (!err && rec.filtered)
		sp_info("%llu events left out by --only",
			(unsigned long long)rec.filtered);
	if (!err && db && store_recorded(db, &env, &rec.ss))
		err = -EIO;
	else if (!err && db)
		stored = true;
	cli__db_close(db, env.dbo.db, db_created, !stored);
	/* Nothing was traced (no privileges, a command that cannot start,
	 * no probes): a file with a header and no events is no recording,
	 * and would only make the retry need --force. */
	if (!rec.started) {
		struct stat st;

		/* Only the regular file it made: never a device named by -o
		 * (/dev/null with --force). */
		if (!lstat(env.output, &st) && S_ISREG(st.st_mode))
			unlink(env.output);
	}
	recorder__destroy(&rec);
	status = session__exit_status(&rec.ss, err);
	session_opts__free(&env.so);
	return status;
}
