// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * --query specs: third-party USDT probes, attached through libbpf's USDT
 * layer. Part of the query object (see query.bpf.c), loaded only when the
 * session has --query. Each spec line has its own per-thread stack (its
 * track, shared only by lines that say stack=NAME), so a provider's
 * overlapping intervals never disturb each other or the sp probes; its
 * row name is formed once, at BEGIN (see spec_name()).
 */
#include <stdbool.h>
#include <linux/bpf.h>
#include <linux/ptrace.h>
#include <bpf/bpf_helpers.h>
#include <bpf/usdt.bpf.h>
#include <sptrace/query_abi.h>
#include <sptrace/record_abi.h>
#include <sptrace/spec_norm.h>
#include "sp_regs.bpf.h"
#include "query_core.bpf.h"

/* --query: the string of each row value, once (key: the row's name with
 * outcome 0); also the set of a line's values, for its row cap. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SP_DEFAULT_MAX_QUERIES);
	__type(key, __u64);
	__type(value, struct sp_spec_name);
} spec_names SEC(".maps");

/* --query, per CPU: a direct-mapped cache of names known to be in
 * `spec_names` (never deleted during a session), so a BEGIN of a known name
 * looks nothing up to learn it is admitted. It only chooses which lookup
 * comes first. The name string itself is read into the program's stack,
 * a line that is hot at every event, where a per-CPU buffer was one more
 * cold line under a busy host. */
#define SPEC_ADMITTED_SLOTS 64
struct spec_scratch {
	__u64 admitted[SPEC_ADMITTED_SLOTS];
	/* Admission only: the string as it goes into spec_names, zeroed
	 * after its NUL (the stack buffer holds stale kernel stack there). */
	struct sp_spec_name admit;
	/* The normalizing pass's state: in a map value, not on the stack,
	 * so the verifier does not tell apart every value it takes in the
	 * bpf_loop callback (normalize=pg's first word made it too many). */
	struct sp_norm norm;
	/* The string of the event being named (spec_name()'s buffer): the
	 * name path is a function of its own, and its frame and the
	 * callers' would not fit in 512 bytes of stack with it there. */
	struct sp_spec_name name;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct spec_scratch);
} spec_scratch SEC(".maps");

/* --query: one stack of open intervals per thread and track. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, SP_DEFAULT_MAX_THREADS);
	__type(key, struct sp_spec_tkey);
	__type(value, struct sp_thread_stack);
} spec_stacks SEC(".maps");

/* --query: one bit per value hash, set before the value enters
 * `spec_names` and never cleared: a clear bit proves a value was never
 * admitted. A line at its cap admits nothing more, so there one load
 * sends most new values to "<other>" without a hash lookup (64 KiB). */
#define SPEC_ADMIT_BITS (1u << 19)
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SPEC_ADMIT_BITS / 64);
	__type(key, __u32);
	__type(value, __u64);
} spec_admit_bits SEC(".maps");

/* --query: distinct values per line, against its row cap. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SP_SPEC_MAX_LINES);
	__type(key, __u32);
	__type(value, __u64);
} spec_rows SEC(".maps");

/* --query: enum sp_spec_error per line (slot line * SP_SPEC_ERR__MAX + e). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SP_SPEC_MAX_LINES * SP_SPEC_ERR__MAX);
	__type(key, __u32);
	__type(value, __u64);
} spec_errors SEC(".maps");

/* Set before load by --query: its lines, and how many tracks they use. */
const volatile struct sp_spec_line spec_lines[SP_SPEC_MAX_LINES];
const volatile __u32 spec_ntracks = 0;
/* A bit (1 << enum sp_norm_mode) per normalize= mode some line uses: the
 * verifier, which knows these constants, skips the paths of the others
 * (the SQL lexer's was 40% of sp_spec_begin's verifying). */
const volatile __u32 spec_norms = 0;
/* --query: a bit per line some CPU saw at its row cap. Next to `armed`,
 * which every event reads anyway; written once per line. */
volatile __u64 spec_full;

