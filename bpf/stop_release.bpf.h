/* SPDX-License-Identifier: MIT */
/*
 * Stopping the current process for sptrace, so that whatever happens to
 * sptrace the stop ends (include/sptrace/stop_abi.h; the userspace half
 * and the releaser: userspace/live/stop_release.c).
 *
 * Why a SIGSTOP at all: a process that execs or dlopen()s must not run
 * the new code before its probes are attached, and nothing short of
 * ptrace holds a task between two instructions but a stop. The risk is
 * a stop nobody ends: sptrace continues every process it stopped, but a
 * killed sptrace cannot. So each stop is recorded first (`stop_held`),
 * and a releaser process, which holds these maps and nothing else, waits
 * for sptrace to be gone (its pipe from sptrace reads EOF when the kernel
 * closes sptrace's files), sets `closed`, and continues every process
 * whose stops outnumber those sptrace continued.
 *
 * The race with a stop in flight while sptrace dies, and why no process
 * is left stopped: here (1) `stops` is raised, (2) SIGSTOP sent, (3)
 * `closed` read, each a full barrier (an atomic add, the signal lock, an
 * atomic add); the releaser (a) sets `closed`, (b) reads `stop_held`. If
 * (3) reads 0, it came before (a), so (1) and (2) came before (b): the
 * releaser sees the stop and its SIGCONT comes after the SIGSTOP. If (3)
 * reads 1, the stop is taken back here: SIGCONT to the current task,
 * which has not returned to user space yet, discards the pending SIGSTOP.
 * bpf_send_signal() sends at once (not from irq_work) in the contexts
 * this runs in: a uprobe and sched_process_exec, interrupts on.
 */
#ifndef SPTRACE_STOP_RELEASE_BPF_H
#define SPTRACE_STOP_RELEASE_BPF_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <sptrace/stop_abi.h>

#define SP_SIGSTOP 19
#define SP_SIGCONT 18

/* Created once (stop_maps.bpf.c, by stop_release.c) and shared by fd:
 * every program that stops, and the releaser, see one set. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, SP_STOP_MAX);
	__type(key, __u32);
	__type(value, struct sp_stop_held);
} stop_held SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, SP_STOP_MAX);
	__type(key, __u32);
	__type(value, __u64);
} stop_released SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sp_stop_ctl);
} stop_ctl SEC(".maps");

/*
 * Stops the current process; 0 if it is stopped (or will be, before it
 * runs another instruction of its own), -1 if not: sptrace is gone, or the
 * stop could not be recorded, and a stop nobody is sure to end is never
 * sent. start_ns: the process's start (its leader's start_boottime), kept
 * with its first stop so that the releaser leaves a reused pid alone; 0
 * where the program cannot read it (dl_watch.bpf.c has no CO-RE, so that
 * launch mode needs no kernel BTF; with --follow, whose exit hook forgets
 * a process before its pid can be reused, follow.bpf.c reads it).
 */
/* The current process's key in the maps: its PID as sptrace sees it; -1
 * if sptrace cannot see it (another PID namespace). */
static __always_inline int sp_stop_key(const struct sp_stop_ctl *ctl,
				       __u32 *tgid)
{
	struct bpf_pidns_info ns;

	if (!ctl->ns_ino) {
		*tgid = bpf_get_current_pid_tgid() >> 32;
		return 0;
	}
	if (bpf_get_ns_current_pid_tgid(ctl->ns_dev, ctl->ns_ino, &ns,
					sizeof(ns)))
		return -1;
	*tgid = ns.tgid;
	return 0;
}

static __always_inline int sp_stop_current(__u64 start_ns)
{
	struct sp_stop_held init = { .start_ns = start_ns }, *h;
	struct sp_stop_ctl *ctl;
	__u32 tgid, zero = 0;

	ctl = bpf_map_lookup_elem(&stop_ctl, &zero);
	if (!ctl || ctl->closed || sp_stop_key(ctl, &tgid))
		return -1;
	h = bpf_map_lookup_elem(&stop_held, &tgid);
	if (!h) {
		bpf_map_update_elem(&stop_held, &tgid, &init, BPF_NOEXIST);
		h = bpf_map_lookup_elem(&stop_held, &tgid);
		if (!h)
			return -1;	/* full */
	}
	__sync_fetch_and_add(&h->stops, 1);			/* (1) */
	if (bpf_send_signal(SP_SIGSTOP)) {			/* (2) */
		__sync_fetch_and_add(&h->stops, -1);	/* nothing to end */
		return -1;
	}
	if (__sync_fetch_and_add(&ctl->closed, 0)) {		/* (3) */
		bpf_send_signal(SP_SIGCONT);
		return -1;
	}
	return 0;
}

/* The current process is gone (its last thread exits): forget it, its
 * PID may be reused. */
static __always_inline void sp_stop_forget(void)
{
	struct sp_stop_ctl *ctl;
	__u32 tgid, zero = 0;

	ctl = bpf_map_lookup_elem(&stop_ctl, &zero);
	if (!ctl || sp_stop_key(ctl, &tgid))
		return;
	bpf_map_delete_elem(&stop_held, &tgid);
	bpf_map_delete_elem(&stop_released, &tgid);
}

#endif /* SPTRACE_STOP_RELEASE_BPF_H */
