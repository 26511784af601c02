/* SPDX-License-Identifier: MIT */
/*
 * sp_probe.h - sptrace probes for C and C++ programs. Header only, no
 * dependency (not even <sys/sdt.h>); C99+/C++11+, gcc and clang, -O0..-O3,
 * LTO, PIE and non-PIE, executables and shared libraries.
 *
 * USE
 *   #include <sp_probe.h>
 *
 *   int parse(const char *src) {
 *           SP_QUERY_BEGIN("parse");           // name: a string literal
 *           ...
 *           SP_QUERY_END("parse");
 *   }
 *   void typeck(void) { SP_SCOPE("typeck"); ... }   // END at scope exit
 *
 *   SP_CACHE_HIT(q)                  result of q came from the memory cache
 *   SP_QUERY_BEGIN_STR(p, len) / _END_STR, SP_CACHE_HIT_STR
 *                                    a name made at run time: len bytes at p
 *   SP_QUERY_BEGIN_KEY(q, key) / _END_KEY, SP_CACHE_HIT_KEY
 *                                    query q of an integer key (--query-keys)
 *   SP_QUERY_BEGIN_KEY_STR(q, kp, klen) / _END_KEY_STR, SP_CACHE_HIT_KEY_STR
 *                                    query q of a text key: klen bytes at kp
 *   SP_INCR_LOAD_BEGIN(q) / _END(q)  loading q from the on-disk cache
 *   SP_BLOCKED_BEGIN(q) / _END(q)    waiting for another thread's q
 *   SP_MARK(name, key)               point event (latency between events)
 *   SP_ALLOC(type, size, ptr)        allocation of a named type
 *   SP_FREE(type, ptr)
 *   SP_THREAD_NAME(name)             names the calling thread in reports
 *   SP_PROBE(name, ...)              generic probe sp:name, 0..6 int/pointer args
 *   if (SP_ENABLED()) { ... }        guard expensive argument preparation
 *
 * Names (queries, types, marks, threads) are `const char *` with static
 * storage, normally string literals: the tracer keys its tables by the
 * pointer and reads the string once per distinct pointer. Text made at run
 * time goes through the *_STR forms, which intern it (see sp__intern()). Queries may nest
 * and recurse. Each BEGIN needs its END on the same thread.
 *
 * Define SP_PROBES_DISABLE before including to compile every probe out.
 *
 * WHAT IT EMITS
 * Standard SystemTap v3 USDT probes, provider "sp": a `.note.stapsdt` ELF
 * note per site (address, `.stapsdt.base`, semaphore, "sp", name, argument
 * spec), so readelf -n, bpftrace, perf, bcc and libbpf see them too. Every
 * probe name has a 16-bit semaphore in section `.probes` (SystemTap's
 * convention). Tracers increment it while attached (sptrace lets the kernel
 * do it through the uprobe ref_ctr_offset, so a killed tracer leaves it 0).
 *
 * WHAT A DISABLED PROBE COSTS
 * One load of the semaphore and a not-taken branch predicted not taken
 * (__builtin_expect); the probe instruction and argument set-up sit out of
 * the hot path. Measured by bench/probe_cost (see docs/numbers.md).
 *
 * WHY THE SITE LOOKS AS IT DOES (x86-64)
 * The probe instruction is a 5-byte nop (0f 1f 44 00 00) rather than the
 * 1-byte nop of <sys/sdt.h>: since Linux 6.18 the kernel replaces a uprobe on
 * a 5-byte nop with a call into a trampoline instead of an int3 trap, several
 * times cheaper per hit. That call pushes a return address below %rsp, i.e.
 * into the 128-byte red zone that leaf functions may use for live data
 * without moving %rsp. So the site steps %rsp down 128 bytes around the nop
 * (with lea, which leaves the flags alone) and passes every argument in a
 * register ("r" constraints): no argument location is %rsp-relative, so the
 * moved %rsp cannot make a tracer read the wrong memory. The red-zone test in
 * tests/ proves a leaf function's red zone survives millions of traced calls.
 * The trampoline page of that call is not copied by fork(): on Linux 6.18 a
 * forked child that runs a site the parent had hit dies. So sptrace keeps
 * every per-event site it attaches a trap, never that call (see "Fork
 * safety" in docs/architecture.md); the lea before the nop is also where it
 * probes a site on a kernel where that cannot be done. Keep both leas.
 * Other architectures use their plain nop and no red-zone dance.
 *
 * BATCHED EVENTS (Linux x86-64 and aarch64)
 * A uprobe hit costs a kernel entry (~300 ns even on the nop5 fast path),
 * several times a bare syscall. So a tracer that can read batches (sptrace)
 * attaches one more probe, sp:flush(ring), whose semaphore
 * sp_flush_semaphore doubles as "batching on" (raised through the kernel's
 * ref_ctr like every other: a killed tracer leaves it 0). While it is up,
 * the query probes (query, blocked and incr_load BEGIN/END, cache_hit)
 * append a 32-byte record {timestamp, name, argument, kind, commit} to a
 * per-thread ring in the host's memory instead of trapping. Their
 * per-event sites fire only while batching is off (another tracer, such as
 * bpftrace, sees them then); sptrace attaches them too, for same-named
 * probes compiled without batching (SP_PROBES_NO_BATCH, an older sp-probe
 * crate), and applies each such event after draining the thread's rings.
 * Rust's sp-probe crate (probes/rust) writes the same rings, a ring of its
 * own per thread and object, with the same flush and tsc sites.
 *  - The ring (struct sp__batch; the tracer's copy of the layout is
 *    include/sptrace/batch_abi.h, checked against this one by a unit test)
 *    is mmap'ed in the slow path: no malloc in a probe, which may sit inside
 *    an allocator. TLS holds only a pointer, so a dlopen'ed library needs no
 *    large static TLS. MADV_WIPEONFORK gives a forked child zeroed, i.e.
 *    fresh, rings (the forking thread's is restarted in place).
 *  - A thread's ring goes when the thread does: a pthread key (created once
 *    per object, in the slow path) has a destructor that marks the thread
 *    as exiting in TLS first, then flushes one last time with the ring's
 *    owner cleared (the tracer drains it and forgets the address), then
 *    unmaps it. A probe that runs after that, in a later key destructor or
 *    a signal handler, finds the mark and fires its per-event site, which
 *    the tracer counts like any other event. Where no key can be had
 *    without a malloc (pthread_key_create absent, as in a static binary
 *    without it, or a key past glibc's first 32, whose per-thread storage
 *    is malloc'ed), rings are kept on a list instead and a dead thread's
 *    ring is taken by the next thread that gets the same TLS slot (a TLS
 *    address is unique among live threads).
 *  - An object's rings go when it is unloaded. Each ring has a slot in a
 *    per-object directory (mmap'ed pages, a slot taken by compare-and-
 *    swap); whoever empties the slot, the ring's exiting thread or the
 *    unload, releases the ring. The object's destructor deletes its key
 *    first (no thread may call into unmapped code), then releases the
 *    calling thread's ring, and at a dlclose every other thread's: the
 *    tracer finds the thread that registered each and drains it as that
 *    thread's. Not at the process's exit, when other threads may still be
 *    running the object's probes and an unmapped ring would crash them. A
 *    dlopen'ed object tells the two apart by an exit handler registered
 *    with its __dso_handle: exit runs it before the object's destructors,
 *    dlclose after them (from crtbegin's destructor, the last). An object
 *    loaded at start (its TLS static) is only ever unloaded by exit.
 *  - Timestamps are the TSC when the tracer raises sp_tsc_semaphore (it
 *    does where the kernel's clock source is the TSC, and converts with its
 *    own calibration), else CLOCK_MONOTONIC through the vDSO, the clock of
 *    bpf_ktime_get_ns(). A flag in the record's kind says which.
 *  - sp:flush fires when the ring is nearly full, when its oldest record is
 *    older than SP__BATCH_AGE_NS (checked with the new record's timestamp),
 *    and once after the first record of each batch: that hit registers the
 *    ring with the tracer, which drains every registered ring of the thread
 *    on any flush, merged by timestamp. Each shared object has its own copy
 *    of these hidden symbols and so its own ring; the merge keeps a query
 *    that begins in a library and ends in the executable correctly nested.
 *  - A record is reserved (seq bumped) before it is written and committed
 *    last (`commit` = its sequence number + 1): a signal handler whose
 *    probes run in the middle of an append takes the next slot, and the
 *    tracer stops draining at the first uncommitted record. A handler whose
 *    probes run while the thread sets up (or restarts) its ring fires their
 *    per-event sites, as an exiting thread's do.
 *  - The flush site is a 1-byte nop (an int3 trap, ~1 us), not the nop5
 *    the kernel turns into a call: Linux 6.18 does not copy that call's
 *    trampoline page into a forked child, whose copy of the patched site
 *    then jumps to nowhere. Flushes are rare (2 per 127 pairs), and no
 *    site is patched at its first hit inside a measured interval.
 *  - Partial rings are drained by the tracer when the thread exits or
 *    execs, and at its reports and stop (it reads the process's memory).
 * Without batching (other architectures, or SP_PROBES_NO_BATCH defined),
 * every probe is per-event and sptrace, finding no sp:flush, traces so.
 */