static __always_inline void spec_error(__u32 line, __u32 e)
{
	__u32 slot = line * SP_SPEC_ERR__MAX + e;
	__u64 *v;

	if (slot >= SP_SPEC_MAX_LINES * SP_SPEC_ERR__MAX)
		return;
	v = bpf_map_lookup_elem(&spec_errors, &slot);
	if (v)
		*v += 1;
}

/*
 * The libbpf USDT spec of the site that fired, looked up once per event:
 * bpf_usdt_cookie() and each bpf_usdt_arg() would each read the attach
 * cookie and look the spec up again.
 */
static __always_inline struct __bpf_usdt_spec *spec_usdt(struct pt_regs *ctx)
{
	int id = __bpf_usdt_spec_id(ctx);

	if (id < 0)
		return NULL;
	return bpf_map_lookup_elem(&__bpf_usdt_specs, &id);
}

/* A pt_regs field at a libbpf reg_off, loaded directly for the registers
 * USDT arguments use (bpf_usdt_arg() calls bpf_probe_read_kernel() for
 * each: the verifier refuses a ctx load at a variable offset). */
static __always_inline int spec_reg(struct pt_regs *ctx, short off,
				    unsigned long *v)
{
#define SP_REG_CASE(r)                                                         \
	case __builtin_offsetof(struct pt_regs, r):                            \
		*v = SP_CTX_REG(ctx, r);                                       \
		return 0
	switch (off) {
	SP_REG_CASE(rax); SP_REG_CASE(rbx); SP_REG_CASE(rcx);
	SP_REG_CASE(rdx); SP_REG_CASE(rsi); SP_REG_CASE(rdi);
	SP_REG_CASE(rbp); SP_REG_CASE(rsp); SP_REG_CASE(r8);
	SP_REG_CASE(r9); SP_REG_CASE(r10); SP_REG_CASE(r11);
	SP_REG_CASE(r12); SP_REG_CASE(r13); SP_REG_CASE(r14);
	SP_REG_CASE(r15);
	}
#undef SP_REG_CASE
	return bpf_probe_read_kernel(v, sizeof(*v), (void *)ctx + off);
}

/* bpf_usdt_arg() of the spec in hand: the same decoding. */
static __noinline int spec_arg(struct pt_regs *ctx,
				    const struct __bpf_usdt_spec *u,
				    __u32 n, long *res)
{
	const struct __bpf_usdt_arg_spec *a;
	unsigned long val = 0;
	int err;

	*res = 0;
	if (n >= BPF_USDT_MAX_ARG_CNT || n >= (__u32)u->arg_cnt)
		return -ENOENT;
	a = &u->args[n];
	switch (a->arg_type) {
	case BPF_USDT_ARG_CONST:
		val = a->val_off;
		break;
	case BPF_USDT_ARG_REG:
		err = spec_reg(ctx, a->reg_off, &val);
		if (err)
			return err;
		break;
	case BPF_USDT_ARG_REG_DEREF:
		err = spec_reg(ctx, a->reg_off, &val);
		if (!err)
			err = bpf_probe_read_user(&val, sizeof(val),
						  (void *)val + a->val_off);
		if (err)
			return err;
		break;
	default:
		return -EINVAL;
	}
	val <<= a->arg_bitshift;
	if (a->arg_signed)
		val = ((long)val) >> a->arg_bitshift;
	else
		val = val >> a->arg_bitshift;
	*res = val;
	return 0;
}

/* An if= or hit= condition on an integer argument; an argument that
 * cannot be read makes it false. Not inlined: most lines have none, and
 * the program's code is cold at each event under a busy host, so the
 * path an event takes is kept short and together. */
static __noinline bool spec_cond_test(struct pt_regs *ctx,
				      const struct __bpf_usdt_spec *u,
				      __u32 arg, __u32 op, __s64 val)
{
	long v = 0;

	if (spec_arg(ctx, u, arg, &v))
		return false;
	switch (op) {
	case SP_OP_EQ: return v == val;
	case SP_OP_NE: return v != val;
	case SP_OP_LT: return v < val;
	case SP_OP_LE: return v <= val;
	case SP_OP_GT: return v > val;
	case SP_OP_GE: return v >= val;
	}
	return false;
}

/* The if= (hit false) or hit= condition `op` of line l: l is read only
 * when there is one (op comes from the cookie). */
