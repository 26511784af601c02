# SPDX-License-Identifier: MIT
"""Builds a cargo package for meson: cargo build --release --offline with
the target directory in the build tree, then copies the named binaries to
meson's output directory (cargo has no stable --out-dir).

  cargo_build.py CARGO MANIFEST TARGET_DIR OUT_DIR BIN[=OUTNAME]...
  cargo_build.py --check CARGO MANIFEST

Cargo runs in the manifest's folder, where it finds the repository's
.cargo/config.toml (Debian's packaged crates as its only registry) whatever
meson's build directory is. --check exits 0 when cargo can resolve the
package's dependencies offline (the crates are installed), 1 otherwise.
"""
import os
import shutil
import subprocess
import sys


def cargo_env():
    env = dict(os.environ)
    env.pop("RUSTFLAGS", None)
    return env


def main():
    if sys.argv[1] == "--check":
        cargo, manifest = sys.argv[2], os.path.abspath(sys.argv[3])
        p = subprocess.run([cargo, "metadata", "--offline", "--format-version", "1",
                            "--manifest-path", manifest],
                           cwd=os.path.dirname(manifest), env=cargo_env(),
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if p.returncode:
            errors = [l for l in p.stderr.splitlines() if l.startswith("error")]
            print(errors[0] if errors else "cargo metadata failed")
        sys.exit(1 if p.returncode else 0)
    cargo, manifest, target, outdir = sys.argv[1:5]
    manifest = os.path.abspath(manifest)
    p = subprocess.run([cargo, "build", "--release", "--offline", "--quiet",
                        "--manifest-path", manifest, "--target-dir", target],
                       cwd=os.path.dirname(manifest), env=cargo_env())
    if p.returncode:
        sys.exit(p.returncode)
    for spec in sys.argv[5:]:
        name, _, out = spec.partition("=")
        shutil.copy2(os.path.join(target, "release", name),
                     os.path.join(outdir, out or name))


main()
