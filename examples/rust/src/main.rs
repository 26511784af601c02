// SPDX-License-Identifier: MIT
//! query_engine: the Rust port of examples/query_engine.c, a toy compiler
//! built like rustc's query system and instrumented with the sp-probe crate
//! so that every column of sptrace's table has data.
//!
//!   query_engine [-j THREADS] [-n ITEMS] [-s SCALE] [--truth] [--wait]
//!
//!   cargo build --release --offline && sudo sptrace -- target/release/query_engine
//!
//! The model is the C example's (its top comment has the details): queries
//! on items, modules and the crate, memoised in a table shared by the worker
//! threads under one mutex; a request is a cache hit (done), a blocked wait
//! (another thread computes it) or a claim, which loads the result from the
//! incremental cache on disk when it is green, or runs the provider. Two
//! sessions run: a clean build that persists its results to a file, then a
//! rebuild after editing a quarter of the items, which loads the unchanged
//! results. Every query only requests queries of lower rank: no deadlock.
//!
//! The last line sums what the program did:
//!   items=N queries=Q cache_hits=H incr_loads=L blocked=B
//! --truth also prints, before it, one JSON line of per-query counts and of
//! times the program measured with its own clock right inside the probes
//! (self and total time as sptrace defines them), for the end-to-end test.
//! --wait prints "ready PID" and waits for a line on stdin before working
//! (for sptrace -p).

use sp_probe::{sp_alloc, sp_free, sp_name, sp_scope, sp_thread_name, Name};
use std::collections::HashMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufRead, Write};
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Instant;

const MODULE_ITEMS: u32 = 16;
/// Busy-work rounds in one tick (about 0.1 ms at opt-level 3).
const TICK_ROUNDS: f64 = 75000.0;
const CODEC_TICKS: u64 = 1;

/// In rank order: a query only requests queries listed before it.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum Q {
    Parse,
    LangItems,
    Expand,
    Resolve,
    TraitImpls,
    Typeck,
    Borrowck,
    Optimize,
    Codegen,
}
const QUERIES: usize = 9;
const ALL: [Q; QUERIES] = [
    Q::Parse, Q::LangItems, Q::Expand, Q::Resolve, Q::TraitImpls, Q::Typeck,
    Q::Borrowck, Q::Optimize, Q::Codegen,
];

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Item,
    Module,
    Crate,
}

/// (own work in ticks, key kind, persisted to the incremental cache)
fn info(q: Q) -> (u64, Kind, bool) {
    match q {
        Q::Parse => (4, Kind::Item, false),
        Q::LangItems => (120, Kind::Crate, true),
        Q::Expand => (4, Kind::Item, false),
        Q::Resolve => (4, Kind::Item, false),
        Q::TraitImpls => (24, Kind::Module, true),
        Q::Typeck => (12, Kind::Item, true),
        Q::Borrowck => (8, Kind::Item, false),
        Q::Optimize => (10, Kind::Item, true),
        Q::Codegen => (6, Kind::Item, false),
    }
}

/// The probe name of a query. sptrace matches BEGIN and END by the name's
/// address: sp_name! gives every use of one literal the same one.
fn name(q: Q) -> Name {
    match q {
        Q::Parse => sp_name!("parse"),
        Q::LangItems => sp_name!("lang_items"),
        Q::Expand => sp_name!("expand"),
        Q::Resolve => sp_name!("resolve"),
        Q::TraitImpls => sp_name!("trait_impls"),
        Q::Typeck => sp_name!("typeck"),
        Q::Borrowck => sp_name!("borrowck"),
        Q::Optimize => sp_name!("optimize"),
        Q::Codegen => sp_name!("codegen"),
    }
}

/// Rows of the truth: the queries, then the two session activities.
const ROWS: usize = QUERIES + 2;
const PERSIST: usize = QUERIES;
const LOAD_DEP_GRAPH: usize = QUERIES + 1;
const ROW_NAMES: [&str; ROWS] = [
    "parse", "lang_items", "expand", "resolve", "trait_impls", "typeck", "borrowck",
    "optimize", "codegen", "persist_result_cache", "load_dep_graph",
];

