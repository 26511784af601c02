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
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "commands.h"
#include "diff.h"
#include "history_db.h"
#include "json_summary.h"
#include "log.h"
#include "output.h"
#include "summary.h"
#include "trace_summary.h"

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
"  -h, --help\n";

enum { OPT_FORCE = 256, OPT_DB };

/* The counters' own warnings need a summary writer; one line per run says
 * that its figures are affected and where to look. */
static void warn_counters(const char *name, const struct summary *s)
{
	if (summary__unbalanced(s) || summary__map_full(s) || s->lost)
		sp_warn("%s: %" PRIu64 " unbalanced, %" PRIu64 " map-full, %"
			PRIu64 " lost events: its figures undercount (its own "
			"report lists them)", name, summary__unbalanced(s),
			summary__map_full(s), s->lost);
}

/* 1 for a JSON summary, 0 for anything else; -errno (reported). */
static int is_json(const char *path)
{
	char buf[4096];
	ssize_t n, i;
	int fd, err;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		sp_err("%s: cannot open: %s", path, strerror(-err));
		return err;
	}
	do {
		n = read(fd, buf, sizeof(buf));
	} while (n < 0 && errno == EINTR);
	err = n < 0 ? -errno : 0;
	close(fd);
	if (err) {
		sp_err("%s: read failed: %s", path, strerror(-err));
		return err;
	}
	for (i = 0; i < n; i++) {
		if (buf[i] != ' ' && buf[i] != '\t' && buf[i] != '\n' &&
		    buf[i] != '\r')
			return buf[i] == '{';
	}
	return 0;
}

/* One run file into s (finished): also `sptrace import`'s reader. */
int read_summary(const char *path, struct summary *s)
{
	char msg[512];
	int err;

	err = is_json(path);
	if (err < 0)
		return err;
	if (err) {
		err = json_summary__read(path, s, msg, sizeof(msg));
		if (err)
			sp_err("%s", msg);
	} else {
		err = trace_summary__read(path, s);
	}
	if (err)
		return err;
	summary__finish(s);
	warn_counters(path, s);
	return 0;
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
	err = history_db__load(h, base, sb, NULL, NULL);
	if (!err)
		err = history_db__load(h, new, sn, NULL, NULL);
	history_db__close(h);
	if (!err) {
		summary__finish(sb);
		summary__finish(sn);
		warn_counters(base, sb);
		warn_counters(new, sn);
	}
	return err;
}

static int write_diff(const char *path, bool force, bool json,
		      const struct diff *d, const char *base, const char *new)
{
	FILE *out;
	int err;

	err = output__open(path, force, &out);
	if (err)
		return err;
	if (json)
		err = diff__write_json(out, d, base, new);
	else
		err = diff__write_table(out, d, base, new);
	if (err)
		sp_err("%s: write failed: %s", path ? path : "stdout",
		       strerror(-err));
	if (output__close(out, path) && !err)
		err = -EIO;
	return err;
}

int cmd_diff(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "format", required_argument, NULL, 'f' },
		{ "output", required_argument, NULL, 'o' },
		{ "force", no_argument, NULL, OPT_FORCE },
		{ "db", required_argument, NULL, OPT_DB },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	const char *output = NULL, *base, *new, *db = NULL;
	struct summary sb, sn;
	bool force = false, json = false;
	struct diff d;
	int c, err;

	optind = 1;
	while ((c = getopt_long(argc, argv, "f:o:h", opts, NULL)) != -1) {
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
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			fputs(usage, stderr);
			return 1;
		}
	}
	if (argc - optind != 2) {
		sp_err("diff: give two runs, BASE and NEW (see sptrace diff --help)");
		return 1;
	}
	base = argv[optind];
	new = argv[optind + 1];
	if (output__precheck(output, force))
		return 1;
	summary__init(&sb);
	summary__init(&sn);
	memset(&d, 0, sizeof(d));
	if (db)
		err = load_db(db, base, new, &sb, &sn);
	else if (!(err = read_summary(base, &sb)))
		err = read_summary(new, &sn);
	if (!err) {
		err = diff__build(&d, &sb, &sn);
		if (err)
			sp_err("diff: %s", strerror(-err));
	}
	if (!err)
		err = write_diff(output, force, json, &d, base, new);
	diff__free(&d);
	summary__free(&sb);
	summary__free(&sn);
	return err ? 1 : 0;
}
