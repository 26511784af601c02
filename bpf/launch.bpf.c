// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Stops a launched command whenever its dynamic loader reports a change of
 * the link map (_dl_debug_state, the hook debuggers use), so the loader can
 * attach to newly mapped libraries before any of their code runs: before
 * main, before library constructors, and at every dlopen().
 */
#include <linux/bpf.h>
#include <linux/ptrace.h>
#include <bpf/bpf_helpers.h>
#include <sptrace/launch_abi.h>

char LICENSE[] SEC("license") = "Dual MIT/GPL";

#define SIGSTOP 19

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SP_LAUNCH_MAX_PROCS);
	__type(key, __u32);
	__type(value, __u32);
} stop_pending SEC(".maps");

SEC("uprobe")
int sp_dl_stop(struct pt_regs *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32, one = 1, *v;

	(void)ctx;
	v = bpf_map_lookup_elem(&stop_pending, &tgid);
	if (v)
		__sync_fetch_and_add(v, 1);
	else if (bpf_map_update_elem(&stop_pending, &tgid, &one, BPF_ANY))
		return 0;	/* cannot mark it ours: do not stop */
	bpf_send_signal(SIGSTOP);
	return 0;
}
