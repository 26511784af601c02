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
/* Longest query name captured, including the NUL. Longer names are cut
 * (at a byte: userspace escapes what is not UTF-8). */
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
	SP_ERR_BATCH_LOST,		/* batched records overwritten/unreadable */
	SP_ERR_ASYNC_FULL,		/* `async_busy` full: a poll's time not
					 * joined to its invocation's latency */
	SP_ERR_ABANDONED,		/* --query serial line: an interval whose
					 * END never came, dropped at the next
					 * BEGIN of its line */
	SP_ERR__MAX,
};

/*
 * Counts that are not errors (the events were counted), kept in the same
 * per-CPU array after the errors and reported apart from them.
 */
enum sp_count {
	/* An event of a batched file that fired its per-event site: its
	 * thread's ring was gone (thread exit) or could not be mapped. */
	SP_CNT_BATCH_FALLBACK = SP_ERR__MAX,
	/* --max-overhead: intervals of a sampled process cut by a window's
	 * edge (open when it closed, or ended after it opened), not counted
	 * and not errors (userspace/live/sampler.c). */
	SP_CNT_SAMPLE_CUT,
	SP_CNT__END,
};

/*
 * sptrace's own cost in a traced process (docs/numbers.md, "Overhead"):
 * what its probes did there, per process (the per-CPU `probe_hits` map,
 * key: tgid; tgid 0 holds the processes the map had no room for), while
 * counting is armed. Userspace prices each kind by what it calibrated and
 * by the kernel's run time of the program (userspace/live/overhead.c).
 */
enum sp_hit {
	SP_HIT_EVENT = 0,	/* sp_event runs: per-event sp sites (traps) */
	SP_HIT_FLUSH,		/* sp_flush runs: batched flush traps */
	SP_HIT_RECORD,		/* batched records drained, flushes' PAUSE
				 * records included: each one an append in
				 * the host */
	SP_HIT_PAUSE_NS,	/* the host's own clock over its flushes (the
				 * PAUSE records' durations), ns */
	SP_HIT_SPEC,		/* --query spec program runs */
	SP_HIT_FUNC,		/* --func entry and return program runs */
	SP_HIT_FUNC_STEP,	/* instead of SP_HIT_FUNC: an entry of a
				 * function whose first instruction the kernel
				 * single-steps (the cookie's SP_FUNC_STEP),
				 * a dearer trap */
	SP_HIT__MAX,
};

struct sp_probe_hits {
	__u64 n[SP_HIT__MAX];
};

/*
 * Async queries (sp:query_poll_end, Rust's sp_probe::Instrument): the busy
 * time of the polls an invocation has had so far, until the poll that
 * completes it. Keyed by the invocation's id, which the host makes unique
 * per name pointer in its process (each object of a process that counts
 * its own ids has names of its own); an entry lives while its future is
 * suspended.
 */
#define SP_DEFAULT_MAX_ASYNC 16384

struct sp_async_key {
	__u64 id;
	__u64 name;
	__u32 tgid;
	__u32 pad;
};

