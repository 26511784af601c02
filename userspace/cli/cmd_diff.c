// SPDX-License-Identifier: MIT
/*
 * `sptrace diff BASE NEW`: compare two runs query by query (diff.c). Each
 * side is a trace file (sptrace record) or a JSON summary (sptrace -f json),
 * told apart by content, not by name: a JSON summary's first non-blank byte
 * is '{', which no trace file starts with (its magic begins with 0x89);
 * anything else goes to the trace reader, whose error names the magic it
 * expected and found.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include "cli.h"
#include "commands.h"
#include "diff_writer.h"
#include "table.h"
#include "history_db.h"
#include "log.h"
#include "output.h"
#include "run_load.h"
#include "summary.h"

static const char usage[] =
"Usage: sptrace diff [OPTIONS] BASE NEW\n"
"Compare two runs query by query: self time, time, count, cache hits,\n"
"blocked and incremental-load time of NEW and their change from BASE,\n"
"sorted by the size of the self-time change. BASE and NEW are each a trace\n"
"file (sptrace record) or a JSON summary (sptrace -f json); with --db,\n"
"a run stored in that history database: its id, latest or latest~N.\n"
"\n"
"      --db FILE            BASE and NEW are runs of this database\n"
"  -f, --format FMT         table (default) or json\n"
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

int cmd_diff(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "format", required_argument, NULL, 'f' },
		{ "output", required_argument, NULL, 'o' },
		{ "force", no_argument, NULL, OPT_FORCE },
		{ "db", required_argument, NULL, OPT_DB },
		{ "wide", no_argument, NULL, OPT_WIDE },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	const char *output = NULL, *base, *new, *db = NULL;
	struct summary sb, sn;
	bool force = false, json = false;
	unsigned int width = TABLE_DEFAULT_WIDTH;
	struct diff d;
	int c, err;

	optind = 1;
	while ((c = cli__getopt(argc, argv, "f:o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'f':
			if (!strcmp(optarg, "json")) {
				json = true;
			} else if (!strcmp(optarg, "table")) {
				json = false;
			} else {
				sp_err("diff: unknown format '%s' (expected table or json)",
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
		case OPT_DB:
			db = optarg;
			break;
		case OPT_WIDE:
			width = 0;
			break;
		default:
			if (cli__option(c, print_usage))
				return 1;
		}
	}
	if (argc - optind != 2) {
		sp_err("diff: give two runs, BASE and NEW (see sptrace diff --help)");
		return 1;
	}
	base = argv[optind];
	new = argv[optind + 1];
	if (output__check(&(struct output_spec){ output, "-o", force, false }, 1,
			  (const char *const[]){ db ? db : base, db ? NULL : new },
			  2))
		return 1;
	summary__init(&sb);
	summary__init(&sn);
	memset(&d, 0, sizeof(d));
	if (db)
		err = load_db(db, base, new, &sb, &sn);
	else if (!(err = run_load__file(base, &sb)))
		err = run_load__file(new, &sn);
	if (!err) {
		err = diff__build(&d, &sb, &sn);
		if (err)
			sp_err("diff: %s", strerror(-err));
	}
	if (!err)
		err = cli__write(output, force, diff_fn, &(struct diff_job){
			.d = &d, .base = base, .new = new, .json = json,
			.width = width });
	diff__free(&d);
	summary__free(&sb);
	summary__free(&sn);
	return err ? 1 : 0;
}
