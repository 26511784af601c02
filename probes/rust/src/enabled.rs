// SPDX-License-Identifier: MIT
//! The probe macros when probes are emitted (feature `enabled`, x86-64
//! Linux). The assembly is the one `probes/sp_probe.h` emits; its top
//! comment explains the site. Everything a site needs (semaphore, name
//! text, `.stapsdt.base`) is defined by the site's own assembly, weak and
//! hidden and guarded by `.ifndef`, so the linker keeps one of each per
//! executable or shared object, shared with C objects that include the
//! header.

/// The value of semaphore `sp_<probe>_semaphore`, defining it (weak, hidden,
/// 2 bytes in `.probes`, as the C header does) if this object has not yet.
/// One `movzwl` from a RIP-relative address.
#[doc(hidden)]
#[macro_export]
macro_rules! __sp_sema {
    ($probe:ident) => {{
        let v: u32;
        #[allow(unused_unsafe, named_asm_labels)] // labels guarded by .ifndef
        unsafe {
            $crate::__private::asm!(
                $crate::__sp_sema_def!($probe),
                concat!("movzwl sp_", stringify!($probe), "_semaphore(%rip), {v:e}"),
                v = out(reg) v,
                options(att_syntax, nostack, preserves_flags, readonly)
            );
        }
        v
    }};
}

#[doc(hidden)]
#[macro_export]
macro_rules! __sp_sema_def {
    ($probe:ident) => {
        concat!(
            // Page-align this object's .probes once (no padding: nothing is
            // in it yet). See "Semaphores and RELRO" in the crate docs.
            ".ifndef sp.probes.aligned\n",
            ".pushsection .probes,\"aw\",\"progbits\"\n",
            ".balign 4096\n",
            ".hidden sp.probes.aligned\n",
            "sp.probes.aligned = 1\n",
            ".popsection\n",
            ".endif\n",
            ".ifndef sp_", stringify!($probe), "_semaphore\n",
            ".pushsection .probes,\"aw\",\"progbits\"\n",
            ".weak sp_", stringify!($probe), "_semaphore\n",
            ".hidden sp_", stringify!($probe), "_semaphore\n",
            ".type sp_", stringify!($probe), "_semaphore, @object\n",
            ".size sp_", stringify!($probe), "_semaphore, 2\n",
            ".balign 2\n",
            "sp_", stringify!($probe), "_semaphore: .zero 2\n",
            ".popsection\n",
            ".endif"
        )
    };
}

/// Defines the text of name `$n` (once per object) under the symbol
/// `sp.name.<text>`, weak and hidden, and loads its address into `{n}`.
#[doc(hidden)]
#[macro_export]
macro_rules! __sp_name_asm {
    ($n:literal) => {
        concat!(
            ".ifndef \"sp.name.", $n, "\"\n",
            ".pushsection .rodata.sp_probe.names,\"a\",\"progbits\"\n",
            ".weak \"sp.name.", $n, "\"\n",
            ".hidden \"sp.name.", $n, "\"\n",
            ".type \"sp.name.", $n, "\", @object\n",
            "\"sp.name.", $n, "\": .asciz \"", $n, "\"\n",
            ".size \"sp.name.", $n, "\", . - \"sp.name.", $n, "\"\n",
            ".popsection\n",
            ".endif\n",
            "lea \"sp.name.", $n, "\"(%rip), {n}"
        )
    };
}

/// The SystemTap v3 note of the site at local label 990 (see sp_probe.h).
#[doc(hidden)]
#[macro_export]
macro_rules! __sp_note {
    ($probe:ident, $spec:tt) => {
        concat!(
            ".ifndef _.stapsdt.base\n",
            ".pushsection .stapsdt.base,\"aGR\",\"progbits\",.stapsdt.base,comdat\n",
            ".weak _.stapsdt.base\n",
            ".hidden _.stapsdt.base\n",
            "_.stapsdt.base: .space 1\n",
            ".size _.stapsdt.base, 1\n",
            ".popsection\n",
            ".endif\n",
            ".pushsection .note.stapsdt,\"?\",\"note\"\n",
            ".balign 4\n",
            ".4byte 992f-991f, 994f-993f, 3\n",
            "991: .asciz \"stapsdt\"\n",
            "992: .balign 4\n",
            "993: .8byte 990b\n",
            ".8byte _.stapsdt.base\n",
            ".8byte sp_", stringify!($probe), "_semaphore\n",
            ".asciz \"sp\"\n",
            ".asciz \"", stringify!($probe), "\"\n",
            ".asciz \"", $spec, "\"\n",
            "994: .balign 4\n",
            ".popsection"
        )
    };
}

