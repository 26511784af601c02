// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * In-kernel memory accounting: typed allocations (SP_ALLOC / SP_FREE probes)
 * and the libc allocator (uprobes and uretprobes on malloc & co), per type
 * name and process, optionally per allocating thread, and per allocation
 * site (user stack).
 *
 * Every outstanding allocation sits in `live` (pointer -> type, size, site,
 * thread), so a free knows what it releases; a free of a pointer never seen
 * allocated is counted, not guessed. Rows are shared map values updated
 * with atomic instructions rather than per-CPU values: the peak of live
 * bytes is only exact if every allocation sees the one running total it
 * raised (a fetch-and-add gives it) and raises the peak with a
 * compare-and-swap loop. The cost is cache-line traffic when threads on
 * several CPUs allocate the same type at once, which is acceptable next to
 * the uprobe itself (docs/memory.md has the figures).
 *
 * libc calls are seen twice: the entry probe stashes the arguments in the
 * thread's `calls` slot, the return probe commits what the call did once
 * its result is known (a NULL result allocates nothing). glibc's realloc
 * and memalign call malloc and free themselves; those nested calls enter
 * at most SP_MEM_NEST_BYTES below the outer call's stack pointer, or at
 * the very same one (a tail call: realloc(NULL, n) jumps to malloc), and
 * are ignored, the outer call accounts for them. A slot whose call never
 * returned (stack pointer elsewhere) is overwritten and counted; slots of
 * exiting threads are deleted.
 *
 * A thread's teardown in glibc ends with libc's own cleanup, which frees
 * again every chunk the thread's tcache still caches (the program freed
 * them, and those frees were counted) and the tcache itself (allocated
 * inside malloc, never seen): frees of pointers never seen allocated, on
 * every thread exit, that are no anomaly of the program. So from the
 * thread's call of __call_tls_dtors on (the start of its teardown), a
 * free of an unknown pointer called from libc itself is not counted.
 */
#include <stdbool.h>
#include <linux/bpf.h>
#include <linux/ptrace.h>
#include <bpf/bpf_helpers.h>
#include <sptrace/mem_abi.h>
#include "sp_regs.bpf.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

#ifndef EEXIST
#define EEXIST 17
#endif

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SP_MEM_DEFAULT_MAX_ROWS);
	__type(key, struct sp_mem_key);
	__type(value, struct sp_mem_stats);
} rows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SP_MEM_DEFAULT_MAX_SITES);
	__type(key, struct sp_mem_site_key);
	__type(value, struct sp_mem_site);
} sites SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, SP_MEM_DEFAULT_MAX_LIVE);
	__type(key, struct sp_mem_live_key);
	__type(value, struct sp_mem_live);
} live SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, SP_MEM_DEFAULT_MAX_STACKS);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, SP_MEM_STACK_DEPTH * sizeof(__u64));
} stacks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SP_MEM_DEFAULT_MAX_THREADS);
	__type(key, __u32);
	__type(value, struct sp_mem_call);
} calls SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, SP_MEM_DEFAULT_MAX_THREADS);
	__type(key, __u32);
	__type(value, struct sp_mem_thread_name);
} thread_names SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, SP_MEM_DEFAULT_MAX_ROWS);
	__type(key, struct sp_mem_type_key);
	__type(value, struct sp_mem_type_name);
} type_names SEC(".maps");

/* A zeroed value of `type_names`: too large for the BPF stack next to the
 * callers' own. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sp_mem_type_name);
} zero_type_name SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SP_MEM_ERR__MAX);
	__type(key, __u32);
	__type(value, __u64);
} errors SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} sample_count SEC(".maps");

/* Set by the loader once every site is attached (see query_maps.bpf.h). */
volatile bool armed;

/* Set before load. */
const volatile __u32 sample_every = 1;	/* count every Nth allocation */
const volatile bool per_thread = false;	/* rows per allocating thread too */
const volatile bool with_stacks = true;	/* allocation sites */

static __always_inline void count_error(__u32 slot)
{
	__u64 *v = bpf_map_lookup_elem(&errors, &slot);

	if (v)
		*v += 1;
}

