// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * --func: plain functions as intervals, by an entry and a return probe on
 * each. Part of the query object (see query.bpf.c), loaded only when the
 * session has --func. The cookie is the row's name (SP_FUNC_TAG | index),
 * with SP_FUNC_STEP where the entry probe is single-stepped (the overhead
 * estimate prices those apart);
 * the stack pointer tells unwound frames apart. At a return probe `ret`
 * has popped the return address: the function entered at sp - 8.
 */
#include <stdbool.h>
#include <linux/bpf.h>
#include <linux/ptrace.h>
#include <bpf/bpf_helpers.h>
#include <sptrace/query_abi.h>
#include <sptrace/record_abi.h>
#include "sp_regs.bpf.h"
#include "query_core.bpf.h"

SEC("uprobe")
int sp_func_entry(struct pt_regs *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u64 cookie = bpf_get_attach_cookie(ctx);

	if (!counting())
		return 0;
	count_hits(id >> 32, cookie & SP_FUNC_STEP ? SP_HIT_FUNC_STEP :
		   SP_HIT_FUNC, 1);
	drain_first(id, 0);
	return begin_at(id, bpf_ktime_get_ns(), cookie & ~SP_FUNC_STEP,
			SP_FRAME_QUERY, SP_EV_QUERY_BEGIN, SP_CTX_REG(ctx, rsp));
}

SEC("uretprobe")
int sp_func_return(struct pt_regs *ctx)
{
	/* The time before the drain, as on_end() takes it. */
	__u64 now = bpf_ktime_get_ns(), id = bpf_get_current_pid_tgid();

	if (!counting())
		return 0;
	count_hits(id >> 32, SP_HIT_FUNC, 1);
	drain_first(id, 0);
	/* Frames entered below sp - 8 are gone; sp - 8 is this one. */
	return end_at(id, now, bpf_get_attach_cookie(ctx) & ~SP_FUNC_STEP,
		      SP_FRAME_QUERY,
		      SP_EV_QUERY_END, SP_CTX_REG(ctx, rsp) - 16);
}