/// What one thread did, timed with its own clock around the probes.
#[derive(Default, Clone)]
struct Truth {
    count: [u64; ROWS],
    cache_hits: [u64; ROWS],
    incr_loads: [u64; ROWS],
    blocked: [u64; ROWS],
    total_ns: [u64; ROWS],
    self_ns: [u64; ROWS],
    incr_load_ns: [u64; ROWS],
    blocked_ns: [u64; ROWS],
    /// Child time of each open interval, innermost last.
    open: Vec<u64>,
}

enum Interval {
    Query,
    IncrLoad,
    Blocked,
}

impl Truth {
    fn begin(&mut self) -> Instant {
        self.open.push(0);
        Instant::now()
    }

    /// Accounts an interval of row `r` that began at `t0`, as sptrace
    /// defines it: blocked and incremental-load intervals are not
    /// invocations, and every interval is a child of the enclosing one.
    fn end(&mut self, r: usize, t0: Instant, kind: Interval) {
        let d = t0.elapsed().as_nanos() as u64;
        let child = self.open.pop().expect("end without begin");
        self.total_ns[r] += d;
        self.self_ns[r] += d - child;
        match kind {
            Interval::Query => self.count[r] += 1,
            Interval::IncrLoad => {
                self.incr_loads[r] += 1;
                self.incr_load_ns[r] += d;
            }
            Interval::Blocked => {
                self.blocked[r] += 1;
                self.blocked_ns[r] += d;
            }
        }
        if let Some(parent) = self.open.last_mut() {
            *parent += d;
        }
    }

    fn add(&mut self, o: &Truth) {
        for r in 0..ROWS {
            self.count[r] += o.count[r];
            self.cache_hits[r] += o.cache_hits[r];
            self.incr_loads[r] += o.incr_loads[r];
            self.blocked[r] += o.blocked[r];
            self.total_ns[r] += o.total_ns[r];
            self.self_ns[r] += o.self_ns[r];
            self.incr_load_ns[r] += o.incr_load_ns[r];
            self.blocked_ns[r] += o.blocked_ns[r];
        }
    }
}

fn mix64(mut x: u64) -> u64 {
    x ^= x >> 30;
    x = x.wrapping_mul(0xbf58476d1ce4e5b9);
    x ^= x >> 27;
    x = x.wrapping_mul(0x94d049bb133111eb);
    x ^ (x >> 31)
}

const CHURN_MUL: u64 = 0x9e3779b97f4a7c15;

/// Deterministic busy work; invertible, so it is the cache's encoding too.
fn churn(mut x: u64, rounds: u64) -> u64 {
    for _ in 0..rounds {
        x ^= x >> 31;
        x = x.wrapping_mul(CHURN_MUL);
    }
    x
}

fn unchurn(mut x: u64, rounds: u64) -> u64 {
    let mut inv = CHURN_MUL;
    for _ in 0..5 {
        inv = inv.wrapping_mul(2u64.wrapping_sub(CHURN_MUL.wrapping_mul(inv)));
    }
    for _ in 0..rounds {
        x = x.wrapping_mul(inv);
        x ^= (x >> 31) ^ (x >> 62);
    }
    x
}

enum Memo {
    Running,
    Done(u64),
}

/// The open incremental cache: the file, and the offset of each record.
type Cache = (File, HashMap<(Q, u32), u64>);

/// One record of the incremental cache file: query, key, encoded value,
/// check of the value.
const RECORD: usize = 24;

struct Session {
    items: u32,
    generation: u64,
    tick_rounds: u64,
    memo: Mutex<HashMap<(Q, u32), Memo>>,
    done: Condvar,
    next_item: AtomicU32,
    /// The incremental cache: the file and where each record is.
    cache: Option<Cache>,
}

