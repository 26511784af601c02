// SPDX-License-Identifier: MIT
//! The probe macros when probes are compiled out (feature `enabled` off, or
//! a target other than x86-64 Linux): no note, no semaphore, no
//! instruction. Names and arguments are still type-checked (never
//! evaluated), so a program builds the same way with and without probes.

#[doc(hidden)]
#[macro_export]
macro_rules! __sp_named {
    ($probe:ident, $n:literal $(, $a:expr)*) => {{
        const _: () = $crate::__private::check_name($n);
        if false {
            $( let _ = $crate::IntegerOrPointer::sp_arg($a); )*
        }
    }};
}

/// `sp_query_begin_key!`: compiled out (feature `enabled` off).
#[macro_export]
macro_rules! sp_query_begin_key {
    ($q:literal, $key:expr) => { $crate::__sp_named!(query_begin, $q, $key) };
    ($($t:tt)*) => { $crate::__sp_not_literal!("sp_query_begin_key") };
}

/// `sp_query_end_key!`: compiled out (feature `enabled` off).
#[macro_export]
macro_rules! sp_query_end_key {
    ($q:literal, $key:expr) => { $crate::__sp_named!(query_end, $q, $key) };
    ($($t:tt)*) => { $crate::__sp_not_literal!("sp_query_end_key") };
}