/* Per-CPU counter: true for every sample_every-th allocation on a CPU. */
static __always_inline bool sampled(void)
{
	__u32 zero = 0;
	__u64 *n;

	if (sample_every <= 1)
		return true;
	n = bpf_map_lookup_elem(&sample_count, &zero);
	if (!n)
		return true;
	*n += 1;
	return *n % sample_every == 0;
}

/* Copies a typed row's name once, when the row is made (not inlined: once
 * per type, out of the allocations' path). A name the kernel cannot store
 * or read is read by userspace as before, from the file or the process. */
static __noinline void capture_type_name(__u64 name, __u32 tgid)
{
	struct sp_mem_type_key key = { .name = name, .tgid = tgid };
	struct sp_mem_type_name *tmpl, *n;
	__u32 zero = 0;

	tmpl = bpf_map_lookup_elem(&zero_type_name, &zero);
	if (!tmpl || bpf_map_update_elem(&type_names, &key, tmpl, BPF_NOEXIST))
		return;
	n = bpf_map_lookup_elem(&type_names, &key);
	if (n && bpf_probe_read_user_str(n->str, sizeof(n->str),
					 (const void *)name) <= 0)
		n->str[0] = 0;
}

static __always_inline struct sp_mem_stats *row_get(__u64 name, __u32 tgid,
						    __u32 tid, __u32 src,
						    bool create)
{
	struct sp_mem_key key = {
		.name = name, .tgid = tgid, .tid = tid, .src = src,
	};
	struct sp_mem_stats zero = {}, *row;
	long err;

	row = bpf_map_lookup_elem(&rows, &key);
	if (row || !create)
		return row;
	if (tid)
		bpf_get_current_comm(zero.comm, sizeof(zero.comm));
	err = bpf_map_update_elem(&rows, &key, &zero, BPF_NOEXIST);
	if (err && err != -EEXIST) {
		count_error(SP_MEM_ERR_ROWS_FULL);
		return NULL;
	}
	if (!err && src == SP_MEM_TYPED && !tid)
		capture_type_name(name, tgid);
	return bpf_map_lookup_elem(&rows, &key);
}

static __always_inline struct sp_mem_site *site_get(__u64 name, __s32 stackid,
						    __u32 tgid, __u32 src,
						    bool create)
{
	struct sp_mem_site_key key = {
		.name = name, .stackid = stackid, .tgid = tgid, .src = src,
	};
	struct sp_mem_site zero = {}, *site;
	long err;

	if (stackid < 0)
		return NULL;
	site = bpf_map_lookup_elem(&sites, &key);
	if (site || !create)
		return site;
	err = bpf_map_update_elem(&sites, &key, &zero, BPF_NOEXIST);
	if (err && err != -EEXIST) {
		count_error(SP_MEM_ERR_SITES_FULL);
		return NULL;
	}
	return bpf_map_lookup_elem(&sites, &key);
}

/* Raises *peak to v unless it is higher already. Each failed exchange
 * means another CPU raised it meanwhile, so this ends quickly. */
static __always_inline void peak_raise(__u64 *peak, __u64 v)
{
	__u64 cur = *(volatile __u64 *)peak, prev;
	int i;

	for (i = 0; i < 64; i++) {
		if (v <= cur)
			return;
		prev = __sync_val_compare_and_swap(peak, cur, v);
		if (prev == cur)
			return;
		cur = prev;
	}
	count_error(SP_MEM_ERR_PEAK_RETRY);
}

static __always_inline void live_add(struct sp_mem_stats *row, __u64 size)
{
	__u64 before;

	__sync_fetch_and_add(&row->live, 1);
	before = __sync_fetch_and_add(&row->live_bytes, size);
	peak_raise(&row->peak_live_bytes, before + size);
}

static __always_inline void live_sub(struct sp_mem_stats *row, __u64 size,
				     bool counted)
{
	if (counted) {
		__sync_fetch_and_add(&row->frees, 1);
		__sync_fetch_and_add(&row->free_bytes, size);
	}
	__sync_fetch_and_add(&row->live, -1);
	__sync_fetch_and_add(&row->live_bytes, -size);
}

