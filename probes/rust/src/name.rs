// SPDX-License-Identifier: MIT
//! Probe arguments: names made by `sp_name!`, and the integer-or-pointer
//! conversion every other argument goes through.

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
#[must_use = "the END fires when the Scope is dropped: bind it with `let _s = ...`"]
#[derive(Debug)]
pub struct Scope {
    name: Name,
    kind: ScopeKind,
}

#[derive(Debug, Clone, Copy)]
enum ScopeKind {
    Query,
    IncrLoad,
    Blocked,
}

impl Drop for Scope {
    #[inline(always)]
    fn drop(&mut self) {
        match self.kind {
            ScopeKind::Query => self.name.query_end(),
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
        fire!(query_begin, self.ptr)
    }

    /// `sp:query_end` of this name.
    #[inline(always)]
    pub fn query_end(self) {
        fire!(query_end, self.ptr)
    }

    /// `sp:query_begin` now, `sp:query_end` when the returned guard drops.
    #[inline(always)]
    pub fn scope(self) -> Scope {
        self.query_begin();
        Scope { name: self, kind: ScopeKind::Query }
    }

    /// `sp:cache_hit` of this name.
    #[inline(always)]
    pub fn cache_hit(self) {
        fire!(cache_hit, self.ptr)
    }

    /// `sp:incr_load_begin` of this name.
    #[inline(always)]
    pub fn incr_load_begin(self) {
        fire!(incr_load_begin, self.ptr)
    }

    /// `sp:incr_load_end` of this name.
    #[inline(always)]
    pub fn incr_load_end(self) {
        fire!(incr_load_end, self.ptr)
    }

    /// `sp:incr_load_begin` now, `sp:incr_load_end` when the guard drops.
    #[inline(always)]
    pub fn incr_load_scope(self) -> Scope {
        self.incr_load_begin();
        Scope { name: self, kind: ScopeKind::IncrLoad }
    }

    /// `sp:blocked_begin` of this name.
    #[inline(always)]
    pub fn blocked_begin(self) {
        fire!(blocked_begin, self.ptr)
    }

    /// `sp:blocked_end` of this name.
    #[inline(always)]
    pub fn blocked_end(self) {
        fire!(blocked_end, self.ptr)
    }

    /// `sp:blocked_begin` now, `sp:blocked_end` when the guard drops.
    #[inline(always)]
    pub fn blocked_scope(self) -> Scope {
        self.blocked_begin();
        Scope { name: self, kind: ScopeKind::Blocked }
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
