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

/// The ring code without a tracer: sp:flush and sp:tsc are nops then, and
/// the records stay in the ring for the test to read.
#[cfg(all(feature = "enabled", target_arch = "x86_64", target_os = "linux"))]
mod batch {
    use crate::batch::{self, Rec, Ring, CAP, MAGIC};
    use core::ptr::addr_of;

    extern "C" {
        fn getpid() -> i32;
        fn process_vm_readv(pid: i32, local: *const IoVec, nlocal: usize,
                            remote: *const IoVec, nremote: usize, flags: usize) -> isize;
        fn fork() -> i32;
        fn waitpid(pid: i32, status: *mut i32, options: i32) -> i32;
        fn _exit(code: i32) -> !;
    }

    fn ring() -> *mut Ring {
        unsafe { *batch::slot() }
    }

    #[repr(C)]
    struct IoVec {
        base: *mut u8,
        len: usize,
    }

    /// Whether `p` still holds a live ring of `seq` records. Read without
    /// touching `p`: process_vm_readv() fails on an unmapped page where a
    /// load would fault. Not mincore(): a test thread running beside may
    /// have mapped something else (its stack, its ring) at the address
    /// since (rust_matrix under rustc 1.63 saw it, 2 runs in about 10).
    fn still_the_ring(p: usize, seq: u64) -> bool {
        let mut hdr = [0u64; 2];
        let local = IoVec { base: hdr.as_mut_ptr() as *mut u8, len: 16 };
        let remote = IoVec { base: p as *mut u8, len: 16 };
        let n = unsafe { process_vm_readv(getpid(), &local, 1, &remote, 1, 0) };
        n == 16 && hdr[0] == MAGIC && hdr[1] == seq
    }

    #[test]
    fn layout_is_batch_abi_h() {
        // include/sptrace/batch_abi.h: struct sp_batch_hdr, sp_batch_rec,
        // SP_BATCH_REC_OFF, SP_BATCH_RING_SIZE, SP_BATCH_CAP, SP_BATCH_MAGIC.
        let r = core::mem::MaybeUninit::<Ring>::uninit();
        let b = r.as_ptr();
        let off = |p: *const u8| p as usize - b as usize;
        unsafe {
            assert_eq!(off(addr_of!((*b).magic) as *const u8), 0);
            assert_eq!(off(addr_of!((*b).seq) as *const u8), 8);
            assert_eq!(off(addr_of!((*b).flushed) as *const u8), 16);
            assert_eq!(off(addr_of!((*b).owner) as *const u8), 24);
            assert_eq!(off(addr_of!((*b).busy) as *const u8), 40);
            assert_eq!(off(addr_of!((*b).rec) as *const u8), 64);
            let rec = addr_of!((*b).rec) as *const Rec;
            assert_eq!(off(addr_of!((*rec.add(1)).ts) as *const u8), 64 + 32);
            assert_eq!(off(addr_of!((*rec).name) as *const u8), 64 + 8);
            assert_eq!(off(addr_of!((*rec).arg) as *const u8), 64 + 16);
            assert_eq!(off(addr_of!((*rec).kind) as *const u8), 64 + 24);
            assert_eq!(off(addr_of!((*rec).commit) as *const u8), 64 + 28);
        }
        assert_eq!(core::mem::size_of::<Ring>(), 64 + 256 * 32);
        assert_eq!(CAP, 256);
        assert_eq!(MAGIC, 0x3168637461627073);
    }

    /// Appends n query pairs on a new thread; returns what the ring holds
    /// (kinds in order, their commits right) and the ring's address.
    fn run_pairs(n: usize) -> (Vec<u32>, usize) {
        std::thread::spawn(move || {
            let name = sp_name!("t_batch");
            assert!(ring().is_null(), "a new thread has no ring");
            for _ in 0..n {
                assert!(batch::add(batch::K_QUERY_BEGIN, name.as_ptr(), 0));
                assert!(batch::add(batch::K_QUERY_END, name.as_ptr(), 0));
            }
            let b = ring();
            let mut kinds = Vec::new();
            unsafe {
                assert_eq!((*b).magic, MAGIC);
                assert_eq!((*b).owner, batch::slot() as usize, "owned by this TLS slot");
                assert_eq!((*b).busy, 0);
                let seq = (*b).seq;
                let first = seq.saturating_sub(CAP as u64);
                for i in first..seq {
                    let r = (addr_of!((*b).rec) as *const Rec).add(i as usize % CAP);
                    assert_eq!((*r).commit, i as u32 + 1, "record {} committed", i);
                    if (*r).kind & 0xff != 8 {
                        assert_eq!((*r).name, name.as_ptr() as u64);
                    }
                    kinds.push((*r).kind & 0xff);
                }
                (kinds, b as usize)
            }
        })
        .join()
        .unwrap()
    }

