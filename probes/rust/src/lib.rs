// SPDX-License-Identifier: MIT
//! sptrace probes for Rust programs: the probes of `probes/sp_probe.h`,
//! emitted by a crate with no dependency (`no_std`, rustc 1.63 or later).
//!
//! # Use
//!
//! ```
//! use sp_probe::{sp_cache_hit, sp_query_begin, sp_query_end, sp_scope};
//!
//! fn parse(src: &str) -> usize {
//!     sp_query_begin!("parse");            // the name: a string literal
//!     let n = src.len();
//!     sp_query_end!("parse");
//!     n
//! }
//!
//! fn typeck(src: &str) -> usize {
//!     sp_scope!("typeck");                 // END when the scope exits, also on unwinding
//!     sp_cache_hit!("lang_items");
//!     parse(src)                           // nested: its time leaves typeck's self time
//! }
//! # assert_eq!(typeck("abc"), 3);
//! ```
//!
//! Then run `sudo sptrace -- ./prog`: a Rust binary is traced exactly like a
//! C one. The macros (each a statement):
//!
//! | Macro | Probe | Meaning |
//! |---|---|---|
//! | `sp_query_begin!(q)` / `sp_query_end!(q)` | `sp:query_begin` / `_end` | query `q` starts / ends on this thread |
//! | `sp_scope!(q)` | both | BEGIN now, END when the enclosing block exits (also on unwinding) |
//! | `sp_cache_hit!(q)` | `sp:cache_hit` | the result of `q` came from the in-memory cache |
//! | `sp_query_begin_key!(q, key)` / `sp_query_end_key!` / `sp_cache_hit_key!` / `sp_scope_key!` | the same, with a second argument | query `q` of integer `key`: one row of `q`, or one per key with `sptrace --query-keys` |
//! | `sp_query_begin_str!(text)` / `sp_query_end_str!` / `sp_cache_hit_str!` | `sp:query_begin` / `_end` / `sp:cache_hit` | a query named by run-time text (`&str`, `String`, `&[u8]`, `Vec<u8>`), interned with [`Name::intern_bytes`] only while traced |
//! | `sp_query_begin_key_str!(q, key)` / `sp_query_end_key_str!` / `sp_cache_hit_key_str!` | the same, with a second and third argument | query `q` of a text key: one row of `q`, or one per key text, `q(text)`, with `--query-keys` |
//! | `sp_incr_load_begin!(q)` / `_end!` / `sp_incr_load_scope!(q)` | `sp:incr_load_*` | loading `q` from an on-disk cache |
//! | `sp_blocked_begin!(q)` / `_end!` / `sp_blocked_scope!(q)` | `sp:blocked_*` | waiting for another thread computing `q` |
//! | `sp_thread_name!(name)` | `sp:thread_name` | names the calling thread |
//! | `sp_mark!(name, key)` | `sp:mark` | a point event with an integer key |
//! | `sp_alloc!(type, size, ptr)` / `sp_free!(type, ptr)` | `sp:alloc` / `sp:free` | a typed allocation / free |
//! | `sp_probe!(name, args...)` | `sp:name` | generic probe, `name` an identifier, 0..6 integer or pointer args |
//! | `sp_enabled!()` | — | true while a tracer is attached to a standard probe of this object |
//! | `sp_name!(q)` | — | the [`Name`] of `q`, for table-driven code ([`Name::query_begin`], ...) |
//!
//! [`TracedAlloc`] wraps any [`GlobalAlloc`](core::alloc::GlobalAlloc) (the
//! system allocator, jemalloc, mimalloc) and reports every allocation and
//! free of the program through `sp:alloc` / `sp:free`, for `sptrace mem`.
//!
//! # How names match
//!
//! sptrace keys its rows by the name's *address* and matches an END with
//! the open BEGIN of the same address. Rust does not promise that two equal
//! literals share an address, so the macros do not pass the literal's own
//! address: each site's assembly defines the NUL-terminated text of the name
//! under a symbol made from it, `sp.name.<text>`, weak and hidden, and loads
//! the address of that symbol. The linker keeps one definition per symbol in
//! an executable or shared object, so every site naming `"parse"` passes the
//! same pointer whatever the opt-level, the codegen units, LTO or the crate
//! it sits in, and in a binary that mixes crates, C and Rust, the rows merge
//! by text as usual. Names are string literals of at most 127 bytes without
//! `"`, `\`, `{`, `}` or control characters (a compile error otherwise).
//!
//! # Batched events
//!
//! A uprobe hit enters the kernel (about 300 ns even on Linux 6.18's nop5
//! fast path, several times a bare syscall). So, as in `sp_probe.h`, the
//! query probes (query, blocked and incr_load BEGIN/END, cache_hit) do not
//! trap while sptrace batches: each appends a 32-byte record (timestamp,
//! name, kind) to a ring of its thread in the program's own memory, and
//! only `sp:flush`, about twice per 127 pairs, traps into the tracer, which
//! drains the ring then. A traced query pair then costs about what the C
//! header's does (`bench/run_rust_batch_cost.sh`; docs/numbers.md), and no
//! site is patched by the kernel inside a measured interval, so even the
//! first interval of a site is exact. `"events": "batched"` in sptrace's
//! JSON says so. The ring is the header's, record for record
//! (`include/sptrace/batch_abi.h`): mapped with `mmap` (no allocator in a
//! probe, which may sit inside one) and `MADV_WIPEONFORK` (a forked child
//! starts with fresh rings), released at thread exit by a pthread key's
//! destructor, safe against signal handlers that fire probes mid-append.
//! The probes of `sp:mark`, `sp:alloc`, `sp:free`, `sp:thread_name` and
//! `sp_probe!` stay per-event.
//!
//! A tracer that does not batch (bpftrace, perf, `SPTRACE_PER_EVENT=1`)
//! leaves `sp_flush_semaphore` at 0, and the same probes fire their
//! per-event sites; so does a probe of a thread whose ring is gone (in a
//! later pthread key destructor) or could not be mapped, and sptrace counts
//! those (`batch_fallback`). In a binary that mixes C and Rust, each
//! language keeps its own ring per thread; the tracer drains every ring of
//! a thread on each flush, merged by timestamp, so a query begun in C and
//! ended in Rust nests as if one language had fired both.
//!
//! The ring's pointer lives in thread-local storage, which a `no_std` crate
//! has no stable way to declare: it is 8 bytes of `.tbss` defined in
//! assembly (weak and hidden, one per executable or shared object), reached
//! through the ELF general-dynamic TLS sequence (`__tls_get_addr`). That is
//! right in a cdylib, even one loaded by `dlopen`, and in an executable the
//! linker rewrites it into the local-exec `%fs`-relative access a C
//! `__thread` variable costs. The probe path calls libc's `mmap`, `madvise`,
//! `munmap`, `clock_gettime` and `pthread_key_create`/`pthread_setspecific`
//! (declared by the crate, which has no dependency).
//!
//! # What a disabled probe costs
//!
//! Every probe name has a 16-bit semaphore `sp_<probe>_semaphore` in section
//! `.probes`, weak and hidden, the same symbol `sp_probe.h` defines: a C
//! library linked into a Rust binary shares it, one semaphore per name. The
//! kernel increments it while sptrace is attached. An untraced site is one
//! `movzwl` of the semaphore (for a query probe, ORed with
//! `sp_flush_semaphore`) and a not-taken branch marked cold; the name's
//! address, the arguments and the probe instruction sit out of the hot path,
//! and the arguments are evaluated only when a tracer is attached.
//!
//! Without the default feature `enabled` (`default-features = false`), every
//! macro compiles to nothing (no note, no semaphore, no instruction; the
//! arguments are type-checked, never evaluated) and `sp_enabled!()` is
//! `false`. The probes are emitted on x86-64 Linux; on other targets the
//! macros compile to nothing too.
//!
//! # Semaphores and RELRO
//!
//! Rust links with `-z relro -z now`, and the linkers then start the
//! writable data right after the read-only-after-relocation data in the
//! file, in the same file page. A small `.probes` section can land in that
//! page, which is then mapped twice; when sptrace launches the program, the
//! kernel increments the semaphore in the first mapping, the one that
//! becomes read-only, and the program never sees it set. So the first
//! semaphore of each object file page-aligns that object's `.probes`: at
//! most a page of padding per object file with probes.
//!
//! # Features and libraries
//!
//! Cargo unifies features: if any crate of a build depends on `sp-probe`
//! with its default features, probes are on for every crate. A library
//! should depend with `default-features = false` and forward a feature of
//! its own (`probes = ["sp-probe/enabled"]`), so that the binary decides.
//!
//! # The site (x86-64)
//!
//! `lea -128(%rsp),%rsp` / `nopl 0x0(%rax,%rax,1)` (`0f 1f 44 00 00`) /
//! `lea 128(%rsp),%rsp`, every argument in a register (spec `-8@%reg`), and
//! a SystemTap v3 note in `.note.stapsdt` (provider `sp`) plus
//! `.stapsdt.base`: byte for byte what `sp_probe.h` emits. On Linux 6.18+
//! the kernel turns a uprobe on that nop into a call, which pushes below
//! `%rsp`; stepping `%rsp` over the 128-byte red zone first keeps a leaf
//! function's spilled data intact, and the asm is `nostack` so such leaf
//! functions keep using their red zone (a batched query probe calls the
//! ring code, so its function is no leaf). The ring code has one
//! `sp:flush(ring)` and one `sp:tsc` site, each a 1-byte `nop` between the
//! same `lea`s: the kernel leaves those int3 traps, which `fork()` copies
//! (it does not copy the page the nop5 fast path calls into).
//!
//! # Depending on the crate
//!
//! ```toml
//! [dependencies]
//! sp-probe = { path = "path/to/sptrace/probes/rust" }
//! # or: sp-probe = { git = "https://example.org/sptrace.git" }
//! # compiled out: sp-probe = { path = "...", default-features = false }
//! ```
#![cfg_attr(not(test), no_std)]
#![warn(missing_docs)]

