// SPDX-License-Identifier: MIT
//! Batched query events: the per-thread ring of `probes/sp_probe.h`
//! (BATCHED EVENTS in its top comment; the tracer's copy of the layout is
//! `include/sptrace/batch_abi.h`), written by Rust code. The crate-level
//! docs ("Batched events") say what it does for a user; this file says how.
//!
//! The protocol is the header's, step for step, so that the tracer cannot
//! tell a Rust ring from a C one: a record is reserved (`seq` bumped by one
//! `xadd`, which a signal cannot split) before it is written and committed
//! last; the first record of a batch, a nearly full ring and an old batch
//! flush through `sp:flush(ring)` (a 1-byte nop: an int3 trap that fork()
//! copies safely), each flush followed by a PAUSE record of its own
//! duration; `sp:tsc` marks the slow path and its semaphore asks for TSC
//! stamps; rings are mmap'ed (no allocator in a probe, which may sit inside
//! one) with MADV_WIPEONFORK, so a forked child finds zeroed rings and
//! restarts its own in place; a pthread key's destructor releases a
//! thread's ring at its exit; where no key can be had (glibc's keys past 32
//! keep their values in malloc'ed memory) rings go on a list and a dead
//! thread's is taken by the next thread with the same TLS address.
//!
//! A Rust ring is not the C ring of the same object: the thread-local
//! pointer is `sp__rs_batch_tls`, not the header's `sp__batch_tls`, so the
//! two implementations never share a ring whose protocol only one of them
//! could change. In a mixed binary a thread then has two rings in the one
//! file; each registers at its first flush and the tracer drains every
//! registered ring of a thread on any flush, merged by timestamp (the
//! semaphores, and so the clock both stamp with, are shared).
//!
//! # Thread-local storage in `no_std`
//!
//! Stable Rust has no `#[thread_local]` and `core` no `thread_local!`, so
//! the pointer is defined in assembly: 8 bytes of `.tbss`, weak and hidden
//! (one per executable or shared object, whichever crates of a build use
//! this crate), and [`slot`] reaches it with the general-dynamic sequence
//! the ELF TLS ABI defines for x86-64 (`data16 lea sym@tlsgd(%rip), %rdi;
//! data16 data16 rex64 call __tls_get_addr@PLT`). That is the one model
//! that is right everywhere: in a shared library, even one loaded by
//! dlopen, it asks the dynamic linker for the module's block; in an
//! executable the linker rewrites the very same 16 bytes to the local-exec
//! `mov %fs:0, %rax; lea sym@tpoff(%rax), %rax` (its TLS offset is known at
//! link time), which is what a C `__thread` access costs there. The call is
//! inline `asm!` with `clobber_abi("C")` and without `nostack`, so the
//! compiler aligns the stack for it and keeps nothing in caller-saved
//! registers or the red zone across it.

use core::arch::asm;
use core::arch::global_asm;
use core::ffi::c_void;
use core::mem::size_of;
use core::ptr::{self, addr_of, addr_of_mut, null_mut};
use core::sync::atomic::{compiler_fence, AtomicI32, AtomicPtr, AtomicU32, Ordering};

/// Records per ring, a power of two (SP__BATCH_CAP, SP_BATCH_CAP).
pub(crate) const CAP: usize = 256;
/// "spbatch1"
pub(crate) const MAGIC: u64 = 0x3168_6374_6162_7073;
/// A batch older than this (ns, or TSC ticks of a >= 1 GHz clock) flushes.
const AGE: u64 = 10_000_000;
/// glibc's keys whose per-thread values need no malloc.
const KEYS_FREE: u32 = 32;

