/* SPDX-License-Identifier: MIT */
/*
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
#include "launch.h"

#define SESSION_MAX_PIDS 256

struct query_bpf;
struct bpf_link;
struct summary;

struct session_opts {
	pid_t pids[SESSION_MAX_PIDS];
	int npids;
	char **cmd;			/* launch mode */
	double duration_s;		/* 0: until stopped */
	unsigned int max_queries;	/* 0: default */
	unsigned int max_threads;
	/* record: events to the ring buffer, only these probe classes
	 * (1 << enum sp_event_class) attached. */
	bool record;
	uint32_t classes;
	uint32_t ringbuf_bytes;		/* 0: default */
};

/* Called from the wait loop when `fd` is readable and every 50 ms. */
typedef int (*session_poll_fn)(void *ctx);

struct session {
	const struct session_opts *o;
	struct query_bpf *skel;
	struct attacher att;
	struct probe_binding bindings[16];
	struct addr_spaces spaces;	/* to read names in targets */
	struct launch launch;
	bool multi;			/* uprobe_multi links */
	bool launched;
	struct bpf_link *exit_link;	/* thread-exit tracepoint */
	int sfd;			/* signalfd: INT, TERM, CHLD */
	int pidfds[SESSION_MAX_PIDS];
	bool alive[SESSION_MAX_PIDS];
	int child_status;
	bool child_exited;
	int stop_signal;
	uint64_t start_ns, stop_ns;	/* CLOCK_MONOTONIC, armed..disarmed */
};

/* Parses the options every tracing command shares; returns 1 if `c` was
 * one of them, 0 if not, -EINVAL after reporting a bad value. */
int session_opts__parse(struct session_opts *o, int c, const char *arg);
#define SESSION_SHORT_OPTS "p:d:"
#define SESSION_LONG_OPTS                                                      \
	{ "pid", required_argument, NULL, 'p' },                               \
	{ "duration", required_argument, NULL, 'd' },                          \
	{ "max-queries", required_argument, NULL, 0x1001 },                    \
	{ "max-threads", required_argument, NULL, 0x1002 }
/* Cross-option checks; reports and returns -EINVAL. */
int session_opts__check(const struct session_opts *o);

/* Everything up to counting: checks, load, attach, arm, launch. 0 or
 * -errno (reported). session__destroy() in every case. */
int session__start(struct session *ss, const struct session_opts *o);
/* Waits for Ctrl-C/SIGTERM, -d, or the targets' end; calls fn when `fd`
 * (-1: none) is readable and at least every 50 ms. Then disarms and
 * detaches. 0 or -errno. */
int session__run(struct session *ss, int fd, session_poll_fn fn, void *ctx);
/* The aggregated figures (after session__run). 0 or -errno. */
int session__read(struct session *ss, struct summary *s);
/* Exit status for the command line: the command's in launch mode. */
int session__exit_status(const struct session *ss, int err);
void session__destroy(struct session *ss);

#endif /* SPTRACE_SESSION_H */
