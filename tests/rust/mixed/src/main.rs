// SPDX-License-Identifier: MIT
//! Mixed C+Rust host: Rust queries around calls into a C static library
//! instrumented with sp_probe.h. One table: rows c_query (C), rust_query
//! (Rust), and "shared" fired by both languages (merged by text).
//!
//!   sp_mixed N      N rust_query, each calling the C library once (N c_query)
use sp_probe::{sp_cache_hit, sp_enabled, sp_query_begin, sp_query_end, sp_scope};

extern "C" {
    fn mixed_c_query(n: i32);
    fn mixed_c_enabled() -> i32;
}

fn main() {
    let n: i32 = match std::env::args().nth(1).map(|a| a.parse()) {
        Some(Ok(n)) if n > 0 => n,
        _ => {
            eprintln!("usage: sp_mixed N");
            std::process::exit(2);
        }
    };
    for _ in 0..n {
        sp_scope!("rust_query");
        unsafe { mixed_c_query(1) };
        sp_cache_hit!("shared");
        sp_query_begin!("shared");
        sp_query_end!("shared");
    }
    // Both languages read the same semaphores.
    let c = unsafe { mixed_c_enabled() } != 0;
    println!("enabled rust={} c={}", sp_enabled!(), c);
}
