// SPDX-License-Identifier: MIT
//! Allocations named by their Rust type, for `sptrace mem`: what C's typed
//! `SP_ALLOC("Widget", ...)` gives, with the name taken from
//! `core::any::type_name::<T>()` instead of written by hand.
//!
//! `type_name` is not NUL-terminated and not a literal, so it goes through
//! [`Name::intern`]: one static NUL-terminated copy per type, made at the
//! type's first traced allocation without a lock or an allocation (this
//! code may run inside a global allocator). Nothing is interned while no
//! tracer is attached.

use crate::Name;
use core::mem::size_of_val;

/// The [`Name`] of type `T` in sptrace's tables: its
/// `core::any::type_name` (e.g. `myprog::Widget`, `alloc::vec::Vec<u8>`),
/// cut as [`Name::intern`] says when over 127 bytes.
pub fn type_name_of<T: ?Sized>() -> Name {
    Name::intern(core::any::type_name::<T>())
}

/// `sp:alloc` of the value at `ptr`, named by its type `T`, of
/// `size_of_val(*ptr)` bytes: call it right after the allocation (a
/// container of your own, an arena). Nothing for a zero-sized value, which
/// owns no memory. Untraced: the semaphores' load and a branch.
///
/// # Safety
///
/// `ptr` must point to a valid `T` (its size is read from it for unsized
/// types, and it is never dereferenced otherwise).
#[inline]
pub unsafe fn alloc_of<T: ?Sized>(ptr: *const T) {
    if crate::sp_enabled!() {
        let size = size_of_val(&*ptr);
        if size != 0 {
            type_name_of::<T>().alloc(size, ptr as *const u8);
        }
    }
}

/// `sp:alloc` of `n` values of type `T` in one block at `ptr` (a `Vec<T>`'s
/// buffer: `alloc_array_of(v.as_ptr(), v.capacity())`), named by `T`.
/// Nothing when the block is empty.
#[inline]
pub fn alloc_array_of<T>(ptr: *const T, n: usize) {
    if crate::sp_enabled!() {
        let size = core::mem::size_of::<T>().saturating_mul(n);
        if size != 0 {
            type_name_of::<T>().alloc(size, ptr as *const u8);
        }
    }
}

/// `sp:free` of the block at `ptr` that [`alloc_of`] or [`alloc_array_of`]
/// reported: call it right before the memory is released. sptrace finds
/// the block by its address; a zero-sized one was never reported, and the
/// caller skips it the same way (`size` is the block's size in bytes).
#[inline]
pub fn free_of<T: ?Sized>(ptr: *const T, size: usize) {
    if size != 0 && crate::sp_enabled!() {
        type_name_of::<T>().free(ptr as *const u8);
    }
}

#[cfg(feature = "alloc")]
pub use self::boxed::{boxed, TracedBox};

#[cfg(feature = "alloc")]
mod boxed {
    extern crate alloc;

    use super::{alloc_of, free_of};
    use alloc::boxed::Box;
    use core::fmt;
    use core::mem::{size_of_val, ManuallyDrop};
    use core::ops::{Deref, DerefMut};

    /// A `Box<T>` whose allocation and free `sptrace mem` sees under the
    /// name of `T`: `sp:alloc` when it is made, `sp:free` when it is
    /// dropped or taken apart with [`TracedBox::into_box`]. It derefs to
    /// `T`. Feature `alloc`.
    ///
    /// ```
    /// # #[derive(Debug)] struct Widget { id: u32 }
    /// let w = sp_probe::boxed(Widget { id: 7 }); // a row named `..::Widget`
    /// assert_eq!(w.id, 7);
    /// drop(w);                                   // its free
    /// ```
    pub struct TracedBox<T: ?Sized> {
        b: ManuallyDrop<Box<T>>,
    }

    /// `TracedBox::new(v)`: `v` moved into a traced box.
    #[inline]
    pub fn boxed<T>(v: T) -> TracedBox<T> {
        TracedBox::new(v)
    }

