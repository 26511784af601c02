// SPDX-License-Identifier: MIT
/* Option parsing shared by the commands: whole-string, errno-checked
 * numbers, and the --db/--label group. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include "commands.h"
#include "log.h"

int parse_long(const char *s, long min, long max, long *out)
{
	char *end;
	long v;

	if (!s || !*s)
		return -EINVAL;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end)
		return errno == ERANGE ? -ERANGE : -EINVAL;
	if (v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

int parse_double(const char *s, double min, double max, double *out)
{
	char *end;
	double v;

	if (!s || !*s)
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno || *end || isnan(v))
		return -EINVAL;
	if (v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

int db_opts__parse(struct db_opts *o, int c, const char *arg)
{
	switch (c) {
	case DB_OPT_DB:
		o->db = arg;
		return 1;
	case DB_OPT_LABEL:
		o->label = arg;
		return 1;
	}
	return 0;
}

int db_opts__check(const struct db_opts *o)
{
	if (o->label && !o->db) {
		sp_err("--label names a run stored with --db FILE (give --db)");
		return -EINVAL;
	}
	return 0;
}
