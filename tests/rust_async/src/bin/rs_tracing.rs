// SPDX-License-Identifier: MIT
//! A tokio program instrumented with `tracing`, profiled through the
//! sp-tracing layer, with the host's own clock inside every span's enters.
//!
//!   rs_tracing [REQUESTS [WORKERS [SEGMENT_US [keys]]]]   (default 500 2 150)
//!
//! REQUESTS tasks on a multi-threaded runtime, each instrumented with the
//! span "tr_request" (so entered and exited at every poll), awaiting 3
//! times with busy work between; in its second poll a synchronous span
//! "tr_decode" (in_scope). On a plain thread, REQUESTS / 2 spans "tr_sync",
//! each entered twice before it closes. Each request ends with an INFO
//! event `id = N` (a mark with key N) and a DEBUG event (not a mark).
//! Prints one JSON line by the host's clock: per span name the count, the
//! sum of its entered time (total), its self time (tr_request less its
//! tr_decode), the shortest and longest span, and the sum of the marks'
//! keys; and under "bounds", per figure and span name, [inner, outer]: the
//! clock read inside the span's enters and exits, and around them (the
//! probes' own cost, a trap each where traps are slow, lies between). Every "tr_decode" span has the field `shard = "even"` or `"odd"`
//! (by the request's parity), every "tr_sync" span `shard = i % 4`; with
//! `keys` the layer keys spans by that field (`key_field("shard")`), and
//! the line adds the count per key row, `"keyed": {"tr_sync(0)": ...}`.
#[path = "../timed.rs"]
mod timed;

use sp_probe::AsyncQuery;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use timed::{spin, stats, timed, Busy};
use tracing::Instrument;
use tracing_subscriber::layer::SubscriberExt;