static __always_inline bool spec_cond(struct pt_regs *ctx,
				      const struct __bpf_usdt_spec *u,
				      const volatile struct sp_spec_line *l,
				      __u32 op, bool hit)
{
	if (op == SP_OP_NONE)
		return true;
	if (hit)
		return spec_cond_test(ctx, u, l->hit_arg, op, l->hit_val);
	return spec_cond_test(ctx, u, l->if_arg, op, l->if_val);
}

/* The state of one normalizing hash pass (a bpf_loop callback's). */
struct norm_pass {
	struct sp_spec_name *buf;
	struct sp_norm st;
	struct sp_norm *pst;	/* normalize=pg: in spec_scratch */
	__u32 mode;
	long len;
	__u64 h;
};

static __always_inline __u64 fnv_bytes(__u64 h, __u32 out)
{
	__u32 k;

	for (k = 0; k < 3 && out; k++) {
		h ^= out & 0xff;
		h *= SP_FNV_PRIME;
		out >>= 8;
	}
	return h;
}

/* One byte of normalize=sql|digits. A callback of bpf_loop(): the state
 * machine's branches inside an unrolled 256-byte loop are more than the
 * verifier explores. */
static long norm_byte(__u32 i, void *data)
{
	struct norm_pass *p = data;
	__u8 c, next;

	if (i + 1 >= p->len)	/* len counts the NUL */
		return 1;
	c = (__u8)p->buf->str[i & (SP_SPEC_NAME_LEN - 1)];
	next = (__u8)p->buf->str[(i + 1) & (SP_SPEC_NAME_LEN - 1)];
	p->h = fnv_bytes(p->h, sp_norm_step(&p->st, p->mode, c, next));
	return 0;
}

/* One byte of normalize=pg: its own callback, its state in a map value
 * (the verifier would tell apart every first word on the stack). */
static long norm_byte_pg(__u32 i, void *data)
{
	struct norm_pass *p = data;
	__u8 c;

	if (i + 1 >= p->len)
		return 1;
	c = (__u8)p->buf->str[i & (SP_SPEC_NAME_LEN - 1)];
	p->h = fnv_bytes(p->h, sp_norm_pg(p->pst, c,
				sp_norm_pg_long(p->buf->str, i, p->len)));
	return 0;
}

/* normalize=pg on a string longer than the copy: the whole string, read
 * again in chunks of the copy's size, hashed raw (a bpf_loop callback). */
#define SPEC_LONG_CHUNKS 64	/* hashed up to 64 * 255 bytes */
struct long_pass {
	const char *ptr;
	struct sp_spec_name *chunk;
	__u64 h;
};

static long long_chunk(__u32 i, void *data)
{
	struct long_pass *p = data;
	long n;
	__u32 k, at;
	__u64 w;

	n = bpf_probe_read_user_str(p->chunk->str, sizeof(p->chunk->str),
				    p->ptr + (__u64)i * (SP_SPEC_NAME_LEN - 1));
	if (n <= 1)
		return 1;
	n -= 1;
#pragma clang loop unroll(disable)
	for (k = 0; k < SP_SPEC_NAME_LEN / 8; k++) {
		at = k * 8;
		if (at >= n)
			break;
		w = *(__u64 *)&p->chunk->str[at & (SP_SPEC_NAME_LEN - 8)];
		if (n - at < 8)
			w &= (1ull << ((n - at) * 8)) - 1;
		p->h ^= w;
		p->h *= SP_FNV_PRIME;
	}
	return n < SP_SPEC_NAME_LEN - 1;
}

static __noinline __u64 spec_long_hash(const char *ptr)
{
	struct long_pass p = { .ptr = ptr, .h = SP_FNV_OFFSET ^ 0x7e };
	struct spec_scratch *sc;
	__u32 zero = 0;

	/* The admission buffer: admission comes after the name. */
	sc = bpf_map_lookup_elem(&spec_scratch, &zero);
	if (!sc)
		return 0;
	p.chunk = &sc->admit;
	bpf_loop(SPEC_LONG_CHUNKS, long_chunk, &p, 0);
	p.h ^= p.h >> 29;
	p.h *= SP_FNV_PRIME;
	return p.h >> 14;
}