fn edited(s: &Session, item: u32) -> bool {
    s.generation > 0 && mix64(item as u64) % 4 == 0
}

/// Whether a persisted result's inputs are unchanged since the clean build.
fn green(s: &Session, q: Q, key: u32) -> bool {
    info(q).1 != Kind::Item || !(edited(s, key) || (key > 0 && edited(s, key - 1)))
}

fn record_check(q: Q, key: u32, value: u64) -> u64 {
    mix64(value ^ mix64(((q as u64) << 32) | key as u64))
}

struct Worker<'a> {
    s: &'a Session,
    t: Truth,
}

impl<'a> Worker<'a> {
    /// Loads a green persisted result from the cache file, or None.
    fn try_load(&mut self, q: Q, key: u32) -> Option<u64> {
        let s = self.s;
        let (file, index) = s.cache.as_ref()?;
        if !info(q).2 || !green(s, q, key) {
            return None;
        }
        let off = *index.get(&(q, key))?;
        let n = name(q);
        n.incr_load_begin();
        let t0 = self.t.begin();
        let mut rec = [0u8; RECORD];
        let read = file.read_exact_at(&mut rec, off);
        let value = unchurn(u64::from_le_bytes(rec[8..16].try_into().unwrap()),
                            CODEC_TICKS * s.tick_rounds);
        let ok = read.is_ok()
            && u32::from_le_bytes(rec[0..4].try_into().unwrap()) == q as u32
            && u32::from_le_bytes(rec[4..8].try_into().unwrap()) == key
            && u64::from_le_bytes(rec[16..24].try_into().unwrap()) == record_check(q, key, value);
        self.t.end(q as usize, t0, Interval::IncrLoad);
        n.incr_load_end();
        if !ok {
            eprintln!("query_engine: bad cache record for {:?}({}); recomputing", q, key);
            return None;
        }
        Some(value)
    }

    fn provide(&mut self, q: Q, key: u32) -> u64 {
        let s = self.s;
        let input = match q {
            Q::Parse => mix64(((if edited(s, key) { s.generation } else { 0 }) << 32) | key as u64),
            Q::LangItems => 0x1a46,
            Q::Expand => self.query(Q::Parse, key),
            Q::Resolve => self.query(Q::Expand, key) ^ self.query(Q::LangItems, 0),
            Q::TraitImpls => self.query(Q::LangItems, 0) + key as u64,
            Q::Typeck => {
                let mut v = self.query(Q::Resolve, key);
                v ^= self.query(Q::TraitImpls, key / MODULE_ITEMS);
                if key > 0 {
                    v = v.wrapping_add(mix64(self.query(Q::Resolve, key - 1)));
                }
                v
            }
            Q::Borrowck => self.query(Q::Typeck, key),
            Q::Optimize => self.query(Q::Borrowck, key),
            Q::Codegen => self.query(Q::Optimize, key) ^ self.query(Q::Typeck, key),
        };
        churn(input ^ ((q as u64) << 56), info(q).0 * s.tick_rounds)
    }

    /// The value of q(key): from memory, from another thread, from the
    /// incremental cache, or by running the provider.
    fn query(&mut self, q: Q, key: u32) -> u64 {
        let s = self.s;
        let n = name(q);
        let mut memo = s.memo.lock().unwrap();
        match memo.get(&(q, key)) {
            Some(Memo::Done(v)) => {
                let v = *v;
                drop(memo);
                n.cache_hit();
                self.t.cache_hits[q as usize] += 1;
                return v;
            }
            Some(Memo::Running) => {
                // BEGIN under the lock, so the wake-up cannot be missed.
                n.blocked_begin();
                let t0 = self.t.begin();
                let v = loop {
                    memo = s.done.wait(memo).unwrap();
                    if let Some(Memo::Done(v)) = memo.get(&(q, key)) {
                        break *v;
                    }
                };
                drop(memo);
                self.t.end(q as usize, t0, Interval::Blocked);
                n.blocked_end();
                return v;
            }
            None => {
                memo.insert((q, key), Memo::Running);
            }
        }
        drop(memo);
        let v = match self.try_load(q, key) {
            Some(v) => v,
            None => {
                n.query_begin();
                let t0 = self.t.begin();
                let v = self.provide(q, key);
                self.t.end(q as usize, t0, Interval::Query);
                n.query_end();
                v
            }
        };
        s.memo.lock().unwrap().insert((q, key), Memo::Done(v));
        s.done.notify_all();
        v
    }
}

