// SPDX-License-Identifier: MIT
/*
 * `sptrace export (--chrome|--folded|--csv) TRACE [-o OUT]`: a trace file in
 * another tool's format (export.c), read event by event from the trace
 * reader.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include "cli.h"
#include "commands.h"
#include "export.h"
#include "log.h"
#include "output.h"
#include "table.h"
#include "summary.h"
#include "trace_format.h"

static const char usage[] =
"Usage: sptrace export (--chrome | --folded | --csv) TRACE [-o OUT]\n"
"Write a trace file (sptrace record) in another tool's format.\n"
"\n"
"      --chrome             Chrome trace event JSON: open in ui.perfetto.dev\n"
"                           or chrome://tracing (one track per thread)\n"
"      --folded             folded stacks weighted by self time, for\n"
"                           flamegraph.pl, inferno or speedscope\n"
"      --csv                every event: ts_ns,pid,tid,kind,name,arg1,arg2\n"
"  -o, --output FILE        write there (0600, no symlink); default, or -:\n"
"                           standard output\n"
"      --force              overwrite an existing output file\n"
"  -v, --verbose\n"
"  -h, --help\n";

static void print_usage(FILE *f)
{
	fputs(usage, f);
}

static int reader_next(void *ctx, struct trace_event *ev)
{
	return trace_reader__next(ctx, ev);
}

static const char *reader_string(void *ctx, uint32_t id)
{
	return trace_reader__string(ctx, id);
}

/* The reader's and replay's findings, worded as the summary's warnings. */
static void warn_after(const char *path, struct trace_reader *r,
		       const struct export_stats *st)
{
	const char *const *w;
	struct trace_stats ts;
	struct summary s;
	unsigned int i;

	for (w = trace_reader__warnings(r); w && *w; w++)
		sp_warn("%s", *w);
	trace_reader__stats(r, &ts);
	summary__init(&s);
	for (i = 0; i < SP_ERR__MAX; i++)
		s.errors[i] = st->errors[i];
	s.lost = ts.footer_lost;
	table__warn_errors(stderr, &s);
	if (st->open_at_end)
		sp_info("%s: %llu intervals still open when the recording ended; "
			"not exported", path, (unsigned long long)st->open_at_end);
}

struct export_job {
	const char *path;
	enum export_format fmt;
	struct trace_reader *r;
	struct export_stats st;
};

/* A failure of reading the trace is said here, naming it; one of writing,
 * by cli__write(), naming the output. */
static int export_fn(FILE *out, const void *ctx)
{
	struct export_job *j = (struct export_job *)ctx;
	struct export_source src = { reader_next, reader_string, j->r };
	const struct trace_header *h = trace_reader__header(j->r);
	struct export_info info = {
		.base_ns = h->start_mono_ns,
		.start_realtime_ns = h->start_realtime_ns,
		.source = j->path,
		.cmdline = h->cmdline,
		.version = h->version,
	};
	int err = export__write(out, j->fmt, &src, &info, &j->st);

	if (err && !ferror(out)) {
		sp_err("%s: %s", j->path, strerror(-err));
		return -ECANCELED;
	}
	return err;
}

static int do_export(const char *path, const char *output, bool force,
		     enum export_format fmt)
{
	struct export_job j = { .path = path, .fmt = fmt };
	char msg[512];
	int err;

	err = trace_reader__open(path, &j.r, msg, sizeof(msg));
	if (err) {
		sp_err("%s", msg);
		return err;
	}
	/* Streamed: the trace file stays, so nothing is kept on failure. */
	err = cli__write(output, force, false, export_fn, &j);
	if (!err)
		warn_after(path, j.r, &j.st);
	trace_reader__close(j.r);
	return err;
}

int cmd_export(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "chrome", no_argument, NULL, OPT_CHROME },
		{ "folded", no_argument, NULL, OPT_FOLDED },
		{ "csv", no_argument, NULL, OPT_CSV },
		{ "output", required_argument, NULL, 'o' },
		{ "force", no_argument, NULL, OPT_FORCE },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	enum export_format fmt = EXPORT_CHROME;
	const char *output = NULL;
	unsigned int nfmt = 0;
	bool force = false;
	int c;

	optind = 1;
	while ((c = cli__getopt(argc, argv, "o:vh", opts, NULL)) != -1) {
		switch (c) {
		case OPT_CHROME:
		case OPT_FOLDED:
		case OPT_CSV:
			fmt = c == OPT_CHROME ? EXPORT_CHROME :
			      c == OPT_FOLDED ? EXPORT_FOLDED : EXPORT_CSV;
			nfmt++;
			break;
		case 'o':
			output = optarg;
			break;
		case OPT_FORCE:
			force = true;
			break;
		default:
			if (cli__option(c, print_usage))
				return 1;
		}
	}
	if (nfmt != 1) {
		sp_err("export: give one of --chrome, --folded, --csv (see sptrace export --help)");
		return 1;
	}
	if (argc - optind != 1) {
		sp_err("export: give exactly one trace file (see sptrace export --help)");
		return 1;
	}
	/* Without -o, stdout: every export is text, which a pipe, a file
	 * or a terminal takes (as jq and perf script write). */
	if (output__check(&(struct output_spec){ output, "-o", force, false }, 1,
			  (const char *const[]){ argv[optind] }, 1))
		return 1;
	return do_export(argv[optind], output, force, fmt) ? 1 : 0;
}
