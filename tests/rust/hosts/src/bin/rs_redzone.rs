// SPDX-License-Identifier: MIT
//! Red-zone host, the Rust twin of tests/hosts/redzone.c: a leaf function
//! keeps more values live across its probes than there are free registers,
//! so rustc spills some below %rsp into the red zone. With the sp-probe site
//! (%rsp stepped down 128 bytes around the nop) they survive the kernel's
//! call on a traced nop5; with a naive nop5 site ("naive", the negative
//! control) they are overwritten and results go wrong.
//!
//! The leaf's probes are `sp:thread_name`, a per-event probe that sptrace
//! attaches in every session: a batched query probe calls the ring code in
//! its traced branch, so a function with one is no leaf. Each call is
//! counted by a query pair around it in main().
//!
//!   rs_redzone safe|naive CALLS      prints "wrong=K calls=N"
use sp_probe::{sp_query_begin, sp_query_end, sp_thread_name};


/// A thread_name site with a bare nop5 and no %rsp adjustment:
/// exactly what sp-probe must not do. Test-only; reuses the crate's note.
macro_rules! naive_site {
    ($probe:ident) => {
        if sp_probe::__sp_sema!($probe) != 0 {
            #[allow(named_asm_labels)]
            unsafe {
                std::arch::asm!(
                    sp_probe::__sp_name_asm!("rz"),
                    "990: .byte 0x0f, 0x1f, 0x44, 0x00, 0x00",
                    sp_probe::__sp_note!($probe, "-8@{n}"),
                    n = out(reg) _,
                    options(att_syntax, nostack, preserves_flags)
                );
            }
        }
    };
}

/// Fourteen values (112 bytes) in an array whose address an opaque asm
/// takes: they must be in memory across the probes, and a leaf function
/// keeps such a small frame in its red zone, below %rsp, without moving
/// %rsp. The probes' asm may write any escaped memory, so the values are
/// read back from the red zone after them.
macro_rules! rz_body {
    ($x:expr, $begin:block, $end:block) => {{
        let x: u64 = $x;
        let mut a = [0u64; 14];
        let mut i = 0;
        while i < 14 {
            a[i] = x.wrapping_mul(2 * i as u64 + 3).wrapping_add(i as u64);
            i += 1;
        }
        unsafe {
            std::arch::asm!("/* {0} */", in(reg) a.as_mut_ptr(), options(nostack, preserves_flags));
        }
        $begin;
        $end;
        let mut r = 0u64;
        let mut i = 0;
        while i < 14 {
            r = r.wrapping_mul(31).wrapping_add(a[i] ^ (a[i] >> 7));
            i += 1;
        }
        r
    }};
}

#[no_mangle]
#[inline(never)]
pub extern "C" fn rs_rz_safe(x: u64) -> u64 {
    rz_body!(x, { sp_thread_name!("rz") }, { sp_thread_name!("rz") })
}

#[no_mangle]
#[inline(never)]
pub extern "C" fn rs_rz_naive(x: u64) -> u64 {
    rz_body!(x, { naive_site!(thread_name) }, { naive_site!(thread_name) })
}

#[no_mangle]
#[inline(never)]
pub extern "C" fn rs_rz_expected(x: u64) -> u64 {
    rz_body!(x, {}, {})
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let calls: u64 = match args.get(2).map(|c| c.parse()) {
        Some(Ok(n)) if args.len() == 3 && (args[1] == "safe" || args[1] == "naive") => n,
        _ => {
            eprintln!("usage: rs_redzone safe|naive CALLS");
            std::process::exit(2);
        }
    };
    let f: extern "C" fn(u64) -> u64 = if args[1] == "safe" { rs_rz_safe } else { rs_rz_naive };
    let f = unsafe { std::ptr::read_volatile(&f) }; // no inlining of the call
    let mut wrong = 0u64;
    for i in 0..calls {
        let x = i.wrapping_mul(2654435761);
        sp_query_begin!("rz");
        let r = f(x);
        sp_query_end!("rz");
        if r != rs_rz_expected(x) {
            wrong += 1;
        }
    }
    println!("wrong={} calls={}", wrong, calls);
}
