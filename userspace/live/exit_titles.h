/* SPDX-License-Identifier: MIT */
/*
 * The titles target processes had as they exited (bpf/exit_title.bpf.c),
 * for --per-pid: a process that lives less than the 200 ms between two
 * title scans (a PostgreSQL backend of a short connection) still has the
 * title it set after its fork, not its parent's or none.
 */
#ifndef SPTRACE_EXIT_TITLES_H
#define SPTRACE_EXIT_TITLES_H

#include <stdint.h>
#include <sys/types.h>

struct exit_title_bpf;
struct bpf_link;

struct exit_titles {
	struct exit_title_bpf *skel;
	struct bpf_link *link;
	unsigned int nfiles;
	uint64_t lost_said;	/* titles_lost already warned of */
};

/* Loads the watcher (needs the kernel's BTF; without it, or when the load
 * fails, -v says so and exit titles are not taken: 0 all the same). */
int exit_titles__open(struct exit_titles *et);
/* Processes of the executable `path` count. 0, or -errno (-ENOSPC: more
 * than SP_TITLE_FILES files). Nothing without a watcher. */
int exit_titles__add_file(struct exit_titles *et, const char *path);
/* Starts taking titles. 0 or -errno (said with -v). */
int exit_titles__attach(struct exit_titles *et);
/* Calls fn(ctx, pid, title) for each title taken since the last call,
 * as proc_title__from_cmdline() makes it, and forgets it. 0, or the first
 * non-zero fn returned. A title lost (the map full) is warned of. */
int exit_titles__drain(struct exit_titles *et,
		       int (*fn)(void *ctx, uint32_t pid, const char *title),
		       void *ctx);
void exit_titles__close(struct exit_titles *et);

#endif /* SPTRACE_EXIT_TITLES_H */
