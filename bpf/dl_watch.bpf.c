// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Watches the dynamic loader's _dl_debug_state, the hook debuggers use:
 * ld.so calls it after mapping the initial libraries (before relocating
 * them or running any constructor) and around every dlopen()/dlclose().
 *
 * Stop mode (a command sptrace launched): the program stops the process
 * with SIGSTOP so the loader attaches to new libraries before any of their
 * code runs, then lets it go (and if sptrace dies, its releaser does:
 * stop_release.bpf.h). Notify mode (a running process, which must
 * not be disturbed): it only counts, and the loader attaches soon after.
 *
 * Follow mode (stop mode of --follow, see follow.bpf.c): the link serves
 * every process, so only those in `followed` are stopped, and each stop
 * is reported with its tgid in `follow_events` (both maps are
 * follow.bpf.c's), since the stopped process may not be sptrace's child.
 */
#include <stdbool.h>
#include <linux/bpf.h>
#include <linux/ptrace.h>
#include <bpf/bpf_helpers.h>
#include <sptrace/dl_watch_abi.h>
#include <sptrace/follow_abi.h>
/* Follow mode: follow.bpf.c's maps (sized down when unused). */
#include "follow_maps.bpf.h"
/* Stop mode: stops that end if sptrace dies (its maps, shared by fd). */
#include "stop_release.bpf.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

const volatile bool stop = false;
const volatile bool follow = false;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} dl_events SEC(".maps");


static __always_inline int follow_stop(void)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32, slot;
	struct sp_follow_event *e;
	__u64 *v;

	if (!bpf_map_lookup_elem(&followed, &tgid))
		return 0;
	e = bpf_ringbuf_reserve(&follow_events, sizeof(*e), 0);
	if (e && !sp_stop_current(0)) {
		e->kind = SP_FOLLOW_DL;
		e->tgid = tgid;
		e->parent = 0;
		e->pad = 0;
		bpf_ringbuf_submit(e, 0);
		return 0;
	}
	if (e)
		bpf_ringbuf_discard(e, 0);
	slot = SP_FOLLOW_ERR_LOST;
	v = bpf_map_lookup_elem(&follow_errors, &slot);
	if (v)
		__sync_fetch_and_add(v, 1);
	return 0;
}

SEC("uprobe")
int sp_dl_event(struct pt_regs *ctx)
{
	__u32 zero = 0, *v;

	(void)ctx;
	if (follow)
		return follow_stop();
	v = bpf_map_lookup_elem(&dl_events, &zero);
	if (!v)
		return 0;	/* cannot mark it ours: do not stop */
	/* Counted once sent: a stop of ours is one the count covers. */
	if (stop && sp_stop_current(0))
		return 0;
	__sync_fetch_and_add(v, 1);
	return 0;
}
