// SPDX-License-Identifier: MIT
/*
 * `sptrace import --db DB FILE...`: stores runs saved earlier (trace files
 * of sptrace record, JSON summaries of sptrace -f json) in the history
 * database, each file one run in its own transaction.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include "cli.h"
#include "commands.h"
#include "log.h"
#include "run_store.h"

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

static void print_usage(FILE *f)
{
	fputs(usage, f);
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
	int64_t id;
	int c, i;

	optind = 1;
	while ((c = cli__getopt(argc, argv, "vh", opts, NULL)) != -1) {
		switch (c) {
		case OPT_DB:
			db = optarg;
			break;
		case OPT_LABEL:
			label = optarg;
			break;
		default:
			if (cli__option(c, print_usage))
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
	for (i = optind; i < argc; i++) {
		if (run_store__import(db, label, argv[i], &id))
			return 1;
		/* The id is what history and diff --db take: say it. */
		fprintf(stderr, "sptrace: %s: stored %s as run %" PRId64 "\n",
			db, argv[i], id);
	}
	return 0;
}
