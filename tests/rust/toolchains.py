# SPDX-License-Identifier: MIT
"""The Rust toolchains of this machine, for the tests that build with each:
the cargo on PATH, rustup's, and Debian's (/usr/bin, rustc 1.63), each
once per rustc version, as (cargo, version, rustc, rustdoc)."""
import os
import shutil
import subprocess


def toolchains():
    found = []
    for c in (shutil.which("cargo"), os.path.expanduser("~/.cargo/bin/cargo"),
              "/root/.cargo/bin/cargo", "/usr/bin/cargo"):
        if c and os.access(c, os.X_OK):
            rustc = os.path.join(os.path.dirname(c), "rustc")
            v = subprocess.run([rustc if os.access(rustc, os.X_OK) else "rustc", "--version"],
                               capture_output=True, text=True).stdout.split()[1]
            if v not in [x[1] for x in found]:
                found.append((c, v, rustc, os.path.join(os.path.dirname(c), "rustdoc")))
    return found
