// SPDX-License-Identifier: MIT
//! Probe arguments: names made by `sp_name!`, and the integer-or-pointer
//! conversion every other argument goes through.

use core::marker::PhantomData;

/// A value that can be a probe argument: an integer, `bool`, `char` or a raw
/// pointer (`*const T`, `*mut T`, `NonNull<T>`), passed as 64 bits in a
/// register (signed integers sign-extended, as C's `(long long)` cast does).
/// Anything else (a float, a reference, a `String`, a struct) is a compile
/// error; pass a reference's address as `r as *const T` or `v.as_ptr()`.
pub trait IntegerOrPointer {
    /// The 64-bit register value.
    fn sp_arg(self) -> u64;
}

macro_rules! unsigned {
    ($($t:ty)*) => {$(
        impl IntegerOrPointer for $t {
            #[inline(always)]
            fn sp_arg(self) -> u64 {
                self as u64
            }
        }
    )*};
}
macro_rules! signed {
    ($($t:ty)*) => {$(
        impl IntegerOrPointer for $t {
            #[inline(always)]
            fn sp_arg(self) -> u64 {
                self as i64 as u64
            }
        }
    )*};
}
unsigned!(u8 u16 u32 u64 usize bool char);
signed!(i8 i16 i32 i64 isize);

impl<T: ?Sized> IntegerOrPointer for *const T {
    #[inline(always)]
    fn sp_arg(self) -> u64 {
        self as *const u8 as usize as u64
    }
}

impl<T: ?Sized> IntegerOrPointer for *mut T {
    #[inline(always)]
    fn sp_arg(self) -> u64 {
        self as *const u8 as usize as u64
    }
}

impl<T: ?Sized> IntegerOrPointer for core::ptr::NonNull<T> {
    #[inline(always)]
    fn sp_arg(self) -> u64 {
        self.as_ptr() as *const u8 as usize as u64
    }
}

impl IntegerOrPointer for Name {
    #[inline(always)]
    fn sp_arg(self) -> u64 {
        self.ptr as usize as u64
    }
}

/// The name of a query, type, mark or thread: the address of its
/// NUL-terminated text, the same for every `sp_name!` and probe macro of
/// the same literal in one executable or shared object. Made only by
/// [`sp_name!`](crate::sp_name); for table-driven code that picks the name
/// at run time (`names[q].query_begin()`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Name {
    ptr: *const u8,
}

// The text is immutable and static.
unsafe impl Send for Name {}
unsafe impl Sync for Name {}

/// Fires the END matching the BEGIN that made it when dropped, also on
/// unwinding: from [`Name::scope`], [`Name::incr_load_scope`] and
/// [`Name::blocked_scope`].
///
/// A `Scope` is not `Send`: BEGIN and END must come from the same thread
/// (sptrace keeps one query stack per thread), so a guard cannot be moved
/// to another thread, nor held across an `.await` in a future that a
/// multi-threaded runtime may resume elsewhere:
///
/// ```compile_fail,E0277
/// let s = sp_probe::sp_name!("parse").scope();
/// std::thread::spawn(move || drop(s)); // error: `*const ()` cannot be sent between threads
/// ```
///
/// The guards of [`sp_scope!`](crate::sp_scope) and friends are not `Send`
/// either, so an `async fn` that holds one across an `.await` makes a
/// future that is not `Send` (which a multi-threaded runtime refuses):
///
/// ```compile_fail,E0277
/// fn spawn<F: std::future::Future + Send>(_: F) {}
/// async fn fetch() {
///     sp_probe::sp_scope!("fetch");
///     std::future::ready(()).await;
/// }
/// spawn(fetch()); // error: the future is not `Send`
/// ```
#[must_use = "the END fires when the Scope is dropped: bind it with `let _s = ...`"]
#[derive(Debug)]
pub struct Scope {
    name: Name,
    kind: ScopeKind,
    not_send: PhantomData<*const ()>,
}

#[derive(Debug, Clone, Copy)]
enum ScopeKind {
    Query,
    QueryKey(u64),
    IncrLoad,
    Blocked,
}

impl Drop for Scope {
    #[inline(always)]
    fn drop(&mut self) {
        match self.kind {
            ScopeKind::Query => self.name.query_end(),
            ScopeKind::QueryKey(k) => self.name.query_end_key(k),
            ScopeKind::IncrLoad => self.name.incr_load_end(),
            ScopeKind::Blocked => self.name.blocked_end(),
        }
    }
}

