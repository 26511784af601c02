// SPDX-License-Identifier: MIT
/*
 * `sptrace import --db DB FILE...`: stores runs saved earlier (trace files
 * of sptrace record, JSON summaries of sptrace -f json) in the history
 * database, each file one run in its own transaction.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "commands.h"
#include "history_db.h"
#include "log.h"
#include "summary.h"
#include "trace_format.h"

static const char usage[] =
"Usage: sptrace import --db DB [--label LABEL] FILE...\n"
"Store runs in the history database DB (created if missing): each FILE is\n"
"a trace file (sptrace record) or a JSON summary (sptrace -f json) and\n"
"becomes one run. docs/database.md describes the database.\n"
"\n"
"      --db DB              the history database\n"
"      --label LABEL        label the runs (sptrace history --label)\n"
"  -v, --verbose\n"
"  -h, --help\n";

enum { OPT_DB = 256, OPT_LABEL };

/* What the file says of its run: a trace file's header has the start
 * time, command, pids and version; a JSON summary has none of them, so its
 * run is dated by the file's modification time. */
static int describe(const char *path, struct history_run *r)
{
	const struct trace_header *th;
	struct trace_reader *tr;
	struct stat sb;
	char msg[512];
	int i, err = 0;

	if (!trace_reader__open(path, &tr, msg, sizeof(msg))) {
		int pids[TRACE_MAX_PIDS];
		char *argv[2] = { NULL, NULL };

		th = trace_reader__header(tr);
		r->started_at = (int64_t)(th->start_realtime_ns / 1000000000ull);
		for (i = 0; i < (int)th->npids && i < TRACE_MAX_PIDS; i++)
			pids[i] = (int)th->pids[i];
		argv[0] = th->cmdline && th->cmdline[0] ? th->cmdline : NULL;
		err = history_run__describe(r, argv, pids, i, NULL, 0);
		if (!err && th->version && th->version[0] &&
		    !(r->version = strdup(th->version)))
			err = -ENOMEM;
		trace_reader__close(tr);
	} else if (!stat(path, &sb)) {
		r->started_at = (int64_t)sb.st_mtime;
	}
	return err;
}

static int import_one(const char *db, const char *label, const char *path)
{
	struct history_run meta = { 0 };
	struct summary s;
	char *source;
	int64_t id;
	int err;

	summary__init(&s);
	err = read_summary(path, &s);
	if (!err && asprintf(&source, "import:%s", path) < 0)
		err = -ENOMEM;
	if (!err) {
		err = describe(path, &meta);
		if (!err)
			err = history_run__fill(&meta, label, source);
		free(source);
		if (err == -ENOMEM)
			sp_err("out of memory");
	}
	if (!err) {
		meta.duration_ns = s.duration_ns;
		err = history_db__store_file(db, &meta, &s, NULL, &id);
	}
	/* The id is what history and diff --db take: say it. */
	if (!err)
		fprintf(stderr, "sptrace: %s: stored %s as run %" PRId64 "\n",
			db, path, id);
	history_run__free(&meta);
	summary__free(&s);
	return err;
}

int cmd_import(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "db", required_argument, NULL, OPT_DB },
		{ "label", required_argument, NULL, OPT_LABEL },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	const char *db = NULL, *label = NULL;
	int c, i;

	optind = 1;
	while ((c = getopt_long(argc, argv, "vh", opts, NULL)) != -1) {
		switch (c) {
		case OPT_DB:
			db = optarg;
			break;
		case OPT_LABEL:
			label = optarg;
			break;
		case 'v':
			sp_verbose = true;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			fputs(usage, stderr);
			return 1;
		}
	}
	if (!db) {
		sp_err("import: give the database with --db FILE (see sptrace import --help)");
		return 1;
	}
	if (optind == argc) {
		sp_err("import: give at least one trace file or JSON summary (see sptrace import --help)");
		return 1;
	}
	for (i = optind; i < argc; i++)
		if (import_one(db, label, argv[i]))
			return 1;
	return 0;
}
