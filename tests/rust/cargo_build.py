# SPDX-License-Identifier: MIT
"""Builds a cargo package for meson: cargo build --release --offline with
the target directory in the build tree, then copies the named binaries to
meson's output directory (cargo has no stable --out-dir).

  cargo_build.py CARGO MANIFEST TARGET_DIR OUT_DIR BIN[=OUTNAME]...
"""
import os
import shutil
import subprocess
import sys


def main():
    cargo, manifest, target, outdir = sys.argv[1:5]
    env = dict(os.environ)
    env.pop("RUSTFLAGS", None)
    p = subprocess.run([cargo, "build", "--release", "--offline", "--quiet",
                        "--manifest-path", manifest, "--target-dir", target],
                       env=env)
    if p.returncode:
        sys.exit(p.returncode)
    for spec in sys.argv[5:]:
        name, _, out = spec.partition("=")
        shutil.copy2(os.path.join(target, "release", name),
                     os.path.join(outdir, out or name))


main()