/// Runs `threads` workers over every item; returns their truth.
fn run(s: &Session, threads: u32) -> Truth {
    let mut all = Truth::default();
    workers::scope_compat(s, threads, &mut all);
    all
}

/// std::thread::scope is newer than rustc 1.63's std: the workers get the
/// session through its address, and are joined before run returns.
mod workers {
    use super::{Session, Truth, Worker};
    use std::thread::Builder;

    pub(super) fn scope_compat(s: &Session, threads: u32, all: &mut Truth) {
        let addr = s as *const Session as usize;
        let handles: Vec<_> = (0..threads)
            .map(|id| {
                Builder::new()
                    .name(format!("worker-{}", id))
                    .spawn(move || {
                        // SAFETY: every handle is joined below, before s dies.
                        let s = unsafe { &*(addr as *const Session) };
                        super::sp_thread_name!("worker");
                        let mut w = Worker { s, t: Truth::default() };
                        loop {
                            let item = s.next_item.fetch_add(1, super::Ordering::SeqCst);
                            if item >= s.items {
                                break;
                            }
                            w.query(super::Q::Codegen, item);
                        }
                        w.t
                    })
                    .expect("query_engine: spawn a worker thread")
            })
            .collect();
        for h in handles {
            all.add(&h.join().expect("query_engine: a worker panicked"));
        }
    }
}

fn session(items: u32, generation: u64, tick_rounds: u64) -> Session {
    Session {
        items,
        generation,
        tick_rounds,
        memo: Mutex::new(HashMap::new()),
        done: Condvar::new(),
        next_item: AtomicU32::new(0),
        cache: None,
    }
}

/// Writes every persisted result of a finished session to the cache file.
fn persist(s: &Session, path: &PathBuf, t: &mut Truth) -> io::Result<()> {
    sp_scope!("persist_result_cache");
    let t0 = t.begin();
    let memo = s.memo.lock().unwrap();
    let mut buf: Vec<u8> = Vec::with_capacity(memo.len() * RECORD);
    sp_alloc!("ResultBuffer", buf.capacity(), buf.as_ptr());
    for (&(q, key), m) in memo.iter() {
        if let Memo::Done(v) = *m {
            if info(q).2 {
                buf.extend_from_slice(&(q as u32).to_le_bytes());
                buf.extend_from_slice(&key.to_le_bytes());
                buf.extend_from_slice(&churn(v, CODEC_TICKS * s.tick_rounds).to_le_bytes());
                buf.extend_from_slice(&record_check(q, key, v).to_le_bytes());
            }
        }
    }
    let r = OpenOptions::new().write(true).create_new(true).open(path)
        .and_then(|mut f| f.write_all(&buf));
    sp_free!("ResultBuffer", buf.as_ptr());
    drop(buf);
    t.end(PERSIST, t0, Interval::Query);
    r
}

/// Reads the index of the cache file: where each record is.
fn load_dep_graph(path: &PathBuf, t: &mut Truth) -> io::Result<Cache> {
    sp_scope!("load_dep_graph");
    let t0 = t.begin();
    let r = (|| {
        let data = fs::read(path)?;
        let file = File::open(path)?;
        let mut index = HashMap::new();
        for (i, rec) in data.chunks_exact(RECORD).enumerate() {
            let q = u32::from_le_bytes(rec[0..4].try_into().unwrap()) as usize;
            let key = u32::from_le_bytes(rec[4..8].try_into().unwrap());
            if q >= QUERIES {
                return Err(io::Error::new(io::ErrorKind::InvalidData, "bad query in record"));
            }
            index.insert((ALL[q], key), (i * RECORD) as u64);
        }
        Ok((file, index))
    })();
    t.end(LOAD_DEP_GRAPH, t0, Interval::Query);
    r
}

