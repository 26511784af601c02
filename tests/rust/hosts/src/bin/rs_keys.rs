// SPDX-License-Identifier: MIT
//! Keyed queries from Rust (tests/e2e/test_keys.py), as tests/hosts/key_host.c:
//!
//!   rs_keys N [--fork]
//!
//! Runs "plain_q" once and one pair named by a 1 MiB text (`Name::intern`
//! of "big" then 'x's); then query "keyed_q" with keys 0..N-1, key k
//! (k % 3) + 1 times, each a `sp_query_begin_key!` / `sp_query_end_key!`
//! pair (every other key through `Name::scope_key`) with a
//! `sp_cache_hit_key!` in it. --fork: then forks a child that runs ten
//! keyed pairs and exits 0. Prints
//!   {"keys": N, "pairs": P, "hits": H, "child_status": S}
//!
//!   rs_keys --str N
//!
//! Run-time text, as `key_host --str N`: query "skey_q" with text keys
//! "k0".."k<N-1>" (`sp_*_key_str!`), key k (k % 3) + 1 times with a cache
//! hit; names "rt_0".."rt_299" (`sp_*_str!`, every other one through
//! `Name::intern_bytes`), name i (i % 3) + 1 pairs; one pair each named
//! "rtbad\xff\xc3(x" (not UTF-8), "both_rt" and 1 MiB of text ("rtbig"
//! then 'x's), and one "skey_q" pair of the key "kbad\xff". Prints
//!   {"keys": N, "pairs": P, "hits": H, "names": 300, "name_pairs": Q}
use sp_probe::{sp_cache_hit_key, sp_cache_hit_key_str, sp_cache_hit_str, sp_name,
               sp_query_begin, sp_query_begin_key, sp_query_begin_key_str, sp_query_begin_str,
               sp_query_end, sp_query_end_key, sp_query_end_key_str, sp_query_end_str, Name};
use std::sync::atomic::{AtomicU64, Ordering};

static SINK: AtomicU64 = AtomicU64::new(0);

extern "C" {
    fn fork() -> i32;
    fn waitpid(pid: i32, status: *mut i32, options: i32) -> i32;
    fn _exit(status: i32) -> !;
}

fn keyed(k: u64) {
    if k & 1 == 0 {
        sp_query_begin_key!("keyed_q", k);
        sp_cache_hit_key!("keyed_q", k);
        SINK.fetch_add(k, Ordering::Relaxed);
        sp_query_end_key!("keyed_q", k);
    } else {
        let _s = sp_name!("keyed_q").scope_key(k);
        sp_cache_hit_key!("keyed_q", k);
        SINK.fetch_add(k, Ordering::Relaxed);
    }
}

fn str_main(n: u64) {
    let (mut pairs, mut name_pairs) = (0u64, 0u64);
    let mut buf = String::new();
    for k in 0..n {
        buf.clear();
        buf.push_str(&format!("k{}", k));
        for _ in 0..=(k % 3) {
            sp_query_begin_key_str!("skey_q", buf);
            sp_cache_hit_key_str!("skey_q", buf.as_bytes());
            SINK.fetch_add(k, Ordering::Relaxed);
            sp_query_end_key_str!("skey_q", &buf[..]);
            pairs += 1;
        }
    }
    let kbad: &[u8] = b"kbad\xff";
    sp_query_begin_key_str!("skey_q", kbad);
    sp_query_end_key_str!("skey_q", kbad);
    for i in 0..300u64 {
        let name = format!("rt_{}", i);
        for _ in 0..=(i % 3) {
            if i & 1 == 0 {
                sp_query_begin_str!(name);
                sp_cache_hit_str!(name);
                sp_query_end_str!(name.as_bytes());
            } else {
                let n = Name::intern_bytes(name.as_bytes());
                n.query_begin();
                n.cache_hit();
                n.query_end();
            }
            name_pairs += 1;
        }
    }
    let bad: &[u8] = b"rtbad\xff\xc3(x";
    sp_query_begin_str!(bad);
    sp_query_end_str!(bad);
    sp_query_begin_str!("both_rt");
    sp_query_end_str!(String::from("both_rt"));
    let mut big = vec![b'x'; 1 << 20];
    big[..5].copy_from_slice(b"rtbig");
    sp_query_begin_str!(big);
    sp_query_end_str!(big.clone());
    println!(
        "{{\"keys\": {}, \"pairs\": {}, \"hits\": {}, \"names\": 300, \"name_pairs\": {}}}",
        n, pairs, pairs, name_pairs
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() == 3 && args[1] == "--str" {
        match args[2].parse() {
            Ok(n) => return str_main(n),
            Err(_) => std::process::exit(2),
        }
    }
    let n: u64 = match args.get(1).map(|a| a.parse()) {
        Some(Ok(n)) => n,
        _ => {
            eprintln!("usage: rs_keys N [--fork]");
            std::process::exit(2);
        }
    };
    let fork_child = args.get(2).map(|a| a == "--fork").unwrap_or(false);
    let mut text = String::from("big");
    text.push_str(&"x".repeat((1 << 20) - 3));
    let big = Name::intern(Box::leak(text.into_boxed_str()));
    sp_query_begin!("plain_q");
    sp_query_end!("plain_q");
    big.query_begin();
    big.query_end();
    let mut pairs = 0u64;
    for k in 0..n {
        for _ in 0..=(k % 3) {
            keyed(k);
            pairs += 1;
        }
    }
    let mut status = -1;
    if fork_child {
        // SAFETY: one thread; the child only runs probes and _exit.
        let pid = unsafe { fork() };
        if pid == 0 {
            for k in 0..10 {
                keyed(k);
            }
            unsafe { _exit(0) };
        }
        if pid < 0 || unsafe { waitpid(pid, &mut status, 0) } != pid {
            std::process::exit(1);
        }
    }
    println!(
        "{{\"keys\": {}, \"pairs\": {}, \"hits\": {}, \"child_status\": {}}}",
        n, pairs, pairs, status
    );
}
