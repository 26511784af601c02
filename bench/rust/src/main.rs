// SPDX-License-Identifier: MIT
//! rust_batch_cost: the Rust twin of bench/batch_cost.c, the loops that
//! bench/run_rust_batch_cost.sh times to compare the sp-probe crate's query
//! pair with the C header's, a bare syscall and an empty loop.
//!
//!   rust_batch_cost MODE N [REPEAT]
//!
//!   empty   N iterations of a loop holding only a compiler barrier
//!   pair    the same loop around an sp_query_begin!/sp_query_end! pair
//!           ("bench", the C loop's name)
//!   name    the same around a Name's query_begin()/query_end() (sp_name!)
//!
//! Prints, as batch_cost does: mode=M n=N repeat=R threads=1 traced=0|1
//! pairs=P ns_per_iter=F, F the fastest repeat's wall time per iteration
//! (CLOCK_MONOTONIC around the loop), P the pairs run in all.
use sp_probe::{sp_enabled, sp_name, sp_query_begin, sp_query_end};
use std::time::Instant;

/// What BARRIER() is in C: code the compiler can neither drop nor merge
/// across iterations.
#[inline(always)]
fn barrier() {
    // SAFETY: an empty asm, which may read and write memory.
    unsafe { std::arch::asm!("", options(nostack, preserves_flags)) };
}

#[inline(never)]
fn loop_empty(n: u64) {
    for _ in 0..n {
        barrier();
    }
}

#[inline(never)]
fn loop_pair(n: u64) {
    for _ in 0..n {
        sp_query_begin!("bench");
        barrier();
        sp_query_end!("bench");
    }
}

#[inline(never)]
fn loop_name(n: u64) {
    let q = sp_name!("bench");
    for _ in 0..n {
        q.query_begin();
        barrier();
        q.query_end();
    }
}

/// A mode: its name, its loop, and the pairs one iteration runs.
type Mode = (&'static str, fn(u64), u64);

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let modes: [Mode; 3] =
        [("empty", loop_empty, 0), ("pair", loop_pair, 1), ("name", loop_name, 1)];
    let mode = args.get(1).and_then(|m| modes.iter().find(|(name, _, _)| name == m));
    let n: Option<u64> = args.get(2).and_then(|a| a.parse().ok()).filter(|&n| n > 0);
    let repeat: Option<u64> = match args.get(3) {
        None => Some(1),
        Some(a) => a.parse().ok().filter(|&r| r > 0 && r <= 1000),
    };
    let (&(name, f, pairs), n, repeat) = match (mode, n, repeat) {
        (Some(m), Some(n), Some(r)) if args.len() <= 4 => (m, n, r),
        _ => {
            eprintln!("usage: rust_batch_cost empty|pair|name N [REPEAT]");
            std::process::exit(2);
        }
    };
    if cfg!(debug_assertions) {
        eprintln!("rust_batch_cost: built without optimisation: the figures mean little");
    }
    let mut best = f64::MAX;
    for _ in 0..repeat {
        let t0 = Instant::now();
        f(n);
        best = best.min(t0.elapsed().as_nanos() as f64 / n as f64);
    }
    println!(
        "mode={} n={} repeat={} threads=1 traced={} pairs={} ns_per_iter={:.3}",
        name,
        n,
        repeat,
        sp_enabled!() as u8,
        pairs * n * repeat,
        best
    );
}