#[cfg(all(feature = "enabled", target_arch = "x86_64", target_os = "linux"))]
macro_rules! fire {
    ($probe:ident, $($a:expr),*) => { crate::__sp_named_ptr!($probe, $($a),*) };
}
#[cfg(not(all(feature = "enabled", target_arch = "x86_64", target_os = "linux")))]
macro_rules! fire {
    ($probe:ident, $($a:expr),*) => { { $( let _ = $a; )* } };
}

/// A query probe: batched while the tracer batches (see `__sp_qsite!`).
#[cfg(all(feature = "enabled", target_arch = "x86_64", target_os = "linux"))]
macro_rules! qfire {
    ($probe:ident, $kind:ident, $p:expr) => {{
        let p: *const u8 = $p;
        crate::__sp_qsite!($probe, $kind, p,
            crate::__sp_site_asm!($probe, "", "-8@{n}"; n = in(reg) p,))
    }};
}
#[cfg(not(all(feature = "enabled", target_arch = "x86_64", target_os = "linux")))]
macro_rules! qfire {
    ($probe:ident, $kind:ident, $p:expr) => {{
        let _ = $p;
    }};
}

/// A keyed query probe (`sp_query_begin_key!`'s, for a `Name`); with
/// `text`, `$key` is the address of an interned text key
/// (`sp_query_begin_key_str!`'s), which the per-event site marks with a
/// third argument, 1.
#[cfg(all(feature = "enabled", target_arch = "x86_64", target_os = "linux"))]
macro_rules! kqfire {
    ($probe:ident, $kind:ident, $p:expr, $key:expr) => {
        kqfire!(@fire $probe, crate::__private::$kind | crate::__private::K_KEY,
            $p, $key, "-8@{n} -8@{a}";)
    };
    ($probe:ident, $kind:ident, $p:expr, $key:expr, text) => {
        kqfire!(@fire $probe,
            crate::__private::$kind | crate::__private::K_KEY | crate::__private::K_KEY_TEXT,
            $p, $key, "-8@{n} -8@{a} -8@{b}"; b = in(reg) 1u64,)
    };
    (@fire $probe:ident, $flags:expr, $p:expr, $key:expr, $spec:tt; $($extra:tt)*) => {{
        let p: *const u8 = $p;
        if crate::__sp_sema_or_flush!($probe) != 0 {
            crate::__private::cold();
            let k: u64 = $key;
            if crate::__sp_sema!(flush) == 0 || !crate::__private::batch_add($flags, p, k) {
                crate::__sp_site_asm!($probe, "", $spec;
                    n = in(reg) p, a = in(reg) k, $($extra)*);
            }
        }
    }};
}
#[cfg(not(all(feature = "enabled", target_arch = "x86_64", target_os = "linux")))]
macro_rules! kqfire {
    ($probe:ident, $kind:ident, $p:expr, $key:expr) => {{
        let _ = ($p, $key);
    }};
    ($probe:ident, $kind:ident, $p:expr, $key:expr, text) => {{
        let _ = ($p, $key);
    }};
}

impl Name {
    #[doc(hidden)]
    #[inline(always)]
    pub const unsafe fn __from_ptr(ptr: *const u8) -> Name {
        Name { ptr }
    }

    /// The address the tracer sees.
    #[inline(always)]
    pub fn as_ptr(self) -> *const u8 {
        self.ptr
    }

