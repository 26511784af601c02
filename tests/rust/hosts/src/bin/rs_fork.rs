// SPDX-License-Identifier: MIT
//! Fork host: a traced Rust program that forks keeps its children. The
//! parent runs every kind of probe, then forks CHILDREN children, one after
//! another, each of which runs every kind of probe again (its batched ring
//! wiped by the fork and restarted, its per-event sites those the parent
//! ran) and exits 0; the parent waits for each, then runs every probe once
//! more.
//!
//! With `batched`, only the batched query probes run (in parent and
//! children): their per-event sites never fire while sptrace batches, so
//! the kernel patches none of them into a call.
//!
//!   rs_fork CHILDREN [batched]    prints "children=N ok=K", exits 0 if K == N
use sp_probe::{
    sp_alloc, AsyncQuery, sp_blocked_scope, sp_cache_hit, sp_enabled, sp_free, sp_incr_load_scope,
    sp_mark, sp_name, sp_probe, sp_query_begin, sp_query_end, sp_scope, sp_thread_name,
};

extern "C" {
    fn fork() -> i32;
    fn waitpid(pid: i32, status: *mut i32, options: i32) -> i32;
    fn _exit(code: i32) -> !;
}

/// Every probe of the crate once: batched query probes (macros and Name
/// methods), and unless `batched_only` the per-event ones.
#[inline(never)]
fn every_probe(round: u64, batched_only: bool) -> u64 {
    let v = [round; 4];
    if !batched_only {
        sp_thread_name!("forker");
    }
    {
        sp_scope!("fork_query");
        sp_cache_hit!("fork_query");
        {
            sp_incr_load_scope!("fork_query");
        }
        {
            sp_blocked_scope!("fork_query");
        }
        let n = sp_name!("fork_named");
        let _s = n.scope();
        n.cache_hit();
        sp_query_begin!("fork_pair");
        sp_query_end!("fork_pair");
    }
    if !batched_only {
        sp_mark!("fork_mark", round);
        sp_alloc!("ForkBuf", v.len() * 8, v.as_ptr());
        sp_free!("ForkBuf", v.as_ptr());
        sp_probe!(fork_custom, round, v.len());
        // An async invocation of one piece ended after it: its
        // sp:query_poll_end and sp:query_finish sites, per-event.
        if AsyncQuery::watched() {
            let q = AsyncQuery::new(sp_name!("fork_async"));
            q.poll_begin();
            q.poll_end(false);
            q.finish();
        }
    }
    v.iter().sum::<u64>() + sp_enabled!() as u64
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let b = args.get(2).map(|a| a == "batched");
    let (n, batched): (u32, bool) = match (args.get(1).map(|a| a.parse()), b) {
        (Some(Ok(n)), b) if n > 0 && args.len() <= 3 && b != Some(false) => (n, b.is_some()),
        _ => {
            eprintln!("usage: rs_fork CHILDREN [batched]");
            std::process::exit(2);
        }
    };
    every_probe(1, batched);
    let mut ok = 0;
    for i in 0..n {
        // SAFETY: the child runs the probes (no lock another thread could
        // hold: this program has one) and leaves with _exit.
        let pid = unsafe { fork() };
        if pid == 0 {
            let r = every_probe(2 + u64::from(i), batched) + every_probe(3, batched);
            unsafe { _exit(if r > 0 { 0 } else { 1 }) };
        }
        let mut status = -1;
        if pid > 0 && unsafe { waitpid(pid, &mut status, 0) } == pid && status == 0 {
            ok += 1;
        } else {
            eprintln!("rs_fork: child {} (pid {}): wait status {:#x}", i, pid, status);
        }
        every_probe(100, batched);
    }
    println!("children={} ok={}", n, ok);
    std::process::exit(if ok == n { 0 } else { 1 });
}
