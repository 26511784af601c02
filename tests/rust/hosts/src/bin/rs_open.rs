// SPDX-License-Identifier: MIT
//! Unbalanced host, the Rust twin of tests/hosts/unbalanced.c "events" for
//! what a Rust program can get wrong: a thread that exits with 2 open
//! queries (thread_exit_open), and BEGIN in this crate / END in another
//! (names_b) which must match. "good" runs 10 times, "cross" 5 times.
use sp_probe::{sp_query_begin, sp_query_end};

fn good() {
    sp_query_begin!("good");
    sp_query_end!("good");
}

fn main() {
    for _ in 0..5 {
        good();
    }
    std::thread::spawn(|| {
        sp_query_begin!("open1");
        sp_query_begin!("open2");
        // exits with both open
    })
    .join()
    .unwrap();
    for _ in 0..5 {
        sp_query_begin!("cross");
        names_b::end_cross();
        good();
    }
    println!("cross names equal: {}", sp_probe::sp_name!("cross") == names_b::name_cross());
}
