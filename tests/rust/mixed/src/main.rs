// SPDX-License-Identifier: MIT
//! Mixed C+Rust host: Rust queries around calls into a C static library
//! instrumented with sp_probe.h, and C queries around Rust callbacks. One
//! table: rows c_query (C), rust_query (Rust), and "shared" fired by both
//! languages (merged by text); nesting across languages both ways
//! (rust_outer around c_inner, c_outer around rs_inner); and queries begun
//! in one language and ended in the other (c_to_rust, rust_to_c).
//!
//!   sp_mixed N      N rounds; prints the host's own times as JSON, each
//!                   read right inside the query's probes (after its BEGIN
//!                   returned, before its END is called)
use sp_probe::{sp_cache_hit, sp_enabled, sp_name, sp_query_begin, sp_query_end, sp_scope};
use std::time::Instant;

extern "C" {
    fn mixed_c_query(n: i32);
    fn mixed_c_enabled() -> i32;
    fn mixed_c_outer(work: extern "C" fn()) -> u64;
    fn mixed_c_begin(name: *const u8);
    fn mixed_c_end(name: *const u8);
}

const SPIN_NS: u128 = 100_000;

fn spin() {
    let t0 = Instant::now();
    while t0.elapsed().as_nanos() < SPIN_NS {}
}

static mut RS_INNER_NS: u128 = 0;

/// The Rust work of c_outer: spins, then runs rs_inner (spins).
extern "C" fn rust_work() {
    spin();
    sp_scope!("rs_inner");
    let t0 = Instant::now();
    spin();
    // SAFETY: one thread.
    unsafe { RS_INNER_NS += t0.elapsed().as_nanos() };
}

fn main() {
    let n: i32 = match std::env::args().nth(1).map(|a| a.parse()) {
        Some(Ok(n)) if n > 0 => n,
        _ => {
            eprintln!("usage: sp_mixed N");
            std::process::exit(2);
        }
    };
    let (mut rust_outer, mut c_inner, mut c_outer, mut c_to_rust, mut rust_to_c) =
        (0u128, 0u128, 0u128, 0u128, 0u128);
    for _ in 0..n {
        sp_scope!("rust_query");
        unsafe { mixed_c_query(1) };
        sp_cache_hit!("shared");
        sp_query_begin!("shared");
        sp_query_end!("shared");

        // Rust outside, C inside.
        sp_query_begin!("rust_outer");
        let t0 = Instant::now();
        spin();
        unsafe { mixed_c_begin(sp_name!("c_inner").as_ptr()) };
        let t1 = Instant::now();
        spin();
        c_inner += t1.elapsed().as_nanos();
        unsafe { mixed_c_end(sp_name!("c_inner").as_ptr()) };
        rust_outer += t0.elapsed().as_nanos();
        sp_query_end!("rust_outer");

        // C outside, Rust inside.
        c_outer += u128::from(unsafe { mixed_c_outer(rust_work) });

        // BEGIN in C, END in Rust; and the reverse.
        unsafe { mixed_c_begin(sp_name!("c_to_rust").as_ptr()) };
        let t0 = Instant::now();
        spin();
        c_to_rust += t0.elapsed().as_nanos();
        sp_query_end!("c_to_rust");
        sp_query_begin!("rust_to_c");
        let t0 = Instant::now();
        spin();
        rust_to_c += t0.elapsed().as_nanos();
        unsafe { mixed_c_end(sp_name!("rust_to_c").as_ptr()) };
    }
    // Both languages read the same semaphores.
    let c = unsafe { mixed_c_enabled() } != 0;
    println!("enabled rust={} c={}", sp_enabled!(), c);
    let rs_inner = unsafe { RS_INNER_NS };
    println!(
        "{{\"rust_outer\": {}, \"c_inner\": {}, \"c_outer\": {}, \"rs_inner\": {}, \
         \"c_to_rust\": {}, \"rust_to_c\": {}}}",
        rust_outer, c_inner, c_outer, rs_inner, c_to_rust, rust_to_c
    );
}
