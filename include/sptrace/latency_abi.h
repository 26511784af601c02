/* SPDX-License-Identifier: MIT */
/*
 * The ABI between bpf/latency.bpf.c and userspace/latency_provider.c: map
 * keys, values, counters and limits of `sptrace latency`. Only
 * <linux/types.h> types, explicit padding; userspace checks the layout with
 * _Static_assert in latency_provider.c.
 */
#ifndef SPTRACE_LATENCY_ABI_H
#define SPTRACE_LATENCY_ABI_H

#include <linux/types.h>

/* Default size of the map of started, not yet ended events (--max-pending). */
#define SP_LAT_DEFAULT_MAX_PENDING 65536
/* Addresses of the two mark names, over every process and binary. */
#define SP_LAT_MAX_NAME_ADDRS 16384

/* What an address passed as SP_MARK's name means (value of `mark_names`). */
enum sp_lat_role {
	SP_LAT_FROM = 1,	/* starts an interval */
	SP_LAT_TO = 2,		/* ends the interval with the same key */
};

/* Key of `mark_names`: a name pointer only means something in its process. */
struct sp_lat_name_key {
	__u64 addr;	/* address of the name string in the target */
	__u32 tgid;
	__u32 pad;
};

/* Key of `pending` (value: __u64 start time, bpf_ktime_get_ns()). Keys
 * pair within one process, across its threads. */
struct sp_lat_pending_key {
	__u64 key;
	__u32 tgid;
	__u32 pad;
};

/* Per-CPU value of the one-slot `stats` array. min_ns is valid only when
 * count > 0. Unmatched starts still pending at the end are counted by
 * userspace from what `pending` holds then. */
struct sp_lat_stats {
	__u64 count;		/* matched pairs */
	__u64 total_ns;		/* sum of their latencies */
	__u64 min_ns;
	__u64 max_ns;
	__u64 overwritten;	/* a start replaced a pending start of its key */
	__u64 unmatched_to;	/* an end found no pending start */
};

/* Slots of the per-CPU `errors` array: events that could not be counted. */
enum sp_lat_error {
	SP_LAT_ERR_PENDING_FULL = 0,	/* a start lost: `pending` full */
	SP_LAT_ERR_KEY_READ,		/* a USDT key argument unreadable */
	SP_LAT_ERR__MAX,
};

/*
 * The key argument of a third-party USDT endpoint is its attach cookie
 * (bpf_usdt_cookie()): the argument index, 0-based, below this.
 */
#define SP_LAT_MAX_ARG 12

#endif /* SPTRACE_LATENCY_ABI_H */