/*
 * The value of a string argument: read into the caller's stack buffer
 * and hashed (FNV-1a 64), raw or in one pass with its normalization
 * (spec_norm.h); the row keeps the raw string once. An unreadable string is named
 * "<unreadable>".
 */
static __always_inline __u64 spec_str_value(struct pt_regs *ctx,
					     const struct __bpf_usdt_spec *u,
					     __u32 line, __u32 arg, __u32 reg,
					     __u32 norm,
					     struct sp_spec_name *buf)
{
	struct norm_pass p = { .buf = buf, .mode = norm, .h = SP_FNV_OFFSET };
	struct spec_scratch *sc;
	__u32 i, zero = 0;
	bool pg, lex;
	long ptr = 0;

	p.len = -1;
	if (reg)
		ptr = (long)sp_reg_value(ctx, reg);
	else if (spec_arg(ctx, u, arg, &ptr))
		ptr = 0;
	if (ptr)
		p.len = bpf_probe_read_user_str(buf->str, sizeof(buf->str),
						(const void *)ptr);
	if (p.len <= 0) {
		spec_error(line, SP_SPEC_ERR_NAME_READ);
		/* Stores of constants: a static string here would be a
		 * .rodata variable libbpf 1.1 places wrongly in its BTF. */
		__builtin_memcpy(buf->str, "<unreadable>", 13);
		p.len = 13;
	}
	/* Each mode's test of spec_norms first: a constant to the verifier. */
	pg = (spec_norms & (1u << SP_NORM_PG)) && norm == SP_NORM_PG;
	lex = (spec_norms & (1u << SP_NORM_SQL | 1u << SP_NORM_DIGITS)) &&
	      (norm == SP_NORM_SQL || norm == SP_NORM_DIGITS);
	if (!pg && !lex) {
		/* Raw: FNV-1a over 8-byte words (the bytes past the NUL
		 * masked off), an eighth of the byte loop's work. */
		__u32 n = (__u32)p.len - 1, at;
		__u64 w;

		/* A loop, not 32 unrolled copies: under a busy host the
		 * program's code is cold at each event. */
#pragma clang loop unroll(disable)
		for (i = 0; i < SP_SPEC_NAME_LEN / 8; i++) {
			at = i * 8;
			if (at >= n)
				break;
			w = *(__u64 *)&buf->str[at & (SP_SPEC_NAME_LEN - 8)];
			if (n - at < 8)
				w &= (1ull << ((n - at) * 8)) - 1;
			p.h ^= w;
			p.h *= SP_FNV_PRIME;
		}
		p.h ^= p.h >> 29;	/* low bits up before ">> 14" */
		p.h *= SP_FNV_PRIME;
		return p.h >> 14;
	}
	/* normalize=pg never merges by prefix: a string filling the copy
	 * is keyed by the whole string, unfolded (userspace shows the row
	 * as truncated). */
	if (pg && p.len >= SP_SPEC_NAME_LEN && ptr) {
		spec_error(line, SP_SPEC_ERR_TRUNCATED);
		return spec_long_hash((const char *)ptr);
	}
	if (pg) {
		sc = bpf_map_lookup_elem(&spec_scratch, &zero);
		if (!sc)
			return 0;	/* cannot happen: a per-CPU slot 0 */
		__builtin_memset(&sc->norm, 0, sizeof(sc->norm));
		p.pst = &sc->norm;
		bpf_loop(SP_SPEC_NAME_LEN - 1, norm_byte_pg, &p, 0);
		return p.h >> 14;
	}
	bpf_loop(SP_SPEC_NAME_LEN - 1, norm_byte, &p, 0);
	p.h = fnv_bytes(p.h, sp_norm_finish(&p.st));
	return p.h >> 14;
}

/*
 * The row name of an event of spec line `line` (a fixed name, an integer,
 * or a string hashed into buf). Whether the value is admitted is
 * spec_admit()'s question, asked only when no row has it yet.
 *
 * A global function: the kernel verifies it once per program, whatever
 * the state of its caller, where inlined it was verified in each of the
 * caller's states (127,000 instructions of sp_spec_begin, 79,000 now: the
 * most of attaching a --query). Its pointers may be NULL for the verifier.
 */
