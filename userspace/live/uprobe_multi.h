/* SPDX-License-Identifier: MIT */
/*
 * uprobe_multi links (Linux 6.6+) made with the bpf syscall: libbpf 1.1
 * predates them. One link puts one program on many offsets of one file.
 */
#ifndef SPTRACE_UPROBE_MULTI_H
#define SPTRACE_UPROBE_MULTI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Not in Debian 12's UAPI headers (Linux 6.1): Linux 6.6's values. */
#define SP_BPF_TRACE_UPROBE_MULTI 48

/*
 * Program `prog_fd` (loaded with expected attach type
 * SP_BPF_TRACE_UPROBE_MULTI) on `n` offsets of `path`, with their
 * ref_ctr_offsets (`refs`, NULL: none) and cookies (NULL: 0), for process
 * `pid` (<= 0: every process); `ret`: return probes. The link's fd or
 * -errno.
 */
int uprobe_multi__link(int prog_fd, pid_t pid, const char *path,
		       const uint64_t *offs, const uint64_t *refs,
		       const uint64_t *cookies, size_t n, bool ret);

#endif /* SPTRACE_UPROBE_MULTI_H */
