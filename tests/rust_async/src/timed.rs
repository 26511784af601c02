// SPDX-License-Identifier: MIT
//! The hosts' own clock around each poll: Timed(f) polls f and adds the
//! poll's duration (Instant, CLOCK_MONOTONIC) to a counter, so a host knows
//! its futures' busy time as read right inside sptrace's probes. Around an
//! instrumented future, Timed reads the time outside the probes instead,
//! and its drop too (a future dropped while suspended ends its invocation
//! there): the upper bound of what sptrace may count.
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

/// One future's busy time and polls, by its own clock.
#[derive(Default)]
pub struct Busy {
    pub ns: AtomicU64,
    pub polls: AtomicU64,
    /// The time its drop took (outside `ns`).
    pub drop_ns: AtomicU64,
}

pub struct Timed<F> {
    inner: Option<Pin<Box<F>>>,
    busy: Arc<Busy>,
}

impl<F: Future> Future for Timed<F> {
    type Output = F::Output;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let t0 = Instant::now();
        let r = self.inner.as_mut().expect("polled after drop").as_mut().poll(cx);
        let ns = t0.elapsed().as_nanos() as u64;
        self.busy.ns.fetch_add(ns, Ordering::Relaxed);
        self.busy.polls.fetch_add(1, Ordering::Relaxed);
        r
    }
}

impl<F> Drop for Timed<F> {
    fn drop(&mut self) {
        let t0 = Instant::now();
        drop(self.inner.take());
        self.busy.drop_ns.fetch_add(t0.elapsed().as_nanos() as u64, Ordering::Relaxed);
    }
}

pub fn timed<F: Future>(f: F) -> (Timed<F>, Arc<Busy>) {
    let busy = Arc::new(Busy::default());
    (Timed { inner: Some(Box::pin(f)), busy: busy.clone() }, busy)
}

impl Busy {
    /// Its polls' time and its drop's: what an outer Timed read.
    #[allow(dead_code)] // not every host uses it
    pub fn outer_ns(&self) -> u64 {
        self.ns.load(Ordering::Relaxed) + self.drop_ns.load(Ordering::Relaxed)
    }
}

/// Keeps the CPU busy for `d` (no syscall: not a wait).
pub fn spin(d: Duration) {
    let t0 = Instant::now();
    while t0.elapsed() < d {
        std::hint::spin_loop();
    }
}

/// The calling thread's id, to see futures move between workers.
#[allow(dead_code)] // not every host uses it
pub fn tid() -> i64 {
    extern "C" {
        fn gettid() -> i32;
    }
    unsafe { gettid() as i64 }
}

/// Sum, min and max of per-invocation busy times.
pub fn stats(v: &[u64]) -> (u64, u64, u64) {
    (v.iter().sum(), *v.iter().min().unwrap_or(&0), *v.iter().max().unwrap_or(&0))
}
