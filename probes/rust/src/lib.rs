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
//! # What a disabled probe costs
//!
//! Every probe name has a 16-bit semaphore `sp_<probe>_semaphore` in section
//! `.probes`, weak and hidden, the same symbol `sp_probe.h` defines: a C
//! library linked into a Rust binary shares it, one semaphore per name. The
//! kernel increments it while sptrace is attached. An untraced site is one
//! `movzwl` of the semaphore and a not-taken branch marked cold; the name's
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
//! functions keep using their red zone.
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
mod name;

pub use crate::alloc::TracedAlloc;
pub use crate::name::{IntegerOrPointer, Name, Scope};

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

    /// Fires its closure when dropped: the END of `sp_scope!` and friends,
    /// also on unwinding.
    pub struct OnDrop<F: FnMut()>(pub F);

    impl<F: FnMut()> Drop for OnDrop<F> {
        #[inline(always)]
        fn drop(&mut self) {
            (self.0)()
        }
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
/// scopes may share a block.
#[macro_export]
macro_rules! sp_scope {
    ($q:literal) => {
        $crate::sp_query_begin!($q);
        let _sp_scope = $crate::__private::OnDrop(|| $crate::sp_query_end!($q));
    };
    ($($t:tt)*) => { $crate::__sp_not_literal!("sp_scope") };
}

/// `sp_incr_load_scope!("q")`: `sp_incr_load_begin!` now, `sp_incr_load_end!`
/// when the enclosing block exits.
#[macro_export]
macro_rules! sp_incr_load_scope {
    ($q:literal) => {
        $crate::sp_incr_load_begin!($q);
        let _sp_scope = $crate::__private::OnDrop(|| $crate::sp_incr_load_end!($q));
    };
    ($($t:tt)*) => { $crate::__sp_not_literal!("sp_incr_load_scope") };
}

/// `sp_blocked_scope!("q")`: `sp_blocked_begin!` now, `sp_blocked_end!` when
/// the enclosing block exits.
#[macro_export]
macro_rules! sp_blocked_scope {
    ($q:literal) => {
        $crate::sp_blocked_begin!($q);
        let _sp_scope = $crate::__private::OnDrop(|| $crate::sp_blocked_end!($q));
    };
    ($($t:tt)*) => { $crate::__sp_not_literal!("sp_blocked_scope") };
}

#[cfg(all(feature = "enabled", target_arch = "x86_64", target_os = "linux"))]
#[macro_use]
mod enabled;

#[cfg(not(all(feature = "enabled", target_arch = "x86_64", target_os = "linux")))]
#[macro_use]
mod disabled;

#[cfg(test)]
mod tests;
