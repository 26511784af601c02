// SPDX-License-Identifier: MIT
//! Ground-truth host, the Rust port of tests/hosts/groundtruth.c: nested and
//! recursive queries, cache hits, blocked and incremental-load intervals on
//! several threads, every count known in advance, every duration a
//! busy-wait that the host times itself with `Instant` (CLOCK_MONOTONIC)
//! right inside the probes, computing total and self time the way
//! docs/formats.md defines them.
//!
//! Unlike the C host there is no warm-up round: the first interval of every
//! site is measured (batched probes never trap in one), and `rare`, a 200 us
//! query whose site runs 3 times in the whole program, checks exactly that
//! (its longest interval is its first).
//!
//!   rs_groundtruth [--threads N] ITERATIONS
//!
//! Prints one JSON line: per name count, cache_hits, total_ns, self_ns,
//! blocked_ns, incr_load_ns and max_ns (the longest single interval).
use sp_probe::{
    sp_blocked_begin, sp_blocked_end, sp_cache_hit, sp_incr_load_scope, sp_name,
    sp_query_begin, sp_query_end, sp_scope, sp_thread_name,
};
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

const MS: u64 = 1_000_000;

#[derive(Default, Clone, Copy)]
struct Row {
    count: u64,
    cache_hits: u64,
    total: u64,
    self_: u64,
    blocked: u64,
    incr: u64,
    max: u64,
}

#[derive(Default)]
struct Truth(BTreeMap<&'static str, Row>);

impl Truth {
    fn row(&mut self, q: &'static str) -> &mut Row {
        self.0.entry(q).or_default()
    }

    /// One interval of query q: `d` long, `child` of it in children.
    fn query(&mut self, q: &'static str, d: u64, child: u64) -> u64 {
        let r = self.row(q);
        r.count += 1;
        r.total += d;
        r.self_ += d - child;
        r.max = r.max.max(d);
        d
    }
}

fn ns(d: Duration) -> u64 {
    d.as_nanos() as u64
}

fn spin(d: u64) {
    let t0 = Instant::now();
    while ns(t0.elapsed()) < d {}
}

fn inner(t: &mut Truth) -> u64 {
    sp_scope!("inner");
    let t0 = Instant::now();
    spin(MS);
    let d = ns(t0.elapsed());
    t.query("inner", d, 0)
}

/// Recursive, through a Name value (the run-time-picked form).
fn recurse(t: &mut Truth, depth: u32) -> u64 {
    let _q = sp_name!("recurse").scope();
    let t0 = Instant::now();
    spin(MS / 2);
    let child = if depth > 1 { recurse(t, depth - 1) } else { 0 };
    let d = ns(t0.elapsed());
    t.query("recurse", d, child)
}

fn outer(t: &mut Truth) -> u64 {
    sp_query_begin!("outer");
    let t0 = Instant::now();
    spin(2 * MS);
    let mut child = inner(t) + inner(t);

    sp_blocked_begin!("shared");
    let a = Instant::now();
    spin(MS);
    let b = ns(a.elapsed());
    sp_blocked_end!("shared");
    t.row("shared").blocked += b;
    child += b;

    {
        sp_incr_load_scope!("codegen");
        let a = Instant::now();
        spin(MS / 2);
        let b = ns(a.elapsed());
        t.row("codegen").incr += b;
        child += b;
    }

    for _ in 0..3 {
        sp_cache_hit!("inner");
        t.row("inner").cache_hits += 1;
    }
    let d = ns(t0.elapsed());
    sp_query_end!("outer");
    t.query("outer", d, child)
}

fn rare(t: &mut Truth) {
    sp_query_begin!("rare");
    let t0 = Instant::now();
    spin(MS / 5);
    let d = ns(t0.elapsed());
    sp_query_end!("rare");
    t.query("rare", d, 0);
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mut threads = 4usize;
    let mut i = 1;
    while i + 1 < args.len() && args[i] == "--threads" {
        threads = args[i + 1].parse().unwrap_or(0);
        i += 2;
    }
    let iterations: u32 = match args.get(i).map(|a| a.parse()) {
        Some(Ok(n)) if n > 0 && i + 1 == args.len() && (1..=64).contains(&threads) => n,
        _ => {
            eprintln!("usage: rs_groundtruth [--threads N] ITERATIONS");
            std::process::exit(2);
        }
    };
    let all = Mutex::new(Truth::default());
    std::thread::scope(|s| {
        for th in 0..threads {
            let all = &all;
            s.spawn(move || {
                sp_thread_name!("gt-worker");
                let mut t = Truth::default();
                if th == 0 {
                    for _ in 0..3 {
                        rare(&mut t);
                    }
                }
                for _ in 0..iterations {
                    outer(&mut t);
                    recurse(&mut t, 3);
                }
                let mut a = all.lock().unwrap();
                for (q, r) in t.0 {
                    let x = a.row(q);
                    x.count += r.count;
                    x.cache_hits += r.cache_hits;
                    x.total += r.total;
                    x.self_ += r.self_;
                    x.blocked += r.blocked;
                    x.incr += r.incr;
                    x.max = x.max.max(r.max);
                }
            });
        }
    });
    let t = all.into_inner().unwrap();
    let field = |f: fn(&Row) -> u64| {
        let v: Vec<String> = t.0.iter().map(|(q, r)| format!("\"{}\": {}", q, f(r))).collect();
        format!("{{{}}}", v.join(", "))
    };
    println!(
        "{{\"threads\": {}, \"iterations\": {}, \"count\": {}, \"cache_hits\": {}, \
         \"total_ns\": {}, \"self_ns\": {}, \"blocked_ns\": {}, \"incr_load_ns\": {}, \
         \"max_ns\": {}}}",
        threads,
        iterations,
        field(|r| r.count),
        field(|r| r.cache_hits),
        field(|r| r.total),
        field(|r| r.self_),
        field(|r| r.blocked),
        field(|r| r.incr),
        field(|r| r.max)
    );
}
