/* SPDX-License-Identifier: MIT */
/*
 * The ABI between bpf/mem.bpf.c and userspace/mem_provider.c: map keys,
 * values, error counters and limits of the memory program family (typed
 * SP_ALLOC/SP_FREE probes and the libc allocator). Only <linux/types.h>
 * types, explicit padding; userspace checks the layout with _Static_assert
 * in userspace/mem_provider.c.
 */
#ifndef SPTRACE_MEM_ABI_H
#define SPTRACE_MEM_ABI_H

#include <linux/types.h>

/* User stack frames kept per allocation site. */
#define SP_MEM_STACK_DEPTH 32
#define SP_MEM_COMM_LEN 16
#define SP_MEM_THREAD_NAME_LEN 64
/* Longest type name captured, including the NUL (SP_NAME_LEN). */
#define SP_MEM_TYPE_NAME_LEN 128

/* Default map sizes; the loader may change them before load. */
#define SP_MEM_DEFAULT_MAX_LIVE (1u << 20)	/* outstanding allocations */
#define SP_MEM_DEFAULT_MAX_ROWS 16384		/* (type, process[, thread]) */
#define SP_MEM_DEFAULT_MAX_SITES 16384		/* (stack, type, process) */
#define SP_MEM_DEFAULT_MAX_STACKS 16384		/* distinct user stacks */
#define SP_MEM_DEFAULT_MAX_THREADS 16384	/* threads inside malloc & co */

/*
 * A nested allocator call (realloc calling malloc or free, memalign calling
 * malloc inside glibc) enters at most this many bytes of stack below the
 * outer call's entry; anything else is a new outermost call.
 */
#define SP_MEM_NEST_BYTES 4096

/* Where a figure comes from. */
enum sp_mem_src {
	SP_MEM_TYPED = 0,	/* SP_ALLOC / SP_FREE probes, keyed by type */
	SP_MEM_HEAP = 1,	/* the libc allocator (name 0) */
};

/* Allocator functions: the attach cookie of the libc entry and return
 * programs, and sp_mem_call.fn. */
enum sp_mem_fn {
	SP_MEM_FN_MALLOC = 0,	/* malloc(size) */
	SP_MEM_FN_CALLOC,	/* calloc(nmemb, size) */
	SP_MEM_FN_REALLOC,	/* realloc(ptr, size) */
	SP_MEM_FN_POSIX_MEMALIGN, /* posix_memalign(&ptr, align, size) */
	SP_MEM_FN_ALIGNED_ALLOC, /* aligned_alloc(align, size) */
	SP_MEM_FN_MEMALIGN,	/* memalign(align, size) */
	SP_MEM_FN_VALLOC,	/* valloc(size) */
	SP_MEM_FN_PVALLOC,	/* pvalloc(size): rounded up to pages */
	SP_MEM_FN_FREE,		/* free(ptr) */
	SP_MEM_FN__MAX,
};

/*
 * Everything that can go wrong without stopping the trace: slots of the
 * per-CPU `errors` array. Keep mem_error_names[] in userspace/mem_report.c
 * in the same order.
 */
enum sp_mem_error {
	SP_MEM_ERR_UNKNOWN_FREE = 0,	/* free of a pointer never seen allocated */
	SP_MEM_ERR_LIVE_FULL,		/* `live` full: allocation not tracked */
	SP_MEM_ERR_ROWS_FULL,		/* `rows` full: event not counted */
	SP_MEM_ERR_SITES_FULL,		/* `sites` full: site not counted */
	SP_MEM_ERR_STACK_LOST,		/* no stack id (stacks map full, collision) */
	SP_MEM_ERR_CALLS_FULL,		/* `calls` full: allocator call not seen */
	SP_MEM_ERR_STALE_CALL,		/* entry state of a call that never returned */
	SP_MEM_ERR_LIVE_REPLACED,	/* allocation of a pointer already live */
	SP_MEM_ERR_PEAK_RETRY,		/* peak update gave up under contention */
	SP_MEM_ERR_MEMPTR_READ,		/* posix_memalign result unreadable */
	SP_MEM_ERR_THREADS_FULL,	/* `thread_names` full */
	SP_MEM_ERR__MAX,
};

/* Key of `rows`: per type name pointer (0 for the heap), process, and
 * allocating thread (0: the whole process). */
struct sp_mem_key {
	__u64 name;
	__u32 tgid;
	__u32 tid;
	__u32 src;	/* enum sp_mem_src */
	__u32 pad;
};

/* Value of `rows`: one shared (not per-CPU) value updated with atomic
 * operations, so that live bytes and their peak are exact. */
struct sp_mem_stats {
	__u64 allocs;
	__u64 alloc_bytes;
	__u64 frees;
	__u64 free_bytes;
	__u64 live;		/* outstanding allocations */
	__u64 live_bytes;
	__u64 peak_live_bytes;	/* highest live_bytes after any allocation */
	char comm[SP_MEM_COMM_LEN];	/* thread rows: comm at creation */
};

/* Key of `sites`: one allocation site is a user stack of one type. */
struct sp_mem_site_key {
	__u64 name;
	__s32 stackid;	/* in `stacks` */
	__u32 tgid;
	__u32 src;
	__u32 pad;
};

struct sp_mem_site {
	__u64 allocs;
	__u64 alloc_bytes;
	__u64 live;
	__u64 live_bytes;
};

/* Key of `live`: one outstanding allocation. */
struct sp_mem_live_key {
	__u64 ptr;
	__u32 tgid;
	__u32 src;
};

struct sp_mem_live {
	__u64 name;
	__u64 size;
	__s32 stackid;	/* -1: none */
	__u32 tid;	/* allocating thread */
};

/*
 * Value of `calls` (key: __u32 tid): what an allocator entry probe leaves
 * for its return probe. The slot stays while the thread lives (depth 0
 * between calls) and is deleted when the thread exits.
 */
struct sp_mem_call {
	__u64 sp;	/* stack pointer at the outermost call's entry */
	__u64 size;	/* requested bytes (calloc: the product) */
	__u64 arg;	/* realloc: old pointer; posix_memalign: &ptr */
	__u32 fn;	/* enum sp_mem_fn */
	__u32 depth;	/* allocator calls open on the thread, nested ones too */
	__u32 skip;	/* not sampled: the allocation is not counted */
	__u32 exiting;	/* the thread's teardown began (__call_tls_dtors) */
};

/* Value of `thread_names` (key: __u32 tid), from SP_THREAD_NAME. str is
 * empty when the string's page was not present: userspace reads `name`. */
struct sp_mem_thread_name {
	__u32 tgid;
	__u32 pad;
	__u64 name;
	char str[SP_MEM_THREAD_NAME_LEN];
};

/*
 * `type_names`: a typed row's name as the process held it when the row was
 * made. Names made at run time (Rust's type names, interned into anonymous
 * memory by sp_probe::Name::intern) are in no file, and are gone once the
 * process exits, when sptrace mem reads its rows. Empty when the string's
 * page was not present: userspace then reads `name` itself.
 */
struct sp_mem_type_key {
	__u64 name;
	__u32 tgid;
	__u32 pad;
};

struct sp_mem_type_name {
	char str[SP_MEM_TYPE_NAME_LEN];
};

#endif /* SPTRACE_MEM_ABI_H */
