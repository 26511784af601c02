/* SPDX-License-Identifier: MIT */
/*
 * The ABI of batched sp events: the per-thread ring that probes/sp_probe.h
 * fills in the host's memory (read by bpf/query_batch.bpf.c with
 * bpf_probe_read_user, and by sptrace at stop with process_vm_readv), the
 * BPF map that remembers each thread's rings, and the map through which
 * sptrace feeds the rings it drained at stop to the same arithmetic.
 * tests/unit/test_batch_abi.c checks this layout against sp_probe.h's.
 */
#ifndef SPTRACE_BATCH_ABI_H
#define SPTRACE_BATCH_ABI_H

#include <linux/types.h>

#define SP_BATCH_CAP 256		/* records per ring (SP__BATCH_CAP) */
#define SP_BATCH_MAGIC 0x3168637461627073ull
/* Rings of one thread the tracer merges (one per instrumented object the
 * thread runs probes of). The drain loops run over the rings in use only,
 * so the bound costs map memory (ring_copy: 16 KiB per ring and CPU) and
 * verifier time, not time per record: 32 took sptrace's load from about
 * 2 s to 8 s on a loaded 2-CPU VM, 16 left it as it was. A power of two. */
#define SP_BATCH_MAX_RINGS 16
/* Records per run of the stop-drain program. */
#define SP_BATCH_FEED 256

/* Record kinds (SP__K_* in sp_probe.h). */
enum sp_batch_kind {
	SP_BK_QUERY_BEGIN = 1,
	SP_BK_QUERY_END = 2,
	SP_BK_BLOCKED_BEGIN = 3,
	SP_BK_BLOCKED_END = 4,
	SP_BK_INCR_LOAD_BEGIN = 5,
	SP_BK_INCR_LOAD_END = 6,
	SP_BK_CACHE_HIT = 7,
	SP_BK_PAUSE = 8,	/* the flush before took `arg` ns: not the user's */
	SP_BK_TSC = 0x100,	/* flag: ts, and a PAUSE's arg, in TSC ticks
				 * (converted by sptrace/tsc_map.h) */
	SP_BK_KEY_TEXT = 0x400,	/* with SP_BK_KEY: the key is the address of
				 * an interned text (SP_KEY_ROW_TEXT) */
	SP_BK_KEY = 0x200,	/* flag of a query record: `arg` is its key
				 * (query_abi.h, --query-keys) */
};

struct sp_batch_rec {
	__u64 ts;	/* CLOCK_MONOTONIC ns, taken in the host */
	__u64 name;
	__u64 arg;
	__u32 kind;	/* enum sp_batch_kind */
	__u32 commit;	/* (__u32)(sequence + 1) once written */
};

/* The ring's header; records follow at SP_BATCH_REC_OFF. */
struct sp_batch_hdr {
	__u64 magic;
	__u64 seq;	/* records reserved, ever */
	__u64 flushed;
	__u64 owner;	/* 0 with the magic: the thread is exiting and unmaps
			 * the ring after this flush; the tracer forgets it */
	__u64 next;
	__u64 busy;
	__u64 slot;	/* the host's, for its unload */
	__u64 pad;
};
#define SP_BATCH_REC_OFF 64
#define SP_BATCH_RING_SIZE (SP_BATCH_REC_OFF + SP_BATCH_CAP * 32)

/* Value of the `batch_rings` map (key: __u32 tid). */
struct sp_batch_reg {
	__u32 tgid;
	__u32 n;			/* rings in use */
	__u32 busy;			/* a drain holds it (cmpxchg) */
	__u32 slow;			/* sp:tsc hits no flush followed yet:
					 * probes that may fall back to their
					 * per-event site (query_batch.bpf.c,
					 * sp_tsc) */
	__u32 past;			/* a drain reached a record stamped after
					 * the disarm: every record not drained
					 * yet is later, and an overwritten one
					 * is no loss (a host still running
					 * while sptrace detaches) */
	__u32 pad;
	__u64 addr[SP_BATCH_MAX_RINGS];	/* ring addresses in the host; 0: a
					 * free slot (its ring was unmapped) */
	__u64 consumed[SP_BATCH_MAX_RINGS];	/* records drained, per ring */
};

/* Value of the one-slot `batch_feed` map: what sptrace read from a
 * thread's rings itself (at each report, and at stop), merged by time, for
 * the sp_batch_feed program. */
struct sp_batch_feed {
	__u32 tid;
	__u32 tgid;
	__u32 n;		/* records in rec[] */
	__u32 nrings;		/* rings the records come from */
	/* Per ring: the records drained before this feed (it is refused if
	 * a flush drained more meanwhile) and after it. */
	__u64 start[SP_BATCH_MAX_RINGS];
	__u64 stop[SP_BATCH_MAX_RINGS];
	__u64 addr[SP_BATCH_MAX_RINGS];	/* refused if a slot changed ring */
	struct sp_batch_rec rec[SP_BATCH_FEED];
};

#endif /* SPTRACE_BATCH_ABI_H */