/// `sp_cache_hit_key!`: compiled out (feature `enabled` off).
#[macro_export]
macro_rules! sp_cache_hit_key {
    ($q:literal, $key:expr) => { $crate::__sp_named!(cache_hit, $q, $key) };
    ($($t:tt)*) => { $crate::__sp_not_literal!("sp_cache_hit_key") };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __sp_text_unused {
    ($text:expr) => {{
        if false {
            let _ = $crate::__private::text_of(&$text);
        }
    }};
}

/// `sp_query_begin_str!`: compiled out (feature `enabled` off).
#[macro_export]
macro_rules! sp_query_begin_str {
    ($text:expr) => { $crate::__sp_text_unused!($text) };
}

/// `sp_query_end_str!`: compiled out (feature `enabled` off).
#[macro_export]
macro_rules! sp_query_end_str {
    ($text:expr) => { $crate::__sp_text_unused!($text) };
}

/// `sp_cache_hit_str!`: compiled out (feature `enabled` off).
#[macro_export]
macro_rules! sp_cache_hit_str {
    ($text:expr) => { $crate::__sp_text_unused!($text) };
}

/// `sp_query_begin_key_str!`: compiled out (feature `enabled` off).
#[macro_export]
macro_rules! sp_query_begin_key_str {
    ($q:literal, $key:expr) => {{
        const _: () = $crate::__private::check_name($q);
        $crate::__sp_text_unused!($key)
    }};
    ($($t:tt)*) => { $crate::__sp_not_literal!("sp_query_begin_key_str") };
}

/// `sp_query_end_key_str!`: compiled out (feature `enabled` off).
#[macro_export]
macro_rules! sp_query_end_key_str {
    ($q:literal, $key:expr) => {{
        const _: () = $crate::__private::check_name($q);
        $crate::__sp_text_unused!($key)
    }};
    ($($t:tt)*) => { $crate::__sp_not_literal!("sp_query_end_key_str") };
}

/// `sp_cache_hit_key_str!`: compiled out (feature `enabled` off).
#[macro_export]
macro_rules! sp_cache_hit_key_str {
    ($q:literal, $key:expr) => {{
        const _: () = $crate::__private::check_name($q);
        $crate::__sp_text_unused!($key)
    }};
    ($($t:tt)*) => { $crate::__sp_not_literal!("sp_cache_hit_key_str") };
}

/// `sp_query_begin!`: compiled out (feature `enabled` off).
#[macro_export]
macro_rules! sp_query_begin {
    ($q:literal) => { $crate::__sp_named!(query_begin, $q) };
    ($($t:tt)*) => { $crate::__sp_not_literal!("sp_query_begin") };
}

/// `sp_query_end!`: compiled out (feature `enabled` off).
#[macro_export]
macro_rules! sp_query_end {
    ($q:literal) => { $crate::__sp_named!(query_end, $q) };
    ($($t:tt)*) => { $crate::__sp_not_literal!("sp_query_end") };
}

/// `sp_cache_hit!`: compiled out (feature `enabled` off).
#[macro_export]
macro_rules! sp_cache_hit {
    ($q:literal) => { $crate::__sp_named!(cache_hit, $q) };
    ($($t:tt)*) => { $crate::__sp_not_literal!("sp_cache_hit") };
}

/// `sp_incr_load_begin!`: compiled out (feature `enabled` off).
#[macro_export]
macro_rules! sp_incr_load_begin {
    ($q:literal) => { $crate::__sp_named!(incr_load_begin, $q) };
    ($($t:tt)*) => { $crate::__sp_not_literal!("sp_incr_load_begin") };
}

/// `sp_incr_load_end!`: compiled out (feature `enabled` off).
#[macro_export]
macro_rules! sp_incr_load_end {
    ($q:literal) => { $crate::__sp_named!(incr_load_end, $q) };
    ($($t:tt)*) => { $crate::__sp_not_literal!("sp_incr_load_end") };
}

/// `sp_blocked_begin!`: compiled out (feature `enabled` off).
#[macro_export]
macro_rules! sp_blocked_begin {
    ($q:literal) => { $crate::__sp_named!(blocked_begin, $q) };
    ($($t:tt)*) => { $crate::__sp_not_literal!("sp_blocked_begin") };
}

/// `sp_blocked_end!`: compiled out (feature `enabled` off).
#[macro_export]
macro_rules! sp_blocked_end {
    ($q:literal) => { $crate::__sp_named!(blocked_end, $q) };
    ($($t:tt)*) => { $crate::__sp_not_literal!("sp_blocked_end") };
}

/// `sp_thread_name!`: compiled out (feature `enabled` off).
#[macro_export]
macro_rules! sp_thread_name {
    ($q:literal) => { $crate::__sp_named!(thread_name, $q) };
    ($($t:tt)*) => { $crate::__sp_not_literal!("sp_thread_name") };
}

/// `sp_mark!`: compiled out (feature `enabled` off).
#[macro_export]
macro_rules! sp_mark {
    ($q:literal, $key:expr) => { $crate::__sp_named!(mark, $q, $key) };
    ($($t:tt)*) => { $crate::__sp_not_literal!("sp_mark") };
}

/// `sp_alloc!`: compiled out (feature `enabled` off).
#[macro_export]
macro_rules! sp_alloc {
    ($q:literal, $size:expr, $ptr:expr) => { $crate::__sp_named!(alloc, $q, $size, $ptr) };
    ($($t:tt)*) => { $crate::__sp_not_literal!("sp_alloc") };
}

/// `sp_free!`: compiled out (feature `enabled` off).
#[macro_export]
macro_rules! sp_free {
    ($q:literal, $ptr:expr) => { $crate::__sp_named!(free, $q, $ptr) };
    ($($t:tt)*) => { $crate::__sp_not_literal!("sp_free") };
}

/// `sp_name!`: compiled out; the name's text, with no promise about its
/// address.
#[macro_export]
macro_rules! sp_name {
    ($q:literal) => {{
        const _: () = $crate::__private::check_name($q);
        #[allow(unused_unsafe)]
        unsafe {
            $crate::Name::__from_ptr(concat!($q, "\0").as_ptr())
        }
    }};
    ($($t:tt)*) => { $crate::__sp_not_literal!("sp_name") };
}

/// `sp_enabled!`: compiled out, always `false`.
#[macro_export]
macro_rules! sp_enabled {
    () => {
        false
    };
}

/// `sp_probe!`: compiled out (feature `enabled` off).
#[macro_export]
macro_rules! sp_probe {
    ($p:ident $(, $a:expr)*) => {{
        if false {
            $( let _ = $crate::IntegerOrPointer::sp_arg($a); )*
        }
    }};
    ($($t:tt)*) => {
        compile_error!("sp_probe!: usage sp_probe!(name, args...): `name` an identifier, 0 to 6 integer or pointer arguments")
    };
}