__noinline __u64 spec_name(struct pt_regs *ctx,
			   const struct __bpf_usdt_spec *u, __u32 line,
			   __u64 cookie, struct sp_spec_name *buf)
{
	__u32 type = SP_SPEC_COOKIE_NAME_TYPE(cookie);
	__u32 arg = SP_SPEC_COOKIE_NAME_ARG(cookie);
	__u32 reg = SP_SPEC_COOKIE_NAME_REG(cookie);
	long v = 0;

	if (!u || !buf)
		return 0;
	line &= SP_SPEC_MAX_LINES - 1;
	if (type == SP_SPEC_NAME_FIXED)
		return SP_SPEC_NAME(line, 0, 0);
	if (type == SP_SPEC_NAME_INT) {
		if (reg)
			v = (long)sp_reg_value(ctx, reg);
		else if (spec_arg(ctx, u, arg, &v)) {
			spec_error(line, SP_SPEC_ERR_NAME_READ);
			return SP_SPEC_NAME(line, SP_SPEC_OUTCOME_OTHER, 0);
		}
		buf->str[0] = 0;
		return SP_SPEC_NAME(line, 0, (__u64)v);
	}
	return SP_SPEC_NAME(line, 0, spec_str_value(ctx, u, line, arg, reg,
				SP_SPEC_COOKIE_NORMALIZE(cookie), buf));
}

/* Was the line seen at its cap? Then a value without a row in this
 * process is more likely one of "<other>" than one admitted. */
static __always_inline bool spec_line_full(__u32 line)
{
	return spec_full & (1ull << (line & (SP_SPEC_MAX_LINES - 1)));
}

/*
 * A value not seen before joins the line's rows (its string kept once in
 * `spec_names`) while the line has fewer than max_rows; after that its
 * events go to the line's "<other>" row, so counts stay exact while the
 * maps stay bounded. Returns the name to count under.
 */
static __noinline __u64 spec_admit_new(__u32 line,
				       const volatile struct sp_spec_line *l,
				       __u64 name,
				       const struct sp_spec_name *buf,
				       __u64 *slot)
{
	__u64 other = SP_SPEC_NAME(line, SP_SPEC_OUTCOME_OTHER, 0), *rows;
	struct spec_scratch *sc;
	__u64 *bits, lbit;
	__u32 bit, word, zero = 0;
	long err;

	bit = (__u32)(name ^ (name >> 40)) & (SPEC_ADMIT_BITS - 1);
	word = bit / 64;
	bits = bpf_map_lookup_elem(&spec_admit_bits, &word);
	if (!bits)
		return other;	/* cannot happen: an array slot in range */
	if (spec_line_full(line) && !(*bits & (1ull << (bit & 63)))) {
		spec_error(line, SP_SPEC_ERR_OTHER);
		return other;
	}
	if (bpf_map_lookup_elem(&spec_names, &name)) {
		*slot = name;
		return name;
	}
	rows = bpf_map_lookup_elem(&spec_rows, &line);
	if (rows && l->max_rows && *rows >= l->max_rows) {
		lbit = 1ull << (line & (SP_SPEC_MAX_LINES - 1));
		if (!(spec_full & lbit))
			__sync_fetch_and_or(&spec_full, lbit);
		spec_error(line, SP_SPEC_ERR_OTHER);
		return other;
	}
	sc = bpf_map_lookup_elem(&spec_scratch, &zero);
	if (!sc)
		return other;	/* cannot happen: an array slot in range */
	__builtin_memset(&sc->admit, 0, sizeof(sc->admit));
	bpf_probe_read_kernel_str(sc->admit.str, sizeof(sc->admit.str),
				  buf->str);
	/* Before the value is in spec_names and counted in rows: a CPU that
	 * sees the line full then sees the bit too. */
	__sync_fetch_and_or(bits, 1ull << (bit & 63));
	err = bpf_map_update_elem(&spec_names, &name, &sc->admit, BPF_NOEXIST);
	if (!err && rows)
		__sync_fetch_and_add(rows, 1);
	else if (err && err != -EEXIST) {
		spec_error(line, SP_SPEC_ERR_NAMES_FULL);
		count_error(SP_ERR_NAMES_FULL, 1);
		return other;
	}
	*slot = name;
	return name;
}

