/* SPDX-License-Identifier: MIT */
/*
 * The ABI of stops that end when sptrace does: bpf/stop_release.bpf.h (the
 * programs that stop a process for sptrace to attach: follow.bpf.c at an
 * exec, dl_watch.bpf.c at a loader event) and userspace/live/
 * stop_release.c (sptrace, and the releaser process that outlives it).
 *
 * `stop_held`: tgid (see sp_stop_ctl.ns_ino) -> struct sp_stop_held,
 * written by BPF only.
 * `stop_released`: tgid -> the `stops` count sptrace last continued,
 * written by sptrace only. `stop_ctl`: one struct sp_stop_ctl, whose
 * `closed` the releaser sets when sptrace is gone. A process whose `stops`
 * differs from its `stop_released` may be stopped by us: the releaser
 * continues it.
 */
#ifndef SPTRACE_STOP_ABI_H
#define SPTRACE_STOP_ABI_H

#include <linux/types.h>

/* Processes a session may have stopped at once (as many as it follows). */
#define SP_STOP_MAX 8192

struct sp_stop_held {
	__u64 stops;		/* stops sent, ever */
	__u64 start_ns;		/* the process's start (task->start_boottime
				 * of its leader): a reused pid is not it */
};

struct sp_stop_ctl {
	__u64 closed;		/* 1: sptrace is gone; stop nothing more */
	/* sptrace's PID namespace (its nsfs device and inode), where it is
	 * not the initial one: the maps' keys are then PIDs as sptrace and
	 * the releaser see them, and a process outside it is never stopped
	 * (neither could continue it). 0: the kernel's own PIDs. */
	__u64 ns_dev;
	__u64 ns_ino;
};

#endif /* SPTRACE_STOP_ABI_H */
