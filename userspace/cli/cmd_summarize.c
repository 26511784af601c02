// SPDX-License-Identifier: MIT
/*
 * `sptrace summarize FILE`: the per-query table of a recorded run, through
 * the same aggregation and the same writers as the live mode.
 */
#include <getopt.h>
#include <stdio.h>
#include "cli.h"
#include "commands.h"
#include "log.h"
#include "output.h"
#include "parse.h"
#include "summary_writer.h"
#include "table.h"
#include "summary.h"
#include "trace_summary.h"

static const char usage[] =
"Usage: sptrace summarize [OPTIONS] FILE\n"
"Print the per-query table of a trace file written by sptrace record.\n"
"\n"
"  -f, --format FMT         table (default), json or csv\n"
"  -o, --output FILE        write there instead of stdout\n"
"      --force              overwrite an existing output file\n"
"  -s, --sort COLUMN        as for sptrace (default self)\n"
"      --percent-above P    hide rows with at most P% of the self time\n"
"      --hist               print each query's latency histogram\n"
"      --wide               every column at full width (default: the table\n"
"                           fits 120 characters, docs/formats.md)\n";

static void print_usage(FILE *f)
{
	fputs(usage, f);
}

int cmd_summarize(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "format", required_argument, NULL, 'f' },
		{ "output", required_argument, NULL, 'o' },
		{ "force", no_argument, NULL, OPT_FORCE },
		{ "sort", required_argument, NULL, 's' },
		{ "hist", no_argument, NULL, OPT_HIST },
		{ "percent-above", required_argument, NULL, OPT_PERCENT_ABOVE },
		{ "wide", no_argument, NULL, OPT_WIDE },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	struct summary_write_opts ro = { .format = SUMMARY_TABLE,
					 .width = TABLE_DEFAULT_WIDTH };
	enum summary_sort sort = SORT_SELF;
	const char *output = NULL;
	bool force = false;
	struct summary s;
	int c, err;

	optind = 1;
	while ((c = cli__getopt(argc, argv, "f:o:s:vh", opts, NULL)) != -1) {
		switch (c) {
		case 'f':
			if (summary_format__parse(optarg, &ro.format)) {
				sp_err("unknown format '%s' (expected table, json or csv)",
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
		case 's':
			if (summary__parse_sort(optarg, &sort)) {
				sp_err("unknown sort column '%s'", optarg);
				return 1;
			}
			break;
		case OPT_HIST:
			ro.hist = true;
			break;
		case OPT_WIDE:
			ro.width = 0;
			break;
		case OPT_PERCENT_ABOVE:
			if (parse_double(optarg, 0, 100, &ro.percent_above)) {
				sp_err("invalid --percent-above '%s' (expected 0..100)",
				       optarg);
				return 1;
			}
			break;
		default:
			if (cli__option(c, print_usage))
				return 1;
		}
	}
	if (optind != argc - 1) {
		sp_err("summarize: give exactly one trace file (see --help)");
		return 1;
	}
	if (output__check(&(struct output_spec){ output, "-o", force, false }, 1,
			  (const char *const[]){ argv[optind] }, 1))
		return 1;
	summary__init(&s);
	err = trace_summary__read(argv[optind], &s);
	if (!err) {
		summary__finish(&s);
		summary__sort(&s, sort);
		err = cli__write_summary(output, force, false, &s, &ro);
	}
	summary__free(&s);
	return err ? 1 : 0;
}