    /// The text, without its NUL.
    pub fn to_bytes(self) -> &'static [u8] {
        let mut n = 0;
        // SAFETY: sp_name! made ptr from a NUL-terminated static text.
        unsafe {
            while *self.ptr.add(n) != 0 {
                n += 1;
            }
            core::slice::from_raw_parts(self.ptr, n)
        }
    }

    /// `sp:query_begin` of this name.
    #[inline(always)]
    pub fn query_begin(self) {
        qfire!(query_begin, K_QUERY_BEGIN, self.ptr)
    }

    /// `sp:query_end` of this name.
    #[inline(always)]
    pub fn query_end(self) {
        qfire!(query_end, K_QUERY_END, self.ptr)
    }

    /// `sp:query_begin` now, `sp:query_end` when the returned guard drops.
    #[inline(always)]
    pub fn scope(self) -> Scope {
        self.query_begin();
        Scope { name: self, kind: ScopeKind::Query, not_send: PhantomData }
    }

    /// `sp:query_begin` of this name with `key` (see
    /// [`sp_query_begin_key!`](crate::sp_query_begin_key)).
    ///
    /// ```
    /// let typeck = sp_probe::sp_name!("typeck");
    /// for def in 0..3u32 {
    ///     typeck.query_begin_key(def);
    ///     typeck.query_end_key(def);
    /// }
    /// ```
    #[inline(always)]
    pub fn query_begin_key<K: IntegerOrPointer>(self, key: K) {
        kqfire!(query_begin, K_QUERY_BEGIN, self.ptr, key.sp_arg())
    }

    /// `sp:query_begin` of this name with the text key `key` (an
    /// interned text: [`Name::intern_bytes`]), as `sp_query_begin_key_str!`
    /// fires it.
    #[inline(always)]
    pub(crate) fn query_begin_text_key(self, key: Name) {
        kqfire!(query_begin, K_QUERY_BEGIN, self.ptr, key.ptr as u64, text)
    }

    /// `sp:query_end` of this name with `key`.
    #[inline(always)]
    pub fn query_end_key<K: IntegerOrPointer>(self, key: K) {
        kqfire!(query_end, K_QUERY_END, self.ptr, key.sp_arg())
    }

    /// `sp:cache_hit` of this name with `key`.
    #[inline(always)]
    pub fn cache_hit_key<K: IntegerOrPointer>(self, key: K) {
        kqfire!(cache_hit, K_CACHE_HIT, self.ptr, key.sp_arg())
    }

    /// [`query_begin_key`](Name::query_begin_key) now, the END of the same
    /// name and key when the returned guard drops.
    ///
    /// ```
    /// let q = sp_probe::sp_name!("optimized_mir");
    /// let _s = q.scope_key(12u32);
    /// ```
    #[inline(always)]
    pub fn scope_key<K: IntegerOrPointer>(self, key: K) -> Scope {
        let k = key.sp_arg();
        self.query_begin_key(k);
        Scope { name: self, kind: ScopeKind::QueryKey(k), not_send: PhantomData }
    }

    /// `sp:cache_hit` of this name.
    #[inline(always)]
    pub fn cache_hit(self) {
        qfire!(cache_hit, K_CACHE_HIT, self.ptr)
    }

    /// `sp:incr_load_begin` of this name.
    #[inline(always)]
    pub fn incr_load_begin(self) {
        qfire!(incr_load_begin, K_INCR_LOAD_BEGIN, self.ptr)
    }

    /// `sp:incr_load_end` of this name.
    #[inline(always)]
    pub fn incr_load_end(self) {
        qfire!(incr_load_end, K_INCR_LOAD_END, self.ptr)
    }

    /// `sp:incr_load_begin` now, `sp:incr_load_end` when the guard drops.
    #[inline(always)]
    pub fn incr_load_scope(self) -> Scope {
        self.incr_load_begin();
        Scope { name: self, kind: ScopeKind::IncrLoad, not_send: PhantomData }
    }

    /// `sp:blocked_begin` of this name.
    #[inline(always)]
    pub fn blocked_begin(self) {
        qfire!(blocked_begin, K_BLOCKED_BEGIN, self.ptr)
    }

    /// `sp:blocked_end` of this name.
    #[inline(always)]
    pub fn blocked_end(self) {
        qfire!(blocked_end, K_BLOCKED_END, self.ptr)
    }

    /// `sp:blocked_begin` now, `sp:blocked_end` when the guard drops.
    #[inline(always)]
    pub fn blocked_scope(self) -> Scope {
        self.blocked_begin();
        Scope { name: self, kind: ScopeKind::Blocked, not_send: PhantomData }
    }

    /// `sp:thread_name`: names the calling thread.
    #[inline(always)]
    pub fn thread_name(self) {
        fire!(thread_name, self.ptr)
    }

    /// `sp:mark` of this name with `key`.
    #[inline(always)]
    pub fn mark<K: IntegerOrPointer>(self, key: K) {
        fire!(mark, self.ptr, key.sp_arg())
    }

    /// `sp:alloc`: `ptr` was allocated, `size` bytes of this type.
    #[inline(always)]
    pub fn alloc<P: IntegerOrPointer>(self, size: usize, ptr: P) {
        fire!(alloc, self.ptr, size as u64, ptr.sp_arg())
    }

    /// `sp:free`: `ptr` of this type was freed.
    #[inline(always)]
    pub fn free<P: IntegerOrPointer>(self, ptr: P) {
        fire!(free, self.ptr, ptr.sp_arg())
    }
}
