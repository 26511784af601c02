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
            $crate::__sp_site_asm!($probe, $pre, $spec; $($ops)*);
        }
    };
}

/// The site itself, unconditionally: `$pre`, then `lea -128(%rsp)` / nop5 /
/// `lea 128(%rsp)` and its note.
#[doc(hidden)]
#[macro_export]
macro_rules! __sp_site_asm {
    ($probe:ident, $pre:expr, $spec:tt; $($ops:tt)*) => {{
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
    }};
}

/// The semaphore of `$probe` ORed with `sp_flush_semaphore` (batching on):
/// the one test of a query probe's hot path, as in sp_probe.h.
#[doc(hidden)]
#[macro_export]
macro_rules! __sp_sema_or_flush {
    ($probe:ident) => {{
        let v: u32;
        #[allow(unused_unsafe, named_asm_labels)] // labels guarded by .ifndef
        unsafe {
            $crate::__private::asm!(
                $crate::__sp_sema_def!($probe),
                $crate::__sp_sema_def!(flush),
                concat!("movzwl sp_", stringify!($probe), "_semaphore(%rip), {v:e}"),
                "orw sp_flush_semaphore(%rip), {v:x}",
                v = out(reg) v,
                options(att_syntax, nostack, readonly)
            );
        }
        v
    }};
}

/// A query probe (query, blocked and incr_load BEGIN/END, cache_hit): a
/// record in the thread's ring while a tracer batches (sp_flush_semaphore
/// up), else the per-event site if its own semaphore is up; never both.
/// Where no record can be written (an exiting thread, no memory) the
/// per-event site fires instead, which a batching tracer attaches too.
/// `$name` is the name's address as `*const u8`, `$site` the per-event
/// site (`__sp_site_asm!`), run only when needed.
#[doc(hidden)]
#[macro_export]
macro_rules! __sp_qsite {
    ($probe:ident, $kind:ident, $name:expr, $site:expr) => {
        if $crate::__sp_sema_or_flush!($probe) != 0 {
            $crate::__private::cold();
            if $crate::__sp_sema!(flush) == 0
                || !$crate::__private::batch_add($crate::__private::$kind, $name, 0)
            {
                $site;
            }
        }
    };
}