#ifndef SP_PROBE_H
#define SP_PROBE_H

#if defined(SP_PROBES_DISABLE) || !(defined(__GNUC__) || defined(__clang__)) || !defined(__ELF__)

#define SP_PROBE(...) ((void)0)
#define SP_ENABLED() 0
#define SP_QUERY_BEGIN(q) ((void)(q))
#define SP_QUERY_END(q) ((void)(q))
#define SP_QUERY_BEGIN_KEY(q, key) ((void)(q), (void)(key))
#define SP_QUERY_END_KEY(q, key) ((void)(q), (void)(key))
#define SP_CACHE_HIT_KEY(q, key) ((void)(q), (void)(key))
#define SP_QUERY_BEGIN_STR(p, len) ((void)(p), (void)(len))
#define SP_QUERY_END_STR(p, len) ((void)(p), (void)(len))
#define SP_CACHE_HIT_STR(p, len) ((void)(p), (void)(len))
#define SP_QUERY_BEGIN_KEY_STR(q, kp, klen) ((void)(q), (void)(kp), (void)(klen))
#define SP_QUERY_END_KEY_STR(q, kp, klen) ((void)(q), (void)(kp), (void)(klen))
#define SP_CACHE_HIT_KEY_STR(q, kp, klen) ((void)(q), (void)(kp), (void)(klen))
#define SP_SCOPE(q) ((void)(q))
#define SP_CACHE_HIT(q) ((void)(q))
#define SP_INCR_LOAD_BEGIN(q) ((void)(q))
#define SP_INCR_LOAD_END(q) ((void)(q))
#define SP_BLOCKED_BEGIN(q) ((void)(q))
#define SP_BLOCKED_END(q) ((void)(q))
#define SP_MARK(name, key) ((void)(name), (void)(key))
#define SP_ALLOC(type, size, ptr) ((void)(type), (void)(size), (void)(ptr))
#define SP_FREE(type, ptr) ((void)(type), (void)(ptr))
#define SP_THREAD_NAME(name) ((void)(name))

#else /* probes enabled */

/* ---- semaphores --------------------------------------------------------
 * One per probe name. Weak + hidden: every translation unit that includes
 * this header defines it, the linker keeps one per executable or shared
 * object, and a shared object never binds to the executable's copy (its
 * notes point at its own). `used` keeps LTO from dropping it.
 */
#define SP__SEMA(name) sp_##name##_semaphore
#define SP__DECLARE_SEMA(name)                                                 \
	__attribute__((weak, visibility("hidden"), used, section(".probes")))  \
	volatile unsigned short SP__SEMA(name) = 0

#ifdef __cplusplus
extern "C" {
#endif
SP__DECLARE_SEMA(query_begin);
SP__DECLARE_SEMA(query_end);
SP__DECLARE_SEMA(cache_hit);
SP__DECLARE_SEMA(incr_load_begin);
SP__DECLARE_SEMA(incr_load_end);
SP__DECLARE_SEMA(blocked_begin);
SP__DECLARE_SEMA(blocked_end);
SP__DECLARE_SEMA(mark);
SP__DECLARE_SEMA(alloc);
SP__DECLARE_SEMA(free);
SP__DECLARE_SEMA(thread_name);
SP__DECLARE_SEMA(flush);
SP__DECLARE_SEMA(tsc);
#ifdef __cplusplus
}
#endif

/* True while any tracer is attached to one of the standard probes. */
#define SP_ENABLED()                                                           \
	(__builtin_expect((SP__SEMA(query_begin) | SP__SEMA(cache_hit) |       \
			   SP__SEMA(incr_load_begin) | SP__SEMA(blocked_begin) | \
			   SP__SEMA(mark) | SP__SEMA(alloc) | SP__SEMA(free) |  \
			   SP__SEMA(thread_name) | SP__SEMA(flush)) != 0, 0))

/* ---- the probe site ------------------------------------------------------ */
#define SP__STR_(x) #x
#define SP__STR(x) SP__STR_(x)

#if defined(__x86_64__)
/* 0f 1f 44 00 00 = nopl 0x0(%rax,%rax,1), the nop the kernel optimizes. */
#define SP__NOP "lea -128(%%rsp), %%rsp\n990: .byte 0x0f, 0x1f, 0x44, 0x00, 0x00\nlea 128(%%rsp), %%rsp\n"
/* The sp:flush site: a 1-byte nop, which the kernel leaves as an int3 trap
 * (see BATCHED EVENTS for why); the red-zone steps stay, harmless. */
#define SP__NOP_FLUSH "lea -128(%%rsp), %%rsp\n990: nop\nlea 128(%%rsp), %%rsp\n"
#define SP__ADDR ".8byte"
#define SP__ALIGN_WORD ".balign 8"
#elif defined(__i386__)
#define SP__NOP "990: nop\n"
#define SP__ADDR ".4byte"
#define SP__ALIGN_WORD ".balign 4"
#elif defined(__aarch64__) || defined(__riscv) || defined(__powerpc64__)
#define SP__NOP "990: nop\n"
#define SP__ADDR ".8byte"
#define SP__ALIGN_WORD ".balign 8"
#else
#define SP__NOP "990: nop\n"
#define SP__ADDR ".long"
#define SP__ALIGN_WORD ".balign 4"
#endif

/*
 * The note: namesz, descsz, type 3, "stapsdt", then pc, base, semaphore and
 * the strings. "?" puts it in the section group of the function around it, so
 * a discarded COMDAT copy of an inline function takes its notes with it.
 * `.stapsdt.base` is a one-byte COMDAT section the tracer uses to detect
 * prelinking.
 */
