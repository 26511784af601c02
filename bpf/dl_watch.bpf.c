// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Watches the dynamic loader's _dl_debug_state, the hook debuggers use:
 * ld.so calls it after mapping the initial libraries (before relocating
 * them or running any constructor) and around every dlopen()/dlclose().
 *
 * Stop mode (a command sptrace launched): the program stops the process
 * with SIGSTOP so the loader attaches to new libraries before any of their
 * code runs, then lets it go. Notify mode (a running process, which must
 * not be disturbed): it only counts, and the loader attaches soon after.
 */
#include <stdbool.h>
#include <linux/bpf.h>
#include <linux/ptrace.h>
#include <bpf/bpf_helpers.h>
#include <sptrace/dl_watch_abi.h>

char LICENSE[] SEC("license") = "Dual MIT/GPL";

#define SIGSTOP 19

const volatile bool stop = false;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} dl_events SEC(".maps");

SEC("uprobe")
int sp_dl_event(struct pt_regs *ctx)
{
	__u32 zero = 0, *v;

	(void)ctx;
	v = bpf_map_lookup_elem(&dl_events, &zero);
	if (!v)
		return 0;	/* cannot mark it ours: do not stop */
	__sync_fetch_and_add(v, 1);
	if (stop)
		bpf_send_signal(SIGSTOP);
	return 0;
}