fn main() {
    let args: Vec<u64> = std::env::args().skip(1).take(3).map(|a| a.parse().unwrap()).collect();
    let n = *args.first().unwrap_or(&500) as usize;
    let workers = *args.get(1).unwrap_or(&2) as usize;
    let seg_us = *args.get(2).unwrap_or(&150);
    let keyed = std::env::args().nth(4).as_deref() == Some("keys");
    let mut layer = sp_tracing::layer().marks(tracing::Level::INFO).mark_key("id");
    if keyed {
        layer = layer.key_field("shard");
    }
    let subscriber = tracing_subscriber::registry().with(layer);
    tracing::subscriber::set_global_default(subscriber).unwrap();
    let watched = AsyncQuery::watched();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(workers).build().unwrap();

    let mut requests = Vec::new();
    let mut outers = Vec::new();
    let decodes: Arc<Vec<AtomicU64>> = Arc::new((0..n).map(|_| AtomicU64::new(0)).collect());
    let odecodes: Arc<Vec<AtomicU64>> = Arc::new((0..n).map(|_| AtomicU64::new(0)).collect());
    rt.block_on(async {
        let mut handles = Vec::new();
        for i in 0..n {
            let seg = Duration::from_micros(seg_us + (i as u64 % 7) * 20);
            let dec = decodes.clone();
            let odec = odecodes.clone();
            let (body, busy) = timed(async move {
                spin(seg);
                tokio::task::yield_now().await;
                let shard = if i % 2 == 0 { "even" } else { "odd" };
                let o0 = Instant::now();
                tracing::info_span!("tr_decode", shard).in_scope(|| {
                    let t0 = Instant::now();
                    spin(seg);
                    dec[i].store(t0.elapsed().as_nanos() as u64, Ordering::Relaxed);
                });
                odec[i].store(o0.elapsed().as_nanos() as u64, Ordering::Relaxed);
                spin(seg);
                tokio::task::yield_now().await;
                spin(seg);
                tokio::task::yield_now().await;
                spin(seg);
                tracing::info!(id = i as u64, "request done");
                tracing::debug!(id = i as u64, "not a mark");
            });
            requests.push(busy);
            let span = tracing::info_span!("tr_request", id = i as u64);
            let (outer, obusy) = timed(body.instrument(span));
            outers.push(obusy);
            handles.push(tokio::spawn(outer));
        }
        for h in handles {
            h.await.unwrap();
        }
    });

    // Synchronous spans entered twice each, on a plain thread.
    let m = n / 2;
    let (sync, osync): (Vec<u64>, Vec<u64>) = std::thread::spawn(move || {
        (0..m)
            .map(|i| {
                let span = tracing::info_span!("tr_sync", shard = i as u64 % 4);
                let (mut ns, mut ons) = (0, 0);
                for _ in 0..2 {
                    let o0 = Instant::now();
                    {
                        let _g = span.enter();
                        let t0 = Instant::now();
                        spin(Duration::from_micros(50 + (i as u64 % 3) * 10));
                        ns += t0.elapsed().as_nanos() as u64;
                    }
                    ons += o0.elapsed().as_nanos() as u64;
                }
                // Its close ends the invocation (AsyncQuery::finish:
                // sp:query_finish, or with a tracer that does not watch
                // it an empty last piece, a BEGIN and an END).
                let c0 = Instant::now();
                drop(span);
                (ns, ons + c0.elapsed().as_nanos() as u64)
            })
            .unzip()
    })
    .join()
    .unwrap();

    let req: Vec<u64> = requests.iter().map(|b: &Arc<Busy>| b.ns.load(Ordering::Relaxed)).collect();
    let dec: Vec<u64> = decodes.iter().map(|d| d.load(Ordering::Relaxed)).collect();
    let req_polls: u64 = requests.iter().map(|b| b.polls.load(Ordering::Relaxed)).sum();
    let (rt_, rmin, rmax) = stats(&req);
    let (dt, dmin, dmax) = stats(&dec);
    let (st, smin, smax) = stats(&sync);
    let oreq: Vec<u64> = outers.iter().map(|b: &Arc<Busy>| b.ns.load(Ordering::Relaxed)).collect();
    let odec: Vec<u64> = odecodes.iter().map(|d| d.load(Ordering::Relaxed)).collect();
    let (ort, ormin, ormax) = stats(&oreq);
    let (odt, odmin, odmax) = stats(&odec);
    let (ost, osmin, osmax) = stats(&osync);
    let b = |r: (u64, u64), d: (u64, u64), s: (u64, u64)| {
        format!(
            "{{\"tr_request\": [{}, {}], \"tr_decode\": [{}, {}], \"tr_sync\": [{}, {}]}}",
            r.0, r.1, d.0, d.1, s.0, s.1
        )
    };
    let bounds = format!(
        ", \"bounds\": {{\"total_ns\": {}, \"self_ns\": {}, \"min_ns\": {}, \"max_ns\": {}}}",
        b((rt_, ort), (dt, odt), (st, ost)),
        // a request's self time: its total less its decode's
        b((rt_.saturating_sub(odt), ort - dt), (dt, odt), (st, ost)),
        b((rmin, ormin), (dmin, odmin), (smin, osmin)),
        b((rmax, ormax), (dmax, odmax), (smax, osmax))
    );
    let keys: u64 = (0..n as u64).sum();
    let keyed_rows = if keyed {
        let sync_of = |k: usize| (0..m).filter(|i| i % 4 == k).count();
        format!(
            ", \"keyed\": {{\"tr_sync(0)\": {}, \"tr_sync(1)\": {}, \"tr_sync(2)\": {}, \
             \"tr_sync(3)\": {}, \"tr_decode(even)\": {}, \"tr_decode(odd)\": {}}}",
            sync_of(0), sync_of(1), sync_of(2), sync_of(3), (n + 1) / 2, n / 2
        )
    } else {
        String::new()
    };
    println!(
        "{{\"watched\": {}, \"polls\": {}, \
         \"count\": {{\"tr_request\": {}, \"tr_decode\": {}, \"tr_sync\": {}}}, \
         \"total_ns\": {{\"tr_request\": {}, \"tr_decode\": {}, \"tr_sync\": {}}}, \
         \"self_ns\": {{\"tr_request\": {}, \"tr_decode\": {}, \"tr_sync\": {}}}, \
         \"min_ns\": {{\"tr_request\": {}, \"tr_decode\": {}, \"tr_sync\": {}}}, \
         \"max_ns\": {{\"tr_request\": {}, \"tr_decode\": {}, \"tr_sync\": {}}}, \
         \"marks\": {}, \"mark_keys\": {}{}{}}}",
        watched, req_polls, req.len(), dec.len(), sync.len(), rt_, dt, st, rt_ - dt, dt, st,
        rmin, dmin, smin, rmax, dmax, smax, n, keys, keyed_rows, bounds
    );
    // The marks' names are made at run time, in no file: `sptrace record`
    // reads them from the live process when it drains its ring buffer
    // (every few ms), so the host outlives its last mark by that much.
    std::thread::sleep(Duration::from_millis(300));
}
