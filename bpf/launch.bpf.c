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
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} stop_pending SEC(".maps");

SEC("uprobe")
int sp_dl_stop(struct pt_regs *ctx)
{
	__u32 zero = 0, *v;

	(void)ctx;
	v = bpf_map_lookup_elem(&stop_pending, &zero);
	if (!v)
		return 0;	/* cannot mark it ours: do not stop */
	__sync_fetch_and_add(v, 1);
	bpf_send_signal(SIGSTOP);
	return 0;
}
