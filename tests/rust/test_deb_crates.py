# SPDX-License-Identifier: MIT
"""The crates with dependencies, built offline from Debian 12's packaged
crates (the repository's .cargo/config.toml), with every rustc present
(Debian's 1.63 and a current one): the sp-tracing layer (its tests and
doc tests too), the tracing example and the tokio test hosts build
without a warning; `cargo doc` of sp-probe and sp-tracing warns of
nothing; clippy, where the toolchain has it, finds nothing; no build
changes a checked-in Cargo.lock, whose versions are Debian's (tokio 1.24,
tracing 0.1.37, tracing-subscriber 0.3.16)."""
import os
import re
import subprocess
import sys

from toolchains import toolchains

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
BASE = os.environ.get("RUST_TARGET_BASE", "/tmp/sp-rust-deb")
CRATES = ["probes/rust/sp-tracing", "examples/rust-tracing", "tests/rust_async"]
LOCKS = [os.path.join(ROOT, c, "Cargo.lock") for c in CRATES]
# What each lock file must pin: Debian 12's packaged versions.
PINNED = {"tokio": "1.24.2", "tracing": "0.1.37", "tracing-core": "0.1.30",
          "tracing-subscriber": "0.3.16"}
passed = failed = 0


def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print("FAIL " + what)
    return cond


def in_ci():
    return os.environ.get("CI", "").lower() not in ("", "0", "false", "no")


def cargo(tc, args, crate, target=None):
    c, _, rustc, rustdoc = tc
    env = dict(os.environ, RUSTC=rustc, RUSTDOC=rustdoc)
    env.pop("RUSTFLAGS", None)
    # In the crate's folder: cargo finds .cargo/config.toml from there.
    # The options before any "--" (what follows it goes to the tool).
    return subprocess.run([c, args[0], "--offline"] +
                          (["--target-dir", target] if target else []) + args[1:],
                          cwd=os.path.join(ROOT, crate), env=env, capture_output=True,
                          text=True)


def warnings(stderr):
    return [l for l in stderr.splitlines() if l.startswith("warning")]


def main():
    tcs = toolchains()
    if not tcs:
        print(("FAIL" if in_ci() else "SKIP") + ": no cargo")
        sys.exit(1 if in_ci() else 77)
    probe = cargo(tcs[0], ["metadata", "--format-version", "1"], CRATES[2])
    if probe.returncode:
        err = [l for l in probe.stderr.splitlines() if l.startswith("error")]
        print("%s: Debian's packaged crates are missing (%s): apt-get install "
              "librust-tokio-dev librust-tracing-dev librust-tracing-subscriber-dev "
              "(.ci/install-deps)" % ("FAIL" if in_ci() else "SKIP", err[:1]))
        sys.exit(1 if in_ci() else 77)
    locks = {p: open(p).read() for p in LOCKS}
    for p, text in locks.items():
        check(re.search(r"^version = 3$", text, re.M) is not None,
              "%s: lock file version 3, which Debian's cargo reads" % p)
        for name, v in PINNED.items():
            m = re.search(r'\[\[package\]\]\nname = "%s"\nversion = "([^"]+)"' % re.escape(name),
                          text)
            if m:
                check(m.group(1) == v, "%s: %s pinned at Debian's %s (%s)" %
                      (p, name, v, m.group(1)))
    for tc in tcs:
        version = tc[1]
        target = os.path.join(BASE, version)
        for crate in CRATES:
            p = cargo(tc, ["build", "--release", "--all-targets"], crate, target)
            check(p.returncode == 0 and not warnings(p.stderr),
                  "rustc %s: %s builds offline without warnings (%s)" %
                  (version, crate, p.stderr[-800:]))
        p = cargo(tc, ["test", "--quiet"], CRATES[0], target)
        check(p.returncode == 0, "rustc %s: sp-tracing's tests pass (%s)" %
              (version, (p.stdout + p.stderr)[-800:]))
        for crate in ("probes/rust", CRATES[0]):
            p = cargo(tc, ["doc", "--no-deps", "--all-features"], crate, target)
            check(p.returncode == 0 and not warnings(p.stderr),
                  "rustc %s: cargo doc of %s warns of nothing (%s)" %
                  (version, crate, p.stderr[-600:]))
        if os.access(os.path.join(os.path.dirname(tc[0]), "cargo-clippy"), os.X_OK):
            for crate in CRATES:
                p = cargo(tc, ["clippy", "--quiet", "--all-targets", "--", "-D", "warnings"],
                          crate, os.path.join(target, "clippy"))
                check(p.returncode == 0, "rustc %s: clippy clean: %s (%s)" %
                      (version, crate, p.stderr[-600:]))
    for p, text in locks.items():
        check(open(p).read() == text, "%s: unchanged by the builds" % p)
    print("%d passed, %d failed (toolchains: %s)" %
          (passed, failed, ", ".join(t[1] for t in tcs)))
    sys.exit(1 if failed else 0)


main()
