/* SPDX-License-Identifier: MIT */
/*
 * cli/ layer (top): main, the command table and the cmd_*.c files, which
 * parse options, call the layers below and print. This header is what the
 * commands share: one enum of long-option IDs, one tail for every option
 * switch, the --db/--label group, and writing a result to the -o file.
 */
#ifndef SPTRACE_CLI_H
#define SPTRACE_CLI_H

#include <stdbool.h>
#include <stdio.h>

/* Long options without a short letter, for every command. Above 0x2000:
 * clear of characters and of session.h's SESSION_LONG_OPTS (0x1001..). */
enum cli_opt {
	OPT_FORCE = 0x2000,
	OPT_HIST,
	OPT_PERCENT_ABOVE,
	OPT_PER_PID,
	OPT_MEM,
	OPT_INTERVAL,
	OPT_CUMULATIVE,
	OPT_DB,
	OPT_LABEL,
	OPT_BASE,
	OPT_TITLE,
	OPT_CHROME,
	OPT_FOLDED,
	OPT_CSV,
	OPT_ONLY,
	OPT_RINGBUF,
	OPT_SUMMARY,
	OPT_FROM,
	OPT_TO,
	OPT_MAX_PENDING,
	OPT_PER_THREAD,
	OPT_SAMPLE,
	OPT_NO_LIBC,
	OPT_NO_STACKS,
	OPT_SITES,
	OPT_MAX_LIVE,
	OPT_MAX_STACKS,
	OPT_LISTEN,
	OPT_KEEP_EXITED,
	OPT_TOP,
	OPT_PROCESS_LABELS,
	OPT_WIDE,
	OPT_HISTORY,
	OPT_WINDOW,
	OPT_ALL,
	OPT_THRESHOLD,
	OPT_FDR,
	OPT_RUNS,
	OPT_STATS,
	OPT_TRENDS,
};

/* Prints a command's usage text on f. */
typedef void (*cli_usage_fn)(FILE *f);

struct option;
/* The command being run, for messages ("record"); NULL: the live trace. */
extern const char *cli__command;
/* getopt_long() with getopt's own messages off: cli__option() words them
 * (one line, the `sptrace: ` prefix, a pointer to --help). */
int cli__getopt(int argc, char *const argv[], const char *optstring,
		const struct option *longopts, int *longindex);

/* The end of every command's option switch (its `default:`): -v sets
 * verbose (0; -vv also shows libbpf's debug messages), -h prints the usage
 * on stdout and exits 0, anything else is a bad option: one line naming it
 * and "see sptrace COMMAND --help" (the usage only with --help): -EINVAL. */
int cli__option(int c, cli_usage_fn usage);

struct verdict_opts;
/* bench's and diff's --threshold PCT (0..1000) and --fdr RATE (above 0, at
 * most 0.5), option c with its argument: into vo; one line and -EINVAL
 * on a bad value. */
int cli__verdict_option(int c, const char *arg, struct verdict_opts *vo);

/* An option that names one thing (report's --base FILE) given a second
 * time is a mistake, not a change of mind (the first would be dropped
 * silently): *slot = arg the first time; then one line naming both,
 * -EINVAL. */
int cli__set_once(const char **slot, const char *name, const char *arg);

/* --db FILE and --label LABEL, for the commands that store their run in a
 * history database (trace, record, mem): one option table entry, one parser
 * and one cross-check. DB_LONG_OPTS needs <getopt.h>. */
struct db_opts {
	const char *db;		/* --db: store the run there */
	const char *label;	/* --label: the stored run's label */
};
#define DB_LONG_OPTS                                                           \
	{ "db", required_argument, NULL, OPT_DB },                             \
	{ "label", required_argument, NULL, OPT_LABEL }
/* 1 if `c` was one of them (taken), 0 if not. */
int db_opts__parse(struct db_opts *o, int c, const char *arg);
/* --label without --db: reported, -EINVAL. */
int db_opts__check(const struct db_opts *o);

/* Writes a result to `path` (NULL or "-": stdout), refusing to overwrite
 * unless force: fn writes it and returns 0 or -errno (-ECANCELED: a
 * failure fn reported itself, such as an input it reads); a failure is
 * one line naming the file and the errno of the write that failed.
 * keep_run (a live run's result, which nothing else holds): formatted in
 * memory first, and if it cannot be written, kept in a private file
 * (output__keep()) that the line names. 0 or -errno (reported). */
typedef int (*cli_write_fn)(FILE *out, const void *ctx);
int cli__write(const char *path, bool force, bool keep_run, cli_write_fn fn,
	       const void *ctx);

struct history_db;
/* Opens (or creates) the --db database before anything costly; *created
 * says this run created it. path NULL: nothing to open. 0 or -errno
 * (reported). */
int cli__db_open(const char *path, struct history_db **db, bool *created);
/* Closes it; a database created by a run that failed is removed. */
void cli__db_close(struct history_db *db, const char *path, bool created,
		   bool failed);

struct summary;
struct summary_write_opts;
struct mem_report;
/* A finished summary in the chosen format (keep_run: as cli__write). */
int cli__write_summary(const char *path, bool force, bool keep_run,
		       const struct summary *s,
		       const struct summary_write_opts *ropts);
/* The memory report of a live run (kept if it cannot be written): alone
 * (s NULL), or after the summary's table, or merged into its JSON object. */
int cli__write_mem(const char *path, bool force, const struct summary *s,
		   const struct summary_write_opts *ropts, const struct mem_report *r);

#endif /* SPTRACE_CLI_H */