fn usage() -> ! {
    eprintln!("usage: query_engine [-j THREADS] [-n ITEMS] [-s SCALE] [--truth] [--wait]");
    std::process::exit(2);
}

fn print_truth(t: &Truth) {
    let row = |v: &[u64; ROWS]| {
        ROW_NAMES.iter().zip(v.iter())
            .map(|(n, x)| format!("\"{}\": {}", n, x))
            .collect::<Vec<_>>()
            .join(", ")
    };
    println!("{{\"count\": {{{}}}, \"cache_hits\": {{{}}}, \"incr_loads\": {{{}}}, \
              \"blocked\": {{{}}}, \"total_ns\": {{{}}}, \"self_ns\": {{{}}}, \
              \"incr_load_ns\": {{{}}}, \"blocked_ns\": {{{}}}}}",
             row(&t.count), row(&t.cache_hits), row(&t.incr_loads), row(&t.blocked),
             row(&t.total_ns), row(&t.self_ns), row(&t.incr_load_ns), row(&t.blocked_ns));
}

fn main() {
    let (mut threads, mut items, mut scale) = (4u32, 400u32, 1.0f64);
    let (mut truth, mut wait) = (false, false);
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut val = || args.next().unwrap_or_else(|| usage());
        match a.as_str() {
            "-j" => threads = val().parse().unwrap_or_else(|_| usage()),
            "-n" => items = val().parse().unwrap_or_else(|_| usage()),
            "-s" => scale = val().parse().unwrap_or_else(|_| usage()),
            "--truth" => truth = true,
            "--wait" => wait = true,
            _ => usage(),
        }
    }
    if threads == 0 || threads > 256 || items == 0 || items > 100_000 || scale.is_nan() || scale <= 0.0 {
        usage();
    }
    sp_thread_name!("main");
    if wait {
        println!("ready {}", std::process::id());
        io::stdout().flush().ok();
        let mut line = String::new();
        io::stdin().lock().read_line(&mut line).ok();
    }
    let tick_rounds = ((TICK_ROUNDS * scale) as u64).max(1);
    let dir = std::env::temp_dir().join(format!("query_engine-rs.{}", std::process::id()));
    if let Err(e) = fs::create_dir(&dir) {
        eprintln!("query_engine: {}: {}", dir.display(), e);
        std::process::exit(1);
    }
    let path = dir.join("query-cache.bin");
    let mut t = Truth::default();

    // The clean build, persisted to the incremental cache.
    let clean = session(items, 0, tick_rounds);
    t.add(&run(&clean, threads));
    let persisted = persist(&clean, &path, &mut t);
    drop(clean);

    // The rebuild after editing a quarter of the items.
    let rebuilt = persisted.and_then(|()| {
        let mut s = session(items, 1, tick_rounds);
        s.cache = Some(load_dep_graph(&path, &mut t)?);
        t.add(&run(&s, threads));
        Ok(())
    });
    fs::remove_file(&path).ok();
    fs::remove_dir(&dir).ok();
    if let Err(e) = rebuilt {
        eprintln!("query_engine: {}: {}", path.display(), e);
        std::process::exit(1);
    }
    if truth {
        print_truth(&t);
    }
    let sum = |v: &[u64; ROWS]| v.iter().sum::<u64>();
    println!("items={} queries={} cache_hits={} incr_loads={} blocked={}",
             items, sum(&t.count), sum(&t.cache_hits), sum(&t.incr_loads), sum(&t.blocked));
}