/* Takes the allocation at lk out of `live` and off every row it counts in.
 * `counted`: a free (counted as one), not the replacement of a pointer
 * allocated twice. False if the pointer was not live. */
static __always_inline bool release(struct sp_mem_live_key *lk, bool counted)
{
	struct sp_mem_stats *row;
	struct sp_mem_site *site;
	struct sp_mem_live *e, v;

	e = bpf_map_lookup_elem(&live, lk);
	if (!e)
		return false;
	v = *e;
	if (bpf_map_delete_elem(&live, lk))
		return true;	/* another CPU freed it first */
	row = row_get(v.name, lk->tgid, 0, lk->src, false);
	if (row)
		live_sub(row, v.size, counted);
	if (per_thread) {
		row = row_get(v.name, lk->tgid, v.tid, lk->src, false);
		if (row)
			live_sub(row, v.size, counted);
	}
	site = site_get(v.name, v.stackid, lk->tgid, lk->src, false);
	if (site) {
		__sync_fetch_and_add(&site->live, -1);
		__sync_fetch_and_add(&site->live_bytes, -v.size);
	}
	return true;
}

/* A free of a pointer never seen allocated; sampled, most pointers were
 * never tracked. */
static __always_inline void unknown_free(void)
{
	if (sample_every <= 1)
		count_error(SP_MEM_ERR_UNKNOWN_FREE);
}

static __always_inline void track_alloc(void *ctx, __u32 src, __u64 name,
					__u64 ptr, __u64 size)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id;
	struct sp_mem_live_key lk = { .ptr = ptr, .tgid = tgid, .src = src };
	struct sp_mem_live lv = { .name = name, .size = size, .stackid = -1,
				  .tid = tid };
	struct sp_mem_stats *row, *trow = NULL;
	struct sp_mem_site *site = NULL;
	long err;

	row = row_get(name, tgid, 0, src, true);
	if (!row)
		return;
	__sync_fetch_and_add(&row->allocs, 1);
	__sync_fetch_and_add(&row->alloc_bytes, size);
	if (per_thread) {
		trow = row_get(name, tgid, tid, src, true);
		if (trow) {
			__sync_fetch_and_add(&trow->allocs, 1);
			__sync_fetch_and_add(&trow->alloc_bytes, size);
		}
	}
	if (with_stacks) {
		lv.stackid = bpf_get_stackid(ctx, &stacks, BPF_F_USER_STACK);
		if (lv.stackid < 0) {
			count_error(SP_MEM_ERR_STACK_LOST);
			lv.stackid = -1;
		}
		site = site_get(name, lv.stackid, tgid, src, true);
		if (site) {
			__sync_fetch_and_add(&site->allocs, 1);
			__sync_fetch_and_add(&site->alloc_bytes, size);
		}
	}
	err = bpf_map_update_elem(&live, &lk, &lv, BPF_NOEXIST);
	if (err == -EEXIST) {
		/* Allocated again without a free seen in between. */
		count_error(SP_MEM_ERR_LIVE_REPLACED);
		release(&lk, false);
		err = bpf_map_update_elem(&live, &lk, &lv, BPF_NOEXIST);
	}
	if (err) {
		count_error(SP_MEM_ERR_LIVE_FULL);
		return;
	}
	live_add(row, size);
	if (trow)
		live_add(trow, size);
	if (site) {
		__sync_fetch_and_add(&site->live, 1);
		__sync_fetch_and_add(&site->live_bytes, size);
	}
}

static __always_inline bool track_free(__u32 src, __u64 ptr)
{
	struct sp_mem_live_key lk = {
		.ptr = ptr, .tgid = bpf_get_current_pid_tgid() >> 32, .src = src,
	};

	return release(&lk, true);
}

/* ---- typed allocations: sp probes ---------------------------------------- */

SEC("uprobe")
int sp_alloc(struct pt_regs *ctx)
{
	__u64 name, size, ptr;

	if (!armed)
		return 0;
	name = sp_probe_arg(ctx, 0);
	size = sp_probe_arg(ctx, 1);
	ptr = sp_probe_arg(ctx, 2);
	if (!ptr || !sampled())
		return 0;
	track_alloc(ctx, SP_MEM_TYPED, name, ptr, size);
	return 0;
}

