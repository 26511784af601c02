// SPDX-License-Identifier: MIT
/* Option parsing every command shares (cli.h): the tail of each option
 * switch and the --db/--label group. */
#include <errno.h>
#include <stdlib.h>
#include "cli.h"
#include "log.h"

int cli__option(int c, cli_usage_fn usage)
{
	switch (c) {
	case 'v':
		sp_verbose = true;
		return 0;
	case 'h':
		usage(stdout);
		exit(0);
	default:
		usage(stderr);
		return -EINVAL;
	}
}

int db_opts__parse(struct db_opts *o, int c, const char *arg)
{
	switch (c) {
	case OPT_DB:
		o->db = arg;
		return 1;
	case OPT_LABEL:
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
