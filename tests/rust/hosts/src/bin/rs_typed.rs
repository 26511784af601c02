// SPDX-License-Identifier: MIT
//! Per-type memory host: allocations named by their Rust type
//! (sp_probe::TracedBox, alloc_array_of / free_of), counted by the program
//! itself per type name, on two threads. It prints one JSON line:
//!   {"enabled": true, "types": {"NAME": {"allocs": A, "alloc_bytes": B,
//!    "frees": F, "free_bytes": G, "peak_live_bytes": P}, ...}}
//! NAME is the text sptrace shows (the type's name, cut with a hash when
//! over 127 bytes). Widget's peak is exact (one thread makes them all
//! before freeing any); the other types' peaks are not printed.
use sp_probe::{alloc_array_of, boxed, free_of, type_name_of, Name, TracedBox};
use std::collections::BTreeMap;
use std::mem::size_of;

struct Widget {
    id: u64,
    _pad: [u64; 5], // 48 bytes
}

struct Deeply<T>(T);
// A type whose name is over 127 bytes, cut by Name::intern.
type Long = Deeply<Deeply<Deeply<Deeply<Deeply<Deeply<Deeply<Deeply<[u16; 3]>>>>>>>>;

#[derive(Default)]
struct Count {
    allocs: u64,
    alloc_bytes: u64,
    frees: u64,
    free_bytes: u64,
    peak: Option<u64>,
}

type Counts = BTreeMap<String, Count>;

fn text(n: Name) -> String {
    String::from_utf8(n.to_bytes().to_vec()).unwrap()
}

fn alloc<T: ?Sized>(c: &mut Counts, bytes: usize) {
    let e = c.entry(text(type_name_of::<T>())).or_default();
    e.allocs += 1;
    e.alloc_bytes += bytes as u64;
}

fn free<T: ?Sized>(c: &mut Counts, bytes: usize) {
    let e = c.entry(text(type_name_of::<T>())).or_default();
    e.frees += 1;
    e.free_bytes += bytes as u64;
}

/// 100 Widgets, 30 freed: Widget's peak is 100 * 48.
fn widgets(c: &mut Counts) -> Vec<TracedBox<Widget>> {
    let mut v: Vec<TracedBox<Widget>> =
        (0..100).map(|i| boxed(Widget { id: i, _pad: [0; 5] })).collect();
    for _ in 0..100 {
        alloc::<Widget>(c, size_of::<Widget>());
    }
    c.get_mut(&text(type_name_of::<Widget>())).unwrap().peak =
        Some(100 * size_of::<Widget>() as u64);
    for _ in 0..30 {
        drop(v.pop());
        free::<Widget>(c, size_of::<Widget>());
    }
    v
}

/// Another thread: arrays, slices of several lengths, a Vec's buffer, a
/// long-named type, and a zero-sized one (never reported).
fn others() -> (Counts, Vec<TracedBox<[u8; 64]>>) {
    let mut c = Counts::new();
    let keep: Vec<TracedBox<[u8; 64]>> = (0..40).map(|_| boxed([7u8; 64])).collect();
    for _ in 0..40 {
        alloc::<[u8; 64]>(&mut c, 64);
    }
    for len in 1..=25usize {
        let s: TracedBox<[u32]> = TracedBox::from_box(vec![len as u32; len].into_boxed_slice());
        alloc::<[u32]>(&mut c, 4 * len);
        if len % 5 != 0 {
            drop(s);
            free::<[u32]>(&mut c, 4 * len);
        } else {
            std::mem::forget(TracedBox::into_box(s)); // reported freed, kept
            free::<[u32]>(&mut c, 4 * len);
        }
    }
    for round in 0..10usize {
        let v: Vec<u16> = Vec::with_capacity(100 + round);
        alloc_array_of(v.as_ptr(), v.capacity());
        alloc::<u16>(&mut c, 2 * v.capacity());
        free_of(v.as_ptr(), 2 * v.capacity());
        free::<u16>(&mut c, 2 * v.capacity());
    }
    for _ in 0..3 {
        let l = boxed(Deeply(Deeply(Deeply(Deeply(Deeply(Deeply(Deeply(Deeply([1u16; 3])))))))));
        let _: &Long = &l;
        alloc::<Long>(&mut c, size_of::<Long>());
        drop(l);
        free::<Long>(&mut c, size_of::<Long>());
    }
    drop(boxed(())); // zero-sized: nothing
    (c, keep)
}

fn main() {
    let enabled = sp_probe::sp_enabled!();
    let mut counts = Counts::new();
    let kept = widgets(&mut counts);
    let (other, kept2) = std::thread::spawn(others).join().unwrap();
    for (k, v) in other {
        let e = counts.entry(k).or_default();
        e.allocs += v.allocs;
        e.alloc_bytes += v.alloc_bytes;
        e.frees += v.frees;
        e.free_bytes += v.free_bytes;
    }
    let ids: u64 = kept.iter().map(|w| w.id).sum();
    let mut out = format!("{{\"enabled\": {}, \"kept\": [{}, {}, {}], \"types\": {{",
                          enabled, kept.len(), kept2.len(), ids);
    for (i, (k, v)) in counts.iter().enumerate() {
        out += &format!("{}\"{}\": {{\"allocs\": {}, \"alloc_bytes\": {}, \"frees\": {}, \
                         \"free_bytes\": {}{}}}",
                        if i > 0 { ", " } else { "" }, k, v.allocs, v.alloc_bytes, v.frees,
                        v.free_bytes,
                        v.peak.map(|p| format!(", \"peak_live_bytes\": {}", p))
                            .unwrap_or_default());
    }
    println!("{}}}}}", out);
    // Still live when tracing stops: their frees must not come after the
    // counts above.
    std::mem::forget(kept);
    std::mem::forget(kept2);
}
