/* SPDX-License-Identifier: MIT */
/* The sptrace commands (cmd_*.c) and the small parsing helpers they share. */
#ifndef SPTRACE_COMMANDS_H
#define SPTRACE_COMMANDS_H

#include <stdbool.h>
#include <stdint.h>

/* Each returns the process exit status. argv[0] is the command name. */
int cmd_trace(int argc, char **argv);
int cmd_list(int argc, char **argv);
int cmd_record(int argc, char **argv);
int cmd_summarize(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_latency(int argc, char **argv);
int cmd_mem(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_import(int argc, char **argv);
int cmd_history(int argc, char **argv);
int cmd_report(int argc, char **argv);

struct summary;
struct summary_write_opts;
/* Writes a finished summary to `path` (NULL or "-": stdout) in the chosen
 * format, refusing to overwrite unless force. 0 or -errno (reported). */
int write_summary(const char *path, bool force, const struct summary *s,
		  const struct summary_write_opts *ropts);
/* Reads a run file, a trace file or a JSON summary told apart by content,
 * into s and finishes it (cmd_diff.c). 0 or -errno (reported). */
int read_summary(const char *path, struct summary *s);

struct history_db;
struct session;
struct mem_report;
/* Stores a finished run of the session ss (cmd_trace.c): its metadata
 * (command, pids, host, version, label, source "live"/"record") and the
 * summary, with mr when non-NULL, in one transaction. 0 or -errno
 * (reported). */
int store_run(struct history_db *h, const char *label, const char *source,
	      const struct session *ss, int64_t started_at,
	      const struct summary *s, const struct mem_report *mr);

struct mem_report;
struct mem_provider;
struct session;
/* The memory report (cmd_mem.c): alone (s NULL), or after the summary's
 * table, or merged into its JSON object. 0 or -errno (reported). */
int write_mem(const char *path, bool force, const struct summary *s,
	      const struct summary_write_opts *ropts, const struct mem_report *r);
/* session__run() with a timeline sample every interval_ms (0: none). */
int mem_run_session(struct session *ss, struct mem_provider *mp,
		    struct mem_report *r, unsigned int interval_ms);

/* --db FILE and --label LABEL, for the commands that store their run in a
 * history database (trace, record, mem): one option table entry, one parser
 * and one cross-check. DB_LONG_OPTS needs <getopt.h>. */
struct db_opts {
	const char *db;		/* --db: store the run there */
	const char *label;	/* --label: the stored run's label */
};
#define DB_OPT_DB 0x2101
#define DB_OPT_LABEL 0x2102
#define DB_LONG_OPTS                                                           \
	{ "db", required_argument, NULL, DB_OPT_DB },                          \
	{ "label", required_argument, NULL, DB_OPT_LABEL }
/* 1 if `c` was one of them (taken), 0 if not. */
int db_opts__parse(struct db_opts *o, int c, const char *arg);
/* --label without --db: reported, -EINVAL. */
int db_opts__check(const struct db_opts *o);

/* Whole-string numbers within [min, max]: 0 or -EINVAL (-ERANGE out of range). */
int parse_long(const char *s, long min, long max, long *out);
int parse_double(const char *s, double min, double max, double *out);

#endif /* SPTRACE_COMMANDS_H */
