/* SPDX-License-Identifier: MIT */
/*
 * `--follow`: the processes a launched command forks count too, and those
 * that exec are stopped until their new image is attached (the mechanism
 * and why: bpf/follow.bpf.c).
 */
#ifndef SPTRACE_FOLLOW_H
#define SPTRACE_FOLLOW_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <sptrace/follow_abi.h>

struct follow_bpf;
struct ring_buffer;
struct bpf_link;
struct stop_release;

/* A followed process stopped (exec, loader) or forked; for a stop, the
 * handler attaches and follow.c continues it after it returns. */
typedef void (*follow_event_fn)(void *ctx, const struct sp_follow_event *e);

struct follow {
	struct follow_bpf *skel;
	struct ring_buffer *rb;
	struct bpf_link *links[3];
	follow_event_fn fn;
	void *ctx;
	const struct stop_release *stops;	/* continues what we stop */
};

/* Loads the programs and attaches the fork, exec and exit tracepoints;
 * their stops go through `stops` (open). 0 or -errno (reported). */
int follow__open(struct follow *f, const struct stop_release *stops,
		 follow_event_fn fn, void *ctx);
/* Follows `pid` (the command, before it execs). 0 or -errno. */
int follow__add(struct follow *f, pid_t pid);
/* Is pid in the followed set? */
bool follow__has(const struct follow *f, pid_t pid);
/* The fds of the maps other programs share (bpf_map__reuse_fd). */
int follow__followed_fd(const struct follow *f);
int follow__events_fd(const struct follow *f);
int follow__errors_fd(const struct follow *f);
/* An fd that polls readable when events wait. */
int follow__poll_fd(const struct follow *f);
/* Handles the waiting events. 0 or -errno. */
int follow__consume(struct follow *f);
/* Processes followed and alive. */
int64_t follow__live(const struct follow *f);
/* Warns about children not followed or not stopped (map or ring full). */
void follow__report(const struct follow *f);
/* Detaches, then lets every process still stopped for us go. */
void follow__destroy(struct follow *f);

#endif /* SPTRACE_FOLLOW_H */