/// A site: test the semaphore (hot path: one load, one cold branch), and
/// only when a tracer is attached set up the arguments and run the
/// red-zone-safe nop. `$pre` is assembly run before the site (loading the
/// name into `{n}`), `$spec` the argument spec, then the asm operands.
#[doc(hidden)]
#[macro_export]
macro_rules! __sp_site {
    ($probe:ident, $pre:expr, $spec:tt; $($ops:tt)*) => {
        if $crate::__sp_sema!($probe) != 0 {
            $crate::__private::cold();
            #[allow(unused_unsafe, named_asm_labels)] // labels guarded by .ifndef
            unsafe {
                $crate::__private::asm!(
                    $crate::__sp_sema_def!($probe),
                    $pre,
                    "lea -128(%rsp), %rsp",
                    "990: .byte 0x0f, 0x1f, 0x44, 0x00, 0x00",
                    "lea 128(%rsp), %rsp",
                    $crate::__sp_note!($probe, $spec),
                    $($ops)*
                    options(att_syntax, nostack, preserves_flags)
                );
            }
        }
    };
}

/// A standard probe whose first argument is a name literal.
#[doc(hidden)]
#[macro_export]
macro_rules! __sp_named {
    ($probe:ident, $n:literal) => {{
        const _: () = $crate::__private::check_name($n);
        $crate::__sp_site!($probe, $crate::__sp_name_asm!($n), "-8@{n}";
            n = out(reg) _,);
    }};
    ($probe:ident, $n:literal, $a:expr) => {{
        const _: () = $crate::__private::check_name($n);
        $crate::__sp_site!($probe, $crate::__sp_name_asm!($n), "-8@{n} -8@{a}";
            n = out(reg) _,
            a = in(reg) $crate::IntegerOrPointer::sp_arg($a),);
    }};
    ($probe:ident, $n:literal, $a:expr, $b:expr) => {{
        const _: () = $crate::__private::check_name($n);
        $crate::__sp_site!($probe, $crate::__sp_name_asm!($n), "-8@{n} -8@{a} -8@{b}";
            n = out(reg) _,
            a = in(reg) $crate::IntegerOrPointer::sp_arg($a),
            b = in(reg) $crate::IntegerOrPointer::sp_arg($b),);
    }};
}

/// A standard probe whose first argument is a [`Name`](crate::Name) value.
#[doc(hidden)]
#[macro_export]
macro_rules! __sp_named_ptr {
    ($probe:ident, $p:expr) => {
        $crate::__sp_site!($probe, "", "-8@{n}"; n = in(reg) $p,)
    };
    ($probe:ident, $p:expr, $a:expr) => {
        $crate::__sp_site!($probe, "", "-8@{n} -8@{a}";
            n = in(reg) $p, a = in(reg) $a,)
    };
    ($probe:ident, $p:expr, $a:expr, $b:expr) => {
        $crate::__sp_site!($probe, "", "-8@{n} -8@{a} -8@{b}";
            n = in(reg) $p, a = in(reg) $a, b = in(reg) $b,)
    };
}

/// `sp_query_begin!("q")`: query `q` starts on this thread (`sp:query_begin`).
/// Each BEGIN needs its END on the same thread.
#[macro_export]
macro_rules! sp_query_begin {
    ($q:literal) => { $crate::__sp_named!(query_begin, $q) };
    ($($t:tt)*) => { $crate::__sp_not_literal!("sp_query_begin") };
}

/// `sp_query_end!("q")`: query `q` ends on this thread (`sp:query_end`).
#[macro_export]
macro_rules! sp_query_end {
    ($q:literal) => { $crate::__sp_named!(query_end, $q) };
    ($($t:tt)*) => { $crate::__sp_not_literal!("sp_query_end") };
}

/// `sp_cache_hit!("q")`: the result of `q` came from the in-memory cache;
/// nothing ran (`sp:cache_hit`).
#[macro_export]
macro_rules! sp_cache_hit {
    ($q:literal) => { $crate::__sp_named!(cache_hit, $q) };
    ($($t:tt)*) => { $crate::__sp_not_literal!("sp_cache_hit") };
}

