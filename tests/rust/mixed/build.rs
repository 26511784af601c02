// SPDX-License-Identifier: MIT
//! Builds c/mixed_c.c, instrumented with probes/sp_probe.h, into a static
//! library linked into the Rust binary (with $CC or cc, and ar: no build
//! dependency).
use std::env;
use std::path::PathBuf;
use std::process::Command;

fn run(cmd: &mut Command) {
    let st = cmd.status().unwrap_or_else(|e| panic!("{:?}: {}", cmd, e));
    assert!(st.success(), "{:?}: {}", cmd, st);
}

fn main() {
    let dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let out = PathBuf::from(env::var("OUT_DIR").unwrap());
    let src = dir.join("c/mixed_c.c");
    let probes = dir.join("../../../probes");
    let obj = out.join("mixed_c.o");
    let cc = env::var("CC").unwrap_or_else(|_| "cc".to_string());
    run(Command::new(cc).args(["-O2", "-fPIC", "-Wall", "-Wextra", "-Werror", "-c", "-I"])
        .arg(&probes).arg(&src).arg("-o").arg(&obj));
    run(Command::new("ar").arg("crs").arg(out.join("libmixed_c.a")).arg(&obj));
    println!("cargo:rustc-link-search=native={}", out.display());
    println!("cargo:rustc-link-lib=static=mixed_c");
    println!("cargo:rerun-if-changed={}", src.display());
    println!("cargo:rerun-if-changed={}", probes.join("sp_probe.h").display());
}