/// Record kind (enum sp_batch_kind): `sp:query_begin`.
pub const K_QUERY_BEGIN: u32 = 1;
/// Record kind: `sp:query_end`.
pub const K_QUERY_END: u32 = 2;
/// Record kind: `sp:blocked_begin`.
pub const K_BLOCKED_BEGIN: u32 = 3;
/// Record kind: `sp:blocked_end`.
pub const K_BLOCKED_END: u32 = 4;
/// Record kind: `sp:incr_load_begin`.
pub const K_INCR_LOAD_BEGIN: u32 = 5;
/// Record kind: `sp:incr_load_end`.
pub const K_INCR_LOAD_END: u32 = 6;
/// Record kind: `sp:cache_hit`.
pub const K_CACHE_HIT: u32 = 7;
/// Record kind: the flush before took `arg` (ns or ticks).
const K_PAUSE: u32 = 8;
/// Kind flag: `ts` (and a PAUSE's `arg`) in TSC ticks.
const K_TSC: u32 = 0x100;
/// Kind flag of a query record: `arg` is its key (SP_BK_KEY).
pub const K_KEY: u32 = 0x200;
/// Kind flag with `K_KEY`: the key is an interned text's address
/// (SP_BK_KEY_TEXT).
pub const K_KEY_TEXT: u32 = 0x400;

/// struct sp_batch_rec
#[repr(C)]
pub(crate) struct Rec {
    pub(crate) ts: u64,
    pub(crate) name: u64,
    pub(crate) arg: u64,
    pub(crate) kind: u32,
    pub(crate) commit: u32,
}

/// struct sp_batch_hdr, then the records.
#[repr(C)]
pub(crate) struct Ring {
    pub(crate) magic: u64,
    pub(crate) seq: u64,
    pub(crate) flushed: u64,
    pub(crate) owner: usize,
    next: *mut Ring,
    pub(crate) busy: u64,
    pad: [u64; 2],
    pub(crate) rec: [Rec; CAP],
}

const _: () = assert!(size_of::<Rec>() == 32);
const _: () = assert!(size_of::<Ring>() == 64 + CAP * 32);

/// In the TLS slot once the thread's ring is gone: probes fire their
/// per-event sites.
const GONE: *mut Ring = 1 as *mut Ring;
/// In the TLS slot while the thread sets its ring up (or restarts it).
const SETUP: *mut Ring = 2 as *mut Ring;

/// Every ring made on the list path (no key), per executable or library.
static LIST: AtomicPtr<Ring> = AtomicPtr::new(null_mut());
/// The key whose destructor releases a thread's ring, and its state:
/// 0 not tried, 1 being created, 2 ready, 3 none (rings go on the list).
static KEY: AtomicU32 = AtomicU32::new(0);
static KEY_STATE: AtomicI32 = AtomicI32::new(0);

#[repr(C)]
struct Timespec {
    sec: i64,
    nsec: i64,
}

extern "C" {
    fn clock_gettime(clock: i32, ts: *mut Timespec) -> i32;
    fn mmap(addr: *mut c_void, len: usize, prot: i32, flags: i32, fd: i32, off: i64)
        -> *mut c_void;
    fn munmap(addr: *mut c_void, len: usize) -> i32;
    fn madvise(addr: *mut c_void, len: usize, advice: i32) -> i32;
    fn pthread_key_create(key: *mut u32, dtor: Option<unsafe extern "C" fn(*mut c_void)>)
        -> i32;
    fn pthread_key_delete(key: u32) -> i32;
    fn pthread_setspecific(key: u32, value: *const c_void) -> i32;
}

global_asm!(
    ".pushsection .tbss.sp__rs_batch_tls,\"awT\",@nobits",
    ".weak sp__rs_batch_tls",
    ".hidden sp__rs_batch_tls",
    ".type sp__rs_batch_tls, @object",
    ".size sp__rs_batch_tls, 8",
    ".balign 8",
    "sp__rs_batch_tls:",
    ".zero 8",
    ".popsection",
    options(att_syntax)
);

/// The calling thread's TLS slot (see "Thread-local storage in `no_std`").
#[inline(always)]
pub(crate) fn slot() -> *mut *mut Ring {
    let p: *mut *mut Ring;
    // SAFETY: the ABI's general-dynamic sequence for a symbol this crate
    // defines; __tls_get_addr follows the C ABI (clobber_abi) and the
    // stack is aligned for the call (no `nostack`).
    unsafe {
        asm!(
            ".byte 0x66",
            "leaq sp__rs_batch_tls@tlsgd(%rip), %rdi",
            ".byte 0x66, 0x66, 0x48",
            "call __tls_get_addr@PLT",
            out("rax") p,
            clobber_abi("C"),
            options(att_syntax)
        );
    }
    p
}

