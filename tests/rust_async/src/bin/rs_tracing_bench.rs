// SPDX-License-Identifier: MIT
//! The cost of a `tracing` span (made, entered, exited, closed) under
//! each subscriber, by the host's own clock; bench/run_tracing_bench.sh
//! runs it under each and prints ratios.
//!
//!   rs_tracing_bench MODE [SPANS [ROUNDS]]   (default 100000 5)
//!
//! MODE: none (no subscriber), registry (tracing-subscriber's registry,
//! no layer), sp (the registry with sp_tracing's layer), fmt (the fmt
//! layer writing to /dev/null; spans are only registered), fmt-close (the
//! fmt layer writing a line per closed span to /dev/null). Prints
//! `mode=M spans=N ns_per_span=X watched=W` with X the fastest round.
//! And the cost of an sp_probe::Instrument poll: MODE poll (a future polled
//! POLLS times by a loop, bare) or poll-sp (the same future instrumented as
//! the async query "bench_poll"); SPANS futures, ns_per_span per poll.
use sp_probe::Instrument;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, RawWaker, RawWakerVTable, Waker};
use std::time::Instant;
use tracing_subscriber::fmt::format::FmtSpan;
use tracing_subscriber::layer::SubscriberExt;

#[inline(never)]
fn one_span(i: u64) -> u64 {
    let span = tracing::info_span!("bench_span");
    let _g = span.enter();
    i ^ (span.id().map_or(0, |s| s.into_u64()) & 1)
}

/// Polls a future until it is ready (it wakes itself): no runtime's cost.
fn block_on<F: Future>(f: F) -> F::Output {
    fn raw() -> RawWaker {
        RawWaker::new(std::ptr::null(), &VT)
    }
    static VT: RawWakerVTable = RawWakerVTable::new(|_| raw(), |_| {}, |_| {}, |_| {});
    // SAFETY: the vtable does nothing.
    let w = unsafe { Waker::from_raw(raw()) };
    let mut cx = Context::from_waker(&w);
    let mut f = Box::pin(f);
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
    }
}

/// Pending POLLS - 1 times, then Ready.
struct Yields(u32);

impl Future for Yields {
    type Output = u64;
    fn poll(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<u64> {
        self.0 -= 1;
        if self.0 == 0 {
            Poll::Ready(1)
        } else {
            Poll::Pending
        }
    }
}

const POLLS: u32 = 10;

fn polls(mode: &str, futures: u64, rounds: u64) -> f64 {
    let mut best = f64::MAX;
    for _ in 0..rounds {
        let t0 = Instant::now();
        for _ in 0..futures {
            if mode == "poll-sp" {
                block_on(Yields(POLLS).sp_instrument_name(sp_probe::sp_name!("bench_poll")));
            } else {
                block_on(Yields(POLLS));
            }
        }
        best = best.min(t0.elapsed().as_nanos() as f64 / (futures * POLLS as u64) as f64);
    }
    best
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mode = args.first().map(String::as_str).unwrap_or("none").to_string();
    let spans: u64 = args.get(1).map(|a| a.parse().unwrap()).unwrap_or(100_000);
    let rounds: u64 = args.get(2).map(|a| a.parse().unwrap()).unwrap_or(5);
    if mode.starts_with("poll") {
        let ns = polls(&mode, spans, rounds);
        println!("mode={} spans={} ns_per_span={:.1} watched={} polls={}", mode, spans * rounds,
                 ns, sp_probe::AsyncQuery::watched(), spans * rounds * POLLS as u64);
        return;
    }
    let devnull = || std::fs::OpenOptions::new().write(true).open("/dev/null").unwrap();
    let dispatch = match mode.as_str() {
        "none" => None,
        "registry" => Some(tracing::Dispatch::new(tracing_subscriber::registry())),
        "sp" => Some(tracing::Dispatch::new(tracing_subscriber::registry().with(sp_tracing::layer()))),
        "fmt" => Some(tracing::Dispatch::new(
            tracing_subscriber::registry()
                .with(tracing_subscriber::fmt::layer().with_writer(devnull)))),
        "fmt-close" => Some(tracing::Dispatch::new(
            tracing_subscriber::registry().with(tracing_subscriber::fmt::layer()
                .with_writer(devnull).with_span_events(FmtSpan::CLOSE)))),
        m => panic!("unknown mode {}", m),
    };
    if let Some(d) = dispatch {
        tracing::dispatcher::set_global_default(d).unwrap();
    }
    let mut best = f64::MAX;
    let mut sum = 0;
    for _ in 0..rounds {
        let t0 = Instant::now();
        for i in 0..spans {
            sum += one_span(i);
        }
        best = best.min(t0.elapsed().as_nanos() as f64 / spans as f64);
    }
    println!("mode={} spans={} ns_per_span={:.1} watched={} sum={}", mode, spans * rounds, best,
             sp_probe::AsyncQuery::watched(), sum);
}
