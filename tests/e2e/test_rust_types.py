# SPDX-License-Identifier: MIT
"""Memory per Rust type: tests/rust/hosts rs_typed allocates through
sp_probe's typed helpers (TracedBox, alloc_array_of / free_of) on two
threads, and counts every allocation and free per type name itself;
`sptrace mem --no-libc` must show the same rows, exactly: allocations,
bytes, frees, live, and Widget's peak. The names are the types' Rust
names, made at run time (no literal in the file), read after the host
exited; a name over 127 bytes is cut with a hash."""
import os

from sptest import (check, eq, finish, host_truth, require, require_bpf,
                    trace_json)

HOSTS = os.environ.get("RUST_HOSTS_DIR", "")
require(bool(HOSTS), "cargo: the Rust hosts were not built")
require_bpf()
TYPED = os.path.join(HOSTS, "rs_typed")


def test_types():
    p, s = trace_json(["--no-libc", "--", TYPED], cmd="mem")
    eq(p.returncode, 0, "exit 0 (%s)" % p.stderr.strip()[-300:])
    t = host_truth(p.stdout)
    eq(t["enabled"], True, "the host saw the tracer attached from its start")
    if not check(s is not None, "JSON written"):
        return
    got = {x["name"]: x for x in s["types"]}
    eq(sorted(got), sorted(t["types"]), "one row per Rust type, named as the host names it")
    for name, want in t["types"].items():
        g = got.get(name, {})
        for k in ("allocs", "alloc_bytes", "frees", "free_bytes"):
            eq(g.get(k), want[k], "%s: %s exact" % (name, k))
        eq((g.get("live"), g.get("live_bytes")),
           (want["allocs"] - want["frees"], want["alloc_bytes"] - want["free_bytes"]),
           "%s: live exact" % name)
        if "peak_live_bytes" in want:
            eq(g.get("peak_live_bytes"), want["peak_live_bytes"], "%s: peak exact" % name)
    check("rs_typed::Widget" in got, "a struct is named by its path")
    long = [n for n in got if "~" in n]
    eq([len(n) for n in long], [127], "the long type name is cut to 127 bytes with its hash")
    for k, v in s["mem_errors"].items():
        eq(v, 0, "mem_errors.%s" % k)


test_types()
finish()