    #[test]
    fn records_pairs_and_pauses() {
        let (kinds, _) = run_pairs(3);
        // The first record of the batch flushes (a PAUSE after it).
        assert_eq!(kinds, [1, 8, 2, 1, 2, 1, 2]);
        // Past a ring's worth, nearly-full flushes keep every record in
        // the last CAP slots committed, PAUSEs among them.
        let (kinds, _) = run_pairs(1000);
        assert_eq!(kinds.len(), CAP);
        assert!(kinds.contains(&8), "a nearly full ring flushed");
        let pairs: Vec<u32> = kinds.into_iter().filter(|&k| k != 8).collect();
        assert!(pairs.windows(2).all(|w| w[0] != w[1]), "BEGIN and END alternate");
    }

    #[test]
    fn a_thread_exit_releases_its_ring() {
        let (kinds, b) = run_pairs(10);
        assert!(!still_the_ring(b, kinds.len() as u64), "the key destructor unmapped the ring");
    }

    #[test]
    fn two_threads_two_rings() {
        let a = std::thread::spawn(|| {
            batch::add(batch::K_CACHE_HIT, sp_name!("t_two").as_ptr(), 0);
            let (_, b) = run_pairs(1);
            (ring() as usize, b)
        })
        .join()
        .unwrap();
        assert_ne!(a.0, 0);
        assert_ne!(a.0, a.1);
    }

    #[test]
    fn a_forked_child_restarts_its_wiped_ring() {
        // In the child, the forking thread's ring is zeroed (MADV_WIPEONFORK)
        // and restarted in place at its next record: exit code 0 if so.
        let code = std::thread::spawn(|| unsafe {
            let name = sp_name!("t_fork");
            for _ in 0..5 {
                batch::add(batch::K_QUERY_BEGIN, name.as_ptr(), 0);
            }
            let b = ring();
            let pid = fork();
            if pid == 0 {
                let wiped = (*b).magic == 0 && (*b).seq == 0;
                let ok = batch::add(batch::K_QUERY_END, name.as_ptr(), 0);
                let restarted = ring() == b && (*b).magic == MAGIC && (*b).seq == 2;
                _exit(if wiped && ok && restarted { 0 } else { 1 });
            }
            assert!(pid > 0);
            assert_eq!((*b).seq, 6, "the parent's ring is untouched");
            let mut status = 0;
            assert_eq!(waitpid(pid, &mut status, 0), pid);
            status
        })
        .join()
        .unwrap();
        assert_eq!(code, 0, "child: wiped, then restarted in place");
    }

    extern "C" {
        // The semaphores the crate's sites define (enabled.rs,
        // __sp_sema_def!): a tracer raises them.
        static mut sp_flush_semaphore: u16;
        static mut sp_query_poll_end_semaphore: u16;
        static mut sp_query_finish_semaphore: u16;
    }

    #[test]
    fn finish_adds_no_piece_where_watched() {
        // In a child, so the raised semaphores touch no other test: as
        // under sptrace (batching, polls and finish watched), finish
        // writes no record (sp:query_finish alone); with sp:query_finish
        // unwatched (an older sptrace), an empty piece: a BEGIN record
        // (its per-event poll_end is a nop here). Exit code 0 if so.
        let code = std::thread::spawn(|| unsafe {
            let pid = fork();
            if pid == 0 {
                sp_flush_semaphore = 1;
                sp_query_poll_end_semaphore = 1;
                sp_query_finish_semaphore = 1;
                let q = crate::AsyncQuery::new(sp_name!("t_finish"));
                q.poll_begin();
                q.poll_end(false);
                let b = ring();
                let seq = if b.is_null() { u64::MAX } else { (*b).seq };
                q.finish();
                let watched_adds = (*b).seq - seq;
                sp_query_finish_semaphore = 0;
                q.finish();
                // The record after those of before the first finish.
                let r = (addr_of!((*b).rec) as *const Rec).add(seq as usize % CAP);
                let old_adds_begin = (*b).seq > seq && (*r).kind & 0xff == 1
                    && (*r).name == sp_name!("t_finish").as_ptr() as u64;
                _exit(if watched_adds == 0 && old_adds_begin { 0 } else { 1 });
            }
            assert!(pid > 0);
            let mut status = 0;
            assert_eq!(waitpid(pid, &mut status, 0), pid);
            status
        })
        .join()
        .unwrap();
        assert_eq!(code, 0, "child: no record where finish is watched, a BEGIN where not");
    }
}