mod alloc;
mod instrument;
mod intern;
mod name;
mod typed;

pub use crate::alloc::TracedAlloc;
pub use crate::instrument::{AsyncQuery, Instrument, Instrumented};
pub use crate::name::{IntegerOrPointer, Name, Scope};
pub use crate::typed::{alloc_array_of, alloc_of, free_of, type_name_of};
#[cfg(feature = "alloc")]
pub use crate::typed::{boxed, TracedBox};

/// True when this build emits probes: the feature `enabled` is on and the
/// target is x86-64 Linux.
pub const EMITS_PROBES: bool = cfg!(all(
    feature = "enabled",
    target_arch = "x86_64",
    target_os = "linux"
));

#[doc(hidden)]
pub mod __private {
    pub use core::arch::asm;

    /// A call to this marks the branch around it unlikely: the probe's set-up
    /// is laid out away from the hot path.
    #[cold]
    #[inline]
    pub fn cold() {}

    /// `b`, with the branch on it marked unlikely.
    #[inline(always)]
    pub fn unlikely(b: bool) -> bool {
        if b {
            cold();
        }
        b
    }

    #[cfg(all(feature = "enabled", target_arch = "x86_64", target_os = "linux"))]
    pub use crate::batch::{
        add as batch_add, K_BLOCKED_BEGIN, K_BLOCKED_END, K_CACHE_HIT, K_INCR_LOAD_BEGIN,
        K_INCR_LOAD_END, K_KEY, K_KEY_TEXT, K_QUERY_BEGIN, K_QUERY_END,
    };

