/* SPDX-License-Identifier: MIT */
/*
 * live/ layer: sessions, providers, attaching, kernel map readers, the
 * recorder; uses out/ and below, never cli/ (docs/architecture.md).
 *
 * A tracing session, shared by `sptrace` (live table) and `sptrace record`:
 * load the query program, attach it to the targets (running processes or a
 * command it launches), count from one instant to another, detach.
 */
#ifndef SPTRACE_SESSION_H
#define SPTRACE_SESSION_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "addr_space.h"
#include "attach.h"
#include "dl_watch.h"
#include "follow.h"
#include "launch.h"
#include "name_locator.h"
#include "query_spec.h"
#include "session_opts.h"
#include "stop_release.h"

/* Called from the wait loop when `fd` is readable and every 50 ms. 0,
 * -errno to end the session, or 1: call again without waiting. */
typedef int (*session_poll_fn)(void *ctx);

/*
 * A BPF program family plugged into a session (query aggregation, memory,
 * latency, ...): the session owns the targets, the signals and the clock;
 * a provider owns its BPF object and its links. Every hook reports its own
 * errors (one line) and returns 0 or -errno.
 */
struct session_provider {
	const char *name;
	void *ctx;
	/* Opens, sizes and loads the BPF object. */
	int (*load)(void *ctx, const struct session_opts *o);
	/* Attaches for process `pid`: with `path` NULL, to whatever the
	 * running process maps (called again at every dynamic-loader stop of
	 * a launched command: skip what is attached already); with `path`,
	 * to that executable by file offset before the command execs.
	 * Returns the number of probe sites attached (>= 0) or -errno. */
	int (*attach)(void *ctx, pid_t pid, const char *path);
	/* Starts (true) or stops (false) counting; cheap, no syscalls
	 * needed beyond a map write. */
	void (*arm)(void *ctx, bool on);
	/* Detaches every link (after arm(false)); maps stay readable. */
	void (*detach)(void *ctx);
	/* Frees everything. */
	void (*destroy)(void *ctx);
	/* --follow, before load: count only the processes whose tgid is in
	 * the map `followed_fd` (follow_abi.h), and attach for every process.
	 * NULL: the provider cannot follow. */
	int (*follow)(void *ctx, int followed_fd);
	/* Called from the session's loop at least every tick_ms while it
	 * runs (often more: the provider checks its own clock). NULL: none. */
	void (*tick)(void *ctx);
	unsigned int tick_ms;
	/* After load: the fds of the map of query names (query_abi.h's
	 * `names`) and of the processes with one BPF could not read
	 * (`unread_names`), which the name locator locates in their files
	 * (name_locator.h). 0 or -ENOENT; NULL: none. */
	int (*name_maps)(void *ctx, int *names_fd, int *unread_fd);
};

#define SESSION_MAX_PROVIDERS 4

/* -b: a process as the last scan of /proc saw it (session.c). */
struct scan_pid {
	pid_t pid;
	uint64_t exe_dev, exe_ino;	/* what /proc/PID/exe is */
	uint64_t recheck_ns;		/* its mappings read again from then */
};

struct session {
	const struct session_opts *o;
	struct session_provider providers[SESSION_MAX_PROVIDERS];
	int nproviders;
	struct addr_spaces spaces;	/* to read names in targets */
	struct launch launch;
	bool launched;
	struct dl_watch dlw;		/* libraries mapped after attaching */
	struct name_locator names;	/* where unread query names lie */
	struct follow fol;		/* --follow */
	struct stop_release stops;	/* launch, --follow: stops that end
					 * if sptrace dies */
	size_t sites;			/* probe sites attached, all providers */
	int sfd;			/* signalfd: INT, TERM, CHLD */
	int pidfds[SESSION_MAX_PIDS];
	bool alive[SESSION_MAX_PIDS];
	uint64_t exec_ids[SESSION_MAX_PIDS];	/* -p: to see an exec */
	int child_status;
	uint64_t child_cpu_ns;		/* launch: its CPU time, once reaped */
	bool child_exited;
	int behind_fd;			/* detach_behind.c's pipe, or -1 */
	/* -b: the files traced, to find their processes for names. */
	struct { uint64_t dev, ino; } bin_ids[SESSION_MAX_PIDS];
	uint64_t next_scan_ns;
	struct scan_pid *scanned;	/* every process of the last scan */
	size_t nscanned;
	int stop_signal;
	/* CLOCK_MONOTONIC, armed..disarmed: the run's duration starts
	 * when counting does, not when sptrace did (the BPF load, the
	 * attach are not traced time). start_realtime_ns: the same instant
	 * by CLOCK_REALTIME, the date of the run. */
	uint64_t start_ns, stop_ns;
	/* The wait loop's last round: the command ended, the targets did,
	 * or a signal asked to stop; what its callback counts now is the
	 * last it sees before stop_ns is set. */
	bool ending;
	uint64_t start_realtime_ns;
	/* Launch mode: the "#!" line when CMD is a script, the program the
	 * command last ran (at its loader's last stop), and what messages
	 * call the command (session__command()). All malloc'd or NULL. */
	char *script, *last_exe, *desc;
};