/* The admitted-name cache first; the rest (not inlined) only for a name
 * this CPU has not seen admitted. */
static __always_inline __u64 spec_admit(__u32 line,
					const volatile struct sp_spec_line *l,
					__u64 cookie, __u64 name,
					const struct sp_spec_name *buf)
{
	struct spec_scratch *sc;
	__u32 zero = 0;
	__u64 *slot;

	if (SP_SPEC_NAME_OUTCOME(name) ||
	    SP_SPEC_COOKIE_NAME_TYPE(cookie) == SP_SPEC_NAME_FIXED)
		return name;
	sc = bpf_map_lookup_elem(&spec_scratch, &zero);
	if (!sc)	/* cannot happen: slot 0 of a per-CPU array */
		return SP_SPEC_NAME(line, SP_SPEC_OUTCOME_OTHER, 0);
	slot = &sc->admitted[(name ^ (name >> 29)) & (SPEC_ADMITTED_SLOTS - 1)];
	if (*slot == name)
		return name;
	return spec_admit_new(line, l, name, buf, slot);
}

/* The record event of a spec probe's BEGIN or END. */
static __always_inline __u32 spec_event(__u32 kind, bool begin)
{
	switch (kind) {
	case SP_FRAME_BLOCKED:
		return begin ? SP_EV_BLOCKED_BEGIN : SP_EV_BLOCKED_END;
	case SP_FRAME_INCR_LOAD:
		return begin ? SP_EV_INCR_LOAD_BEGIN : SP_EV_INCR_LOAD_END;
	}
	return begin ? SP_EV_QUERY_BEGIN : SP_EV_QUERY_END;
}

static __always_inline struct sp_thread_stack *
spec_stack(__u32 tid, __u32 track, bool create)
{
	struct sp_spec_tkey key = { .tid = tid, .track = track };
	struct sp_thread_stack *st;
	__u32 zero = 0;
	long err;

	st = bpf_map_lookup_elem(&spec_stacks, &key);
	if (st || !create)
		return st;
	st = bpf_map_lookup_elem(&zero_stack, &zero);
	if (!st)
		return NULL;
	err = bpf_map_update_elem(&spec_stacks, &key, st, BPF_NOEXIST);
	if (err && err != -EEXIST) {
		count_error(SP_ERR_THREADS_FULL, 1);
		return NULL;
	}
	return bpf_map_lookup_elem(&spec_stacks, &key);
}

/*
 * What each spec program does first: is this event counted (armed, the
 * process followed), and which line and END fired. One read of the
 * thread id and one of the USDT spec serve the whole event.
 */
struct spec_ev {
	const struct __bpf_usdt_spec *u;
	const volatile struct sp_spec_line *l;
	__u64 id;
	__u64 cookie;	/* SP_SPEC_COOKIE(): the line's hot fields */
	__u32 line;
	__u32 end;
};

static __always_inline bool spec_event_start(struct pt_regs *ctx,
					     struct spec_ev *e)
{
	__u64 cookie;

	if (!armed)
		return false;
	e->id = bpf_get_current_pid_tgid();
	if (!traced_tgid(e->id >> 32))
		return false;
	count_hits(e->id >> 32, SP_HIT_SPEC, 1);
	/* Own stacks, but one recording: after the batched events before
	 * (`record` is constant: live sessions do not even test it). */
	if (record)
		drain_first(e->id, 0);
	e->u = spec_usdt(ctx);
	if (!e->u)
		return false;
	e->cookie = cookie = e->u->usdt_cookie;
	e->line = SP_SPEC_COOKIE_LINE(cookie) & (SP_SPEC_MAX_LINES - 1);
	e->end = SP_SPEC_COOKIE_END(cookie);
	e->l = &spec_lines[e->line];
	return true;
}