SEC("uprobe")
int sp_free(struct pt_regs *ctx)
{
	__u64 ptr;

	if (!armed)
		return 0;
	ptr = sp_probe_arg(ctx, 1);
	if (ptr && !track_free(SP_MEM_TYPED, ptr))
		unknown_free();
	return 0;
}

SEC("uprobe")
int sp_thread_name(struct pt_regs *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct sp_mem_thread_name *tn;
	__u32 tid = (__u32)id;

	tn = bpf_map_lookup_elem(&thread_names, &tid);
	if (!tn) {
		struct sp_mem_thread_name init = { .tgid = id >> 32 };

		if (bpf_map_update_elem(&thread_names, &tid, &init, BPF_ANY)) {
			count_error(SP_MEM_ERR_THREADS_FULL);
			return 0;
		}
		tn = bpf_map_lookup_elem(&thread_names, &tid);
		if (!tn)
			return 0;
	}
	tn->tgid = id >> 32;
	tn->name = sp_probe_arg(ctx, 0);
	if (bpf_probe_read_user_str(tn->str, sizeof(tn->str),
				    (const void *)tn->name) <= 0)
		tn->str[0] = 0;	/* userspace reads `name` itself */
	return 0;
}

/* ---- the libc allocator ---------------------------------------------------- */

/* The thread's call slot, created on first use. */
static __always_inline struct sp_mem_call *call_slot(__u32 tid)
{
	struct sp_mem_call zero = {}, *c;
	long err;

	c = bpf_map_lookup_elem(&calls, &tid);
	if (c)
		return c;
	err = bpf_map_update_elem(&calls, &tid, &zero, BPF_NOEXIST);
	if (err && err != -EEXIST) {
		count_error(SP_MEM_ERR_CALLS_FULL);
		return NULL;
	}
	return bpf_map_lookup_elem(&calls, &tid);
}

/* Inside an allocator call of this thread (the caller is glibc itself):
 * deeper on the stack, or at the same depth for a tail call. */
static __always_inline bool nested(const struct sp_mem_call *c, __u64 sp)
{
	return c->depth && sp <= c->sp && c->sp - sp < SP_MEM_NEST_BYTES;
}

/* Entry of malloc & co; the cookie is the enum sp_mem_fn. */
SEC("uprobe")
int heap_enter(struct pt_regs *ctx)
{
	__u64 fn = bpf_get_attach_cookie(ctx), size, arg = 0, n, sp;
	struct sp_mem_call *c;

	if (!armed)
		return 0;
	switch (fn) {
	case SP_MEM_FN_MALLOC:
	case SP_MEM_FN_VALLOC:
	case SP_MEM_FN_PVALLOC:
		size = ctx->rdi;
		break;
	case SP_MEM_FN_CALLOC:
		n = ctx->rdi;
		size = ctx->rsi;
		/* An overflowing product fails; NULL is never counted. The
		 * empty asm keeps clang from turning the test into a 128-bit
		 * multiplication, which BPF has not. */
		if (size) {
			__u64 lim = ~0ull / size;

			asm volatile("" : "+r"(lim));
			size = n > lim ? 0 : n * size;
		}
		break;
	case SP_MEM_FN_REALLOC:
		arg = ctx->rdi;
		size = ctx->rsi;
		break;
	case SP_MEM_FN_POSIX_MEMALIGN:
		arg = ctx->rdi;
		size = ctx->rdx;
		break;
	case SP_MEM_FN_ALIGNED_ALLOC:
	case SP_MEM_FN_MEMALIGN:
		size = ctx->rsi;
		break;
	default:
		return 0;
	}
	c = call_slot((__u32)bpf_get_current_pid_tgid());
	if (!c)
		return 0;
	sp = ctx->rsp;
	if (c->depth) {
		if (nested(c, sp)) {
			c->depth++;
			return 0;
		}
		count_error(SP_MEM_ERR_STALE_CALL);
	}
	c->sp = sp;
	c->size = size;
	c->arg = arg;
	c->fn = (__u32)fn;
	c->skip = !sampled();
	c->depth = 1;
	return 0;
}