/// `sp_incr_load_begin!("q")`: loading the result of `q` from an on-disk
/// (incremental) cache starts (`sp:incr_load_begin`).
#[macro_export]
macro_rules! sp_incr_load_begin {
    ($q:literal) => { $crate::__sp_named!(incr_load_begin, $q) };
    ($($t:tt)*) => { $crate::__sp_not_literal!("sp_incr_load_begin") };
}

/// `sp_incr_load_end!("q")`: the load of `q` ends (`sp:incr_load_end`).
#[macro_export]
macro_rules! sp_incr_load_end {
    ($q:literal) => { $crate::__sp_named!(incr_load_end, $q) };
    ($($t:tt)*) => { $crate::__sp_not_literal!("sp_incr_load_end") };
}

/// `sp_blocked_begin!("q")`: this thread starts waiting for another thread
/// that computes `q` (`sp:blocked_begin`).
#[macro_export]
macro_rules! sp_blocked_begin {
    ($q:literal) => { $crate::__sp_named!(blocked_begin, $q) };
    ($($t:tt)*) => { $crate::__sp_not_literal!("sp_blocked_begin") };
}

/// `sp_blocked_end!("q")`: the wait for `q` ends (`sp:blocked_end`).
#[macro_export]
macro_rules! sp_blocked_end {
    ($q:literal) => { $crate::__sp_named!(blocked_end, $q) };
    ($($t:tt)*) => { $crate::__sp_not_literal!("sp_blocked_end") };
}

/// `sp_thread_name!("name")`: names the calling thread (`sp:thread_name`).
#[macro_export]
macro_rules! sp_thread_name {
    ($q:literal) => { $crate::__sp_named!(thread_name, $q) };
    ($($t:tt)*) => { $crate::__sp_not_literal!("sp_thread_name") };
}

/// `sp_mark!("name", key)`: a point event; `key` is an integer or pointer
/// (`sp:mark`).
#[macro_export]
macro_rules! sp_mark {
    ($q:literal, $key:expr) => { $crate::__sp_named!(mark, $q, $key) };
    ($($t:tt)*) => { $crate::__sp_not_literal!("sp_mark") };
}

/// `sp_alloc!("Type", size, ptr)`: `ptr` was allocated, `size` bytes of
/// `Type` (`sp:alloc`).
#[macro_export]
macro_rules! sp_alloc {
    ($q:literal, $size:expr, $ptr:expr) => { $crate::__sp_named!(alloc, $q, $size, $ptr) };
    ($($t:tt)*) => { $crate::__sp_not_literal!("sp_alloc") };
}

/// `sp_free!("Type", ptr)`: `ptr` of `Type` was freed (`sp:free`).
#[macro_export]
macro_rules! sp_free {
    ($q:literal, $ptr:expr) => { $crate::__sp_named!(free, $q, $ptr) };
    ($($t:tt)*) => { $crate::__sp_not_literal!("sp_free") };
}

/// `sp_name!("q")`: the [`Name`](crate::Name) of `q`, the very pointer the
/// probe macros pass for the same literal.
#[macro_export]
macro_rules! sp_name {
    ($q:literal) => {{
        const _: () = $crate::__private::check_name($q);
        let p: *const u8;
        #[allow(unused_unsafe, named_asm_labels)] // labels guarded by .ifndef
        unsafe {
            $crate::__private::asm!(
                $crate::__sp_name_asm!($q),
                n = out(reg) p,
                options(att_syntax, pure, nomem, nostack, preserves_flags)
            );
            $crate::Name::__from_ptr(p)
        }
    }};
    ($($t:tt)*) => { $crate::__sp_not_literal!("sp_name") };
}

