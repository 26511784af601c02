/* SPDX-License-Identifier: MIT */
/*
 * The --follow maps, defined once for the three BPF objects that use them:
 * follow.bpf.c keeps them; query.bpf.c reads `followed` to filter, and
 * dl_watch.bpf.c stops followed processes at loader events. userspace
 * (follow.c) creates them in follow.bpf.c and reuses the fds in the others
 * (bpf_map__reuse_fd), so every object sees one map. Sized down when
 * unused. Weak: the query object is linked from several files that each
 * include this header, and the linker keeps one map.
 */
#ifndef SPTRACE_FOLLOW_MAPS_BPF_H
#define SPTRACE_FOLLOW_MAPS_BPF_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <sptrace/follow_abi.h>

/* The processes that count (tgid -> how they came to be followed). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, SP_FOLLOW_MAX);
	__type(key, __u32);
	__type(value, struct sp_followed);
} followed SEC(".maps") __weak;

#ifndef SP_FOLLOW_FILTER_ONLY
/* Processes stopped at an exec or a loader event, for userspace to attach
 * and continue. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, SP_FOLLOW_RINGBUF);
} follow_events SEC(".maps") __weak;

/* What could not be done in BPF (ring buffer full, map full, ...). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SP_FOLLOW_ERR__MAX);
	__type(key, __u32);
	__type(value, __u64);
} follow_errors SEC(".maps") __weak;
#endif

#endif /* SPTRACE_FOLLOW_MAPS_BPF_H */