/// The timestamp of a record and its clock flag: the TSC when the tracer
/// raised `sp_tsc_semaphore` (only where the kernel's clock is the TSC; it
/// converts with its own calibration), else CLOCK_MONOTONIC.
#[inline(always)]
fn stamp() -> (u64, u32) {
    if crate::__sp_sema!(tsc) != 0 {
        // SAFETY: rdtsc exists on every x86-64.
        return (unsafe { core::arch::x86_64::_rdtsc() }, K_TSC);
    }
    let mut t = Timespec { sec: 0, nsec: 0 };
    // SAFETY: t is a valid timespec; CLOCK_MONOTONIC cannot fail.
    unsafe { clock_gettime(1, &mut t) };
    ((t.sec as u64).wrapping_mul(1_000_000_000).wrapping_add(t.nsec as u64), 0)
}

/// The `sp:flush(ring)` site: a 1-byte nop, which the kernel leaves an
/// int3 trap (its call-style fast path is not copied by fork()).
#[inline(never)]
fn trap(b: *mut Ring) {
    #[allow(named_asm_labels)] // labels guarded by .ifndef
    // SAFETY: a nop between two lea that leave %rsp and the flags as they were.
    unsafe {
        asm!(
            crate::__sp_sema_def!(flush),
            "lea -128(%rsp), %rsp",
            "990: nop",
            "lea 128(%rsp), %rsp",
            crate::__sp_note!(flush, "-8@{b}"),
            b = in(reg) b,
            options(att_syntax, nostack, preserves_flags)
        );
    }
}

/// The `sp:tsc` site at the top of the slow path: its semaphore asks for
/// TSC stamps; its hit tells the tracer a probe may fall back to its
/// per-event site next (bpf/query.bpf.c, sp_tsc).
#[inline(always)]
fn tsc_site() {
    #[allow(named_asm_labels)] // labels guarded by .ifndef
    // SAFETY: as trap().
    unsafe {
        asm!(
            crate::__sp_sema_def!(tsc),
            "lea -128(%rsp), %rsp",
            "990: nop",
            "lea 128(%rsp), %rsp",
            crate::__sp_note!(tsc, ""),
            options(att_syntax, nostack, preserves_flags)
        );
    }
}

/// Reserves the next record: one `xadd` without lock (only this thread
/// writes the ring), which a signal cannot split.
#[inline(always)]
unsafe fn reserve(b: *mut Ring) -> u64 {
    let mut i = 1u64;
    asm!("xaddq {i}, ({p})", i = inout(reg) i, p = in(reg) addr_of_mut!((*b).seq),
         options(att_syntax, nostack));
    i
}

#[inline(always)]
unsafe fn rec(b: *mut Ring, i: u64) -> *mut Rec {
    (addr_of_mut!((*b).rec) as *mut Rec).add(i as usize & (CAP - 1))
}

/// Writes record number i: reserved first, committed last.
#[inline(always)]
unsafe fn put(b: *mut Ring, i: u64, kind: u32, ts: u64, name: u64, arg: u64) {
    let r = rec(b, i);
    ptr::write_volatile(addr_of_mut!((*r).ts), ts);
    ptr::write_volatile(addr_of_mut!((*r).name), name);
    ptr::write_volatile(addr_of_mut!((*r).arg), arg);
    ptr::write_volatile(addr_of_mut!((*r).kind), kind);
    compiler_fence(Ordering::SeqCst);
    ptr::write_volatile(addr_of_mut!((*r).commit), i.wrapping_add(1) as u32);
}

/// The flush, then a PAUSE record of its duration: the tracer moves the
/// start of every open interval of the thread by that much, so the trap
/// and the drain are not charged to the user's queries.
#[inline(never)]
unsafe fn flush(b: *mut Ring, t0: u64, clk: u32, full: bool) {
    let f = ptr::read_volatile(addr_of!((*b).seq));
    trap(b);
    // Inside an interrupted append the tracer stopped at its uncommitted
    // record: the batch is not flushed past it, so flush again soon.
    if full && ptr::read_volatile(addr_of!((*b).busy)) == 1 {
        ptr::write_volatile(addr_of_mut!((*b).flushed), f);
    }
    let i = reserve(b);
    let (t1, clk2) = stamp();
    put(b, i, K_PAUSE | clk, t0, 0, if clk2 == clk { t1.wrapping_sub(t0) } else { 0 });
}

