/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * The maps and settings every file of the query object shares: the
 * per-thread stacks, the rows and their histograms, the error counters,
 * the recording ring buffer, and the loader's flags. The object is linked
 * from query.bpf.c, query_func.bpf.c, query_spec.bpf.c and
 * query_batch.bpf.c (bpf/meson.build): the maps are weak, so the linker
 * keeps one of each; the variables are defined once, in query.bpf.c.
 */
#ifndef SPTRACE_QUERY_MAPS_BPF_H
#define SPTRACE_QUERY_MAPS_BPF_H

#include <stdbool.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <sptrace/query_abi.h>
#include <sptrace/tsc_map.h>
/* --follow: the processes that count, kept by follow.bpf.c (this map is
 * its map; sized down when unused). Links then serve every process. */
#define SP_FOLLOW_FILTER_ONLY
#include "follow_maps.bpf.h"

#ifndef EEXIST
#define EEXIST 17
#endif

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, SP_DEFAULT_MAX_THREADS);
	__type(key, __u32);
	__type(value, struct sp_thread_stack);
} threads SEC(".maps") __weak;

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, SP_DEFAULT_MAX_QUERIES);
	__type(key, struct sp_query_key);
	__type(value, struct sp_query_stats);
} queries SEC(".maps") __weak;

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, SP_DEFAULT_MAX_HIST);
	__type(key, struct sp_hist_key);
	__type(value, __u64);
} hist SEC(".maps") __weak;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SP_DEFAULT_MAX_QUERIES);
	__type(key, struct sp_query_key);
	__type(value, struct sp_name);
} names SEC(".maps") __weak;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, SP_DEFAULT_MAX_THREADS);
	__type(key, __u32);
	__type(value, struct sp_thread_name);
} thread_names SEC(".maps") __weak;

/* The processes with a `names` entry BPF could not read (tgid -> 1), so
 * that name_locate.bpf.c, at their exit, walks `names` for those only. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, SP_DEFAULT_MAX_QUERIES);
	__type(key, __u32);
	__type(value, __u8);
} unread_names SEC(".maps") __weak;

/* --query-keys: what each keyed row is (query_abi.h); its size bounds
 * them. Shrinks only by the rows of exited processes, so an END finds the
 * row its BEGIN was given. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, SP_DEFAULT_MAX_QUERIES);
	__type(key, __u64);
	__type(value, struct sp_key_row);
} key_rows SEC(".maps") __weak;

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SP_CNT__END);
	__type(key, __u32);
	__type(value, __u64);
} errors SEC(".maps") __weak;

/* --max-overhead: the processes being sampled (tgid -> the sampling
 * window now open, counted up by userspace as it opens one), only read
 * while `sampling` is set. A thread stack of an older window is emptied
 * at its next event: its open frames were cut by the window's edge. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, SP_DEFAULT_MAX_THREADS);
	__type(key, __u32);
	__type(value, __u32);
} sample_epochs SEC(".maps") __weak;

/* What the probes did in each process, to cost them (query_abi.h's
 * enum sp_hit). Preallocated: an event never allocates. Key 0, made by
 * the loader, takes the processes beyond its size. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, SP_DEFAULT_MAX_THREADS);
	__type(key, __u32);
	__type(value, struct sp_probe_hits);
} probe_hits SEC(".maps") __weak;

/* A drain's counts of records and of its flushes' time, added per record
 * by batch_event() and moved into `probe_hits` once per drain. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sp_probe_hits);
} drain_hits SEC(".maps") __weak;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, SP_DEFAULT_RINGBUF);
} events SEC(".maps") __weak;

/* Zeroed templates for map values too large for the 512-byte BPF stack. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sp_thread_stack);
} zero_stack SEC(".maps") __weak;

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sp_name);
} zero_name SEC(".maps") __weak;

/* And for a new row: off the stack of query_row_new(), which a --query
 * cache line calls below its name buffer (see sp_spec_cache). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sp_query_stats);
} zero_row SEC(".maps") __weak;

/*
 * Set by the loader once every site of a batch is attached. Attaching is
 * one site at a time; without this gate an END attached before its BEGIN
 * (or the reverse) would see half of the pairs while the loader works.
 */
extern volatile bool armed;
/* Set by the loader before it attaches the first file batched: only then
 * has a per-event program any ring to drain first (see drain_first()). */
extern volatile bool batching;
/* Set by the loader while some process is sampled (`sample_epochs`). */
extern volatile bool sampling;
/* CLOCK_MONOTONIC when the loader armed and disarmed (0: not yet): batched
 * records, timed in the host, count only in between. */
extern volatile __u64 armed_ns;
extern volatile __u64 disarmed_ns;
/* Batched records stamped with the TSC: the map to CLOCK_MONOTONIC that
 * sptrace publishes and keeps recalibrating (include/sptrace/tsc_map.h,
 * userspace/live/tsc_clock.c). count 0: no calibration. */
extern struct sp_tsc_clock tsc_clock;

/* Set before load by `sptrace record`: every event also goes to `events`,
 * with the very timestamp aggregation uses. */
extern const volatile bool record;
/* Wake the reader only once this much is waiting: a wakeup per event
 * costs more than the event; the reader also drains on a timer. */
extern const volatile __u64 wakeup_bytes;
/* Set before load by --follow. */
extern const volatile bool follow;
/* Set before load by `sptrace serve`: `hist` counts an invocation under its
 * ladder slot (include/sptrace/ladder.h), exact at the bounds serve shows,
 * in at most 23 entries per query; every other command keeps the fine
 * buckets its percentiles need. */
extern const volatile bool ladder;
/* Set before load by --query-keys: keyed events get rows per key. */
extern const volatile bool query_keys;
/* Set before load when the batched programs are: without them, no
 * program calls their drain, and the verifier skips it (it is most of
 * sp_thread_exit's and each per-event program's instructions). */
extern const volatile bool batch_loaded;

#endif /* SPTRACE_QUERY_MAPS_BPF_H */
