// SPDX-License-Identifier: MIT
//! A second crate of one binary: its sites name the same queries as the
//! binary's, and must pass the same pointers (BEGIN in one crate, END in the
//! other).
use sp_probe::{sp_name, sp_query_end, Name};

/// The END of the binary's BEGIN of "cross".
#[inline(never)]
pub fn end_cross() {
    sp_query_end!("cross");
}

/// The name "cross" as this crate sees it.
#[inline(never)]
pub fn name_cross() -> Name {
    sp_name!("cross")
}