    /// Fires its closure when dropped: the END of `sp_scope!` and friends,
    /// also on unwinding.
    pub struct OnDrop<F: FnMut()>(pub F);

    /// `f`, made `!Send` (it holds a raw pointer's marker): the guards of
    /// `sp_scope!` and friends, like [`Scope`](crate::Scope), must drop on
    /// the thread of their BEGIN.
    #[inline(always)]
    pub fn not_send<F: FnMut()>(mut f: F) -> impl FnMut() {
        let marker = core::marker::PhantomData::<*const ()>;
        move || {
            let _ = &marker;
            f()
        }
    }

    impl<F: FnMut()> Drop for OnDrop<F> {
        #[inline(always)]
        fn drop(&mut self) {
            (self.0)()
        }
    }

    /// The bytes of a `*_str!` macro's text: a `&str`, `String`, `&[u8]`
    /// or `Vec<u8>`, taken by reference (never moved into the macro).
    #[inline(always)]
    pub fn text_of<T: AsRef<[u8]> + ?Sized>(t: &T) -> &[u8] {
        t.as_ref()
    }

    /// Compile-time check of a name literal: the text goes into assembly
    /// between double quotes and into an asm! template, so `"`, `\`, `{`,
    /// `}` and control characters cannot be carried; sptrace keeps 127 bytes.
    pub const fn check_name(name: &str) {
        let b = name.as_bytes();
        if b.is_empty() {
            panic!("sp_probe: a probe name must not be empty");
        }
        if b.len() > 127 {
            panic!("sp_probe: a probe name is at most 127 bytes (sptrace keeps no more)");
        }
        let mut i = 0;
        while i < b.len() {
            let c = b[i];
            if c == b'"' || c == b'\\' || c == b'{' || c == b'}' || c < 0x20 || c == 0x7f {
                panic!("sp_probe: a probe name must not contain '\"', '\\', braces or control characters");
            }
            i += 1;
        }
    }
}

