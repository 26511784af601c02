// SPDX-License-Identifier: MIT
/* Option parsing every command shares (cli.h): the tail of each option
 * switch and the --db/--label group. */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli.h"
#include "history_db.h"
#include "log.h"
#include "parse.h"
#include "verdict.h"

const char *cli__command;

/* What the last cli__getopt() parsed, for cli__option()'s message. */
static struct {
	char *const *argv;
	const char *optstring;
	const struct option *longopts;
} last;

int cli__getopt(int argc, char *const argv[], const char *optstring,
		const struct option *longopts, int *longindex)
{
	last.argv = argv;
	last.optstring = optstring;
	last.longopts = longopts;
	opterr = 0;
	return getopt_long(argc, argv, optstring, longopts, longindex);
}

/* The long option called name[0..len), or NULL. */
static const struct option *long_named(const char *name, size_t len)
{
	const struct option *o;

	for (o = last.longopts; o && o->name; o++)
		if (strlen(o->name) == len && !strncmp(o->name, name, len))
			return o;
	return NULL;
}

/* Does this command take option `c` at all (short letter or long ID)? */
static bool known(int c)
{
	const struct option *o;

	if (c > 0 && c < 256 && c != ':' && c != '+' &&
	    strchr(last.optstring, c))
		return true;
	for (o = last.longopts; o && o->name; o++)
		if (!o->flag && o->val == c)
			return true;
	return false;
}

/*
 * getopt returned '?': say which option and why, in one line. The element
 * getopt stopped at is argv[optind - 1]: "--name", "--name=value", "-x" or
 * a cluster "-abx" (then optopt is the letter).
 */
static void bad_option(void)
{
	const char *arg = optind > 0 ? last.argv[optind - 1] : "";
	const char *cmd = cli__command ? cli__command : "";
	const char *sp = cli__command ? " " : "";
	const struct option *o;
	char cands[256] = "";
	size_t len, used = 0;
	int n = 0;

	if (!arg)
		arg = "";
	if (!strncmp(arg, "--", 2) && arg[2]) {
		const struct option *one = NULL;

		len = strcspn(arg + 2, "=");
		/* getopt takes an unambiguous prefix ("--out" for --output). */
		one = long_named(arg + 2, len);
		for (o = last.longopts; !long_named(arg + 2, len) && o &&
		     o->name; o++) {
			if (strncmp(o->name, arg + 2, len))
				continue;
			n++;
			one = o;
			if (used < sizeof(cands))
				used += (size_t)snprintf(cands + used,
					sizeof(cands) - used, "%s--%s",
					used ? ", " : "", o->name);
		}
		if (one && n <= 1) {
			sp_err("option '--%s' %s (see sptrace %s%s--help)",
			       one->name, arg[2 + len] == '=' ?
			       "takes no argument" : "needs an argument", cmd, sp);
			return;
		}
		if (n > 1)
			sp_err("ambiguous option '--%.*s': %s (see sptrace %s%s--help)",
			       (int)len, arg + 2, cands, cmd, sp);
		else
			sp_err("unknown option '--%.*s' (see sptrace %s%s--help)",
			       (int)len, arg + 2, cmd, sp);
		return;
	}
	if (optopt && known(optopt))
		sp_err("option '-%c' needs an argument (see sptrace %s%s--help)",
		       optopt, cmd, sp);
	else if (optopt > 32 && optopt < 127)
		sp_err("unknown option '-%c' (see sptrace %s%s--help)", optopt,
		       cmd, sp);
	else
		sp_err("unknown option '%s' (see sptrace %s%s--help)", arg, cmd,
		       sp);
}

int cli__option(int c, cli_usage_fn usage)
{
	switch (c) {
	case 'v':
		sp_verbose = true;
		sp_verbosity++;
		return 0;
	case 'h':
		usage(stdout);
		exit(0);
	default:
		bad_option();
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

int cli__db_open(const char *path, struct history_db **db, bool *created)
{
	*db = NULL;
	*created = false;
	if (!path)
		return 0;
	*created = access(path, F_OK) && errno == ENOENT;
	return history_db__open(path, true, db);
}

void cli__db_close(struct history_db *db, const char *path, bool created,
		   bool failed)
{
	history_db__close(db);
	/* A database this run created and did not store into is no
	 * database the user has: leave nothing behind. */
	if (path && created && failed)
		unlink(path);
}

int cli__set_once(const char **slot, const char *name, const char *arg)
{
	if (*slot) {
		sp_err("%s given twice ('%s', then '%s'): give it once (see sptrace %s --help)",
		       name, *slot, arg, cli__command ? cli__command : "");
		return -EINVAL;
	}
	*slot = arg;
	return 0;
}

int cli__verdict_option(int c, const char *arg, struct verdict_opts *vo)
{
	double d;

	if (c == OPT_THRESHOLD) {
		if (parse_double(arg, 0, 1000, &d)) {
			sp_err("invalid --threshold '%s' (expected a percentage, 0..1000)",
			       arg);
			return -EINVAL;
		}
		vo->threshold = d / 100;
	} else {
		if (parse_double(arg, 1e-9, 0.5, &d)) {
			sp_err("invalid --fdr '%s' (expected a rate above 0, at most 0.5)",
			       arg);
			return -EINVAL;
		}
		vo->fdr = d;
	}
	return 0;
}
