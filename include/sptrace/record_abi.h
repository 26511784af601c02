/* SPDX-License-Identifier: MIT */
/*
 * The ABI of recording: the event the BPF side writes into the ring buffer
 * (bpf/query.bpf.c with `record` set) and the loader turns into trace file
 * events (userspace/trace_format.h). Only <linux/types.h> types.
 */
#ifndef SPTRACE_RECORD_ABI_H
#define SPTRACE_RECORD_ABI_H

#include <linux/types.h>

/* What happened; the values are part of the trace file format. */
enum sp_event_kind {
	SP_EV_QUERY_BEGIN = 1,
	SP_EV_QUERY_END = 2,
	SP_EV_CACHE_HIT = 3,
	SP_EV_INCR_LOAD_BEGIN = 4,
	SP_EV_INCR_LOAD_END = 5,
	SP_EV_BLOCKED_BEGIN = 6,
	SP_EV_BLOCKED_END = 7,
	SP_EV_MARK = 8,		/* arg1 = key */
	SP_EV_ALLOC = 9,	/* arg1 = size, arg2 = pointer */
	SP_EV_FREE = 10,	/* arg2 = pointer */
	SP_EV_THREAD_NAME = 11,	/* name = the thread's name */
	SP_EV_THREAD_EXIT = 12,	/* a traced thread exited (frees its stack) */
	/* name = the process's title (/proc/PID/cmdline), written by sptrace
	 * record before a process's first event; never from BPF. Format 1.1. */
	SP_EV_PROCESS_TITLE = 13,
	/* arg1 ns of the thread's time, from ts on, went to a batched flush:
	 * intervals that began at ts or later start that much later, as
	 * live aggregation shifts them (qstack.h: sp_stack_shift). Only from
	 * batched recording. Format 1.2. */
	SP_EV_PAUSE = 14,
	SP_EV__MAX,
};

/* Event classes for `sptrace record --events`: bit (1 << class). */
enum sp_event_class {
	SP_EVC_QUERY = 0,	/* QUERY_BEGIN/END */
	SP_EVC_CACHE,		/* CACHE_HIT */
	SP_EVC_BLOCKED,		/* BLOCKED_BEGIN/END */
	SP_EVC_INCR,		/* INCR_LOAD_BEGIN/END */
	SP_EVC_MARK,
	SP_EVC_ALLOC,		/* ALLOC/FREE */
	SP_EVC__MAX,
};

/* One ring-buffer record. `name` is the address of the name string in the
 * target; the loader maps (pid, name) to a string id once. */
struct sp_rec_event {
	__u64 ts_ns;		/* CLOCK_MONOTONIC, same reading as aggregation */
	__u64 name;
	__u64 arg1;
	__u64 arg2;
	__u32 pid;		/* tgid, root pid namespace */
	__u32 tid;
	__u32 kind;		/* enum sp_event_kind */
	__u32 pad;
};

/*
 * A batch: one ring-buffer record for the batched events one drain of a
 * thread's rings applied (bpf/query_batch.bpf.c, stage_event()). It starts with a
 * struct sp_rec_event whose kind is SP_REC_BATCH (never a file kind), pid
 * and tid of the thread, arg1 = the number of items after it (arg2, how
 * many of them are SP_EV_PAUSE, is BPF's own); each item is one event of
 * that thread, in order, with the timestamp aggregation used.
 */
#define SP_REC_BATCH 0x8000u
#define SP_REC_BATCH_MAX 256	/* items per ring-buffer record */

struct sp_rec_item {
	__u64 ts_ns;
	__u64 name;
	__u64 arg1;
	__u32 kind;		/* enum sp_event_kind */
	__u32 pad;
};

struct sp_rec_batch {
	struct sp_rec_event hdr;
	struct sp_rec_item item[SP_REC_BATCH_MAX];
};

#endif /* SPTRACE_RECORD_ABI_H */
