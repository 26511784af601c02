/*
 * TEST FIXTURE, not for use: probes/sp_probe.h as the first release shipped
 * it (commit 6020fe9), kept unchanged so that tests build a binary with
 * the old site shape: every probe a per-event 5-byte-nop site, no batching
 * (tests/e2e/test_fork_safety.py). Programs built with it are out there.
 */
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
 * pointer and reads the string once per distinct pointer. Queries may nest
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
 * Other architectures use their plain nop and no red-zone dance.
 */
#ifndef SP_PROBE_H
#define SP_PROBE_H

#if defined(SP_PROBES_DISABLE) || !(defined(__GNUC__) || defined(__clang__)) || !defined(__ELF__)

#define SP_PROBE(...) ((void)0)
#define SP_ENABLED() 0
#define SP_QUERY_BEGIN(q) ((void)(q))
#define SP_QUERY_END(q) ((void)(q))
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
#ifdef __cplusplus
}
#endif

/* True while any tracer is attached to one of the standard probes. */
#define SP_ENABLED()                                                           \
	(__builtin_expect((SP__SEMA(query_begin) | SP__SEMA(cache_hit) |       \
			   SP__SEMA(incr_load_begin) | SP__SEMA(blocked_begin) | \
			   SP__SEMA(mark) | SP__SEMA(alloc) | SP__SEMA(free) |  \
			   SP__SEMA(thread_name)) != 0, 0))

/* ---- the probe site ------------------------------------------------------ */
#define SP__STR_(x) #x
#define SP__STR(x) SP__STR_(x)

#if defined(__x86_64__)
/* 0f 1f 44 00 00 = nopl 0x0(%rax,%rax,1), the nop the kernel optimizes. */
#define SP__NOP "lea -128(%%rsp), %%rsp\n990: .byte 0x0f, 0x1f, 0x44, 0x00, 0x00\nlea 128(%%rsp), %%rsp\n"
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

/* ---- the public probes --------------------------------------------------- */
#define SP_QUERY_BEGIN(q) SP__SITE1(query_begin, (const char *)(q))
#define SP_QUERY_END(q) SP__SITE1(query_end, (const char *)(q))
#define SP_CACHE_HIT(q) SP__SITE1(cache_hit, (const char *)(q))
#define SP_INCR_LOAD_BEGIN(q) SP__SITE1(incr_load_begin, (const char *)(q))
#define SP_INCR_LOAD_END(q) SP__SITE1(incr_load_end, (const char *)(q))
#define SP_BLOCKED_BEGIN(q) SP__SITE1(blocked_begin, (const char *)(q))
#define SP_BLOCKED_END(q) SP__SITE1(blocked_end, (const char *)(q))
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
