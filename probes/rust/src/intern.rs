// SPDX-License-Identifier: MIT
//! Names made at run time from `&'static str` text that has no NUL: a
//! `tracing` span's name, `core::any::type_name::<T>()`.
//!
//! The tracer keys rows by the address of a name and reads the name as a
//! NUL-terminated C string, so such text cannot be passed as it is: the
//! bytes after it are whatever the linker put there. [`Name::intern`]
//! copies each distinct text once, with its NUL, into a static arena and
//! returns that copy for every later call with the same text, from any
//! thread. It takes no lock and never allocates, so it may run in a signal
//! handler and inside a global allocator (where `Box::leak` of a copy would
//! recurse), and it needs no `std`.
//!
//! Two open-addressed tables of atomics find a copy. The first is keyed by
//! the text's address and length: a `&'static str` never changes, so after
//! the first call for a string, a call costs a hash of two words and one or
//! two loads. The second, keyed by the text itself, makes the copy
//! canonical: the same text reached through two addresses (rustc may emit
//! one type's name in several codegen units) gets one copy, hence one row
//! in sptrace and one exact peak in `sptrace mem`.

use crate::Name;
use core::cell::UnsafeCell;
use core::ptr;
use core::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};

/// Slots of the address table (a power of two): a cache in front of the
/// text table, so it may be smaller.
const SLOTS: usize = 4096;
/// Slots of the text table (a power of two): distinct texts a program may
/// intern, `&'static` or made at run time (`intern_bytes`).
const TEXT_SLOTS: usize = 16384;
/// Bytes for the copies (each after an 8-byte hash): about 7,000 names of
/// the longest kind, far more of the usual length. Untouched pages of `.bss` cost no memory.
const ARENA_BYTES: usize = 1024 * 1024;
/// The longest name sptrace keeps, without its NUL (SP_NAME_LEN - 1).
pub(crate) const MAX_NAME: usize = 127;
/// A longer text keeps this many bytes, then `~` and 16 hex digits of the
/// whole text's hash, so that two long names never share a row.
const CUT_KEEP: usize = MAX_NAME - 17;

struct PtrSlot {
    addr: AtomicUsize, // the text's address; 0: free
    len: AtomicUsize,
    name: AtomicPtr<u8>, // null until published
}

/// A text slot: the address of a complete copy, preceded in the arena by
/// the FNV-1a of its text; null while free. Published by one
/// compare-and-swap after the copy is written, so no reader ever waits for
/// a writer (which may be the thread it interrupted, in a signal handler)
/// and a text has one copy, always: a BEGIN and its END have one address.
type TextSlot = AtomicPtr<u8>;

#[allow(clippy::declare_interior_mutable_const)] // only to repeat in the arrays
const PTR_FREE: PtrSlot = PtrSlot {
    addr: AtomicUsize::new(0),
    len: AtomicUsize::new(0),
    name: AtomicPtr::new(ptr::null_mut()),
};
#[allow(clippy::declare_interior_mutable_const)]
const TEXT_FREE: TextSlot = AtomicPtr::new(ptr::null_mut());

static BY_PTR: [PtrSlot; SLOTS] = [PTR_FREE; SLOTS];
static BY_TEXT: [TextSlot; TEXT_SLOTS] = [TEXT_FREE; TEXT_SLOTS];

/// Page-aligned so that none of it shares a page with the file-backed end
/// of `.data`: sptrace reads a name there from the live process (or from
/// what the kernel captured), never from the executable's file.
#[repr(C, align(4096))]
struct Arena(UnsafeCell<[u8; ARENA_BYTES]>);

// SAFETY: each byte range is handed out once (`ARENA_USED` is a bump
// counter), written by its one owner before the copy is published with
// Release, and only read after.
unsafe impl Sync for Arena {}

static ARENA: Arena = Arena(UnsafeCell::new([0; ARENA_BYTES]));
static ARENA_USED: AtomicUsize = AtomicUsize::new(0);

/// The text as sptrace will show it: the name itself, or for a name over
/// 127 bytes its first bytes (cut at a character boundary), `~` and the
/// hash of the whole. Returned in `buf`, with its length.
fn stored_form<'a>(text: &'a [u8], buf: &'a mut [u8; MAX_NAME]) -> &'a [u8] {
    if text.len() <= MAX_NAME {
        return text;
    }
    let mut keep = CUT_KEEP;
    while keep > 0 && (text[keep] & 0xc0) == 0x80 {
        keep -= 1; // not inside a UTF-8 sequence
    }
    buf[..keep].copy_from_slice(&text[..keep]);
    buf[keep] = b'~';
    let h = fnv1a(text);
    let mut n = keep + 1;
    for i in (0..16).rev() {
        buf[n] = b"0123456789abcdef"[((h >> (i * 4)) & 0xf) as usize];
        n += 1;
    }
    &buf[..n]
}