static __noinline int spec_begin_apply(struct pt_regs *ctx,
					    const struct spec_ev *e)
{
	const volatile struct sp_spec_line *l;
	struct sp_thread_stack *st;
	struct spec_scratch *sc;
	__u32 kind, d, n, zero = 0;
	__u64 now, name, serial;

	sc = bpf_map_lookup_elem(&spec_scratch, &zero);
	if (!sc)	/* cannot happen: slot 0 of a per-CPU array */
		return 0;
	l = e->l;
	kind = l->kind;
	serial = l->flags & SP_SPEC_F_SERIAL ? SP_SPEC_EV_SERIAL : 0;
	if (!spec_cond(ctx, e->u, l, SP_SPEC_COOKIE_IF_OP(e->cookie), false))
		return 0;
	/* The row is made at END, without the string: admit it now. */
	name = spec_admit(e->line, l, e->cookie,
			  spec_name(ctx, e->u, e->line, e->cookie, &sc->name),
			  &sc->name);
	now = bpf_ktime_get_ns();
	/* arg1: the track + 1, arg2: the line + 1, so a replay closes the
	 * same frame of the same stack as this program does. */
	emit(spec_event(kind, true), e->id, now, name, l->track + 1,
	     (e->line + 1) | serial);
	st = spec_stack((__u32)e->id, l->track, true);
	if (!st)
		return 0;
	/* A serial line's open interval ended without its END (an ERROR):
	 * dropped and counted, never left to fill the stack. */
	if (serial) {
		n = stack_abandon_tag(st, e->line + 1);
		if (n) {
			spec_error(e->line, SP_SPEC_ERR_ABANDONED);
			count_error(SP_ERR_ABANDONED, n);
		}
	}
	if (sp_stack_push(st, name, kind, now)) {
		spec_error(e->line, SP_SPEC_ERR_STACK_OVERFLOW);
		count_error(SP_ERR_STACK_OVERFLOW, 1);
		return 0;
	}
	d = st->depth;
	if (d > 0 && d <= SP_MAX_DEPTH)
		st->frames[(d - 1) & (SP_MAX_DEPTH - 1)].tag = e->line + 1;
	return 0;
}

/* The event's own frame is small, the rest in the subprogram: the drain of
 * spec_event_start() would not fit next to it in the 512 bytes of BPF
 * stack. */
SEC("usdt")
int sp_spec_begin(struct pt_regs *ctx)
{
	struct spec_ev e;

	if (!spec_event_start(ctx, &e))
		return 0;
	return spec_begin_apply(ctx, &e);
}

/* Any END of a line closes the line's innermost open interval; it reads
 * no name (the BEGIN formed it). With outcomes, each END also counts in
 * its own row. An END without BEGIN on a line with if= is expected (the
 * BEGIN did not apply), so not an error there. The line's abandon= probe
 * comes here too, as one more END: it drops the line's open intervals. */
SEC("usdt")
int sp_spec_end(struct pt_regs *ctx)
{
	const volatile struct sp_spec_line *l;
	struct sp_thread_stack *st;
	struct sp_query_stats *row;
	struct sp_closed c = {};
	int r = SP_POP_UNMATCHED;
	struct spec_ev e;
	__u32 line, n;
	__u64 now;

	if (!spec_event_start(ctx, &e))
		return 0;
	now = bpf_ktime_get_ns();
	l = e.l;
	line = e.line;
	st = spec_stack((__u32)e.id, l->track, false);
	if (e.end && e.end == SP_SPEC_F_ABANDON_END(l->flags)) {
		/* abandon=: the line's open intervals will never end. */
		emit(spec_event(l->kind, false), e.id, now, 0, l->track + 1,
		     (line + 1) | SP_SPEC_EV_ABANDON);
		n = st ? stack_abandon_all(st, line + 1) : 0;
		if (n) {
			spec_error(line, SP_SPEC_ERR_ABANDONED);
			count_error(SP_ERR_ABANDONED, n);
		}
		return 0;
	}
	if (st)
		r = stack_pop_tag(st, line + 1, now, &c);
	if (r == SP_POP_OVERFLOWED)
		return 0;
	if (r == SP_POP_UNMATCHED) {
		if (SP_SPEC_COOKIE_IF_OP(e.cookie) == SP_OP_NONE) {
			spec_error(line, SP_SPEC_ERR_END_WITHOUT_BEGIN);
			count_error(SP_ERR_END_WITHOUT_BEGIN, 1);
		}
		return 0;
	}
	if (c.discarded) {
		spec_error(line, SP_SPEC_ERR_END_MISMATCH);
		count_error(SP_ERR_END_MISMATCH, c.discarded);
	}
	emit(spec_event(c.kind, false), e.id, now, c.name, l->track + 1,
	     line + 1);
	row = add_closed(e.id >> 32, &c);
	/* Each count below is also a CACHE_HIT event, for the replay. */
	if (row && SP_SPEC_COOKIE_HIT_OP(e.cookie) &&
	    spec_cond(ctx, e.u, l, SP_SPEC_COOKIE_HIT_OP(e.cookie), true)) {
		row->cache_hits++;
		emit(SP_EV_CACHE_HIT, e.id, now, c.name, 0, 0);
	}
	if ((l->flags & SP_SPEC_F_OUTCOMES) && e.end &&
	    e.end < SP_SPEC_OUTCOME_OTHER) {
		row = query_row(e.id >> 32, SP_SPEC_NAME(line, e.end, 0));
		if (row) {
			row->cache_hits++;
			emit(SP_EV_CACHE_HIT, e.id, now,
			     SP_SPEC_NAME(line, e.end, 0), 0, 0);
		}
	}
	return 0;
}