/// `sp_enabled!()`: true while a tracer has enabled one of the standard
/// probes (`query_begin`, `cache_hit`, `incr_load_begin`, `blocked_begin`,
/// `mark`, `alloc`, `free`, `thread_name`) in this executable or shared
/// object. Guards expensive argument preparation.
#[macro_export]
macro_rules! sp_enabled {
    () => {{
        let v: u32;
        #[allow(unused_unsafe, named_asm_labels)] // labels guarded by .ifndef
        unsafe {
            $crate::__private::asm!(
                $crate::__sp_sema_def!(query_begin),
                $crate::__sp_sema_def!(cache_hit),
                $crate::__sp_sema_def!(incr_load_begin),
                $crate::__sp_sema_def!(blocked_begin),
                $crate::__sp_sema_def!(mark),
                $crate::__sp_sema_def!(alloc),
                $crate::__sp_sema_def!(free),
                $crate::__sp_sema_def!(thread_name),
                "movzwl sp_query_begin_semaphore(%rip), {v:e}",
                "orw sp_cache_hit_semaphore(%rip), {v:x}",
                "orw sp_incr_load_begin_semaphore(%rip), {v:x}",
                "orw sp_blocked_begin_semaphore(%rip), {v:x}",
                "orw sp_mark_semaphore(%rip), {v:x}",
                "orw sp_alloc_semaphore(%rip), {v:x}",
                "orw sp_free_semaphore(%rip), {v:x}",
                "orw sp_thread_name_semaphore(%rip), {v:x}",
                v = out(reg) v,
                options(att_syntax, nostack, readonly)
            );
        }
        $crate::__private::unlikely(v != 0)
    }};
}

/// `sp_probe!(name, args...)`: a generic probe `sp:name` with 0 to 6
/// integer or pointer arguments, each in a register (`-8@%reg`). `name` is
/// an identifier; its semaphore is `sp_<name>_semaphore`. sptrace never
/// attaches these; bpftrace, perf, bcc and libbpf can.
#[macro_export]
macro_rules! sp_probe {
    ($p:ident) => {
        $crate::__sp_site!($p, "", "";)
    };
    ($p:ident, $a:expr) => {
        $crate::__sp_site!($p, "", "-8@{a}";
            a = in(reg) $crate::IntegerOrPointer::sp_arg($a),)
    };
    ($p:ident, $a:expr, $b:expr) => {
        $crate::__sp_site!($p, "", "-8@{a} -8@{b}";
            a = in(reg) $crate::IntegerOrPointer::sp_arg($a),
            b = in(reg) $crate::IntegerOrPointer::sp_arg($b),)
    };
    ($p:ident, $a:expr, $b:expr, $c:expr) => {
        $crate::__sp_site!($p, "", "-8@{a} -8@{b} -8@{c}";
            a = in(reg) $crate::IntegerOrPointer::sp_arg($a),
            b = in(reg) $crate::IntegerOrPointer::sp_arg($b),
            c = in(reg) $crate::IntegerOrPointer::sp_arg($c),)
    };
    ($p:ident, $a:expr, $b:expr, $c:expr, $d:expr) => {
        $crate::__sp_site!($p, "", "-8@{a} -8@{b} -8@{c} -8@{d}";
            a = in(reg) $crate::IntegerOrPointer::sp_arg($a),
            b = in(reg) $crate::IntegerOrPointer::sp_arg($b),
            c = in(reg) $crate::IntegerOrPointer::sp_arg($c),
            d = in(reg) $crate::IntegerOrPointer::sp_arg($d),)
    };
    ($p:ident, $a:expr, $b:expr, $c:expr, $d:expr, $e:expr) => {
        $crate::__sp_site!($p, "", "-8@{a} -8@{b} -8@{c} -8@{d} -8@{e}";
            a = in(reg) $crate::IntegerOrPointer::sp_arg($a),
            b = in(reg) $crate::IntegerOrPointer::sp_arg($b),
            c = in(reg) $crate::IntegerOrPointer::sp_arg($c),
            d = in(reg) $crate::IntegerOrPointer::sp_arg($d),
            e = in(reg) $crate::IntegerOrPointer::sp_arg($e),)
    };
    ($p:ident, $a:expr, $b:expr, $c:expr, $d:expr, $e:expr, $f:expr) => {
        $crate::__sp_site!($p, "", "-8@{a} -8@{b} -8@{c} -8@{d} -8@{e} -8@{f}";
            a = in(reg) $crate::IntegerOrPointer::sp_arg($a),
            b = in(reg) $crate::IntegerOrPointer::sp_arg($b),
            c = in(reg) $crate::IntegerOrPointer::sp_arg($c),
            d = in(reg) $crate::IntegerOrPointer::sp_arg($d),
            e = in(reg) $crate::IntegerOrPointer::sp_arg($e),
            f = in(reg) $crate::IntegerOrPointer::sp_arg($f),)
    };
    ($($t:tt)*) => {
        compile_error!("sp_probe!: usage sp_probe!(name, args...): `name` an identifier, 0 to 6 integer or pointer arguments")
    };
}