/// (Re)starts ring b for the thread whose TLS slot is `me`.
unsafe fn start(b: *mut Ring, me: usize) {
    // The tracer drains [consumed, seq) of a ring it learns about; a
    // reused ring's old records were drained when its thread exited.
    ptr::write_volatile(addr_of_mut!((*b).owner), me);
    ptr::write_volatile(addr_of_mut!((*b).seq), 0);
    ptr::write_volatile(addr_of_mut!((*b).flushed), 0);
    ptr::write_volatile(addr_of_mut!((*b).busy), 0);
    compiler_fence(Ordering::SeqCst);
    ptr::write_volatile(addr_of_mut!((*b).magic), MAGIC);
}

/// A new ring, zeroed, that a fork gives the child zeroed again; null if
/// mmap failed.
unsafe fn map() -> *mut Ring {
    // PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS
    let p = mmap(null_mut(), size_of::<Ring>(), 3, 0x22, -1, 0);
    if p as isize == -1 {
        return null_mut();
    }
    madvise(p, size_of::<Ring>(), 18 /* MADV_WIPEONFORK */);
    p as *mut Ring
}

/// Thread exit (the key's destructor): mark the thread, flush one last
/// time with the owner cleared (the tracer drains the ring and forgets its
/// address), unmap. A probe after this one fires its per-event site.
unsafe extern "C" fn thread_exit(p: *mut c_void) {
    let b = p as *mut Ring;
    ptr::write_volatile(slot(), GONE); // before anything a signal can see
    compiler_fence(Ordering::SeqCst);
    if ptr::read_volatile(addr_of!((*b).magic)) == MAGIC {
        ptr::write_volatile(addr_of_mut!((*b).owner), 0);
        compiler_fence(Ordering::SeqCst);
        if crate::__sp_sema!(flush) != 0 {
            trap(b);
        }
    }
    munmap(p, size_of::<Ring>());
}

/// Unload of this object (dlclose, or exit): no thread may call
/// thread_exit() once the code is gone. Rings of live threads stay mapped.
extern "C" fn unload() {
    if KEY_STATE.compare_exchange(2, 3, Ordering::AcqRel, Ordering::Relaxed).is_ok() {
        // SAFETY: the key this object created.
        unsafe { pthread_key_delete(KEY.load(Ordering::Relaxed)) };
    }
}

#[used]
#[link_section = ".fini_array"]
static UNLOAD: extern "C" fn() = unload;

/// The key, created by the first thread that needs it; true if ready. A
/// thread (or a signal handler) that finds it being created keeps its ring
/// on the list, as if there were none.
unsafe fn key_ready() -> bool {
    let mut st = KEY_STATE.load(Ordering::Acquire);
    if st == 0 {
        match KEY_STATE.compare_exchange(0, 1, Ordering::AcqRel, Ordering::Relaxed) {
            Ok(_) => {
                let mut k = 0u32;
                st = 3;
                if pthread_key_create(&mut k, Some(thread_exit)) == 0 {
                    if k < KEYS_FREE {
                        KEY.store(k, Ordering::Relaxed);
                        st = 2;
                    } else {
                        pthread_key_delete(k);
                    }
                }
                KEY_STATE.store(st, Ordering::Release);
            }
            Err(now) => st = now,
        }
    }
    st == 2
}

/// A ring from the list: one this thread owns, or a dead thread's left
/// for this TLS slot; else a new one put on the list. Null without memory.
unsafe fn from_list(me: usize) -> *mut Ring {
    let mut b = LIST.load(Ordering::Acquire);
    while !b.is_null() {
        let owner = &*(addr_of!((*b).owner) as *const core::sync::atomic::AtomicUsize);
        if owner.load(Ordering::Relaxed) == me
            || owner.compare_exchange(0, me, Ordering::AcqRel, Ordering::Relaxed).is_ok()
        {
            return b;
        }
        b = ptr::read_volatile(addr_of!((*b).next));
    }
    b = map();
    if !b.is_null() {
        ptr::write_volatile(addr_of_mut!((*b).owner), me);
        let mut head = LIST.load(Ordering::Relaxed);
        loop {
            ptr::write_volatile(addr_of_mut!((*b).next), head);
            match LIST.compare_exchange_weak(head, b, Ordering::Release, Ordering::Relaxed) {
                Ok(_) => break,
                Err(h) => head = h,
            }
        }
    }
    b
}