/* A one-probe line: counts per row; with hit=, count is the number of
 * events (reads) and cache_hits those where the condition held. */
static __noinline int spec_cache_apply(struct pt_regs *ctx,
					    const struct spec_ev *e)
{
	const volatile struct sp_spec_line *l;
	struct sp_query_key key = {};
	struct sp_query_stats *row = NULL;
	struct spec_scratch *sc;
	__u32 zero = 0;
	bool hit;

	sc = bpf_map_lookup_elem(&spec_scratch, &zero);
	if (!sc)	/* cannot happen: slot 0 of a per-CPU array */
		return 0;
	l = e->l;
	if (!spec_cond(ctx, e->u, l, SP_SPEC_COOKIE_IF_OP(e->cookie), false))
		return 0;
	key.tgid = e->id >> 32;
	key.name = spec_name(ctx, e->u, e->line, e->cookie, &sc->name);
	/* A row of this process has the value: admitted long ago. Once the
	 * line is full, most values are not, and admission says so with one
	 * lookup less (rows are per process: a miss here proves nothing). */
	if (!spec_line_full(e->line))
		row = bpf_map_lookup_elem(&queries, &key);
	if (!row) {
		key.name = spec_admit(e->line, l, e->cookie, key.name,
				      &sc->name);
		row = query_row(key.tgid, key.name);
		if (!row)
			return 0;
	}
	hit = spec_cond(ctx, e->u, l, SP_SPEC_COOKIE_HIT_OP(e->cookie), true);
	if (hit && record)	/* no clock read when not recording */
		emit(SP_EV_CACHE_HIT, e->id, bpf_ktime_get_ns(), key.name, 0, 0);
	if (SP_SPEC_COOKIE_HIT_OP(e->cookie) != SP_OP_NONE)
		row->count++;
	if (hit)
		row->cache_hits++;
	return 0;
}

/* As sp_spec_begin: the drain and the rest in separate frames. */
SEC("usdt")
int sp_spec_cache(struct pt_regs *ctx)
{
	struct spec_ev e;

	if (!spec_event_start(ctx, &e))
		return 0;
	return spec_cache_apply(ctx, &e);
}

/* An exiting thread's spec stacks: open frames counted, stacks freed
 * (called by sp_thread_exit, query.bpf.c). */
__noinline int spec_thread_exit(__u32 tid)
{
	struct sp_spec_tkey key = { .tid = tid };
	struct sp_thread_stack *st;
	__u32 t;

	for (t = 0; t < SP_SPEC_MAX_LINES; t++) {
		if (t >= spec_ntracks)
			break;
		key.track = t;
		st = bpf_map_lookup_elem(&spec_stacks, &key);
		if (!st)
			continue;
		if (st->depth || st->overflow)
			count_error(SP_ERR_THREAD_EXIT_OPEN,
				    (__u64)st->depth + st->overflow);
		bpf_map_delete_elem(&spec_stacks, &key);
	}
	return 0;
}