/// A query probe of a name literal.
#[doc(hidden)]
#[macro_export]
macro_rules! __sp_qnamed {
    ($probe:ident, $kind:ident, $n:literal) => {{
        const _: () = $crate::__private::check_name($n);
        $crate::__sp_qsite!($probe, $kind, $crate::sp_name!($n).as_ptr(),
            $crate::__sp_site_asm!($probe, $crate::__sp_name_asm!($n), "-8@{n}";
                n = out(reg) _,));
    }};
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

/// A query probe of a name literal with a key: the record's `arg` (kind
/// flag `K_KEY`), or the per-event site's second argument. The key is
/// evaluated only while a tracer is attached. The `@fire` arm serves
/// [`__sp_qkeyed_str!`] too: its flags, its key's value and the per-event
/// site's argument spec and extra operands.
#[doc(hidden)]
#[macro_export]
macro_rules! __sp_qkeyed {
    ($probe:ident, $kind:ident, $n:literal, $key:expr) => {
        $crate::__sp_qkeyed!(@fire $probe, $n,
            $crate::__private::$kind | $crate::__private::K_KEY,
            $crate::IntegerOrPointer::sp_arg($key), "-8@{n} -8@{a}";)
    };
    (@fire $probe:ident, $n:literal, $flags:expr, $key:expr, $spec:tt; $($extra:tt)*) => {{
        const _: () = $crate::__private::check_name($n);
        if $crate::__sp_sema_or_flush!($probe) != 0 {
            $crate::__private::cold();
            let k: u64 = $key;
            if $crate::__sp_sema!(flush) == 0
                || !$crate::__private::batch_add($flags, $crate::sp_name!($n).as_ptr(), k)
            {
                $crate::__sp_site_asm!($probe, $crate::__sp_name_asm!($n), $spec;
                    n = out(reg) _, a = in(reg) k, $($extra)*);
            }
        }
    }};
}

/// A query probe named by run-time text: interned (`Name::intern_bytes`)
/// only while a tracer is attached, so a disabled probe costs what a
/// literal's does.
#[doc(hidden)]
#[macro_export]
macro_rules! __sp_qstr {
    ($probe:ident, $kind:ident, $text:expr) => {{
        if $crate::__sp_sema_or_flush!($probe) != 0 {
            $crate::__private::cold();
            let p = $crate::Name::intern_bytes($crate::__private::text_of(&$text)).as_ptr();
            if $crate::__sp_sema!(flush) == 0
                || !$crate::__private::batch_add($crate::__private::$kind, p, 0)
            {
                $crate::__sp_site_asm!($probe, "", "-8@{n}"; n = in(reg) p,);
            }
        }
    }};
}

/// A query probe of a name literal with a text key: the key's interned
/// copy's address, with kind flags `K_KEY | K_KEY_TEXT` in a record, or as
/// the per-event site's second argument with a third, 1 (SP_KEY_ARG_TEXT).
#[doc(hidden)]
#[macro_export]
macro_rules! __sp_qkeyed_str {
    ($probe:ident, $kind:ident, $n:literal, $key:expr) => {
        $crate::__sp_qkeyed!(@fire $probe, $n,
            $crate::__private::$kind | $crate::__private::K_KEY | $crate::__private::K_KEY_TEXT,
            $crate::Name::intern_bytes($crate::__private::text_of(&$key)).as_ptr() as u64,
            "-8@{n} -8@{a} -8@{b}"; b = in(reg) 1u64,)
    };
}

/// `sp_query_begin_str!(text)`: a query named by text made at run time
/// starts on this thread. `text` is a `&str`, `String`, `&[u8]` or
/// `Vec<u8>` (taken by reference), any bytes and any length; it is
/// interned with [`Name::intern_bytes`](crate::Name::intern_bytes) only
/// while a tracer is attached. The same text, from here or from C's
/// `SP_QUERY_BEGIN_STR`, is one row. End it with
/// [`sp_query_end_str!`](crate::sp_query_end_str) of the same text.
///
/// ```
/// use sp_probe::{sp_query_begin_str, sp_query_end_str};
///
/// fn compile(path: &str) {
///     let name = std::format!("compile {}", path);
///     sp_query_begin_str!(name);
///     // ...
///     sp_query_end_str!(name);
/// }
/// compile("src/main.rs");
/// ```
#[macro_export]
macro_rules! sp_query_begin_str {
    ($text:expr) => { $crate::__sp_qstr!(query_begin, K_QUERY_BEGIN, $text) };
}

/// `sp_query_end_str!(text)`: the query named `text` ends on this thread.
///
/// ```
/// # use sp_probe::{sp_query_begin_str, sp_query_end_str};
/// let bytes: &[u8] = b"bad\xff name"; // not UTF-8: shown escaped
/// sp_query_begin_str!(bytes);
/// sp_query_end_str!(bytes);
/// ```
#[macro_export]
macro_rules! sp_query_end_str {
    ($text:expr) => { $crate::__sp_qstr!(query_end, K_QUERY_END, $text) };
}

/// `sp_cache_hit_str!(text)`: the result of the query named `text` came
/// from the memory cache.
///
/// ```
/// # use sp_probe::sp_cache_hit_str;
/// let table = String::from("users");
/// sp_cache_hit_str!(table);
/// ```
#[macro_export]
macro_rules! sp_cache_hit_str {
    ($text:expr) => { $crate::__sp_qstr!(cache_hit, K_CACHE_HIT, $text) };
}

/// `sp_query_begin_key_str!("q", key)`: query `q` of a text key starts on
/// this thread. `key` is run-time text (`&str`, `String`, `&[u8]`,
/// `Vec<u8>`), interned only while a tracer is attached. sptrace counts
/// the query under `q` unless run with `--query-keys`, which gives each
/// key text a row, `q(text)` (at most `--max-queries` of them, the rest in
/// `<other>`), the same row as C's `SP_QUERY_BEGIN_KEY_STR` of the same
/// name and text. End it with
/// [`sp_query_end_key_str!`](crate::sp_query_end_key_str).
///
/// ```
/// use sp_probe::{sp_query_begin_key_str, sp_query_end_key_str};
///
/// fn load(file: &str) {
///     sp_query_begin_key_str!("load", file);
///     // ...
///     sp_query_end_key_str!("load", file);
/// }
/// load("a.toml");
/// ```
#[macro_export]
macro_rules! sp_query_begin_key_str {
    ($q:literal, $key:expr) => { $crate::__sp_qkeyed_str!(query_begin, K_QUERY_BEGIN, $q, $key) };
    ($($t:tt)*) => { $crate::__sp_not_literal!("sp_query_begin_key_str") };
}

/// `sp_query_end_key_str!("q", key)`: query `q` of text key `key` ends on
/// this thread.
///
/// ```
/// # use sp_probe::{sp_query_begin_key_str, sp_query_end_key_str};
/// let key = std::format!("user:{}", 42);
/// sp_query_begin_key_str!("fetch", key);
/// sp_query_end_key_str!("fetch", key);
/// ```
#[macro_export]
macro_rules! sp_query_end_key_str {
    ($q:literal, $key:expr) => { $crate::__sp_qkeyed_str!(query_end, K_QUERY_END, $q, $key) };
    ($($t:tt)*) => { $crate::__sp_not_literal!("sp_query_end_key_str") };
}

/// `sp_cache_hit_key_str!("q", key)`: the result of `q` for text key `key`
/// came from the memory cache.
///
/// ```
/// # use sp_probe::sp_cache_hit_key_str;
/// let key: Vec<u8> = b"user:42".to_vec();
/// sp_cache_hit_key_str!("fetch", key);
/// ```
#[macro_export]
macro_rules! sp_cache_hit_key_str {
    ($q:literal, $key:expr) => { $crate::__sp_qkeyed_str!(cache_hit, K_CACHE_HIT, $q, $key) };
    ($($t:tt)*) => { $crate::__sp_not_literal!("sp_cache_hit_key_str") };
}

/// `sp_query_begin_key!("q", key)`: query `q` of `key` starts on this
/// thread. `key` is an integer (an item's index, an id): sptrace counts the
/// query under `q` unless run with `--query-keys`, which gives each key a
/// row of its own, `q(key)` (at most `--max-queries` of them, the rest in
/// `<other>`). End it with [`sp_query_end_key!`](crate::sp_query_end_key)
/// of the same name and key.
///
/// ```
/// use sp_probe::{sp_query_begin_key, sp_query_end_key};
///
/// fn type_of(def_index: u32) -> u32 {
///     sp_query_begin_key!("type_of", def_index);
///     let t = def_index + 1;
///     sp_query_end_key!("type_of", def_index);
///     t
/// }
/// # assert_eq!(type_of(1), 2);
/// ```
#[macro_export]
macro_rules! sp_query_begin_key {
    ($q:literal, $key:expr) => { $crate::__sp_qkeyed!(query_begin, K_QUERY_BEGIN, $q, $key) };
    ($($t:tt)*) => { $crate::__sp_not_literal!("sp_query_begin_key") };
}

/// `sp_query_end_key!("q", key)`: query `q` of `key` ends on this thread.
///
/// ```
/// # use sp_probe::{sp_query_begin_key, sp_query_end_key};
/// sp_query_begin_key!("mir_built", 7u64);
/// sp_query_end_key!("mir_built", 7u64);
/// ```
#[macro_export]
macro_rules! sp_query_end_key {
    ($q:literal, $key:expr) => { $crate::__sp_qkeyed!(query_end, K_QUERY_END, $q, $key) };
    ($($t:tt)*) => { $crate::__sp_not_literal!("sp_query_end_key") };
}

/// `sp_cache_hit_key!("q", key)`: the result of `q` for `key` came from the
/// cache.
///
/// ```
/// use sp_probe::{sp_cache_hit_key, sp_scope_key};
/// use std::collections::HashMap;
///
/// fn layout_of(memo: &mut HashMap<u32, u64>, id: u32) -> u64 {
///     if let Some(&l) = memo.get(&id) {
///         sp_cache_hit_key!("layout_of", id);
///         return l;
///     }
///     sp_scope_key!("layout_of", id);
///     *memo.entry(id).or_insert(u64::from(id) * 8)
/// }
/// # let mut m = HashMap::new();
/// # assert_eq!(layout_of(&mut m, 3), layout_of(&mut m, 3));
/// ```
#[macro_export]
macro_rules! sp_cache_hit_key {
    ($q:literal, $key:expr) => { $crate::__sp_qkeyed!(cache_hit, K_CACHE_HIT, $q, $key) };
    ($($t:tt)*) => { $crate::__sp_not_literal!("sp_cache_hit_key") };
}

/// `sp_query_begin!("q")`: query `q` starts on this thread (`sp:query_begin`).
/// Each BEGIN needs its END on the same thread. While sptrace batches, the
/// event is a record in the thread's ring (see the crate docs).
///
/// ```
/// use sp_probe::{sp_query_begin, sp_query_end};
///
/// fn parse(src: &str) -> usize {
///     sp_query_begin!("parse");
///     let n = src.split_whitespace().count();
///     sp_query_end!("parse");
///     n
/// }
/// # assert_eq!(parse("a b"), 2);
/// ```
#[macro_export]
macro_rules! sp_query_begin {
    ($q:literal) => { $crate::__sp_qnamed!(query_begin, K_QUERY_BEGIN, $q) };
    ($($t:tt)*) => { $crate::__sp_not_literal!("sp_query_begin") };
}

/// `sp_query_end!("q")`: query `q` ends on this thread (`sp:query_end`).
///
/// ```
/// # use sp_probe::{sp_query_begin, sp_query_end};
/// sp_query_begin!("typeck");
/// // ... the query's work; nested queries leave its self time ...
/// sp_query_end!("typeck");
/// ```
#[macro_export]
macro_rules! sp_query_end {
    ($q:literal) => { $crate::__sp_qnamed!(query_end, K_QUERY_END, $q) };
    ($($t:tt)*) => { $crate::__sp_not_literal!("sp_query_end") };
}

/// `sp_cache_hit!("q")`: the result of `q` came from the in-memory cache;
/// nothing ran (`sp:cache_hit`).
///
/// ```
/// use sp_probe::{sp_cache_hit, sp_scope};
/// use std::collections::HashMap;
///
/// fn type_of(memo: &mut HashMap<u32, u64>, id: u32) -> u64 {
///     if let Some(&t) = memo.get(&id) {
///         sp_cache_hit!("type_of");
///         return t;
///     }
///     sp_scope!("type_of");
///     *memo.entry(id).or_insert(u64::from(id) * 7)
/// }
/// # let mut m = HashMap::new();
/// # assert_eq!(type_of(&mut m, 3), type_of(&mut m, 3));
/// ```
#[macro_export]
macro_rules! sp_cache_hit {
    ($q:literal) => { $crate::__sp_qnamed!(cache_hit, K_CACHE_HIT, $q) };
    ($($t:tt)*) => { $crate::__sp_not_literal!("sp_cache_hit") };
}

/// `sp_incr_load_begin!("q")`: loading the result of `q` from an on-disk
/// (incremental) cache starts (`sp:incr_load_begin`). Its time is the
/// `Incr. load time` of row `q`, and not part of the enclosing query's self
/// time.
///
/// ```
/// # use sp_probe::{sp_incr_load_begin, sp_incr_load_end};
/// sp_incr_load_begin!("optimized_mir");
/// let bytes = std::fs::read("/nonexistent/cache").unwrap_or_default();
/// sp_incr_load_end!("optimized_mir");
/// # let _ = bytes;
/// ```
#[macro_export]
macro_rules! sp_incr_load_begin {
    ($q:literal) => { $crate::__sp_qnamed!(incr_load_begin, K_INCR_LOAD_BEGIN, $q) };
    ($($t:tt)*) => { $crate::__sp_not_literal!("sp_incr_load_begin") };
}

/// `sp_incr_load_end!("q")`: the load of `q` ends (`sp:incr_load_end`).
///
/// ```
/// # use sp_probe::{sp_incr_load_begin, sp_incr_load_end};
/// sp_incr_load_begin!("codegen");
/// sp_incr_load_end!("codegen");
/// ```
#[macro_export]
macro_rules! sp_incr_load_end {
    ($q:literal) => { $crate::__sp_qnamed!(incr_load_end, K_INCR_LOAD_END, $q) };
    ($($t:tt)*) => { $crate::__sp_not_literal!("sp_incr_load_end") };
}

/// `sp_blocked_begin!("q")`: this thread starts waiting for another thread
/// that computes `q` (`sp:blocked_begin`). Its time is the `Blocked time`
/// of row `q`, and not part of the enclosing query's self time.
///
/// ```
/// use sp_probe::{sp_blocked_begin, sp_blocked_end};
/// use std::sync::{Arc, Mutex};
///
/// let shared = Arc::new(Mutex::new(0u64));
/// sp_blocked_begin!("lang_items");
/// let v = *shared.lock().unwrap(); // another thread may be computing it
/// sp_blocked_end!("lang_items");
/// # assert_eq!(v, 0);
/// ```
#[macro_export]
macro_rules! sp_blocked_begin {
    ($q:literal) => { $crate::__sp_qnamed!(blocked_begin, K_BLOCKED_BEGIN, $q) };
    ($($t:tt)*) => { $crate::__sp_not_literal!("sp_blocked_begin") };
}

/// `sp_blocked_end!("q")`: the wait for `q` ends (`sp:blocked_end`).
///
/// ```
/// # use sp_probe::{sp_blocked_begin, sp_blocked_end};
/// sp_blocked_begin!("resolve");
/// std::thread::yield_now();
/// sp_blocked_end!("resolve");
/// ```
#[macro_export]
macro_rules! sp_blocked_end {
    ($q:literal) => { $crate::__sp_qnamed!(blocked_end, K_BLOCKED_END, $q) };
    ($($t:tt)*) => { $crate::__sp_not_literal!("sp_blocked_end") };
}

/// `sp_thread_name!("name")`: names the calling thread (`sp:thread_name`),
/// in sptrace's per-thread reports and memory tables.
///
/// ```
/// use sp_probe::sp_thread_name;
///
/// let worker = std::thread::spawn(|| {
///     sp_thread_name!("worker");
///     // ...
/// });
/// worker.join().unwrap();
/// ```
#[macro_export]
macro_rules! sp_thread_name {
    ($q:literal) => { $crate::__sp_named!(thread_name, $q) };
    ($($t:tt)*) => { $crate::__sp_not_literal!("sp_thread_name") };
}

/// `sp_mark!("name", key)`: a point event; `key` is an integer or pointer
/// (`sp:mark`). `sptrace latency` measures the time between marks.
///
/// ```
/// use sp_probe::sp_mark;
///
/// for frame in 0u64..3 {
///     sp_mark!("frame_start", frame);
/// }
/// ```
#[macro_export]
macro_rules! sp_mark {
    ($q:literal, $key:expr) => { $crate::__sp_named!(mark, $q, $key) };
    ($($t:tt)*) => { $crate::__sp_not_literal!("sp_mark") };
}

/// `sp_alloc!("Type", size, ptr)`: `ptr` was allocated, `size` bytes of
/// `Type` (`sp:alloc`), for `sptrace mem`. Pair it with [`sp_free!`](crate::sp_free).
///
/// ```
/// use sp_probe::{sp_alloc, sp_free};
///
/// let node = Box::new([0u64; 4]);
/// let p: *const [u64; 4] = &*node;
/// sp_alloc!("Node", std::mem::size_of_val(&*node), p);
/// sp_free!("Node", p);
/// drop(node);
/// ```
#[macro_export]
macro_rules! sp_alloc {
    ($q:literal, $size:expr, $ptr:expr) => { $crate::__sp_named!(alloc, $q, $size, $ptr) };
    ($($t:tt)*) => { $crate::__sp_not_literal!("sp_alloc") };
}

/// `sp_free!("Type", ptr)`: `ptr` of `Type` was freed (`sp:free`).
///
/// ```
/// # use sp_probe::{sp_alloc, sp_free};
/// let v = vec![1u8; 16];
/// sp_alloc!("Buffer", v.capacity(), v.as_ptr());
/// sp_free!("Buffer", v.as_ptr());
/// ```
#[macro_export]
macro_rules! sp_free {
    ($q:literal, $ptr:expr) => { $crate::__sp_named!(free, $q, $ptr) };
    ($($t:tt)*) => { $crate::__sp_not_literal!("sp_free") };
}

/// `sp_name!("q")`: the [`Name`](crate::Name) of `q`, the very pointer the
/// probe macros pass for the same literal: for code that picks a name at
/// run time from a table of literals.
///
/// ```
/// use sp_probe::{sp_name, Name};
///
/// let passes: [Name; 2] = [sp_name!("lower"), sp_name!("optimize")];
/// for pass in passes.iter() {
///     let _q = pass.scope(); // BEGIN now, END when _q drops
/// }
/// assert_eq!(passes[1].to_bytes(), b"optimize");
/// ```
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
/// `mark`, `alloc`, `free`, `thread_name`), or batches them (`flush`), in
/// this executable or shared object. Guards expensive argument preparation.
///
/// ```
/// use sp_probe::{sp_enabled, sp_mark};
///
/// fn checksum(data: &[u8]) -> u64 {
///     data.iter().map(|&b| u64::from(b)).sum()
/// }
/// let data = [1u8, 2, 3];
/// if sp_enabled!() {
///     sp_mark!("input", checksum(&data)); // only computed while traced
/// }
/// ```
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
                $crate::__sp_sema_def!(flush),
                "movzwl sp_query_begin_semaphore(%rip), {v:e}",
                "orw sp_cache_hit_semaphore(%rip), {v:x}",
                "orw sp_incr_load_begin_semaphore(%rip), {v:x}",
                "orw sp_blocked_begin_semaphore(%rip), {v:x}",
                "orw sp_mark_semaphore(%rip), {v:x}",
                "orw sp_alloc_semaphore(%rip), {v:x}",
                "orw sp_free_semaphore(%rip), {v:x}",
                "orw sp_thread_name_semaphore(%rip), {v:x}",
                "orw sp_flush_semaphore(%rip), {v:x}",
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
///
/// ```
/// use sp_probe::sp_probe;
///
/// let buf = [0u8; 64];
/// sp_probe!(gc_start);
/// sp_probe!(gc_done, 3u32, buf.len(), buf.as_ptr());
/// ```
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