struct sp_async_busy {
	__u64 total_ns;
	__u64 self_ns;
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

/* Where a name BPF could not read lies in a file (a page of a library's
 * .rodata not yet touched by the process: the kernel cannot read it from a
 * probe), so that userspace reads it there, even once the library is
 * unloaded and its addresses reused. */
#define SP_NAME_LOC_MAGIC 0x636f6c656d616e73ull	/* "snameloc" */
struct sp_name_loc {
	__u64 empty;	/* 0: the string is empty */
	__u64 magic;	/* SP_NAME_LOC_MAGIC when the rest is set */
	__u64 dev;	/* the file's device, the kernel's dev_t (major << 20) */
	__u64 ino;
	__u64 off;	/* the name's offset in the file */
};

/* Value of the `names` map (key: struct sp_query_key): the name, or, when
 * BPF could not read it (str[0] == 0), perhaps where it lies. */
struct sp_name {
	union {
		char str[SP_NAME_LEN];
		struct sp_name_loc loc;
	};
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
	__u32 tag;	/* --query frames: spec line + 1; else 0 */
};

/* Value of the `threads` map (key: __u32 tid). */
struct sp_thread_stack {
	__u32 depth;	/* frames in use */
	__u32 overflow;	/* BEGINs dropped beyond SP_MAX_DEPTH, still open */
	__u32 tgid;
	__u32 epoch;	/* --max-overhead: the sampling window its frames
			 * were opened in (`sample_epochs`) */
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
/* Set in a --func probe's cookie, not in its row's name: the kernel
 * single-steps the function's first instruction (it emulates only a few,
 * e.g. push and nop), which costs a second trap; for the overhead's price
 * (SP_HIT_FUNC_STEP). */
#define SP_FUNC_STEP (1ull << 60)

/*
 * --query-keys: a keyed query (SP_QUERY_BEGIN_KEY, Rust's
 * sp_query_begin_key!) has a row per (name, key, process), named
 * SP_KEY_TAG | a 61-bit hash of the three; its `key_rows` entry says which
 * they are. The map's size (--max-queries) bounds the keyed rows at once
 * (an exited process's are deleted with its rows): an event of a key that
 * finds it full counts in the process's one "<other>" row, SP_KEY_OTHER,
 * so totals stay exact. Without
 * --query-keys the key is ignored and the row is the name's.
 */
#define SP_KEY_TAG (1ull << 61)
#define SP_KEY_HASH_MASK (SP_KEY_TAG - 1)
#define SP_KEY_OTHER SP_KEY_TAG

/* Value of the `key_rows` map (key: the row's __u64 name). */
struct sp_key_row {
	__u64 name;	/* the query's name, as the site passed it */
	__u64 key;	/* an integer, or with SP_KEY_ROW_TEXT the address of
			 * the key's interned text, whose bytes go into the
			 * `names` map like a name's */
	__u32 tgid;
	__u32 flags;	/* SP_KEY_ROW_* */
};

/* A text key (SP_QUERY_BEGIN_KEY_STR, Rust's sp_query_begin_key_str!):
 * the row is `name(text)`. A batched record says so with SP_BK_KEY_TEXT;
 * a per-event site has a third argument, SP_KEY_ARG_TEXT. Part of the row's
 * identity: the integer key 0x1234 and a text at 0x1234 are two rows. */
#define SP_KEY_ROW_TEXT 1u
#define SP_KEY_ARG_TEXT 1u

/*
 * --query specs on third-party USDT probes. Each spec line is described to
 * BPF by a struct sp_spec_line (a read-only array set before load) and each
 * probe site's USDT cookie says which line and which of its ends it is.
 *
 * A spec row is named SP_SPEC_NAME(line, outcome, value): the line keeps
 * rows of different lines apart; outcome is 0 for the line's own row, i for
 * the counter of its i-th alternative END (1-based), SP_SPEC_OUTCOME_OTHER
 * for the line's "<other>" row (values beyond its row cap); value is 0 for
 * a fixed name, the low 50 bits of an integer argument, or the FNV-1a 64 of
 * a string argument (normalized, see spec_norm.h) >> 14. A string's bytes go
 * once into `spec_names` (key: its row name with outcome 0) so userspace
 * names the row even after the target exited.
 */
#define SP_SPEC_TAG (1ull << 62)
#define SP_SPEC_LINE_SHIFT 54
#define SP_SPEC_OUTCOME_SHIFT 50
#define SP_SPEC_VALUE_MASK ((1ull << SP_SPEC_OUTCOME_SHIFT) - 1)
#define SP_SPEC_OUTCOME_OTHER 15u
#define SP_SPEC_NAME(line, outcome, value)                                     \
	(SP_SPEC_TAG | ((__u64)(line) << SP_SPEC_LINE_SHIFT) |                 \
	 ((__u64)(outcome) << SP_SPEC_OUTCOME_SHIFT) |                         \
	 ((__u64)(value) & SP_SPEC_VALUE_MASK))
#define SP_SPEC_NAME_LINE(name) ((unsigned int)(((name) >> SP_SPEC_LINE_SHIFT) & 0xff))
#define SP_SPEC_NAME_OUTCOME(name) ((unsigned int)(((name) >> SP_SPEC_OUTCOME_SHIFT) & 0xf))
/* Spec lines per session, and alternative ENDs per line. */
#define SP_SPEC_MAX_LINES 64
#define SP_SPEC_MAX_ENDS 14
/* Longest name string read from an argument, including the NUL; longer
 * strings are cut (and normalized as cut). */
#define SP_SPEC_NAME_LEN 256
#define SP_FNV_OFFSET 0xcbf29ce484222325ull
#define SP_FNV_PRIME 0x100000001b3ull

/* Value of the `spec_names` map. */
struct sp_spec_name {
	char str[SP_SPEC_NAME_LEN];
};

/* How a spec line names its rows. */
enum sp_spec_name_type {
	SP_SPEC_NAME_FIXED = 0,	/* name=LITERAL: one row */
	SP_SPEC_NAME_STR = 1,	/* name=argN: a string argument */
	SP_SPEC_NAME_INT = 2,	/* name=PREFIX:argN: an integer argument */
};

/* Comparison of an `if=` or `hit=` condition; NONE: no condition. */
enum sp_spec_op {
	SP_OP_NONE = 0, SP_OP_EQ, SP_OP_NE, SP_OP_LT, SP_OP_LE, SP_OP_GT,
	SP_OP_GE,
};

#define SP_SPEC_F_CACHE (1u << 0)	/* one probe: counts, no interval */
#define SP_SPEC_F_OUTCOMES (1u << 1)	/* count each END separately */
#define SP_SPEC_F_SERIAL (1u << 2)	/* intervals never nest: a BEGIN
					 * abandons the line's open one */
/* Bits 8-15 of the flags: the END index (cookie byte 1) of the line's
 * abandon= probe, which drops all the line's open intervals; 0: none. */
#define SP_SPEC_F_ABANDON_SHIFT 8
#define SP_SPEC_F_ABANDON_END(flags) (((flags) >> SP_SPEC_F_ABANDON_SHIFT) & 0xff)

/* One spec line, as BPF sees it (the `spec_lines` array). */
struct sp_spec_line {
	__u8 name_type;		/* enum sp_spec_name_type */
	__u8 name_arg;
	__u8 normalize;		/* enum sp_norm_mode (spec_norm.h) */
	__u8 kind;		/* enum sp_frame_kind */
	__u8 if_arg;		/* if=: the line applies only when true */
	__u8 if_op;		/* enum sp_spec_op */
	__u8 hit_arg;		/* hit=: true counts a cache hit */
	__u8 hit_op;
	__u32 track;		/* the per-thread stack its intervals use */
	__u32 max_rows;		/* distinct values before "<other>"; 0: no cap */
	__u32 flags;		/* SP_SPEC_F_* */
	__u32 pad;
	__s64 if_val;
	__s64 hit_val;
};

/* A recorded spec BEGIN (arg1 = track + 1, arg2 = line + 1) of a serial
 * line also carries this bit in arg2: the replay abandons the line's open
 * frame as the BPF program did. */
#define SP_SPEC_EV_SERIAL (1ull << 32)
/* ...and an abandon= probe's event (an END event, name 0) this one: the
 * replay drops every open frame of the line. */
#define SP_SPEC_EV_ABANDON (1ull << 33)

/* Key of the `spec_stacks` map: one stack per thread and track. */
struct sp_spec_tkey {
	__u32 tid;
	__u32 track;
};

/* The USDT cookie of a spec probe site: its line, for an END which of the
 * line's ends it is (1-based), and the line's fields every event asks
 * (`l`, its struct sp_spec_line), so that an event of a line without if=
 * or hit= reads nothing of `spec_lines` (a cold cache line less). */
#define SP_SPEC_COOKIE(line, end, l)                                           \
	((__u64)(line) | ((__u64)(end) << 8) |                                 \
	 ((__u64)(l)->name_type << 16) | ((__u64)(l)->name_arg << 24) |        \
	 ((__u64)(l)->normalize << 32) | ((__u64)(l)->if_op << 40) |           \
	 ((__u64)(l)->hit_op << 48))
#define SP_SPEC_COOKIE_BYTE(c, i) ((unsigned int)(((c) >> ((i) * 8)) & 0xff))
#define SP_SPEC_COOKIE_LINE(c) SP_SPEC_COOKIE_BYTE(c, 0)
#define SP_SPEC_COOKIE_END(c) SP_SPEC_COOKIE_BYTE(c, 1)
#define SP_SPEC_COOKIE_NAME_TYPE(c) SP_SPEC_COOKIE_BYTE(c, 2)
#define SP_SPEC_COOKIE_NAME_ARG(c) SP_SPEC_COOKIE_BYTE(c, 3)
#define SP_SPEC_COOKIE_NORMALIZE(c) SP_SPEC_COOKIE_BYTE(c, 4)
#define SP_SPEC_COOKIE_IF_OP(c) SP_SPEC_COOKIE_BYTE(c, 5)
#define SP_SPEC_COOKIE_HIT_OP(c) SP_SPEC_COOKIE_BYTE(c, 6)
/* Byte 7: the register (enum sp_reg) holding the name argument as a 64-bit
 * value at every site of the probe, or SP_REG_NONE: the event then decodes
 * the argument from libbpf's USDT spec, a cache line more. */
#define SP_SPEC_COOKIE_REG(r) ((__u64)(r) << 56)
#define SP_SPEC_COOKIE_NAME_REG(c) SP_SPEC_COOKIE_BYTE(c, 7)

/* Per spec line, what went wrong (the per-CPU `spec_errors` array, slot
 * line * SP_SPEC_ERR__MAX + error), so each warning names its line. */
enum sp_spec_error {
	SP_SPEC_ERR_END_WITHOUT_BEGIN = 0,
	SP_SPEC_ERR_END_MISMATCH,
	SP_SPEC_ERR_STACK_OVERFLOW,
	SP_SPEC_ERR_NAME_READ,
	SP_SPEC_ERR_NAMES_FULL,
	SP_SPEC_ERR_OTHER,		/* events counted in "<other>" */
	SP_SPEC_ERR_TRUNCATED,		/* normalize=pg: longer than the copy */
	SP_SPEC_ERR_ABANDONED,		/* serial: intervals never ended */
	SP_SPEC_ERR__MAX,
};

#define SP_COOKIE_ARG(cookie, i) ((unsigned int)(((cookie) >> ((i) * 8)) & 0xff))
/*
 * One program serves every per-event sp probe name (sp_event in
 * bpf/query.bpf.c: verified once, not once per name): the top byte of its
 * sites' cookies says which probe fired, as the event it records (enum
 * sp_event_kind, record_abi.h). Arguments then fit in bytes 0-6.
 */
#define SP_COOKIE_MAX_ARGS 7
#define SP_COOKIE_EVENT_SHIFT 56
#define SP_COOKIE_EVENT(cookie) ((unsigned int)((cookie) >> SP_COOKIE_EVENT_SHIFT))
#define SP_COOKIE_OF_EVENT(ev) ((__u64)(ev) << SP_COOKIE_EVENT_SHIFT)
/* Probes with no record event of their own, above enum sp_event_kind
 * (live only): the end of an async query's poll, and the end of an async
 * invocation after its last piece. */
#define SP_COOKIE_POLL_END 0x80u
#define SP_COOKIE_FINISH 0x81u

#endif /* SPTRACE_QUERY_ABI_H */
