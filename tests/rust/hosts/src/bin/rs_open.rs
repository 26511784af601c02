// SPDX-License-Identifier: MIT
//! Unbalanced host, the Rust twin of tests/hosts/unbalanced.c "events" for
//! what a Rust program can get wrong: a thread that exits with 2 open
//! queries (thread_exit_open), and BEGIN in this crate / END in another
//! (names_b) which must match. "good" runs 10 times, "cross" 5 times.
//! And a "late" pair in a thread's last pthread key destructor, after the
//! crate's own destructor released the thread's ring: it fires its
//! per-event sites, which sptrace counts (and counts as batch_fallback).
use sp_probe::{sp_query_begin, sp_query_end};

extern "C" {
    fn pthread_key_create(key: *mut u32, dtor: Option<unsafe extern "C" fn(*mut u8)>) -> i32;
    fn pthread_setspecific(key: u32, value: *const u8) -> i32;
}

unsafe extern "C" fn late(_: *mut u8) {
    sp_query_begin!("late");
    sp_query_end!("late");
}

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
    // A key made after the crate's (made by the first batched probe, in
    // good() above): glibc runs key destructors in key order, so late()
    // runs after the thread's ring is gone.
    let mut key = 0u32;
    assert_eq!(unsafe { pthread_key_create(&mut key, Some(late)) }, 0);
    std::thread::spawn(move || {
        good();
        // Any non-null value makes glibc run the destructor.
        static MARK: u8 = 0;
        unsafe { pthread_setspecific(key, &MARK as *const u8) };
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
