/* SPDX-License-Identifier: MIT */
/*
 * The ABI between bpf/follow.bpf.c (and dl_watch.bpf.c in follow mode) and
 * userspace/follow.c: `sptrace --follow -- CMD`.
 *
 * `followed` map: tgid -> struct sp_followed, the processes whose probe hits
 * count. `follow_events` ring buffer: struct sp_follow_event, one per
 * process the programs stopped (SIGSTOP) so that userspace attaches to what
 * it maps before its code runs, and one per fork (no stop).
 */
#ifndef SPTRACE_FOLLOW_ABI_H
#define SPTRACE_FOLLOW_ABI_H

#include <linux/types.h>

#define SP_FOLLOW_MAX 8192		/* processes followed at once */
#define SP_FOLLOW_RINGBUF (64 * 1024)

enum sp_follow_kind {
	SP_FOLLOW_FORK = 1,	/* tgid: the new process; no stop */
	SP_FOLLOW_EXEC,		/* tgid exec'd a new image: stopped */
	SP_FOLLOW_DL,		/* tgid's dynamic loader changed its link
				 * map: stopped */
};

struct sp_followed {
	__u32 parent;		/* tgid that forked it; 0: the command */
	__u32 pad;
};

struct sp_follow_event {
	__u32 kind;		/* enum sp_follow_kind */
	__u32 tgid;
	__u32 parent;		/* SP_FOLLOW_FORK: the forking tgid */
	__u32 pad;
};

/* Counters in the program's .bss (see follow.bpf.c). */
enum sp_follow_err {
	SP_FOLLOW_ERR_FULL = 0,	/* `followed` full: a child not followed */
	SP_FOLLOW_ERR_LOST,	/* ring buffer full: a stop not sent, so
				 * that process's new files were not
				 * attached before they ran */
	SP_FOLLOW_ERR__MAX,
};

#endif /* SPTRACE_FOLLOW_ABI_H */
