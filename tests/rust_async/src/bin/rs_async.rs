// SPDX-License-Identifier: MIT
//! Async queries (sp_probe::Instrument) on a multi-threaded tokio runtime,
//! with the host's own clock around every poll (Timed, inside the probes).
//!
//!   rs_async [FUTURES [WORKERS [SEGMENT_US]]]   (default 1000 2 150)
//!
//! FUTURES futures "fetch", spawned at once, each awaiting 3 times: a
//! yield, an instrumented inner future "parse" (which itself yields once),
//! and a yield again, with busy work between, so fetch has 4 polls and
//! parse 2, interleaved with the other futures' on each worker and moved
//! between workers as tokio schedules them. FUTURES / 10 futures
//! "cancelled" do their work in one poll and are then dropped while
//! suspended (a timeout). Prints one JSON line of what happened by the
//! host's clock: per query the count, total and self time (sums over the
//! invocations of their polls' durations; fetch's self is its total less
//! its parse's), the shortest and longest invocation, the polls, and how
//! many fetches ran on more than one thread; and under "bounds", per
//! figure and query, [inner, outer]: the same figure from the readings
//! inside the probes and from those around them (an outer Timed around
//! the instrumented future, its drop included), between which sptrace's
//! figure must lie.
#[path = "../timed.rs"]
mod timed;

use sp_probe::{AsyncQuery, Instrument};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use timed::{spin, stats, tid, timed, Busy};

struct Fetch {
    parse: Arc<Busy>,
    parse_outer: Arc<Busy>,
    threads: Mutex<Vec<i64>>,
}

fn seen(f: &Fetch) {
    let mut t = f.threads.lock().unwrap();
    let me = tid();
    if !t.contains(&me) {
        t.push(me);
    }
}

