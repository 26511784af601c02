// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * `sptrace latency`: pairs a start event with the end event of the same key
 * (enqueue on one thread, dequeue on another) and histograms the time
 * between them, per CPU.
 *
 * Two ways in, one pairing:
 *  - lat_mark serves every SP_MARK(name, key) site (sp:mark), attached by
 *    userspace/attach.c with the argument registers in the cookie. The name
 *    arrives as a pointer; `mark_names` says which pointers, in which
 *    process, are the start name and the end name. Userspace fills it
 *    before arming by finding the name strings in the target's read-only
 *    mappings (userspace/rodata_scan.c), so no event waits for a string to
 *    be read and counts are exact.
 *  - lat_usdt_from / lat_usdt_to serve third-party USDT probes through
 *    libbpf's USDT support; the attach's USDT cookie is the index of the
 *    argument that holds the key.
 *
 * `pending` holds started intervals by (process, key). An end takes its
 * start out with a delete, so when two ends race for one start exactly one
 * wins and the other counts as unmatched.
 */
#include <stdbool.h>
#include <linux/bpf.h>
#include <linux/ptrace.h>
#include <bpf/bpf_helpers.h>
#include <bpf/usdt.bpf.h>
#include <sptrace/hist.h>
#include <sptrace/latency_abi.h>
#include "sp_regs.bpf.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

#ifndef EEXIST
#define EEXIST 17
#endif

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SP_LAT_MAX_NAME_ADDRS);
	__type(key, struct sp_lat_name_key);
	__type(value, __u32);	/* enum sp_lat_role */
} mark_names SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SP_LAT_DEFAULT_MAX_PENDING);
	__type(key, struct sp_lat_pending_key);
	__type(value, __u64);
} pending SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sp_lat_stats);
} stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SP_HIST_BUCKETS);
	__type(key, __u32);
	__type(value, __u64);
} hist SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SP_LAT_ERR__MAX);
	__type(key, __u32);
	__type(value, __u64);
} errors SEC(".maps");

/* Set once every site is attached and every name address is known;
 * cleared before anything is detached. */
volatile bool armed;

static __always_inline void count_error(__u32 slot)
{
	__u64 *v = bpf_map_lookup_elem(&errors, &slot);

	if (v)
		*v += 1;
}

static __always_inline struct sp_lat_stats *my_stats(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&stats, &zero);
}

static __always_inline void lat_start(__u32 tgid, __u64 key, __u64 now)
{
	struct sp_lat_pending_key k = { .key = key, .tgid = tgid };
	struct sp_lat_stats *st;
	__u64 *v;
	long err;

	v = bpf_map_lookup_elem(&pending, &k);
	if (!v) {
		err = bpf_map_update_elem(&pending, &k, &now, BPF_NOEXIST);
		if (!err)
			return;
		if (err != -EEXIST) {
			count_error(SP_LAT_ERR_PENDING_FULL);
			return;
		}
		/* Another CPU started the same key meanwhile. */
		v = bpf_map_lookup_elem(&pending, &k);
	}
	/* The earlier start of this key will never be matched. */
	st = my_stats();
	if (st)
		st->overwritten++;
	if (v)
		*v = now;
}

static __always_inline void lat_end(__u32 tgid, __u64 key, __u64 now)
{
	struct sp_lat_pending_key k = { .key = key, .tgid = tgid };
	struct sp_lat_stats *st = my_stats();
	__u64 *v, start, d;
	__u32 bucket;

	if (!st)
		return;
	v = bpf_map_lookup_elem(&pending, &k);
	if (!v) {
		st->unmatched_to++;
		return;
	}
	start = *v;
	/* Only the end that deletes the start owns it. */
	if (bpf_map_delete_elem(&pending, &k)) {
		st->unmatched_to++;
		return;
	}
	d = now > start ? now - start : 0;
	if (!st->count || d < st->min_ns)
		st->min_ns = d;
	if (d > st->max_ns)
		st->max_ns = d;
	st->count++;
	st->total_ns += d;
	bucket = sp_hist_bucket(d);
	v = bpf_map_lookup_elem(&hist, &bucket);
	if (v)
		*v += 1;
}

SEC("uprobe")
int lat_mark(struct pt_regs *ctx)
{
	__u64 now = bpf_ktime_get_ns();
	struct sp_lat_name_key nk = {};
	__u32 *role, tgid;

	if (!armed)
		return 0;
	tgid = bpf_get_current_pid_tgid() >> 32;
	nk.addr = sp_probe_arg(ctx, 0);
	nk.tgid = tgid;
	role = bpf_map_lookup_elem(&mark_names, &nk);
	if (!role)
		return 0;	/* a mark of another name */
	if (*role == SP_LAT_FROM)
		lat_start(tgid, sp_probe_arg(ctx, 1), now);
	else if (*role == SP_LAT_TO)
		lat_end(tgid, sp_probe_arg(ctx, 1), now);
	return 0;
}

static __always_inline int on_usdt(struct pt_regs *ctx, bool from)
{
	__u64 now = bpf_ktime_get_ns();
	__u32 tgid;
	long key;

	if (!armed)
		return 0;
	tgid = bpf_get_current_pid_tgid() >> 32;
	if (bpf_usdt_arg(ctx, (__u64)bpf_usdt_cookie(ctx), &key)) {
		count_error(SP_LAT_ERR_KEY_READ);
		return 0;
	}
	if (from)
		lat_start(tgid, (__u64)key, now);
	else
		lat_end(tgid, (__u64)key, now);
	return 0;
}

SEC("usdt")
int lat_usdt_from(struct pt_regs *ctx)
{
	return on_usdt(ctx, true);
}

SEC("usdt")
int lat_usdt_to(struct pt_regs *ctx)
{
	return on_usdt(ctx, false);
}