/* Return of malloc & co (cookie: enum sp_mem_fn): commits the call. */
SEC("uretprobe")
int heap_ret(struct pt_regs *ctx)
{
	__u64 fn = bpf_get_attach_cookie(ctx), ret = ctx->rax, size, arg, p;
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct sp_mem_call *c;
	bool skip;

	c = bpf_map_lookup_elem(&calls, &tid);
	if (!c || !c->depth)
		return 0;	/* entered while disarmed */
	if (c->depth > 1) {
		c->depth--;
		return 0;
	}
	c->depth = 0;
	if (!armed)
		return 0;
	if (c->fn != fn) {
		count_error(SP_MEM_ERR_STALE_CALL);
		return 0;
	}
	size = c->size;
	arg = c->arg;
	skip = c->skip;
	switch (fn) {
	case SP_MEM_FN_REALLOC:
		/* realloc(NULL, n) allocates; realloc(p, 0) frees and
		 * returns NULL (glibc); a failure leaves p alone; anything
		 * else frees p and allocates the result, moved or not. */
		if (arg && (ret || !size) && !track_free(SP_MEM_HEAP, arg))
			unknown_free();
		if (ret && !skip)
			track_alloc(ctx, SP_MEM_HEAP, 0, ret, size);
		break;
	case SP_MEM_FN_POSIX_MEMALIGN:
		if ((int)ret || skip)
			break;
		if (bpf_probe_read_user(&p, sizeof(p), (const void *)arg)) {
			count_error(SP_MEM_ERR_MEMPTR_READ);
			break;
		}
		if (p)
			track_alloc(ctx, SP_MEM_HEAP, 0, p, size);
		break;
	default:
		if (ret && !skip)
			track_alloc(ctx, SP_MEM_HEAP, 0, ret, size);
		break;
	}
	return 0;
}

/*
 * free called by libc itself: its return address lies in the executable
 * segment of the file whose free this is. The cookie holds that segment's
 * extent around the probe: bytes below in its low 32 bits, above in its
 * high 32 (mem_provider.c).
 */
static __always_inline bool called_from_libc(struct pt_regs *ctx)
{
	__u64 ext = bpf_get_attach_cookie(ctx), ip = ctx->rip, ret;

	if (!ext || bpf_probe_read_user(&ret, sizeof(ret), (const void *)ctx->rsp))
		return false;
	/* ip may be past the probed instruction by its length: slack. */
	return ret + (ext & 0xffffffff) + 16 >= ip && ret < ip + (ext >> 32);
}

SEC("uprobe")
int heap_free(struct pt_regs *ctx)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u64 ptr = ctx->rdi;
	struct sp_mem_call *c;

	if (!armed || !ptr)
		return 0;
	/* realloc(p, 0) frees p itself: its return accounts for it. */
	c = bpf_map_lookup_elem(&calls, &tid);
	if (c && nested(c, ctx->rsp))
		return 0;
	if (track_free(SP_MEM_HEAP, ptr))
		return 0;
	/* libc's own cleanup at thread exit (see the top comment). */
	if (c && c->exiting && called_from_libc(ctx))
		return 0;
	unknown_free();
	return 0;
}

/* __call_tls_dtors, which glibc's start_thread calls once the thread's
 * function has returned: the teardown begins. */
SEC("uprobe")
int thread_teardown(struct pt_regs *ctx)
{
	struct sp_mem_call *c;

	(void)ctx;
	c = call_slot((__u32)bpf_get_current_pid_tgid());
	if (c)
		c->exiting = 1;
	return 0;
}

/* An exiting thread's call slot goes, so short-lived threads never fill
 * `calls` and a reused tid never sees a stale call. Runs for every exiting
 * thread on the system; untraced ones cost one failed delete. */
SEC("raw_tracepoint/sched_process_exit")
int mem_thread_exit(void *ctx)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();

	(void)ctx;
	bpf_map_delete_elem(&calls, &tid);
	return 0;
}
