// SPDX-License-Identifier: MIT
//! Every probe macro of sp-probe once, for the compile matrix
//! (tests/rust/test_rust_matrix.py): as an rlib linked into the matrix
//! executable and as a cdylib. The names are checked to share one address
//! across functions, modules and crates.
use sp_probe::*;

#[no_mangle]
#[inline(never)]
pub extern "C" fn sp_matrix_all(key: u64) -> u64 {
    let v = vec![1u8; key as usize % 7 + 1];
    sp_query_begin!("m_query");
    sp_cache_hit!("m_query");
    sp_incr_load_begin!("m_query");
    sp_incr_load_end!("m_query");
    sp_blocked_begin!("m_query");
    sp_blocked_end!("m_query");
    sp_thread_name!("m_thread");
    sp_mark!("m_mark", key);
    sp_alloc!("m_type", v.len(), v.as_ptr());
    sp_free!("m_type", v.as_ptr());
    sp_probe!(custom0);
    sp_probe!(custom6, key, key + 1, key + 2, key + 3, key + 4, v.as_ptr());
    sp_query_end!("m_query");
    {
        sp_scope!("m_scope");
        sp_incr_load_scope!("m_scope");
        sp_blocked_scope!("m_scope");
    }
    sp_query_begin!("cross");
    names_b::end_cross();
    v.len() as u64 + sp_enabled!() as u64
}

mod other {
    #[inline(never)]
    pub fn name() -> sp_probe::Name {
        sp_probe::sp_name!("cross")
    }
}

/// 0 when "cross" has one address in this function, another module and the
/// other crate; 1 otherwise. Probes compiled out promise nothing: 0.
#[no_mangle]
#[inline(never)]
pub extern "C" fn sp_matrix_names_differ() -> i32 {
    let here = sp_name!("cross");
    let ok = !sp_probe::EMITS_PROBES
        || (here == other::name() && here == names_b::name_cross());
    (!ok) as i32
}

/// Never called: the linker drops it (--gc-sections) and leaves the notes
/// of its probes with the address 0 + offset, which `sptrace list` must
/// ignore without a warning, as ordinary programs have such notes too.
#[inline(never)]
pub fn sp_matrix_unused(key: u64) -> u64 {
    sp_query_begin!("m_unused");
    sp_mark!("m_unused", key);
    sp_query_end!("m_unused");
    key
}