fn fnv1a(b: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &c in b {
        h ^= c as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// A NUL-terminated copy of `text` in the arena after its hash `h`, or
/// null when the arena is full.
fn copy_out(text: &[u8], h: u64) -> *mut u8 {
    let need = 8 + text.len() + 1;
    let mut used = ARENA_USED.load(Ordering::Relaxed);
    loop {
        if used + need > ARENA_BYTES {
            return ptr::null_mut();
        }
        match ARENA_USED.compare_exchange_weak(used, used + need, Ordering::Relaxed,
                                               Ordering::Relaxed) {
            Ok(_) => break,
            Err(now) => used = now,
        }
    }
    // SAFETY: [used, used + need) is ours alone (see Arena).
    unsafe {
        let p = (ARENA.0.get() as *mut u8).add(used);
        ptr::write_unaligned(p as *mut u64, h);
        let p = p.add(8);
        ptr::copy_nonoverlapping(text.as_ptr(), p, text.len());
        *p.add(text.len()) = 0;
        p
    }
}

/// The NUL-terminated text at `p` equals `text`.
fn same_text(p: *const u8, text: &[u8]) -> bool {
    // SAFETY: p is a published copy: text.len() + 1 bytes are readable
    // unless a NUL comes first, and the loop stops at the first mismatch.
    unsafe {
        for (i, &c) in text.iter().enumerate() {
            if *p.add(i) != c {
                return false;
            }
        }
        *p.add(text.len()) == 0
    }
}

/// The canonical copy of `text` (its stored form): found, or made and
/// published. Null when the table or the arena is full.
fn by_text(text: &[u8]) -> *mut u8 {
    let h = fnv1a(text);
    let mut mine: *mut u8 = ptr::null_mut();
    for i in 0..TEXT_SLOTS {
        let slot = &BY_TEXT[(h as usize).wrapping_add(i) & (TEXT_SLOTS - 1)];
        let mut cur = slot.load(Ordering::Acquire);
        if cur.is_null() {
            // Copied before it is claimed: a thread that loses the race to
            // the same text leaves its copy unused (a few bytes, only
            // under contention).
            if mine.is_null() {
                mine = copy_out(text, h);
                if mine.is_null() {
                    return mine;
                }
            }
            match slot.compare_exchange(ptr::null_mut(), mine, Ordering::AcqRel,
                                        Ordering::Acquire) {
                Ok(_) => return mine,
                Err(now) => cur = now,
            }
        }
        // SAFETY: a published copy: its hash is in the 8 bytes before it.
        if unsafe { ptr::read_unaligned(cur.sub(8) as *const u64) } == h && same_text(cur, text) {
            return cur;
        }
    }
    ptr::null_mut()
}

fn ptr_hash(addr: usize, len: usize) -> usize {
    let x = (addr as u64 ^ (len as u64).rotate_left(32)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    (x >> 32) as usize
}

/// What [`Name::intern`] returns when its tables or its arena are full.
fn full() -> Name {
    crate::sp_name!("sp_probe: names full")
}

impl Name {
    /// The name of a text known only at run time, such as a `tracing`
    /// span's name or `core::any::type_name::<T>()`: a NUL-terminated copy
    /// of `text`, made once per distinct text, the same address for every
    /// later call with the same text from any thread.
    ///
    /// A text over 127 bytes (sptrace's limit) is cut to its first 110
    /// bytes followed by `~` and 16 hex digits of the hash of the whole, so
    /// distinct long texts stay distinct names. Lock-free and
    /// allocation-free: safe in a signal handler and in a global
    /// allocator. Up to 16,384 distinct texts (1 MiB of copies), with
    /// those of [`Name::intern_bytes`]; after that every new text is named
    /// `sp_probe: names full`, a row that says so in sptrace's table.
    ///
    /// ```
    /// use sp_probe::Name;
    ///
    /// let a = Name::intern(core::any::type_name::<Vec<u8>>());
    /// let b = Name::intern("alloc::vec::Vec<u8>");
    /// assert_eq!(a, b); // one copy per text
    /// assert_eq!(a.to_bytes(), b"alloc::vec::Vec<u8>");
    /// a.query_begin();
    /// a.query_end();
    /// ```
    pub fn intern(text: &'static str) -> Name {
        let (addr, len) = (text.as_ptr() as usize, text.len());
        let start = ptr_hash(addr, len);
        // Probes of the address table before falling back to the text
        // table: a text that keeps missing here still finds its copy.
        const PTR_PROBES: usize = 16;
        let mut free_slot = None;
        for i in 0..PTR_PROBES {
            let slot = &BY_PTR[start.wrapping_add(i) & (SLOTS - 1)];
            let a = slot.addr.load(Ordering::Acquire);
            if a == 0 {
                free_slot = Some(slot);
                break;
            }
            if a == addr {
                let p = slot.name.load(Ordering::Acquire);
                if !p.is_null() && slot.len.load(Ordering::Relaxed) == len {
                    // SAFETY: a published copy, NUL-terminated, static.
                    return unsafe { Name::__from_ptr(p) };
                }
            }
        }
        let mut buf = [0u8; MAX_NAME];
        let p = by_text(stored_form(text.as_bytes(), &mut buf));
        if p.is_null() {
            return full();
        }
        if let Some(slot) = free_slot {
            if slot.addr.compare_exchange(0, addr, Ordering::AcqRel, Ordering::Relaxed).is_ok() {
                slot.len.store(len, Ordering::Relaxed);
                slot.name.store(p, Ordering::Release);
            }
        }
        // SAFETY: p is a NUL-terminated static copy.
        unsafe { Name::__from_ptr(p) }
    }

    /// The name of text made at run time, in a buffer that may change or
    /// go away: a `format!`ed path, bytes off the wire. The text is copied
    /// at its first call and found by its bytes after that (a hash and a
    /// compare of at most 127 bytes per call), so the same text gives the
    /// same name whatever its address, and the same row in sptrace as C's
    /// `SP_QUERY_BEGIN_STR` of the same bytes.
    ///
    /// Any bytes: text that is not UTF-8 is shown by sptrace with its bad
    /// bytes replaced; one over 127 bytes is cut as by [`Name::intern`].
    /// A NUL in the text ends the name sptrace shows. Lock-free and
    /// allocation-free like `intern`; same limit (shared tables). Call it
    /// only while a tracer is attached if the text is new each time (the
    /// `*_str!` macros do): every distinct text takes a slot for good.
    ///
    /// ```
    /// use sp_probe::Name;
    ///
    /// let path = std::format!("src/{}.rs", "main");
    /// let a = Name::intern_bytes(path.as_bytes());
    /// assert_eq!(a, Name::intern_bytes(b"src/main.rs"));
    /// assert_eq!(a.to_bytes(), b"src/main.rs");
    /// let bad = Name::intern_bytes(b"bad\xff\xc3(name"); // not UTF-8
    /// bad.query_begin();
    /// bad.query_end();
    /// ```
    pub fn intern_bytes(text: &[u8]) -> Name {
        let mut buf = [0u8; MAX_NAME];
        let p = by_text(stored_form(text, &mut buf));
        if p.is_null() {
            return full();
        }
        // SAFETY: p is a NUL-terminated static copy.
        unsafe { Name::__from_ptr(p) }
    }
}

#[cfg(test)]
pub(crate) fn arena_used() -> usize {
    ARENA_USED.load(Ordering::Relaxed)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::string::String;
    use std::vec::Vec;

    fn leak(s: String) -> &'static str {
        Box::leak(s.into_boxed_str())
    }

    /// Tests run on parallel threads and the arena is one: a test that
    /// measures it holds this, as does every test that interns.
    pub(crate) static ARENA: std::sync::Mutex<()> = std::sync::Mutex::new(());

    pub(crate) fn arena_lock() -> std::sync::MutexGuard<'static, ()> {
        ARENA.lock().unwrap_or_else(|e| e.into_inner())
    }

    #[test]
    fn one_copy_per_text_nul_terminated() {
        let _arena = arena_lock();
        let a = Name::intern(leak(String::from("t_intern_same")));
        let b = Name::intern(leak(String::from("t_intern_same"))); // another address
        assert_eq!(a, b);
        assert_eq!(a.to_bytes(), b"t_intern_same");
        let before = arena_used();
        for _ in 0..1000 {
            assert_eq!(Name::intern("t_intern_same"), a);
        }
        assert_eq!(arena_used(), before, "known text: no new copy");
        assert_ne!(Name::intern("t_intern_other"), a);
    }

    #[test]
    fn prefix_at_the_same_address_is_another_text() {
        let _arena = arena_lock();
        let s: &'static str = leak(String::from("t_intern_prefixed"));
        let whole = Name::intern(s);
        let prefix = Name::intern(&s[..8]);
        assert_ne!(whole, prefix);
        assert_eq!(prefix.to_bytes(), b"t_intern");
        assert_eq!(Name::intern(s), whole);
    }

    #[test]
    fn long_names_are_cut_with_a_hash() {
        let _arena = arena_lock();
        let base = "t_long::".repeat(20); // 160 bytes
        let a = Name::intern(leak(std::format!("{}A", base)));
        let b = Name::intern(leak(std::format!("{}B", base)));
        assert_ne!(a, b, "distinct long names stay distinct");
        for n in [a, b] {
            let t = n.to_bytes();
            assert_eq!(t.len(), MAX_NAME);
            assert_eq!(&t[..CUT_KEEP], &base.as_bytes()[..CUT_KEEP]);
            assert_eq!(t[CUT_KEEP], b'~');
            assert!(t[CUT_KEEP + 1..].iter().all(|c| c.is_ascii_hexdigit()));
        }
        // Cut at a character boundary: a 3-byte character across the cut.
        let wide = leak(std::format!("{}{}", "x".repeat(CUT_KEEP - 1), "\u{20ac}".repeat(20)));
        let t = Name::intern(wide).to_bytes();
        assert!(core::str::from_utf8(t).is_ok());
        assert_eq!(t[CUT_KEEP - 1], b'~');
    }

    #[test]
    fn run_time_bytes_keyed_by_text() {
        let _arena = arena_lock();
        let mut buf = std::vec![0u8; 32];
        buf[..14].copy_from_slice(b"t_intern_bytes");
        let a = Name::intern_bytes(&buf[..14]);
        buf[..14].copy_from_slice(b"t_intern_BYTES");
        let b = Name::intern_bytes(&buf[..14]);
        assert_ne!(a, b, "the buffer changed: another text");
        assert_eq!(a.to_bytes(), b"t_intern_bytes");
        assert_eq!(Name::intern_bytes(b"t_intern_bytes"), a);
        assert_eq!(Name::intern("t_intern_bytes"), a, "one copy for both forms");
        let bad = Name::intern_bytes(b"t_bad\xff\xc3");
        assert_eq!(bad.to_bytes(), b"t_bad\xff\xc3");
        // 1 MiB: cut, hashed, the same as C's sp__intern() (FNV-1a). In
        // .rodata, not the heap: a fresh 1 MiB mapping could land where a
        // batch test has just unmapped a ring that it checks is gone.
        const fn big_text() -> [u8; 1 << 20] {
            let mut a = [b'x'; 1 << 20];
            a[0] = b'b';
            a[1] = b'i';
            a[2] = b'g';
            a
        }
        static BIG: [u8; 1 << 20] = big_text();
        let big = &BIG[..];
        let t = Name::intern_bytes(big).to_bytes();
        assert_eq!(t.len(), MAX_NAME);
        let want = std::format!("{}~{:016x}", core::str::from_utf8(&big[..CUT_KEEP]).unwrap(),
                                fnv1a(big));
        assert_eq!(t, want.as_bytes());
    }

    #[test]
    fn threads_agree_on_one_copy() {
        const N: usize = 2000;
        let _arena = arena_lock();
        let texts: Vec<&'static str> =
            (0..N).map(|i| leak(std::format!("t_intern_thread_{}", i))).collect();
        let texts = std::sync::Arc::new(texts);
        let start = std::sync::Arc::new(std::sync::Barrier::new(8));
        let handles: Vec<_> = (0..8)
            .map(|k| {
                let texts = texts.clone();
                let start = start.clone();
                std::thread::spawn(move || {
                    // Each thread its own addresses for the same texts (made
                    // before the start, so that the threads race on each
                    // text); one in four through intern_bytes from a reused
                    // buffer.
                    let mine: Vec<&'static str> = if k % 2 == 0 {
                        texts.to_vec()
                    } else {
                        texts.iter().map(|t| leak(String::from(*t))).collect()
                    };
                    let mut buf = Vec::new();
                    start.wait();
                    mine.iter()
                        .map(|&t| {
                            if k % 4 == 3 {
                                buf.clear();
                                buf.extend_from_slice(t.as_bytes());
                                Name::intern_bytes(&buf).as_ptr() as usize
                            } else {
                                Name::intern(t).as_ptr() as usize
                            }
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let all: Vec<Vec<usize>> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        for v in &all[1..] {
            assert_eq!(v, &all[0]);
        }
        for (i, &p) in all[0].iter().enumerate() {
            // SAFETY: interned names are static NUL-terminated copies.
            let n = unsafe { Name::__from_ptr(p as *const u8) };
            assert_eq!(n.to_bytes(), texts[i].as_bytes());
        }
    }
}
