// SPDX-License-Identifier: MIT
//! The matrix executable: runs every macro untraced; exit 1 if a name has
//! two addresses.
fn main() {
    let r = sp_matrix::sp_matrix_all(3);
    assert!(r >= 1);
    std::process::exit(sp_matrix::sp_matrix_names_differ());
}