/// The error of a probe macro given something else than a string literal.
#[doc(hidden)]
#[macro_export]
macro_rules! __sp_not_literal {
    ($m:literal) => {
        compile_error!(concat!(
            $m, "!: the name must be a string literal, e.g. ", $m, "!(\"parse\") ",
            "(sptrace matches BEGIN and END by the name's address, which only a ",
            "literal fixes; for names picked at run time, keep `sp_name!(\"parse\")` ",
            "values in a table and call their methods, e.g. name.query_begin())"
        ))
    };
}

/// `sp_scope!("q")`: BEGIN of query `q` now, END when the enclosing block is
/// left by any route, also when a panic unwinds it. A statement; several
/// scopes may share a block. The guard is not `Send`: an `async fn` holding
/// it across `.await` is not `Send` either (see [`Scope`](crate::Scope)).
///
/// ```
/// use sp_probe::sp_scope;
///
/// fn borrowck(body: &[u32]) -> Option<u32> {
///     sp_scope!("borrowck");
///     let first = *body.first()?; // an early return ends the query too
///     Some(first + 1)
/// }
/// # assert_eq!(borrowck(&[1]), Some(2));
/// # assert_eq!(borrowck(&[]), None);
/// ```
#[macro_export]
macro_rules! sp_scope {
    ($q:literal) => {
        $crate::sp_query_begin!($q);
        let _sp_scope = $crate::__private::OnDrop($crate::__private::not_send(|| $crate::sp_query_end!($q)));
    };
    ($($t:tt)*) => { $crate::__sp_not_literal!("sp_scope") };
}

/// `sp_scope_key!("q", key)`:
/// [`sp_query_begin_key!`](crate::sp_query_begin_key) of `q` and `key`
/// now, [`sp_query_end_key!`](crate::sp_query_end_key) of the same when
/// the enclosing block is left by any route. `key` is evaluated once.
///
/// ```
/// use sp_probe::sp_scope_key;
///
/// fn typeck(def_index: u32) -> u32 {
///     sp_scope_key!("typeck", def_index);
///     def_index * 2
/// }
/// # assert_eq!(typeck(21), 42);
/// ```
#[macro_export]
macro_rules! sp_scope_key {
    ($q:literal, $key:expr) => {
        let _sp_key = $key;
        $crate::sp_query_begin_key!($q, _sp_key);
        let _sp_scope = $crate::__private::OnDrop($crate::__private::not_send(move || {
            $crate::sp_query_end_key!($q, _sp_key)
        }));
    };
    ($($t:tt)*) => { $crate::__sp_not_literal!("sp_scope_key") };
}

/// `sp_incr_load_scope!("q")`: `sp_incr_load_begin!` now, `sp_incr_load_end!`
/// when the enclosing block exits.
///
/// ```
/// use sp_probe::{sp_incr_load_scope, sp_scope};
///
/// fn mir(cached: Option<&[u8]>) -> usize {
///     sp_scope!("mir");
///     if let Some(bytes) = cached {
///         sp_incr_load_scope!("mir");
///         return bytes.len();
///     }
///     0
/// }
/// # assert_eq!(mir(Some(b"abc")), 3);
/// ```
#[macro_export]
macro_rules! sp_incr_load_scope {
    ($q:literal) => {
        $crate::sp_incr_load_begin!($q);
        let _sp_scope = $crate::__private::OnDrop($crate::__private::not_send(|| $crate::sp_incr_load_end!($q)));
    };
    ($($t:tt)*) => { $crate::__sp_not_literal!("sp_incr_load_scope") };
}

/// `sp_blocked_scope!("q")`: `sp_blocked_begin!` now, `sp_blocked_end!` when
/// the enclosing block exits.
///
/// ```
/// use sp_probe::sp_blocked_scope;
/// use std::sync::Mutex;
///
/// static TABLE: Mutex<Vec<u32>> = Mutex::new(Vec::new());
/// let len = {
///     sp_blocked_scope!("symbols");
///     TABLE.lock().unwrap().len()
/// };
/// # assert_eq!(len, 0);
/// ```
#[macro_export]
macro_rules! sp_blocked_scope {
    ($q:literal) => {
        $crate::sp_blocked_begin!($q);
        let _sp_scope = $crate::__private::OnDrop($crate::__private::not_send(|| $crate::sp_blocked_end!($q)));
    };
    ($($t:tt)*) => { $crate::__sp_not_literal!("sp_blocked_scope") };
}

#[cfg(all(feature = "enabled", target_arch = "x86_64", target_os = "linux"))]
#[macro_use]
mod enabled;

#[cfg(all(feature = "enabled", target_arch = "x86_64", target_os = "linux"))]
mod batch;

#[cfg(not(all(feature = "enabled", target_arch = "x86_64", target_os = "linux")))]
#[macro_use]
mod disabled;

#[cfg(test)]
mod tests;