fn main() {
    let args: Vec<u64> = std::env::args().skip(1).map(|a| a.parse().unwrap()).collect();
    let n = *args.first().unwrap_or(&1000) as usize;
    let workers = *args.get(1).unwrap_or(&2) as usize;
    let seg_us = *args.get(2).unwrap_or(&150);
    let watched = AsyncQuery::watched();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_time()
        .build()
        .unwrap();
    let mut fetches = Vec::new();
    let mut cancelled = Vec::new();
    let cancelled_polls = Arc::new(AtomicU64::new(0));
    rt.block_on(async {
        let mut handles = Vec::new();
        for i in 0..n {
            // Different lengths, so that min and max tell invocations apart.
            let seg = Duration::from_micros(seg_us + (i as u64 % 7) * 20);
            let (parse, parse_busy) = timed(async move {
                spin(seg);
                tokio::task::yield_now().await;
                spin(seg);
            });
            let (parse, parse_outer) = timed(parse.sp_instrument("parse"));
            let f = Arc::new(Fetch { parse: parse_busy, parse_outer, threads: Mutex::new(Vec::new()) });
            let f2 = f.clone();
            let (fetch, fetch_busy) = timed(async move {
                seen(&f2);
                spin(seg);
                tokio::task::yield_now().await; // await 1
                seen(&f2);
                spin(seg);
                parse.await; // await 2: parse yields once
                seen(&f2);
                spin(seg);
                tokio::task::yield_now().await; // await 3
                seen(&f2);
                spin(seg);
            });
            let (fetch, fetch_outer) = timed(fetch.sp_instrument("fetch"));
            fetches.push((f, fetch_busy, fetch_outer));
            handles.push(tokio::spawn(fetch));
        }
        for i in 0..n / 10 {
            // Longer: the empty last poll of a drop is outside the host's clock.
            let seg = Duration::from_micros(4 * seg_us + (i as u64 % 5) * 30);
            let (t, b) = timed(async move {
                spin(seg);
                std::future::pending::<()>().await;
            });
            let (t, ob) = timed(t.sp_instrument("cancelled"));
            cancelled.push((b, ob));
            let cp = cancelled_polls.clone();
            handles.push(tokio::spawn(async move {
                let r = tokio::time::timeout(Duration::from_millis(20), t).await;
                assert!(r.is_err());
                cp.fetch_add(1, Ordering::Relaxed);
            }));
        }
        for h in handles {
            h.await.unwrap();
        }
    });
    let ns = |b: &Arc<Busy>| b.ns.load(Ordering::Relaxed);
    let fetch: Vec<u64> = fetches.iter().map(|(_, b, _)| ns(b)).collect();
    let parse: Vec<u64> = fetches.iter().map(|(f, _, _)| ns(&f.parse)).collect();
    let canc: Vec<u64> = cancelled.iter().map(|(b, _)| ns(b)).collect();
    let fetch_self: Vec<u64> = fetch.iter().zip(&parse).map(|(f, p)| f - p).collect();
    let ofetch: Vec<u64> = fetches.iter().map(|(_, _, o)| o.outer_ns()).collect();
    let oparse: Vec<u64> = fetches.iter().map(|(f, _, _)| f.parse_outer.outer_ns()).collect();
    let ocanc: Vec<u64> = cancelled.iter().map(|(_, o)| o.outer_ns()).collect();
    // fetch's self time lies between its inner less its parse's outer and
    // its outer less its parse's inner.
    let fself_lo: Vec<u64> = fetch.iter().zip(&oparse).map(|(f, p)| f.saturating_sub(*p)).collect();
    let fself_hi: Vec<u64> = ofetch.iter().zip(&parse).map(|(f, p)| f - p).collect();
    let polls = |v: Vec<u64>| v.iter().sum::<u64>();
    let fetch_polls = polls(fetches.iter().map(|(_, b, _)| b.polls.load(Ordering::Relaxed)).collect());
    let parse_polls =
        polls(fetches.iter().map(|(f, _, _)| f.parse.polls.load(Ordering::Relaxed)).collect());
    let migrated = fetches.iter().filter(|(f, _, _)| f.threads.lock().unwrap().len() > 1).count();
    let (ft, fmin, fmax) = stats(&fetch);
    let (pt, pmin, pmax) = stats(&parse);
    let (ct, cmin, cmax) = stats(&canc);
    let (fs, _, _) = stats(&fetch_self);
    let (oft, ofmin, ofmax) = stats(&ofetch);
    let (opt, opmin, opmax) = stats(&oparse);
    let (oct, ocmin, ocmax) = stats(&ocanc);
    let (fsl, _, _) = stats(&fself_lo);
    let (fsh, _, _) = stats(&fself_hi);
    let b = |f: (u64, u64), p: (u64, u64), c: (u64, u64)| {
        format!(
            "{{\"fetch\": [{}, {}], \"parse\": [{}, {}], \"cancelled\": [{}, {}]}}",
            f.0, f.1, p.0, p.1, c.0, c.1
        )
    };
    let bounds = format!(
        "{{\"total_ns\": {}, \"self_ns\": {}, \"min_ns\": {}, \"max_ns\": {}}}",
        b((ft, oft), (pt, opt), (ct, oct)),
        b((fsl, fsh), (pt, opt), (ct, oct)),
        b((fmin, ofmin), (pmin, opmin), (cmin, ocmin)),
        b((fmax, ofmax), (pmax, opmax), (cmax, ocmax))
    );
    println!(
        "{{\"watched\": {}, \"workers\": {}, \"migrated\": {}, \
         \"count\": {{\"fetch\": {}, \"parse\": {}, \"cancelled\": {}}}, \
         \"polls\": {{\"fetch\": {}, \"parse\": {}}}, \
         \"total_ns\": {{\"fetch\": {}, \"parse\": {}, \"cancelled\": {}}}, \
         \"self_ns\": {{\"fetch\": {}, \"parse\": {}, \"cancelled\": {}}}, \
         \"min_ns\": {{\"fetch\": {}, \"parse\": {}, \"cancelled\": {}}}, \
         \"max_ns\": {{\"fetch\": {}, \"parse\": {}, \"cancelled\": {}}}, \
         \"bounds\": {}}}",
        watched, workers, migrated, fetch.len(), parse.len(),
        cancelled_polls.load(Ordering::Relaxed), fetch_polls, parse_polls,
        ft, pt, ct, fs, pt, ct, fmin, pmin, cmin, fmax, pmax, cmax, bounds
    );
}
