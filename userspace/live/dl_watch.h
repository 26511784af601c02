/* SPDX-License-Identifier: MIT */
/*
 * Watching targets' dynamic loaders (bpf/dl_watch.bpf.c) so that libraries
 * mapped after attaching get their probes attached too.
 */
#ifndef SPTRACE_DL_WATCH_H
#define SPTRACE_DL_WATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct dl_watch_bpf;
struct name_locator;
struct bpf_link;
struct stop_release;

struct dl_watch {
	struct dl_watch_bpf *skel;
	struct bpf_link **links;
	size_t nlinks;
	bool stop;
	uint32_t seen;		/* notify mode: events already handled */
	/* Follow mode: one link per loader file, for every process; the
	 * loader files attached (st_dev, st_ino). */
	bool follow;
	struct { uint64_t dev, ino; } *loaders;
	/* Locates names before a library is unmapped; NULL: none. */
	struct name_locator *names;
};

/* Loads the watcher; stops (SIGSTOP of the process at each event) through
 * `stops` if given (open), else it only counts. */
int dl_watch__open(struct dl_watch *w, const struct stop_release *stops);
/* Loads the watcher in follow mode (bpf/dl_watch.bpf.c): stops followed
 * processes through `stops` and reports them through follow.bpf.c's maps,
 * given as fds. */
int dl_watch__open_follow(struct dl_watch *w, const struct stop_release *stops,
			  int followed_fd, int events_fd, int errors_fd);
/* Before dl_watch__attach(): at each unload, the query names BPF could not
 * read are located in their files by `l` (name_locator.h). */
void dl_watch__locate_names(struct dl_watch *w, struct name_locator *l);
/* Watches the dynamic loader of `pid`: the interpreter named by the ELF
 * file `exe` (a command about to exec), or, with exe NULL, the loader the
 * running process maps. 0, -ENOENT when it has none (static), or -errno. */
int dl_watch__attach(struct dl_watch *w, pid_t pid, const char *exe);
/* Stop mode: the process was seen stopped by SIGSTOP; true if we sent it
 * (the caller attaches, then sends SIGCONT). Never in follow mode, whose
 * stops come as follow events. */
bool dl_watch__take_stop(struct dl_watch *w);
/* Notify mode: true if the loader reported changes since the last call. */
bool dl_watch__changed(struct dl_watch *w);
void dl_watch__destroy(struct dl_watch *w);

#endif /* SPTRACE_DL_WATCH_H */
