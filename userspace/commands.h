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
struct report_opts;
/* Writes a finished summary to `path` (NULL or "-": stdout) in the chosen
 * format, refusing to overwrite unless force. 0 or -errno (reported). */
int write_summary(const char *path, bool force, const struct summary *s,
		  const struct report_opts *ropts);
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
	      const struct report_opts *ropts, const struct mem_report *r);
/* session__run() with a timeline sample every interval_ms (0: none). */
int mem_run_session(struct session *ss, struct mem_provider *mp,
		    struct mem_report *r, unsigned int interval_ms);

/* Whole-string numbers within [min, max]: 0 or -EINVAL (-ERANGE out of range). */
int parse_long(const char *s, long min, long max, long *out);
int parse_double(const char *s, double min, double max, double *out);

#endif /* SPTRACE_COMMANDS_H */
