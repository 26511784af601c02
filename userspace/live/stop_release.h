/* SPDX-License-Identifier: MIT */
/*
 * Stops that end when sptrace does. A process sptrace stops (at an exec
 * with --follow, at a loader event of a launched or followed command) is
 * continued by sptrace once attached, and by a releaser process if sptrace
 * dies first, however it dies (the mechanism and its race:
 * bpf/stop_release.bpf.h; docs/reliability.md).
 */
#ifndef SPTRACE_STOP_RELEASE_H
#define SPTRACE_STOP_RELEASE_H

#include <stdbool.h>
#include <sys/types.h>

struct bpf_map;

struct stop_release {
	int held_fd, released_fd, ctl_fd;	/* the maps of stop_abi.h */
	int pipe_fd;		/* write end: EOF tells the releaser */
	pid_t pid;		/* the releaser; 0: none */
	bool lost;		/* the releaser died: stops are off */
};

/* Not open: no maps, no releaser (what stop_release__close() leaves). */
void stop_release__init(struct stop_release *sr);
/* Creates the maps and starts the releaser. Call before any other BPF
 * object exists: the releaser keeps only these maps. 0 or -errno
 * (reported). */
int stop_release__open(struct stop_release *sr);
/* Before an object that includes stop_release.bpf.h is loaded: its maps
 * become these (sr open), or as small as they can be (sr NULL or not
 * open: the object never stops anything). 0 or -errno. */
int stop_release__use(const struct stop_release *sr, struct bpf_map *held,
		      struct bpf_map *released, struct bpf_map *ctl);
/* Continues tgid, stopped by us (or its stop pending), and records it. */
void stop_release__continue(const struct stop_release *sr, pid_t tgid);
/* Is the releaser still there? If not, no process is stopped any more
 * (sptrace warns once; what is mapped from then on is attached late). */
void stop_release__check(struct stop_release *sr);
/* Once nothing can stop a process any more (links gone): the releaser
 * continues what is left and exits. */
void stop_release__close(struct stop_release *sr);

#endif /* SPTRACE_STOP_RELEASE_H */