/* Parses the options every tracing command shares; returns 1 if `c` was
 * one of them, 0 if not, -EINVAL after reporting a bad value. */
int session_opts__parse(struct session_opts *o, int c, const char *arg);
#define SESSION_SHORT_OPTS "p:d:b:"
#define SESSION_LONG_OPTS                                                      \
	{ "pid", required_argument, NULL, 'p' },                               \
	{ "binary", required_argument, NULL, 'b' },                            \
	{ "duration", required_argument, NULL, 'd' },                          \
	{ "max-queries", required_argument, NULL, 0x1001 },                    \
	{ "max-threads", required_argument, NULL, 0x1002 },                    \
	{ "func", required_argument, NULL, 0x1003 },                           \
	{ "func-unsafe", no_argument, NULL, 0x1004 }
/* Third-party USDT specs and --follow: only for commands with the query
 * provider. */
#define SESSION_QUERY_OPTS                                                     \
	{ "query", required_argument, NULL, 0x1005 },                          \
	{ "query-file", required_argument, NULL, 0x1006 },                     \
	{ "follow", no_argument, NULL, 0x1007 },                               \
	{ "query-keys", no_argument, NULL, 0x1008 },                           \
	{ "max-overhead", required_argument, NULL, 0x1009 }
/* Frees what parsing allocated (the --query specs). */
void session_opts__free(struct session_opts *o);
/* Cross-option checks; reports and returns -EINVAL. */
int session_opts__check(const struct session_opts *o);
/* The targets as far as they can be checked before anything is loaded:
 * every -p PID is a live user process whose mappings can be read, every
 * -b PATH is a file, CMD can be found and run, and they have the probes
 * the run needs (spec_precheck.h). Every problem is reported, one line
 * each. 0 or -EINVAL. */
int session_opts__precheck(const struct session_opts *o);
/* What messages about the launched command call it: CMD, or for a script
 * "CMD (a script, #!LINE, that ran PROGRAM)", so an error about probes not
 * found says which program was really traced. Valid until destroy. */
const char *session__command(struct session *ss);

struct history_db;
struct mem_report;
struct summary;
/* The command line of the session's run, as the history database stores
 * it (history_run__describe), into *command (owned by the caller).
 * 0 or -ENOMEM (reported). */
int session__describe(const struct session *ss, char **command);
/* Stores the finished run of ss in h (run_store.h): what it traced (the
 * command launched, or its pids and binaries), label, source ("live",
 * "record", "mem", "bench"), its start time, the summary and mr when
 * non-NULL; the new run's id in *id (may be NULL). 0 or -errno
 * (reported). */
int session__store(const struct session *ss, struct history_db *h,
		   const char *label, const char *source, int64_t started_at,
		   const struct summary *s, const struct mem_report *mr,
		   int64_t *id);

/* Before start: zeroes the session and sets its options. */
void session__init(struct session *ss, const struct session_opts *o);
/* Before start: adds a provider (copied). 0 or -E2BIG. */
int session__add(struct session *ss, const struct session_provider *p);
/* Everything up to counting: checks, load, attach, arm, launch. 0 or
 * -errno (reported). session__destroy() in every case. */
int session__start(struct session *ss);
/* Waits for Ctrl-C/SIGTERM, -d, or the targets' end; calls fn when `fd`
 * (-1: none) is readable and at least every 50 ms. Then disarms and
 * detaches. 0 or -errno. */
int session__run(struct session *ss, int fd, session_poll_fn fn, void *ctx);
/* With --follow: takes in the fork and exec events queued so far, so a
 * child's address space is known before its own events are read (a fork
 * can be queued after the loop last looked). 0 or -errno. */
int session__follow_catch_up(struct session *ss);
/* After session__run: the wall time counted, in ns. */
uint64_t session__duration(const struct session *ss);
/* Exit status for the command line: the command's in launch mode. */
int session__exit_status(const struct session *ss, int err);
void session__destroy(struct session *ss);

#endif /* SPTRACE_SESSION_H */