/// The calling thread's ring: its own (restarted if a fork wiped it), a
/// new mapping whose key destructor unmaps it, or one from the list. Null
/// if none can be had, or the thread is exiting or in the middle of this
/// very setup (a signal handler's probe): the caller fires the per-event
/// site. Async-signal-safe: no lock, no malloc.
///
/// The slot holds SETUP for the whole setup, claimed from the value the
/// caller saw: a restart must never run over records a signal handler's
/// probes appended meanwhile (see sp__batch_get() in sp_probe.h).
#[inline(never)]
#[cold]
unsafe fn get(s: *mut *mut Ring) -> *mut Ring {
    // Keep sp:tsc first, before any return (see tsc_site()).
    tsc_site();
    let me = s as usize;
    let b = ptr::read_volatile(s);
    if b == GONE || b == SETUP {
        return null_mut();
    }
    // Made by a signal handler after the caller looked: use it.
    if !b.is_null() && ptr::read_volatile(addr_of!((*b).magic)) == MAGIC {
        return b;
    }
    // A handler can change the slot only by completing a setup of its own
    // before this CAS: then that ring is the thread's. (AtomicPtr has the
    // layout of a pointer.)
    let atom = &*(s as *const AtomicPtr<Ring>);
    if let Err(now) = atom.compare_exchange(b, SETUP, Ordering::Relaxed, Ordering::Relaxed) {
        return if now == GONE || now == SETUP { null_mut() } else { now };
    }
    compiler_fence(Ordering::SeqCst);
    let mut b = b;
    if !b.is_null() {
        // Ours, wiped by a fork: the child's only thread restarts it.
        start(b, me);
    } else if key_ready() {
        b = map();
        if !b.is_null() {
            start(b, me);
            // Cannot fail below key 32; if it did, the ring is kept (never
            // unmapped) rather than events lost.
            pthread_setspecific(KEY.load(Ordering::Relaxed), b as *const c_void);
        }
    } else {
        b = from_list(me);
        if !b.is_null() {
            start(b, me);
        }
    }
    compiler_fence(Ordering::SeqCst);
    ptr::write_volatile(s, b); // null after a failed mmap: tried again
    b
}

/// Appends one record to the calling thread's ring, flushing when the
/// batch is new, nearly full or old. False when there is no ring (an
/// exiting thread, no memory): the caller fires the per-event site.
#[inline(never)]
pub fn add(kind: u32, name: *const u8, arg: u64) -> bool {
    // SAFETY: the ring is this thread's, mapped until its key destructor
    // (after which the slot says GONE); every access is volatile so that
    // a signal handler on this thread, or the tracer, sees program order.
    unsafe {
        let s = slot();
        let mut b = ptr::read_volatile(s);
        if b as usize <= 2 || ptr::read_volatile(addr_of!((*b).magic)) != MAGIC {
            b = get(s); // mmap: before the timestamp
            if b.is_null() {
                return false;
            }
        }
        let busy = addr_of_mut!((*b).busy);
        ptr::write_volatile(busy, ptr::read_volatile(busy).wrapping_add(1));
        let (ts, clk) = stamp();
        let i = reserve(b); // reserve, then write, then commit
        put(b, i, kind | clk, ts, name as usize as u64, arg);
        let f = ptr::read_volatile(addr_of!((*b).flushed));
        if i == f {
            // The first record of a batch: registers the ring.
            flush(b, ts, clk, false);
        } else if i.wrapping_add(2).wrapping_sub(f) >= CAP as u64 - 1
            || ts.wrapping_sub(ptr::read_volatile(addr_of!((*rec(b, f)).ts))) > AGE
        {
            flush(b, ts, clk, true);
        }
        compiler_fence(Ordering::SeqCst);
        ptr::write_volatile(busy, ptr::read_volatile(busy).wrapping_sub(1));
    }
    true
}
