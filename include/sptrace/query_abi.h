/* SPDX-License-Identifier: MIT */
/*
 * The ABI between bpf/query.bpf.c and the userspace loader: map keys,
 * map values, error counters and limits of the query program family.
 * Only <linux/types.h> types, explicit padding; userspace checks the
 * layout with _Static_assert in userspace/query_maps.c.
 */
#ifndef SPTRACE_QUERY_ABI_H
#define SPTRACE_QUERY_ABI_H

#include <linux/types.h>

/* Deepest nesting of open queries tracked per thread (issue: >= 64). */
#define SP_MAX_DEPTH 128
/* Longest query name captured, including the NUL. Longer names are cut. */
#define SP_NAME_LEN 128
/* Longest thread name from SP_THREAD_NAME, including the NUL. */
#define SP_THREAD_NAME_LEN 64

/* Default map sizes; the loader may change them before load (--max-*). */
#define SP_DEFAULT_MAX_QUERIES 8192
#define SP_DEFAULT_MAX_HIST 131072
#define SP_DEFAULT_MAX_THREADS 16384
#define SP_DEFAULT_MAX_TARGETS 1024
/* Ring buffer of `sptrace record`, bytes (a power of two). */
#define SP_DEFAULT_RINGBUF (4u << 20)

/* What kind of interval a frame on the per-thread stack is. */
enum sp_frame_kind {
	SP_FRAME_QUERY = 0,	/* SP_QUERY_BEGIN .. SP_QUERY_END */
	SP_FRAME_BLOCKED = 1,	/* SP_BLOCKED_BEGIN .. SP_BLOCKED_END */
	SP_FRAME_INCR_LOAD = 2,	/* SP_INCR_LOAD_BEGIN .. SP_INCR_LOAD_END */
	SP_FRAME__MAX,
};

/*
 * Everything that can go wrong without stopping the trace. Each is a slot in
 * the per-CPU `errors` array; the loader sums CPUs and reports every non-zero
 * slot. Keep sp_error_names[] in userspace/query_maps.c in the same order.
 */
enum sp_error {
	SP_ERR_END_WITHOUT_BEGIN = 0,	/* END with no matching open frame */
	SP_ERR_END_MISMATCH,		/* END closed frames above its BEGIN */
	SP_ERR_STACK_OVERFLOW,		/* BEGIN deeper than SP_MAX_DEPTH */
	SP_ERR_THREAD_EXIT_OPEN,	/* thread exited with open frames */
	SP_ERR_QUERIES_FULL,		/* `queries` map full: interval lost */
	SP_ERR_HIST_FULL,		/* `hist` map full: bucket not counted */
	SP_ERR_NAMES_FULL,		/* `names` map full: name not captured */
	SP_ERR_THREADS_FULL,		/* `threads` map full: event lost */
	SP_ERR_NAME_READ,		/* name string unreadable at capture */
	SP_ERR_EVENTS_LOST,		/* record: ring buffer full, event lost */
	SP_ERR_FUNC_UNWOUND,		/* --func frames left by longjmp/throw */
	SP_ERR__MAX,
};

/* Rows are per process and per name pointer: pointers only mean something
 * inside one address space. Userspace merges rows by name string. */
struct sp_query_key {
	__u64 name;	/* address of the name string in the target */
	__u32 tgid;	/* process, as the root pid namespace sees it */
	__u32 pad;
};

/* Per-CPU value of the `queries` map. min_ns is valid only when count > 0. */
struct sp_query_stats {
	__u64 count;		/* completed invocations */
	__u64 total_ns;		/* sum of inclusive time, plus blocked/incr */
	__u64 self_ns;		/* sum of exclusive time, plus blocked/incr */
	__u64 min_ns;		/* shortest invocation (total time) */
	__u64 max_ns;		/* longest invocation (total time) */
	__u64 cache_hits;
	__u64 incr_loads;
	__u64 incr_load_ns;
	__u64 blocked_count;
	__u64 blocked_ns;
};