    impl<T> TracedBox<T> {
        /// Moves `v` into a new box, reported as an allocation of `T`.
        #[inline]
        pub fn new(v: T) -> TracedBox<T> {
            TracedBox::from_box(Box::new(v))
        }
    }

    impl<T: ?Sized> TracedBox<T> {
        /// Adopts `b`, reported from now on as an allocation of `T` (of
        /// `size_of_val(&*b)` bytes: a `Box<[u8]>` counts its length).
        #[inline]
        pub fn from_box(b: Box<T>) -> TracedBox<T> {
            // SAFETY: b points to a valid T.
            unsafe { alloc_of::<T>(&*b) };
            TracedBox { b: ManuallyDrop::new(b) }
        }

        /// The plain box, reported freed: sptrace no longer follows it.
        #[inline]
        pub fn into_box(this: TracedBox<T>) -> Box<T> {
            let mut this = ManuallyDrop::new(this);
            free_of::<T>(&**this.b, size_of_val(&**this.b));
            // SAFETY: `this` is never dropped, so the box is moved out once.
            unsafe { ManuallyDrop::take(&mut this.b) }
        }
    }

    impl<T: ?Sized> Drop for TracedBox<T> {
        #[inline]
        fn drop(&mut self) {
            free_of::<T>(&**self.b, size_of_val(&**self.b));
            // SAFETY: dropped once, here.
            unsafe { ManuallyDrop::drop(&mut self.b) }
        }
    }

    impl<T: ?Sized> Deref for TracedBox<T> {
        type Target = T;
        #[inline]
        fn deref(&self) -> &T {
            &self.b
        }
    }

    impl<T: ?Sized> DerefMut for TracedBox<T> {
        #[inline]
        fn deref_mut(&mut self) -> &mut T {
            &mut self.b
        }
    }

    impl<T: ?Sized + fmt::Debug> fmt::Debug for TracedBox<T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            fmt::Debug::fmt(&**self.b, f)
        }
    }

    impl<T: Clone> Clone for TracedBox<T> {
        fn clone(&self) -> TracedBox<T> {
            TracedBox::new((**self.b).clone())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Widget {
        _v: [u64; 4],
    }

    #[test]
    fn names_are_type_names() {
        let _arena = crate::intern::tests::arena_lock();
        assert_eq!(type_name_of::<u32>().to_bytes(), b"u32");
        assert_eq!(type_name_of::<Widget>().to_bytes(),
                   core::any::type_name::<Widget>().as_bytes());
        assert_eq!(type_name_of::<Widget>(), type_name_of::<Widget>());
        assert_ne!(type_name_of::<Widget>(), type_name_of::<[Widget]>());
    }

    #[test]
    fn untraced_helpers_do_nothing_visible() {
        let w = Widget { _v: [1; 4] };
        unsafe { alloc_of(&w as *const Widget) };
        alloc_array_of(&w as *const Widget, 3);
        free_of(&w as *const Widget, 32);
    }

    #[cfg(feature = "alloc")]
    #[test]
    fn traced_box_behaves_as_a_box() {
        use std::rc::Rc;
        let rc = Rc::new(());
        let mut b = boxed((rc.clone(), 5u32));
        b.1 += 1;
        assert_eq!(b.1, 6);
        let c = b.clone();
        assert_eq!(Rc::strong_count(&rc), 3);
        drop(b);
        assert_eq!(Rc::strong_count(&rc), 2, "drop drops the value");
        let plain = TracedBox::into_box(c);
        assert_eq!(plain.1, 6);
        drop(plain);
        assert_eq!(Rc::strong_count(&rc), 1);
        let z = boxed(()); // zero-sized: nothing reported, nothing to free
        drop(z);
        let s: TracedBox<[u8]> = TracedBox::from_box(vec![1u8, 2, 3].into_boxed_slice());
        assert_eq!(&*s, &[1, 2, 3]);
    }
}
