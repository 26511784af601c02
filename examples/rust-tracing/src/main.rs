// SPDX-License-Identifier: MIT
//! tracing-example: a small tokio program instrumented with `tracing`, as
//! many Rust services are (tokio, hyper and tower use the same spans), and
//! profiled by sptrace with one added line: `sp_tracing::init()`.
//!
//!   tracing-example [PAGES]      (default 200)
//!
//!   cargo build --release --offline && sudo sptrace -- target/release/tracing-example
//!
//! A crawler: PAGES fetches run at once on a multi-threaded runtime. Each
//! fetch waits for the "network" (a timer), then parses the page (CPU
//! work) and stores its links under a lock shared by all fetches. Every
//! span is an sptrace query: `fetch` counts the time its task was being
//! polled (not the time it waited for the timer), `parse` and `store` the
//! time inside them. The last line says what the program did:
//!   pages=N fetch=N parse=N store=N links=L

use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Mutex;
use tracing::instrument;

/// About `us` microseconds of work on the CPU.
fn work(us: u64) -> u64 {
    let t0 = Instant::now();
    let mut x = us;
    while t0.elapsed() < Duration::from_micros(us) {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    }
    x
}

#[instrument(skip_all)]
fn parse(page: u64) -> Vec<u64> {
    let seed = work(100 + page % 5 * 40);
    (0..(page % 7 + 1)).map(|i| seed.rotate_left(i as u32) % 10_000).collect()
}

#[instrument(skip_all)]
async fn store(links: Vec<u64>, seen: Arc<Mutex<Vec<u64>>>) -> usize {
    let mut s = seen.lock().await;
    work(20);
    s.extend(links);
    s.len()
}

#[instrument(skip(seen))]
async fn fetch(page: u64, seen: Arc<Mutex<Vec<u64>>>) -> usize {
    tokio::time::sleep(Duration::from_millis(1 + page % 4)).await; // the network
    let links = parse(page);
    tokio::task::yield_now().await;
    store(links, seen).await
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    sp_tracing::init(); // the one line that makes every span an sptrace query

    let pages: u64 = std::env::args().nth(1).map(|a| a.parse().expect("PAGES")).unwrap_or(200);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let tasks: Vec<_> = (0..pages).map(|p| tokio::spawn(fetch(p, seen.clone()))).collect();
    for t in tasks {
        t.await.expect("a fetch panicked");
    }
    let links = seen.lock().await.len();
    println!("pages={} fetch={} parse={} store={} links={}", pages, pages, pages, pages, links);
}