#define SP__NOTE(name, argfmt)                                                 \
	".ifndef _.stapsdt.base\n"                                             \
	".pushsection .stapsdt.base,\"aG\",\"progbits\",.stapsdt.base,comdat\n" \
	".weak _.stapsdt.base\n"                                               \
	".hidden _.stapsdt.base\n"                                             \
	"_.stapsdt.base: .space 1\n"                                           \
	".size _.stapsdt.base, 1\n"                                            \
	".popsection\n"                                                        \
	".endif\n"                                                             \
	".pushsection .note.stapsdt,\"?\",\"note\"\n"                          \
	".balign 4\n"                                                          \
	".4byte 992f-991f, 994f-993f, 3\n"                                     \
	"991: .asciz \"stapsdt\"\n"                                            \
	"992: .balign 4\n"                                                     \
	"993: " SP__ADDR " 990b\n"                                             \
	SP__ADDR " _.stapsdt.base\n"                                           \
	SP__ADDR " " SP__STR(SP__SEMA(name)) "\n"                              \
	".asciz \"sp\"\n"                                                      \
	".asciz \"" #name "\"\n"                                               \
	".asciz \"" argfmt "\"\n"                                              \
	"994: .balign 4\n"                                                     \
	".popsection\n"

/* Argument n as a 64-bit register operand; "%" is doubled because the
 * string is an asm template: "-8@%0" prints as "-8@%rdi". */
#define SP__A(n) "-8@%" #n
#define SP__ARGFMT0 ""
#define SP__ARGFMT1 SP__A(0)
#define SP__ARGFMT2 SP__A(0) " " SP__A(1)
#define SP__ARGFMT3 SP__ARGFMT2 " " SP__A(2)
#define SP__ARGFMT4 SP__ARGFMT3 " " SP__A(3)
#define SP__ARGFMT5 SP__ARGFMT4 " " SP__A(4)
#define SP__ARGFMT6 SP__ARGFMT5 " " SP__A(5)

/* The semaphore of a generic SP_PROBE(name) has no C definition (the name
 * is only known at the site), so the site's asm defines it, once per object
 * thanks to .ifndef and weak: hidden, 2 bytes in .probes. */
#define SP__SEMA_DEF(name)                                                     \
	".ifndef " SP__STR(SP__SEMA(name)) "\n"                                \
	".pushsection .probes,\"aw\",\"progbits\"\n"                           \
	".weak " SP__STR(SP__SEMA(name)) "\n"                                  \
	".hidden " SP__STR(SP__SEMA(name)) "\n"                                \
	".balign 2\n"                                                          \
	SP__STR(SP__SEMA(name)) ": .zero 2\n"                                  \
	".popsection\n"                                                        \
	".endif\n"

