// SPDX-License-Identifier: MIT
/*
 * Chooses the summary writer for the format the user asked for; the
 * writers themselves know nothing of each other.
 */
#include <errno.h>
#include <string.h>
#include "csv_out.h"
#include "json_out.h"
#include "summary_writer.h"
#include "table.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static const char *const format_names[] = {
	[SUMMARY_TABLE] = "table",
	[SUMMARY_JSON] = "json",
	[SUMMARY_CSV] = "csv",
};

int summary_format__parse(const char *str, enum summary_format *fmt)
{
	unsigned int i;

	for (i = 0; str && i < ARRAY_SIZE(format_names); i++) {
		if (!strcmp(str, format_names[i])) {
			*fmt = (enum summary_format)i;
			return 0;
		}
	}
	return -EINVAL;
}

int summary_writer__write(FILE *out, const struct summary *s,
			  const struct summary_write_opts *opts)
{
	static const struct summary_write_opts defaults;
	struct table_opts to;
	int err;

	if (!opts)
		opts = &defaults;
	switch (opts->format) {
	case SUMMARY_TABLE:
		to = (struct table_opts){ .hist = opts->hist,
					  .percent_above = opts->percent_above,
					  .all_columns = opts->all_columns,
					  .width = opts->width };
		return table__write(out, s, &to);
	case SUMMARY_JSON:
		err = json_out__write(out, s);
		break;
	case SUMMARY_CSV:
		err = csv_out__write(out, s);
		break;
	default:
		return -EINVAL;
	}
	if (err)
		return err;
	/* Kept out of `out` so a JSON or CSV file stays one clean document
	 * (the counters are in the JSON too). The summary is written by now:
	 * a failure to warn on stderr is not a failure to write it. */
	table__warn_errors(stderr, s);
	return 0;
}
