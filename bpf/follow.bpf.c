// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * `sptrace --follow -- CMD`: which processes count, and stopping those that
 * exec so their new image is attached before it runs.
 *
 * Design. Probe links of a followed session are attached for every process
 * (no pid filter) and the probe programs count a hit only if its tgid is in
 * `followed`. The alternative, pid-filtered links added per child, would
 * need each child stopped between fork and its first instruction, which
 * nothing but ptrace does; and the kernel copies the parent's breakpoints
 * into a forked child whose hits a pid-filtered link drops. Here the child
 * enters `followed` in sched_process_fork, which runs in the parent before
 * the child is first scheduled, and its breakpoints are the parent's: no hit
 * of a forked child is missed, at no cost per child. The price: other
 * processes that map the same instrumented files trap at those sites and
 * are filtered out here, as with -b.
 *
 * A followed process that execs gets a new image (and perhaps another
 * dynamic loader, or none when static): sched_process_exec runs in it
 * before it returns to user space, so a SIGSTOP sent there stops it before
 * its first instruction. Userspace attaches to what it maps, then sends
 * SIGCONT; if sptrace dies first, its releaser does (stop_release.bpf.h). Its libraries are attached at its loader's stops (dl_watch.bpf.c
 * in follow mode), which report through the same ring buffer.
 *
 * A process leaves `followed` when its last thread exits (signal->live
 * reaches zero before sched_process_exit), before its pid can be reused;
 * `live` counts the processes in the map, so the session knows when the
 * command and all its descendants are gone.
 *
 * No vmlinux.h: the task fields read are declared below and relocated
 * against the kernel's BTF (CO-RE).
 */
#include <stdbool.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <sptrace/follow_abi.h>
#include "follow_maps.bpf.h"
#include "stop_release.bpf.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

typedef struct {
	int counter;
} atomic_t;

struct signal_struct {
	atomic_t live;
} __attribute__((preserve_access_index));

struct task_struct {
	int pid;
	int tgid;
	struct signal_struct *signal;
	struct task_struct *group_leader;
	__u64 start_boottime;
} __attribute__((preserve_access_index));

/* Processes in `followed`; userspace adds the command's. */
__s64 live;

static __always_inline void count_error(__u32 slot)
{
	__u64 *v = bpf_map_lookup_elem(&follow_errors, &slot);

	if (v)
		__sync_fetch_and_add(v, 1);
}

/* ctx->args: the parent and child task_structs; current is the parent. */
SEC("raw_tracepoint/sched_process_fork")
int sp_follow_fork(struct bpf_raw_tracepoint_args *ctx)
{
	struct task_struct *child = (struct task_struct *)ctx->args[1];
	__u32 parent = bpf_get_current_pid_tgid() >> 32, pid, tgid;
	struct sp_followed v = { .parent = parent };
	struct sp_follow_event *e;

	if (!bpf_map_lookup_elem(&followed, &parent))
		return 0;
	pid = (__u32)BPF_CORE_READ(child, pid);
	tgid = (__u32)BPF_CORE_READ(child, tgid);
	if (pid != tgid || tgid == parent)
		return 0;	/* a thread, not a process */
	if (bpf_map_update_elem(&followed, &tgid, &v, BPF_NOEXIST)) {
		count_error(SP_FOLLOW_ERR_FULL);
		return 0;
	}
	__sync_fetch_and_add(&live, 1);
	/* Only for reading names later: losing it loses nothing else. */
	e = bpf_ringbuf_reserve(&follow_events, sizeof(*e), 0);
	if (!e)
		return 0;
	e->kind = SP_FOLLOW_FORK;
	e->tgid = tgid;
	e->parent = parent;
	e->pad = 0;
	bpf_ringbuf_submit(e, 0);
	return 0;
}

/* current has its new image and has not run it yet. */
SEC("raw_tracepoint/sched_process_exec")
int sp_follow_exec(void *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct sp_follow_event *e;

	(void)ctx;
	if (!bpf_map_lookup_elem(&followed, &tgid))
		return 0;
	/* No event, no stop: a stop nobody would end hangs the process. */
	e = bpf_ringbuf_reserve(&follow_events, sizeof(*e), 0);
	if (!e) {
		count_error(SP_FOLLOW_ERR_LOST);
		return 0;
	}
	if (sp_stop_current(BPF_CORE_READ((struct task_struct *)
					  bpf_get_current_task(),
					  group_leader, start_boottime))) {
		bpf_ringbuf_discard(e, 0);
		count_error(SP_FOLLOW_ERR_LOST);
		return 0;
	}
	e->kind = SP_FOLLOW_EXEC;
	e->tgid = tgid;
	e->parent = 0;
	e->pad = 0;
	bpf_ringbuf_submit(e, 0);
	return 0;
}

SEC("raw_tracepoint/sched_process_exit")
int sp_follow_exit(void *ctx)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	int threads;

	(void)ctx;
	if (!bpf_map_lookup_elem(&followed, &tgid))
		return 0;
	threads = BPF_CORE_READ(task, signal, live.counter);
	if (threads > 0)
		return 0;	/* not the last thread */
	if (!bpf_map_delete_elem(&followed, &tgid))
		__sync_fetch_and_add(&live, -1);
	sp_stop_forget();
	return 0;
}
