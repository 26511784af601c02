/* SPDX-License-Identifier: MIT */
/*
 * The query-name locator (bpf/name_locate.bpf.c): where the names BPF
 * could not read lie in their files, found at each exit of a thread of a
 * process that has one, and before its loader unmaps a library. sptrace
 * then reads them from those files (addr_spaces__read_file_str()). Best
 * effort, said with -v when it cannot be: without kernel BTF (CO-RE and
 * bpf_find_vma() need it) names are read from sptrace's snapshots only.
 */
#ifndef SPTRACE_NAME_LOCATOR_H
#define SPTRACE_NAME_LOCATOR_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct name_locate_bpf;
struct bpf_link;

struct name_locator {
	struct name_locate_bpf *skel;	/* NULL: not loaded */
	struct bpf_link *exit_link;
	struct bpf_link **links;	/* at loaders' unloads */
	size_t nlinks;
	/* Its load (the kernel's BTF read for CO-RE, 20-30 ms) runs in a
	 * thread while the probes are attached. */
	pthread_t loader;
	bool loading;
	int names_fd, unread_fd;
};

/* Starts loading the locator of the names in map `names_fd` (query_abi.h's
 * `names`) whose processes are in `unread_fd` (`unread_names`), both
 * query.bpf.c's. */
void name_locator__start(struct name_locator *l, int names_fd, int unread_fd);
/* Waits for the load, then locates at every exit. Best effort. */
void name_locator__attach_exits(struct name_locator *l);
/* Locates before `loader` of `pid` (-1: every process) unmaps a library:
 * a uprobe at `off`, its _dl_debug_state, whose address plus `r_debug_off`
 * is _r_debug. Waits for the load. Best effort. */
void name_locator__attach_unloads(struct name_locator *l, pid_t pid,
				  const char *loader, uint64_t off,
				  uint64_t r_debug_off);
void name_locator__destroy(struct name_locator *l);

#endif /* SPTRACE_NAME_LOCATOR_H */