/* Key of the sparse per-CPU latency histogram (value: __u64 count). */
struct sp_hist_key {
	__u64 name;
	__u32 tgid;
	__u32 bucket;	/* sp_hist_bucket() of the invocation's total time */
};

/* Value of the `names` map (key: struct sp_query_key). */
struct sp_name {
	char str[SP_NAME_LEN];
};

/* Value of the `thread_names` map (key: __u32 tid). */
struct sp_thread_name {
	__u32 tgid;
	__u32 pad;
	char str[SP_THREAD_NAME_LEN];
};

/* One open interval on a thread's stack. */
struct sp_frame {
	__u64 name;
	__u64 start_ns;
	__u64 child_ns;	/* time spent in closed children */
	__u64 sp;	/* --func frames: stack pointer at entry; else 0 */
	__u32 kind;	/* enum sp_frame_kind */
	__u32 pad;
};

/* Value of the `threads` map (key: __u32 tid). */
struct sp_thread_stack {
	__u32 depth;	/* frames in use */
	__u32 overflow;	/* BEGINs dropped beyond SP_MAX_DEPTH, still open */
	__u32 tgid;
	__u32 pad;
	struct sp_frame frames[SP_MAX_DEPTH];
};

/*
 * The uprobe cookie of a probe site: where its arguments live. The sp probe
 * header passes every argument in a general-purpose register, so one byte per
 * argument names the register (enum sp_reg); SP_REG_NONE marks an argument
 * the site does not have. Byte i holds argument i.
 */
enum sp_reg {
	SP_REG_NONE = 0,
	SP_REG_RAX, SP_REG_RBX, SP_REG_RCX, SP_REG_RDX,
	SP_REG_RSI, SP_REG_RDI, SP_REG_RBP, SP_REG_R8,
	SP_REG_R9, SP_REG_R10, SP_REG_R11, SP_REG_R12,
	SP_REG_R13, SP_REG_R14, SP_REG_R15,
	SP_REG__MAX,
};

/*
 * --func: a plain function's row is named SP_FUNC_TAG | index into the
 * loader's table of function names and --query fixed names (bit 63 is
 * never set in a user-space address on the architectures sptrace supports).
 */
#define SP_FUNC_TAG (1ull << 63)

/*
 * --query specs on third-party USDT probes. A name read from a string
 * argument is named SP_SPEC_TAG | (FNV-1a 64 of its bytes >> 2); the bytes
 * go once into the `spec_names` map (key: that tagged name) so userspace
 * names the row even after the target exited. A fixed name (name=LITERAL)
 * is interned by the loader and shares SP_FUNC_TAG's table.
 */
#define SP_SPEC_TAG (1ull << 62)
#define SP_SPEC_NAME_LEN 64
#define SP_FNV_OFFSET 0xcbf29ce484222325ull
#define SP_FNV_PRIME 0x100000001b3ull

/* Value of the `spec_names` map. */
struct sp_spec_name {
	char str[SP_SPEC_NAME_LEN];
};

/* The USDT cookie of a spec probe: bits 0-7 the name argument, 8-15 the
 * interval kind (enum sp_frame_kind), bit 16 set for a fixed name whose
 * table index is in bits 32-63. */
#define SP_SPEC_LITERAL (1ull << 16)
#define SP_SPEC_COOKIE(arg, kind, lit, idx)                                    \
	((__u64)(arg) | ((__u64)(kind) << 8) |                                 \
	 ((lit) ? SP_SPEC_LITERAL | ((__u64)(idx) << 32) : 0))
#define SP_SPEC_ARG(cookie) ((unsigned int)((cookie) & 0xff))
#define SP_SPEC_KIND(cookie) ((unsigned int)(((cookie) >> 8) & 0xff))
#define SP_SPEC_INDEX(cookie) ((cookie) >> 32)

#define SP_COOKIE_ARG(cookie, i) ((unsigned int)(((cookie) >> ((i) * 8)) & 0xff))

#endif /* SPTRACE_QUERY_ABI_H */