#define SP__ASM(semadef, name, n, ...)                                         \
	__asm__ __volatile__(semadef SP__NOP SP__NOTE(name, SP__ARGFMT##n)     \
			     : : __VA_ARGS__ : "memory")
#ifndef SP__NOP_FLUSH
#define SP__NOP_FLUSH SP__NOP
#endif
#define SP__ASM_FLUSH(arg)                                                     \
	__asm__ __volatile__(SP__NOP_FLUSH SP__NOTE(flush, SP__ARGFMT1)        \
			     : : SP__V(arg) : "memory")
#define SP__ASM0(semadef, name)                                                \
	__asm__ __volatile__(semadef SP__NOP SP__NOTE(name, SP__ARGFMT0)       \
			     : : : "memory")

/* Integer or pointer as a 64-bit register operand. */
#define SP__V(x) "r"((long long)(x))

/*
 * A site: test the semaphore (hot path: one load, one predicted branch),
 * and only when a tracer is attached run the argument set-up and the nop.
 * `sema` is the semaphore lvalue; `semadef` the asm that defines it, if any.
 */
#define SP__IF(sema) if (__builtin_expect((sema) != 0, 0))
#define SP__SITE0_(sema, semadef, name)                                        \
	do { SP__IF(sema) SP__ASM0(semadef, name); } while (0)
#define SP__SITE_(sema, semadef, name, n, ...)                                 \
	do { SP__IF(sema) SP__ASM(semadef, name, n, __VA_ARGS__); } while (0)

/* Standard probes: semaphores defined above in C. */
#define SP__SITE1(name, a) SP__SITE_(SP__SEMA(name), "", name, 1, SP__V(a))
#define SP__SITE2(name, a, b)                                                  \
	SP__SITE_(SP__SEMA(name), "", name, 2, SP__V(a), SP__V(b))
#define SP__SITE3(name, a, b, c)                                               \
	SP__SITE_(SP__SEMA(name), "", name, 3, SP__V(a), SP__V(b), SP__V(c))

/*
 * SP_PROBE(name, args...): count the arguments (0..6) and pick the site.
 * The block-scope declaration names the asm-defined semaphore through an
 * asm label, so C++ namespaces cannot mangle it.
 */
#define SP__NARG_(_0, _1, _2, _3, _4, _5, _6, N, ...) N
#define SP__NARG(...) SP__NARG_(__VA_ARGS__, 6, 5, 4, 3, 2, 1, 0, 0)
#define SP__CAT_(a, b) a##b
#define SP__CAT(a, b) SP__CAT_(a, b)

#define SP__GSITE(name, n, ...)                                                \
	do {                                                                   \
		extern volatile unsigned short SP__CAT(sp__gsema_, name)       \
			__asm__(SP__STR(SP__SEMA(name)))                       \
			__attribute__((visibility("hidden")));                 \
		SP__IF(SP__CAT(sp__gsema_, name)) SP__ASM(SP__SEMA_DEF(name), name, n,          \
					 __VA_ARGS__);                          \
	} while (0)
#define SP__GSITE0(name)                                                       \
	do {                                                                   \
		extern volatile unsigned short SP__CAT(sp__gsema_, name)       \
			__asm__(SP__STR(SP__SEMA(name)))                       \
			__attribute__((visibility("hidden")));                 \
		SP__IF(SP__CAT(sp__gsema_, name)) SP__ASM0(SP__SEMA_DEF(name), name);           \
	} while (0)

#define SP_PROBE(...) SP__CAT(SP__PROBE_, SP__NARG(__VA_ARGS__))(__VA_ARGS__)
#define SP__PROBE_0(name) SP__GSITE0(name)
#define SP__PROBE_1(name, a) SP__GSITE(name, 1, SP__V(a))
#define SP__PROBE_2(name, a, b) SP__GSITE(name, 2, SP__V(a), SP__V(b))
#define SP__PROBE_3(name, a, b, c)                                             \
	SP__GSITE(name, 3, SP__V(a), SP__V(b), SP__V(c))
#define SP__PROBE_4(name, a, b, c, d)                                          \
	SP__GSITE(name, 4, SP__V(a), SP__V(b), SP__V(c), SP__V(d))
#define SP__PROBE_5(name, a, b, c, d, e)                                       \
	SP__GSITE(name, 5, SP__V(a), SP__V(b), SP__V(c), SP__V(d), SP__V(e))
#define SP__PROBE_6(name, a, b, c, d, e, f)                                    \
	SP__GSITE(name, 6, SP__V(a), SP__V(b), SP__V(c), SP__V(d), SP__V(e),   \
		  SP__V(f))

/* ---- names made at run time (SP_QUERY_BEGIN_STR, SP_*_KEY_STR) ----------
 * The tracer keys rows by the address of a NUL-terminated name and reads
 * the text once per address, so a name built at run time (not
 * NUL-terminated, any bytes, in a buffer that changes) is first copied,
 * once per distinct text, into a table of this object: every later call
 * with the same text gets the same address, from any thread. Rust's
 * Name::intern_bytes() (probes/rust/src/intern.rs) stores a text the same
 * way (the cut below, the same FNV-1a), so one text is one row in sptrace
 * whichever language named it (sptrace merges rows by their text).
 *  - Only while a tracer is attached: a disabled probe still costs one
 *    load and one branch; the table is mapped at the first enabled use.
 *  - Lock-free and malloc-free (a probe may sit in an allocator or a
 *    signal handler): a text is copied into the arena, then its slot is
 *    published by one compare-and-swap; a thread that loses that race to
 *    the same text takes the winner's copy. So a text has one address in
 *    the object, always: a BEGIN and its END meet on the tracer's stack.
 *  - A text over SP__NAME_MAX bytes (sptrace's limit) keeps its first
 *    SP__CUT_KEEP bytes (not ending inside a UTF-8 sequence), then '~' and
 *    16 hex digits of the whole text's FNV-1a: two long names stay apart.
 *  - Table or arena full (or no mmap): the name is "<intern-full>" and
 *    sp__intern_full counts the texts that got it.
 */
#define SP__NAME_MAX 127		/* SP_NAME_LEN - 1 */
#define SP__CUT_KEEP (SP__NAME_MAX - 17)
#ifndef SP__INTERN_SLOTS		/* a test may make it small */
#define SP__INTERN_SLOTS 65536u		/* a power of two */
#endif
#define SP__INTERN_ARENA (8ul << 20)	/* 8 MiB, touched as used */

#ifdef __cplusplus
extern "C" {
#endif
#if defined(__linux__)
void *sp__mmap(void *, unsigned long, int, int, int, long) __asm__("mmap");
int sp__munmap(void *, unsigned long) __asm__("munmap");
#endif

/* A slot is the address of a copy (NULL: free), published by one
 * compare-and-swap once the copy is complete: a reader never waits for a
 * writer (which may be the very thread it interrupted, in a signal
 * handler) and never sees half a copy. Each copy is preceded by the hash
 * of its text, so a probe of a slot reads one word before the text. */
struct sp__intern_tab {
	const char *slot[SP__INTERN_SLOTS];
	unsigned long used;		/* arena bytes handed out */
	char arena[SP__INTERN_ARENA] __attribute__((aligned(8)));
};

/* One per executable or shared object, like the semaphores. */
__attribute__((weak, visibility("hidden"))) struct sp__intern_tab *sp__intern_tab;
__attribute__((weak, visibility("hidden"))) unsigned long long sp__intern_full;

static __inline__ __attribute__((always_inline, unused)) unsigned long long
sp__fnv1a(const unsigned char *p, unsigned long n)
{
	unsigned long long h = 0xcbf29ce484222325ull;

	while (n--)
		h = (h ^ *p++) * 0x100000001b3ull;
	return h;
}

/* The table, mapped by the first caller; a caller that loses the race
 * unmaps its own (no lock: a signal handler may be the second caller). */
static __inline__ __attribute__((always_inline, unused)) struct sp__intern_tab *
sp__intern_table(void)
{
	struct sp__intern_tab *t = __atomic_load_n(&sp__intern_tab,
						   __ATOMIC_ACQUIRE), *none = 0;
#if defined(__linux__)
	void *m;

	if (t)
		return t;
	/* PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS|MAP_NORESERVE:
	 * pages cost memory only once a copy is written there. */
	m = sp__mmap(0, sizeof(*t), 3, 0x4022, -1, 0);
	if (m == (void *)-1)
		return 0;
	t = (struct sp__intern_tab *)m;
	if (!__atomic_compare_exchange_n(&sp__intern_tab, &none, t, 0,
					 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		(void)sp__munmap(m, sizeof(*t));
		t = none;
	}
#endif
	return t;
}

/* A NUL-terminated copy of text in the arena after its hash h (8-byte
 * aligned), or NULL when the arena is full. */
static __inline__ __attribute__((always_inline, unused)) const char *
sp__intern_copy(struct sp__intern_tab *t, const unsigned char *text,
		unsigned long len, unsigned long long h)
{
	unsigned long need = (8 + len + 1 + 7) & ~7ul, i;
	unsigned long used = __atomic_load_n(&t->used, __ATOMIC_RELAXED);
	char *p;

	do {
		if (used + need > SP__INTERN_ARENA)
			return 0;
	} while (!__atomic_compare_exchange_n(&t->used, &used, used + need,
					      1, __ATOMIC_RELAXED,
					      __ATOMIC_RELAXED));
	p = t->arena + used;
	*(unsigned long long *)(void *)p = h;
	p += 8;
	for (i = 0; i < len; i++)
		p[i] = (char)text[i];
	p[len] = 0;
	return p;
}

/* What a text that finds no room is named. */
static __inline__ __attribute__((always_inline, unused)) const char *
sp__intern_none(void)
{
	__atomic_fetch_add(&sp__intern_full, 1, __ATOMIC_RELAXED);
	return "<intern-full>";
}

/*
 * The one copy of the `len` bytes at `text` (see above): found, or made.
 * Not inlined: it runs only while a tracer is attached.
 */
static __attribute__((noinline, unused)) const char *
sp__intern(const void *text, unsigned long len)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *s = (const unsigned char *)text;
	unsigned char cut[SP__NAME_MAX];
	struct sp__intern_tab *t = sp__intern_table();
	const char *cur, *mine = 0;
	unsigned long long h;
	unsigned long keep, i;

	if (!t)
		return sp__intern_none();
	if (len > SP__NAME_MAX) {
		keep = SP__CUT_KEEP;
		while (keep > 0 && (s[keep] & 0xc0) == 0x80)
			keep--;		/* not inside a UTF-8 sequence */
		h = sp__fnv1a(s, len);
		for (i = 0; i < keep; i++)
			cut[i] = s[i];
		cut[keep] = '~';
		for (i = 0; i < 16; i++)
			cut[keep + 1 + i] = (unsigned char)hex[(h >> (60 - 4 * i)) & 0xf];
		s = cut;
		len = keep + 17;
	}
	h = sp__fnv1a(s, len);
	for (i = 0; i < SP__INTERN_SLOTS; i++) {
		const char **sl = &t->slot[(h + i) & (SP__INTERN_SLOTS - 1)];

		cur = __atomic_load_n(sl, __ATOMIC_ACQUIRE);
		if (!cur) {
			/* Copied before it is claimed: a thread that loses
			 * the race to the same text leaves its copy unused
			 * (a few bytes, only under contention). */
			if (!mine)
				mine = sp__intern_copy(t, s, len, h);
			if (!mine)
				return sp__intern_none();
			if (__atomic_compare_exchange_n(sl, &cur, mine, 0,
							__ATOMIC_ACQ_REL,
							__ATOMIC_ACQUIRE))
				return mine;
		}
		if (*(const unsigned long long *)(const void *)(cur - 8) != h)
			continue;
		for (keep = 0; keep < len && (unsigned char)cur[keep] == s[keep];
		     keep++)
			;
		if (keep == len && !cur[len])
			return cur;
	}
	return sp__intern_none();
}
#ifdef __cplusplus
}
#endif

/* ---- batched events (see BATCHED EVENTS above) ------------------------- */
#if !defined(SP_PROBES_NO_BATCH) && defined(__linux__) &&                     \
	(defined(__x86_64__) || defined(__aarch64__))
#define SP__BATCH 1
#define SP__BATCH_CAP 256		/* records per ring, a power of two */
#define SP__BATCH_MAGIC 0x3168637461627073ull	/* "spbatch1" */
#define SP__BATCH_AGE_NS 10000000ull	/* flush a batch older than 10 ms */

/* Record kinds (include/sptrace/batch_abi.h: enum sp_batch_kind). */
#define SP__K_QUERY_BEGIN 1
#define SP__K_QUERY_END 2
#define SP__K_BLOCKED_BEGIN 3
#define SP__K_BLOCKED_END 4
#define SP__K_INCR_LOAD_BEGIN 5
#define SP__K_INCR_LOAD_END 6
#define SP__K_CACHE_HIT 7
#define SP__K_PAUSE 8		/* the flush before it took `arg` ns */
#define SP__K_TSC 0x100		/* flag: ts (and a PAUSE's arg) in TSC ticks */
#define SP__K_KEY 0x200		/* flag: `arg` is the query's key */
#define SP__K_KEY_TEXT 0x400	/* flag with SP__K_KEY: the key is the address
				 * of an interned text (sp__intern()) */

#ifdef __cplusplus
extern "C" {
#endif
struct sp__batch_rec {
	unsigned long long ts;		/* CLOCK_MONOTONIC, ns */
	unsigned long long name;
	unsigned long long arg;
	unsigned int kind;
	unsigned int commit;		/* low 32 bits of (sequence + 1) */
};

struct sp__batch {
	unsigned long long magic;
	volatile unsigned long long seq;	/* records reserved, ever */
	unsigned long long flushed;	/* seq at the last full/age flush */
	void *volatile owner;		/* &sp__batch_tls of its thread */
	struct sp__batch *next;		/* every ring of this object */
	volatile unsigned long long busy;	/* appends in progress (signals) */
	struct sp__batch *volatile *slot;	/* its place in sp__batch_dirs */
	unsigned long long pad;
	struct sp__batch_rec rec[SP__BATCH_CAP];
};

/* A page of the object's ring directory: every ring it mapped and has not
 * unmapped, so that an unload finds the rings of every thread. */
#define SP__BATCH_DIR_SLOTS 511
struct sp__batch_dir {
	struct sp__batch_dir *next;
	struct sp__batch *volatile slot[SP__BATCH_DIR_SLOTS];
};

/* Weak + hidden like the semaphores: one of each per executable or shared
 * object. TLS is only a pointer (dlopen'ed objects get little static TLS). */
__attribute__((weak, visibility("hidden"))) __thread struct sp__batch *sp__batch_tls;
__attribute__((weak, visibility("hidden"))) struct sp__batch *sp__batch_list;
__attribute__((weak, visibility("hidden"))) struct sp__batch_dir *sp__batch_dirs;
/* The pthread key whose destructor unmaps a thread's ring: state 0 not
 * tried, 1 being created, 2 ready, 3 none (rings go on the list), 4 the
 * object is being unloaded (sp__batch_unload()). */
__attribute__((weak, visibility("hidden"))) unsigned int sp__batch_key;
__attribute__((weak, visibility("hidden"))) int sp__batch_key_state;
/* How this object will be unloaded (see sp__batch_unload()): 0 not known
 * yet, 1 unknown, 2 an exit handler watches for the process's exit, 3 the
 * process exits (that handler ran). */
__attribute__((weak, visibility("hidden"))) int sp__batch_exit_state;
/* In TLS once the thread's ring is gone: probes fire per-event sites. */
#define SP__BATCH_GONE ((struct sp__batch *)1)
/* In TLS while the thread sets its ring up (or restarts it): a signal
 * handler's probe fires its per-event site rather than touch a ring whose
 * setup it interrupted. */
#define SP__BATCH_SETUP ((struct sp__batch *)2)
#define SP__BATCH_KEYS_FREE 32	/* glibc's keys without malloc'ed storage */

/* libc's functions under private names: no header, no feature macro, and
 * no clash with the program's own declarations. */
struct sp__timespec {
	long tv_sec;
	long tv_nsec;
};
int sp__clock_gettime(int, struct sp__timespec *) __asm__("clock_gettime");
int sp__madvise(void *, unsigned long, int) __asm__("madvise");
/* Weak: a program linked without them (glibc < 2.34 without -pthread, a
 * static link) keeps rings on the list. pthread_key_t is unsigned int in
 * glibc and musl. */
int sp__key_create(unsigned int *, void (*)(void *))
	__asm__("pthread_key_create") __attribute__((weak));
int sp__key_delete(unsigned int) __asm__("pthread_key_delete")
	__attribute__((weak));
int sp__setspecific(unsigned int, const void *)
	__asm__("pthread_setspecific") __attribute__((weak));
/* Weak: an object linked without them (no crtbegin, no __cxa_atexit)
 * cannot tell a dlclose from the process's exit, and unloads as at exit. */
int sp__cxa_atexit(void (*)(void *), void *, void *)
	__asm__("__cxa_atexit") __attribute__((weak));
extern void *sp__dso_handle __asm__("__dso_handle")
	__attribute__((weak, visibility("hidden")));

static __inline__ __attribute__((always_inline, unused)) unsigned long long
sp__now(void)
{
	struct sp__timespec t;

	sp__clock_gettime(1 /* CLOCK_MONOTONIC */, &t);
	return (unsigned long long)t.tv_sec * 1000000000ull +
	       (unsigned long long)t.tv_nsec;
}

/* The timestamp of a record: the TSC when the tracer asked for it (it
 * raises sp_tsc_semaphore only where the kernel's own clock is the TSC, and
 * converts with its calibration), else CLOCK_MONOTONIC. *flag says which. */
static __inline__ __attribute__((always_inline, unused)) unsigned long long
sp__stamp(unsigned int *flag)
{
#if defined(__x86_64__)
	if (SP__SEMA(tsc)) {
		unsigned int lo, hi;

		__asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
		*flag = SP__K_TSC;
		return ((unsigned long long)hi << 32) | lo;
	}
#endif
	*flag = 0;
	return sp__now();
}

/* The sp:flush site, one per translation unit as before thread exits
 * used it too (its semaphore counts sites: a tracer raises it once each). */
static __attribute__((noinline, unused)) void sp__batch_trap(struct sp__batch *b)
{
	SP__ASM_FLUSH(b);
}

/* Puts ring b in the object's directory (where it already is, for a ring a
 * fork wiped: the child's copy of the directory names it). Lock-free: a
 * slot is taken by compare-and-swap, a page pushed like a list head. If no
 * page can be mapped, the ring stays out of it: an unload then leaves it
 * mapped, as its own thread's exit does not. */
static __attribute__((noinline, unused)) void sp__batch_dir_add(struct sp__batch *b)
{
	struct sp__batch_dir *d, *head;
	struct sp__batch *none;
	unsigned int i;
	void *p;

	for (d = __atomic_load_n(&sp__batch_dirs, __ATOMIC_ACQUIRE); d; d = d->next)
		for (i = 0; i < SP__BATCH_DIR_SLOTS; i++)
			if (d->slot[i] == b) {
				b->slot = &d->slot[i];
				return;
			}
	for (d = __atomic_load_n(&sp__batch_dirs, __ATOMIC_ACQUIRE); d; d = d->next)
		for (i = 0; i < SP__BATCH_DIR_SLOTS; i++) {
			none = 0;
			if (!d->slot[i] &&
			    __atomic_compare_exchange_n(&d->slot[i], &none, b, 0,
							__ATOMIC_ACQ_REL,
							__ATOMIC_RELAXED)) {
				b->slot = &d->slot[i];
				return;
			}
		}
	/* PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS */
	p = sp__mmap(0, sizeof(struct sp__batch_dir), 3, 0x22, -1, 0);
	if (p == (void *)-1)
		return;
	d = (struct sp__batch_dir *)p;
	d->slot[0] = b;
	b->slot = &d->slot[0];
	head = sp__batch_dirs;
	do
		d->next = head;
	while (!__atomic_compare_exchange_n(&sp__batch_dirs, &head, d, 0,
					    __ATOMIC_RELEASE, __ATOMIC_RELAXED));
}

/* Ring b's last flush, with its owner cleared (the tracer drains it under
 * the thread that registered it, and forgets its address), then its
 * unmap. */
static __attribute__((noinline, unused)) void sp__batch_release(struct sp__batch *b)
{
	if (b->magic == SP__BATCH_MAGIC) {
		b->owner = 0;
		__asm__ __volatile__("" ::: "memory");
		if (SP__SEMA(flush))
			sp__batch_trap(b);
	}
	(void)sp__munmap(b, sizeof(*b));
}

/*
 * Thread exit (the key's destructor; see BATCHED EVENTS): mark the thread,
 * then release its ring. Weak and hidden like the rest: one per object, in
 * the object whose key it serves. The ring is released by whoever takes
 * its directory slot: this thread, or an unload running meanwhile.
 */
__attribute__((weak, visibility("hidden"), noinline)) void
sp__batch_exit(void *p)
{
	struct sp__batch *b = (struct sp__batch *)p;
	struct sp__batch *volatile *slot = b->slot;

	sp__batch_tls = SP__BATCH_GONE;	/* before anything a signal can see */
	__asm__ __volatile__("" ::: "memory");
	if (slot && !__atomic_compare_exchange_n(slot, &b, (struct sp__batch *)0,
						 0, __ATOMIC_ACQ_REL,
						 __ATOMIC_RELAXED))
		return;		/* the unload's now */
	sp__batch_release(b);
}

/* Is this object's thread-local storage in the calling thread's static TLS
 * block (next to the thread pointer), where the loader puts that of the
 * objects it maps at start (the executable, its libraries, LD_PRELOAD)?
 * Those are never unloaded: their destructors run at exit only. A dlopen'ed
 * object's is allocated apart, unless the loader found room there (then
 * this says yes, and an unload of it leaves other threads' rings mapped). */
static __inline__ __attribute__((always_inline, unused)) int
sp__batch_static_tls(void)
{
	unsigned long tp, v = (unsigned long)&sp__batch_tls;

#if defined(__x86_64__)
	__asm__("mov %%fs:0, %0" : "=r"(tp));	/* below TP: variant II */
	return v < tp && tp - v < (1ul << 20);
#else
	__asm__("mrs %0, tpidr_el0" : "=r"(tp));	/* above TP: variant I */
	return v >= tp && v - tp < (1ul << 20);
#endif
}

/* The process is exiting (see sp__batch_unload()). */
__attribute__((weak, visibility("hidden"))) void sp__batch_at_exit(void *p)
{
	(void)p;
	__atomic_store_n(&sp__batch_exit_state, 3, __ATOMIC_RELEASE);
}

/* Runs once per translation unit that included this header: the first
 * registers the exit handler of a dlopen'ed object (see below). */
__attribute__((weak, visibility("hidden"), constructor)) void
sp__batch_load(void)
{
	int none = 0;

	if (!__atomic_compare_exchange_n(&sp__batch_exit_state, &none, 1, 0,
					 __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
		return;
	if (&sp__dso_handle && sp__cxa_atexit && !sp__batch_static_tls() &&
	    !sp__cxa_atexit(sp__batch_at_exit, 0, &sp__dso_handle))
		__atomic_store_n(&sp__batch_exit_state, 2, __ATOMIC_RELEASE);
}

/*
 * dlclose of this object, or exit: no thread may call sp__batch_exit()
 * once the code is gone, and no ring may outlive the object. Runs once per
 * translation unit that included this header (each adds the entry), so only
 * the first does anything: the key goes, then the calling thread's ring
 * (released as at its exit). The rings of the other threads go only at a
 * dlclose, when, by dlclose's own contract, none of them runs this
 * object's code: at exit they may still be running it, and would crash on
 * an unmapped ring. A dlopen'ed object tells the two apart by an exit
 * handler (registered with its __dso_handle by sp__batch_load()): the
 * process's exit runs it before the destructors of such an object, and a
 * dlclose after them (__cxa_finalize() from crtbegin's destructor, the
 * last). An object loaded at start (static TLS) is only unloaded at exit.
 */
__attribute__((weak, visibility("hidden"), destructor)) void
sp__batch_unload(void)
{
	struct sp__batch_dir *d, *next;
	struct sp__batch *b;
	int ready = 2, others;
	unsigned int i;

	if (!__atomic_compare_exchange_n(&sp__batch_key_state, &ready, 4, 0,
					 __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
		ready = 3;	/* no key: rings on the list */
		if (!__atomic_compare_exchange_n(&sp__batch_key_state, &ready, 4,
						 0, __ATOMIC_ACQ_REL,
						 __ATOMIC_RELAXED))
			return;	/* no ring ever, or done */
	} else if (sp__key_delete) {
		(void)sp__key_delete(sp__batch_key);
	}
	others = __atomic_load_n(&sp__batch_exit_state, __ATOMIC_ACQUIRE) == 2;
	b = sp__batch_tls;
	sp__batch_tls = SP__BATCH_GONE;
	__asm__ __volatile__("" ::: "memory");
	if ((unsigned long)b > 2 && b->magic == SP__BATCH_MAGIC &&
	    (!b->slot || __atomic_compare_exchange_n(b->slot, &b,
						     (struct sp__batch *)0, 0,
						     __ATOMIC_ACQ_REL,
						     __ATOMIC_RELAXED)))
		sp__batch_release(b);
	if (!others)
		return;
	for (d = sp__batch_dirs; d; d = next) {
		for (i = 0; i < SP__BATCH_DIR_SLOTS; i++) {
			b = __atomic_exchange_n(&d->slot[i], (struct sp__batch *)0,
						__ATOMIC_ACQ_REL);
			if (b)
				sp__batch_release(b);
		}
		next = d->next;
		(void)sp__munmap(d, sizeof(*d));
	}
	sp__batch_dirs = 0;
}

/* The key, created by the first thread that needs it; 1 if ready. Another
 * thread (or a signal handler) that finds it being created keeps its ring
 * on the list, as if there were none. */
static __inline__ __attribute__((always_inline, unused)) int
sp__batch_key_ready(void)
{
	int st = __atomic_load_n(&sp__batch_key_state, __ATOMIC_ACQUIRE);
	unsigned int k;

	if (st == 0 && sp__key_create && sp__setspecific &&
	    __atomic_compare_exchange_n(&sp__batch_key_state, &st, 1, 0,
					__ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
		st = 3;
		if (!sp__key_create(&k, sp__batch_exit)) {
			if (k < SP__BATCH_KEYS_FREE) {
				sp__batch_key = k;
				st = 2;
			} else if (sp__key_delete) {
				(void)sp__key_delete(k);
			}
		}
		__atomic_store_n(&sp__batch_key_state, st, __ATOMIC_RELEASE);
	} else if (st == 0) {
		st = 3;
		__atomic_store_n(&sp__batch_key_state, 3, __ATOMIC_RELEASE);
	}
	return st == 2;
}

/* (Re)starts ring b for the calling thread. */
static __inline__ __attribute__((always_inline, unused)) void
sp__batch_start(struct sp__batch *b, void *me)
{
	/* The tracer drains [consumed, seq) of a ring it learns about; a
	 * reused ring's old records were drained when its thread exited. */
	b->owner = me;
	b->seq = 0;
	b->flushed = 0;
	b->busy = 0;
	__asm__ __volatile__("" ::: "memory");
	b->magic = SP__BATCH_MAGIC;
}

/* A new ring, zeroed, that a fork gives the child zeroed again; NULL if
 * mmap failed. */
static __inline__ __attribute__((always_inline, unused)) struct sp__batch *
sp__batch_map(void)
{
	/* PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS */
	void *p = sp__mmap(0, sizeof(struct sp__batch), 3, 0x22, -1, 0);

	if (p == (void *)-1)
		return 0;
	(void)sp__madvise(p, sizeof(struct sp__batch), 18 /* MADV_WIPEONFORK */);
	return (struct sp__batch *)p;
}

/* The calling thread's ring: its own (restarted if a fork wiped it), a new
 * mapping whose key destructor unmaps it, or, without a key, one from the
 * list (a dead thread's left in this TLS slot) or a new one put there.
 * NULL if none can be had, or the thread is exiting or in the middle of
 * this very setup (a signal handler's probe): the caller fires the
 * per-event site. Async-signal-safe: no lock, no malloc.
 *
 * TLS holds SP__BATCH_SETUP for the whole setup, claimed from the value the
 * caller saw: a restart (seq and flushed to 0) must never run over records
 * a signal handler's probes appended meanwhile. Before, a handler that ran
 * between the caller's look at TLS (empty) and this function's made a ring
 * and appended to it, and this function took that live ring for one wiped
 * by a fork and restarted it: the handler's undrained records were lost and
 * the caller's first record was not drained (a CI run of e2e_batch's
 * signal test under ASan: 1 work pair and 2 handler pairs lost). */
static __attribute__((noinline, unused)) struct sp__batch *sp__batch_get(void)
{
	void *me = (void *)&sp__batch_tls;
	struct sp__batch *b = sp__batch_tls, *head;
	void *none;

	/* sp:tsc: its semaphore asks for TSC stamps (see sp__stamp()); its
	 * hit marks the slow path, so a tracer can tell a probe that then
	 * falls back to its per-event site (no ring) from one compiled
	 * without batching. Keep it first, before any return. */
	__asm__ __volatile__(SP__NOP_FLUSH SP__NOTE(tsc, "") : : : "memory");

	if (b == SP__BATCH_GONE || b == SP__BATCH_SETUP)
		return 0;
	/* Made by a signal handler after the caller looked: use it. */
	if (b && b->magic == SP__BATCH_MAGIC)
		return b;
	/* A handler can change TLS only by completing a setup of its own
	 * before this CAS: then that ring is the thread's. */
	if (!__atomic_compare_exchange_n(&sp__batch_tls, &b, SP__BATCH_SETUP, 0,
					 __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		return b == SP__BATCH_GONE || b == SP__BATCH_SETUP ? 0 : b;
	__asm__ __volatile__("" ::: "memory");
	if (b) {
		/* Ours, wiped by a fork: the child's only thread restarts it
		 * (busy too: the wipe may have cut an append short), and finds
		 * its slot in the directory again (the wipe cleared b->slot). */
		sp__batch_start(b, me);
		sp__batch_dir_add(b);
	} else if (sp__batch_key_ready()) {
		b = sp__batch_map();
		if (b) {
			sp__batch_start(b, me);
			sp__batch_dir_add(b);
			if (sp__setspecific(sp__batch_key, b)) {
				/* Cannot happen below key 32; if it did,
				 * keep the ring (never unmapped) rather than
				 * lose events. */
			}
		}
	} else {
		for (b = sp__batch_list; b; b = b->next) {
			none = 0;
			if (b->owner == me ||
			    (!b->owner &&
			     __atomic_compare_exchange_n(&b->owner, &none, me, 0,
							 __ATOMIC_ACQ_REL,
							 __ATOMIC_RELAXED)))
				break;
		}
		if (!b) {
			b = sp__batch_map();
			if (b) {
				sp__batch_dir_add(b);
				b->owner = me;
				head = sp__batch_list;
				do
					b->next = head;
				while (!__atomic_compare_exchange_n(&sp__batch_list,
								    &head, b, 0,
								    __ATOMIC_RELEASE,
								    __ATOMIC_RELAXED));
			}
		}
		if (b)
			sp__batch_start(b, me);
	}
	__asm__ __volatile__("" ::: "memory");
	sp__batch_tls = b;	/* NULL after a failed mmap: tried again */
	return b;
}

/* Reserves the next record: one instruction that a signal cannot split
 * (on x86-64 an xadd without lock: only this thread writes the ring). */
static __inline__ __attribute__((always_inline, unused)) unsigned long long
sp__batch_reserve(struct sp__batch *b)
{
#if defined(__x86_64__)
	unsigned long long i = 1;

	__asm__ __volatile__("xaddq %0, %1" : "+r"(i), "+m"(b->seq) : : "memory");
	return i;
#else
	return __atomic_fetch_add(&b->seq, 1, __ATOMIC_RELAXED);
#endif
}

/* Writes record number i: reserved first, committed last. */
static __inline__ __attribute__((always_inline, unused)) void
sp__batch_put(struct sp__batch *b, unsigned long long i, unsigned int kind,
	      unsigned long long ts, const void *name, unsigned long long arg)
{
	struct sp__batch_rec *r = &b->rec[i & (SP__BATCH_CAP - 1)];

	r->ts = ts;
	r->name = (unsigned long long)name;
	r->arg = arg;
	r->kind = kind;
	__asm__ __volatile__("" ::: "memory");
	r->commit = (unsigned int)(i + 1);
}

/*
 * The flush, then a PAUSE record of its duration: the tracer moves the
 * start of every open interval of the thread by that much, so the trap, a
 * kernel that patches the site on its first hit, and the drain itself are
 * not charged to the user's queries.
 */
static __attribute__((noinline, unused)) void
sp__batch_flush(struct sp__batch *b, unsigned long long t0, unsigned int clk,
		int full)
{
	unsigned long long f = b->seq, i, t1;
	unsigned int clk2;

	sp__batch_trap(b);
	/* Inside an interrupted append the tracer stopped at its uncommitted
	 * record: the batch is not flushed past it, so flush again soon. */
	if (full && b->busy == 1)
		b->flushed = f;
	i = sp__batch_reserve(b);
	t1 = sp__stamp(&clk2);
	sp__batch_put(b, i, SP__K_PAUSE | clk, t0, 0, clk2 == clk ? t1 - t0 : 0);
}

/* Appends one record; flushes when the batch is new, full or old. 0, or
 * -1 when there is no ring (an exiting thread, no memory): the caller
 * fires the per-event site instead. */
static __attribute__((noinline, unused)) int
sp__batch_add(unsigned int kind, const void *name, unsigned long long arg)
{
	struct sp__batch *b = sp__batch_tls;
	unsigned long long ts, i, f;
	unsigned int clk;

	if (__builtin_expect((unsigned long)b <= 2 /* GONE, SETUP */ ||
			     b->magic != SP__BATCH_MAGIC, 0)) {
		b = sp__batch_get();	/* mmap: before the timestamp */
		if (!b)
			return -1;
	}
	b->busy++;
	ts = sp__stamp(&clk);
	i = sp__batch_reserve(b);	/* reserve, then write, then commit */
	sp__batch_put(b, i, kind | clk, ts, name, arg);
	f = b->flushed;
	if (i == f)		/* first record of a batch: registers the ring */
		sp__batch_flush(b, ts, clk, 0);
	else if (i + 2 - f >= SP__BATCH_CAP - 1 ||
		 /* ~10 ms in ns, or in ticks of a >= 1 GHz TSC (longer on a
		  * slower one; the bound is a latency, not a correctness one) */
		 ts - b->rec[f & (SP__BATCH_CAP - 1)].ts > SP__BATCH_AGE_NS)
		sp__batch_flush(b, ts, clk, 1);
	__asm__ __volatile__("" ::: "memory");
	b->busy--;
	return 0;
}
#ifdef __cplusplus
}
#endif

/* A query probe: a record if batching is on, else the per-event site if
 * its own semaphore is up; both tested with one predicted-not-taken branch.
 * Never both: a batching tracer also attaches the per-event sites of a file
 * (for probes of the same names compiled without batching), so a C site
 * must not fire twice.
 * Where the record cannot be written (no ring: an exiting thread, no
 * memory), the per-event site fires instead, so the event still counts. */
#define SP__QSITE(name, k, a)                                                  \
	do {                                                                   \
		if (__builtin_expect((SP__SEMA(name) | SP__SEMA(flush)) != 0, 0)) { \
			if (!SP__SEMA(flush) || sp__batch_add(k, (a), 0))      \
				SP__ASM("", name, 1, SP__V(a));                \
		}                                                              \
	} while (0)
/* The same with a key: the record's `arg`, the site's second argument. */
#define SP__QSITEK(name, k, a, key)                                            \
	do {                                                                   \
		if (__builtin_expect((SP__SEMA(name) | SP__SEMA(flush)) != 0, 0)) { \
			if (!SP__SEMA(flush) ||                                \
			    sp__batch_add((k) | SP__K_KEY, (a), (key)))       \
				SP__ASM("", name, 2, SP__V(a), SP__V(key));    \
		}                                                              \
	} while (0)
/* A text key (the address of its interned copy): the record's flag, or
 * the per-event site's third argument, 1 (SP_KEY_ARG_TEXT in sptrace's
 * query_abi.h); a two-argument site's key is an integer. Inside a
 * semaphore test already passed. */
#define SP__QSITEKT(name, k, a, key)                                           \
	do {                                                                   \
		if (!SP__SEMA(flush) ||                                        \
		    sp__batch_add((k) | SP__K_KEY | SP__K_KEY_TEXT, (a),       \
				  (unsigned long long)(key)))                  \
			SP__ASM("", name, 3, SP__V(a), SP__V(key), SP__V(1));  \
	} while (0)
#else
#define SP__BATCH 0
#define SP__QSITE(name, k, a) SP__SITE1(name, a)
#define SP__QSITEK(name, k, a, key) SP__SITE2(name, a, key)
#define SP__QSITEKT(name, k, a, key) SP__SITE3(name, a, key, 1)
#endif

/* A query probe named by run-time text, or with a text key: the text is
 * interned (sp__intern()) only once the semaphore test has passed, so a
 * disabled probe costs what a literal's does. */
#define SP__QSITE_STR(name, k, p, len)                                         \
	do {                                                                   \
		if (__builtin_expect((SP__SEMA(name) | SP__SEMA(flush)) != 0, 0)) { \
			const char *sp__q_ = sp__intern((p), (unsigned long)(len)); \
			SP__QSITE(name, k, sp__q_);                            \
		}                                                              \
	} while (0)
#define SP__QSITEK_STR(name, k, a, kp, klen)                                   \
	do {                                                                   \
		if (__builtin_expect((SP__SEMA(name) | SP__SEMA(flush)) != 0, 0)) { \
			const char *sp__k_ = sp__intern((kp), (unsigned long)(klen)); \
			SP__QSITEKT(name, k, (a), sp__k_);                     \
		}                                                              \
	} while (0)

/* ---- the public probes --------------------------------------------------- */
#define SP_QUERY_BEGIN(q) SP__QSITE(query_begin, SP__K_QUERY_BEGIN, (const char *)(q))
#define SP_QUERY_END(q) SP__QSITE(query_end, SP__K_QUERY_END, (const char *)(q))
#define SP_CACHE_HIT(q) SP__QSITE(cache_hit, SP__K_CACHE_HIT, (const char *)(q))
/* Keyed forms: the query `q` of key `key` (a 64-bit integer: an item's
 * index, an id). sptrace counts them under `q` unless run with
 * --query-keys, which gives each (q, key) a row of its own. A keyed
 * BEGIN is ended by the END_KEY of the same name and key. */
#define SP_QUERY_BEGIN_KEY(q, key)                                             \
	SP__QSITEK(query_begin, SP__K_QUERY_BEGIN, (const char *)(q),          \
		   (unsigned long long)(key))
#define SP_QUERY_END_KEY(q, key)                                               \
	SP__QSITEK(query_end, SP__K_QUERY_END, (const char *)(q),              \
		   (unsigned long long)(key))
#define SP_CACHE_HIT_KEY(q, key)                                               \
	SP__QSITEK(cache_hit, SP__K_CACHE_HIT, (const char *)(q),              \
		   (unsigned long long)(key))
/* Names made at run time: `len` bytes at `p`, any bytes (not UTF-8, no
 * NUL needed), any length (a text over 127 bytes is cut and hashed, see
 * sp__intern()). The same text gives the same row, from C or Rust. */
#define SP_QUERY_BEGIN_STR(p, len)                                             \
	SP__QSITE_STR(query_begin, SP__K_QUERY_BEGIN, (p), (len))
#define SP_QUERY_END_STR(p, len)                                               \
	SP__QSITE_STR(query_end, SP__K_QUERY_END, (p), (len))
#define SP_CACHE_HIT_STR(p, len)                                               \
	SP__QSITE_STR(cache_hit, SP__K_CACHE_HIT, (p), (len))
/* Keyed by text: query `q` (a name literal) of the key made of `klen`
 * bytes at `kp`. With --query-keys each (q, key text) has a row,
 * `q(text)`; without, the rows of `q`. */
#define SP_QUERY_BEGIN_KEY_STR(q, kp, klen)                                    \
	SP__QSITEK_STR(query_begin, SP__K_QUERY_BEGIN, (const char *)(q), (kp), (klen))
#define SP_QUERY_END_KEY_STR(q, kp, klen)                                      \
	SP__QSITEK_STR(query_end, SP__K_QUERY_END, (const char *)(q), (kp), (klen))
#define SP_CACHE_HIT_KEY_STR(q, kp, klen)                                      \
	SP__QSITEK_STR(cache_hit, SP__K_CACHE_HIT, (const char *)(q), (kp), (klen))
#define SP_INCR_LOAD_BEGIN(q)                                                  \
	SP__QSITE(incr_load_begin, SP__K_INCR_LOAD_BEGIN, (const char *)(q))
#define SP_INCR_LOAD_END(q)                                                    \
	SP__QSITE(incr_load_end, SP__K_INCR_LOAD_END, (const char *)(q))
#define SP_BLOCKED_BEGIN(q)                                                    \
	SP__QSITE(blocked_begin, SP__K_BLOCKED_BEGIN, (const char *)(q))
#define SP_BLOCKED_END(q)                                                      \
	SP__QSITE(blocked_end, SP__K_BLOCKED_END, (const char *)(q))
#define SP_MARK(name, key)                                                     \
	SP__SITE2(mark, (const char *)(name), (unsigned long long)(key))
#define SP_ALLOC(type, size, ptr)                                              \
	SP__SITE3(alloc, (const char *)(type), (unsigned long long)(size),     \
		  (const void *)(ptr))
#define SP_FREE(type, ptr)                                                     \
	SP__SITE2(free, (const char *)(type), (const void *)(ptr))
#define SP_THREAD_NAME(name) SP__SITE1(thread_name, (const char *)(name))

/* ---- SP_SCOPE: END at scope exit ------------------------------------------ */
#ifdef __cplusplus
namespace sp_probe {
struct scope {
	const char *q;
	explicit scope(const char *name) : q(name) { SP_QUERY_BEGIN(q); }
	~scope() { SP_QUERY_END(q); }
	scope(const scope &) = delete;
	scope &operator=(const scope &) = delete;
};
} /* namespace sp_probe */
#define SP_SCOPE(q)                                                            \
	::sp_probe::scope SP__CAT(sp__scope_, __LINE__)(q)
#else
static __inline__ __attribute__((always_inline, unused)) void
sp__scope_end(const char *const *q)
{
	SP_QUERY_END(*q);
}
#define SP_SCOPE(q)                                                            \
	const char *const SP__CAT(sp__scope_, __LINE__)                        \
		__attribute__((cleanup(sp__scope_end))) = (q);                 \
	SP_QUERY_BEGIN(SP__CAT(sp__scope_, __LINE__))
#endif

#endif /* probes enabled */
#endif /* SP_PROBE_H */
