// SPDX-License-Identifier: MIT
//! TracedAlloc host: the global allocator is TracedAlloc around a counting
//! wrapper of System, so the program knows exactly what it allocated. It does
//! a known mix of Vec, String, Box and HashMap work on two threads (growth is
//! realloc), then prints its own counts as JSON:
//!   {"allocs": A, "alloc_bytes": B, "frees": F, "free_bytes": G}
//! realloc counts as one free and one allocation, as TracedAlloc reports it.
//! The counts are taken at the end of main, which then _exits without the
//! runtime's clean-up: nothing allocates or frees after them.
use sp_probe::TracedAlloc;
use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::HashMap;
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering::SeqCst};

struct Counting;

static ALLOCS: AtomicU64 = AtomicU64::new(0);
static ALLOC_BYTES: AtomicU64 = AtomicU64::new(0);
static FREES: AtomicU64 = AtomicU64::new(0);
static FREE_BYTES: AtomicU64 = AtomicU64::new(0);

fn count_alloc(n: usize) {
    ALLOCS.fetch_add(1, SeqCst);
    ALLOC_BYTES.fetch_add(n as u64, SeqCst);
}

fn count_free(n: usize) {
    FREES.fetch_add(1, SeqCst);
    FREE_BYTES.fetch_add(n as u64, SeqCst);
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let p = System.alloc(l);
        if !p.is_null() {
            count_alloc(l.size());
        }
        p
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        let p = System.alloc_zeroed(l);
        if !p.is_null() {
            count_alloc(l.size());
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        count_free(l.size());
        System.dealloc(p, l)
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        let q = System.realloc(p, l, n);
        if !q.is_null() {
            count_free(l.size());
            count_alloc(n);
        }
        q
    }
}

#[global_allocator]
static ALLOC: TracedAlloc<Counting> = TracedAlloc::new(Counting);

fn work(seed: usize) -> usize {
    let mut v: Vec<u64> = Vec::new();
    for i in 0..1000 {
        v.push(i * seed as u64); // grows by realloc
    }
    let mut m = HashMap::new();
    for i in 0..200 {
        m.insert(i, format!("value {}", i * seed));
    }
    let boxes: Vec<Box<[u8; 100]>> = (0..50).map(|_| Box::new([seed as u8; 100])).collect();
    v.len() + m.len() + boxes.len()
}

fn main() {
    let stdout = std::io::stdout();
    let mut out = stdout.lock(); // its buffer is allocated before the counts
    writeln!(out, "start").unwrap();
    out.flush().unwrap();
    let t = std::thread::spawn(|| work(3));
    let n = work(7) + t.join().unwrap();
    let leak = Box::leak(Box::new([0u8; 333]));
    let counts = [ALLOCS.load(SeqCst), ALLOC_BYTES.load(SeqCst), FREES.load(SeqCst),
                  FREE_BYTES.load(SeqCst)];
    // Formatted into a stack buffer: printing allocates nothing more.
    let mut buf = [0u8; 200];
    let mut w = &mut buf[..];
    writeln!(w, "{{\"allocs\": {}, \"alloc_bytes\": {}, \"frees\": {}, \"free_bytes\": {}, \
                 \"work\": {}, \"leak\": {}}}",
           counts[0], counts[1], counts[2], counts[3], n, leak.len()).unwrap();
    let left = w.len();
    out.write_all(&buf[..buf.len() - left]).unwrap();
    out.flush().unwrap();
    // _exit, not a return or process::exit: the runtime's clean-up (stdout's
    // buffer, thread data) would free what the counts above cannot include.
    extern "C" {
        fn _exit(status: i32) -> !;
    }
    unsafe { _exit(0) }
}
