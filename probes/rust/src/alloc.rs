// SPDX-License-Identifier: MIT
//! A global allocator wrapper that reports every allocation and free through
//! the sp alloc/free probes, so `sptrace mem` sees programs whose allocator
//! bypasses libc malloc (jemalloc, mimalloc) as well as those on `System`.

use core::alloc::{GlobalAlloc, Layout};

/// Wraps the global allocator `A`: every allocation fires `sp:alloc` (type
/// [`TracedAlloc::TYPE`], the size asked, the pointer) and every free
/// `sp:free`; a `realloc` is a free of the old block and an allocation of
/// the new one. Untraced, each costs one load of the probe's semaphore and a
/// not-taken branch on top of `A`.
///
/// ```ignore
/// use sp_probe::TracedAlloc;
/// use std::alloc::System;
///
/// #[global_allocator]
/// static ALLOC: TracedAlloc<System> = TracedAlloc::new(System);
/// ```
///
/// Then `sudo sptrace mem --no-libc -- ./prog` has one row, `rust_heap`.
#[derive(Debug, Default)]
pub struct TracedAlloc<A> {
    inner: A,
}

impl<A> TracedAlloc<A> {
    /// The type name of the allocations in sptrace's tables.
    pub const TYPE: &'static str = "rust_heap";

    /// Wraps `inner`.
    pub const fn new(inner: A) -> Self {
        TracedAlloc { inner }
    }

    /// The wrapped allocator.
    pub const fn inner(&self) -> &A {
        &self.inner
    }
}

// SAFETY: every call is forwarded to `A` unchanged; the probes only read
// the returned pointer.
unsafe impl<A: GlobalAlloc> GlobalAlloc for TracedAlloc<A> {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = self.inner.alloc(layout);
        if !p.is_null() {
            crate::sp_alloc!("rust_heap", layout.size(), p);
        }
        p
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = self.inner.alloc_zeroed(layout);
        if !p.is_null() {
            crate::sp_alloc!("rust_heap", layout.size(), p);
        }
        p
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        crate::sp_free!("rust_heap", ptr);
        self.inner.dealloc(ptr, layout)
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // The free fires first: once realloc has moved the block, another
        // thread may be given the old address and fire its alloc before us.
        crate::sp_free!("rust_heap", ptr);
        let p = self.inner.realloc(ptr, layout, new_size);
        if !p.is_null() {
            crate::sp_alloc!("rust_heap", new_size, p);
        } else {
            // Failed: the old block is still allocated.
            crate::sp_alloc!("rust_heap", layout.size(), ptr);
        }
        p
    }
}
