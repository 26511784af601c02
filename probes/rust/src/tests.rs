// SPDX-License-Identifier: MIT
//! Unit tests: every macro compiles and runs untraced, names keep one address
//! per text, scopes end on every exit route, TracedAlloc forwards faithfully.

use crate::{IntegerOrPointer, Name, TracedAlloc};
use core::alloc::{GlobalAlloc, Layout};
use std::sync::atomic::{AtomicUsize, Ordering};

#[test]
fn every_macro_runs_untraced() {
    let v = [1u8, 2, 3];
    sp_query_begin!("t_query");
    sp_cache_hit!("t_query");
    sp_incr_load_begin!("t_query");
    sp_incr_load_end!("t_query");
    sp_blocked_begin!("t_query");
    sp_blocked_end!("t_query");
    sp_thread_name!("t_thread");
    sp_mark!("t_mark", 42u32);
    sp_mark!("t_mark", -1i64);
    sp_alloc!("T", v.len(), v.as_ptr());
    sp_free!("T", v.as_ptr());
    sp_probe!(t_custom0);
    sp_probe!(t_custom6, 1u8, 2u16, 3u32, 4u64, 5usize, v.as_ptr());
    sp_query_end!("t_query");
    {
        sp_scope!("t_scope");
        sp_incr_load_scope!("t_scope");
        sp_blocked_scope!("t_scope");
    }
    if sp_enabled!() {
        panic!("no tracer is attached to a unit test");
    }
}

#[test]
fn arguments_are_not_evaluated_untraced() {
    let mut evaluated = 0;
    let mut key = || {
        evaluated += 1;
        7u64
    };
    sp_mark!("t_lazy", key());
    sp_probe!(t_lazy, key(), key());
    assert_eq!(evaluated, 0);
}

#[inline(never)]
fn name_elsewhere() -> Name {
    sp_name!("t_same")
}

mod other_module {
    #[inline(never)]
    pub fn name() -> crate::Name {
        sp_name!("t_same")
    }
}

#[test]
fn one_address_per_name() {
    let a = sp_name!("t_same");
    let b = name_elsewhere();
    let c = other_module::name();
    if crate::EMITS_PROBES {
        assert_eq!(a.as_ptr(), b.as_ptr());
        assert_eq!(a.as_ptr(), c.as_ptr());
    }
    assert_eq!(a.to_bytes(), b"t_same");
    assert_ne!(a.as_ptr(), sp_name!("t_other").as_ptr());
    assert_eq!(sp_name!("with space, é").to_bytes(), "with space, é".as_bytes());
    // The name sits NUL-terminated in memory: C string readers see the text.
    unsafe { assert_eq!(*a.as_ptr().add(6), 0) };
}

#[test]
fn name_methods_run_untraced() {
    let n = sp_name!("t_method");
    n.query_begin();
    n.cache_hit();
    n.mark(3u8);
    n.alloc(8, 0x1000usize);
    n.free(0x1000usize);
    n.thread_name();
    n.query_end();
    let _a = n.scope();
    let _b = n.incr_load_scope();
    let _c = n.blocked_scope();
}

static DROPS: AtomicUsize = AtomicUsize::new(0);

fn scope_with_early_return(early: bool) -> u32 {
    sp_scope!("t_early");
    let _count = crate::__private::OnDrop(|| {
        DROPS.fetch_add(1, Ordering::SeqCst);
    });
    if early {
        return 1;
    }
    2
}

#[test]
fn scope_ends_on_every_route() {
    DROPS.store(0, Ordering::SeqCst);
    assert_eq!(scope_with_early_return(true), 1);
    assert_eq!(scope_with_early_return(false), 2);
    let r = std::panic::catch_unwind(|| {
        sp_scope!("t_panic");
        let _count = crate::__private::OnDrop(|| {
            DROPS.fetch_add(1, Ordering::SeqCst);
        });
        panic!("unwinds through the scope");
    });
    assert!(r.is_err());
    assert_eq!(DROPS.load(Ordering::SeqCst), 3);
}

#[test]
fn integer_or_pointer_conversions() {
    assert_eq!((-1i32).sp_arg(), u64::MAX, "signed: sign-extended like C");
    assert_eq!(255u8.sp_arg(), 255);
    assert_eq!(true.sp_arg(), 1);
    let x = 5u32;
    let p = &x as *const u32;
    assert_eq!(p.sp_arg(), p as usize as u64);
    let s: &[u8] = b"abc";
    let fat = s as *const [u8];
    assert_eq!(fat.sp_arg(), s.as_ptr() as usize as u64, "a fat pointer passes its address");
}

struct Counting {
    allocs: AtomicUsize,
    frees: AtomicUsize,
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        self.allocs.fetch_add(1, Ordering::SeqCst);
        std::alloc::System.alloc(l)
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        self.frees.fetch_add(1, Ordering::SeqCst);
        std::alloc::System.dealloc(p, l)
    }
}

#[test]
fn traced_alloc_forwards() {
    let a = TracedAlloc::new(Counting { allocs: AtomicUsize::new(0), frees: AtomicUsize::new(0) });
    unsafe {
        let l = Layout::from_size_align(100, 16).unwrap();
        let p = a.alloc(l);
        assert!(!p.is_null() && p as usize % 16 == 0);
        let z = a.alloc_zeroed(l);
        assert!(std::slice::from_raw_parts(z, 100).iter().all(|&b| b == 0));
        *p = 7;
        // realloc of GlobalAlloc's default: alloc + copy + dealloc in A.
        let q = a.realloc(p, l, 1000);
        assert_eq!(*q, 7);
        a.dealloc(q, Layout::from_size_align(1000, 16).unwrap());
        a.dealloc(z, l);
    }
    assert_eq!(a.inner().allocs.load(Ordering::SeqCst), 3);
    assert_eq!(a.inner().frees.load(Ordering::SeqCst), 3);
}

#[test]
fn check_name_accepts_plain_names() {
    crate::__private::check_name("parse");
    crate::__private::check_name("a::b<c> d.e-f/g é");
    assert!(std::panic::catch_unwind(|| crate::__private::check_name("a\"b")).is_err());
    assert!(std::panic::catch_unwind(|| crate::__private::check_name("")).is_err());
    assert!(std::panic::catch_unwind(|| crate::__private::check_name("a{b")).is_err());
}
