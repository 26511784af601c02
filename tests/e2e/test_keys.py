# SPDX-License-Identifier: MIT
"""Keyed queries (C's SP_QUERY_BEGIN_KEY, Rust's sp_query_begin_key!, with
--query-keys) against the hosts' own counts, batched and per-event: 10,000
keys with --max-queries 1000 give 1000 key rows and one "<other>", every
total exact; without --query-keys one row per name; names that are not
UTF-8 or 1 MiB long are escaped and cut; a host that forks after hitting
the keyed sites keeps its child. The C host is tests/hosts/key_host.c, the
Rust one tests/rust/hosts/src/bin/rs_keys.rs.

Run-time text (--str: C's *_STR and *_KEY_STR probes, Rust's *_str! and
*_key_str! macros and Name::intern_bytes): 10,000 text keys give 1000
rows `skey_q(kN)` and "<other>", exact; 10,000 run-time names through
1000 rows keep 1000, exact, and count the rest as queries_map_full; 300 run-time names, a name that
is not UTF-8 and one of 1 MiB (cut to 110 bytes, "~" and the FNV-1a of
the whole) each a row with the host's counts; C and Rust name the same
rows, and in one session their events land in one row per text."""
import json
import os

import subprocess
import time

from sptest import (SPTRACE, check, cleanup, eq, finish, require_bpf, run,
                    tmpfile, trace_json, wait_tracing)

from sptest import in_ci

C_HOST = os.environ["KEY_HOST"]
C_HOST_SMALL = os.environ["KEY_HOST_SMALL"]     # 64 run-time texts
RUST_DIR = os.environ.get("RUST_HOSTS_DIR", "")
RUST_HOST = os.path.join(RUST_DIR, "rs_keys") if RUST_DIR else ""
NAME_MAX = 127      # SP_NAME_LEN - 1


def truth(p):
    return json.loads([l for l in p.stdout.splitlines()
                       if l.startswith("{")][-1])


def traced(host, mode, extra, args):
    old = os.environ.copy()
    os.environ.pop("SPTRACE_PER_EVENT", None)
    if mode == "per-event":
        os.environ["SPTRACE_PER_EVENT"] = "1"
    try:
        p, s = trace_json(list(extra) + ["--", host] + args)
    finally:
        os.environ.clear()
        os.environ.update(old)
    mode = "%s %s" % (os.path.basename(host), mode)
    eq(p.returncode, 0, "%s %s: exit 0 (%s)" % (mode, extra,
                                                 p.stderr.strip()[-300:]))
    check(s is not None, "%s %s: a summary" % (mode, extra))
    if s is None:
        return p, {"queries": [], "errors": {}}
    eq(s.get("events"), mode.split()[1], "%s: mode" % mode)
    return p, s


def names_checks(mode, s):
    by = {q["name"]: q for q in s["queries"]}
    rust = mode.startswith("rs_")
    eq(by.get("plain_q", {}).get("count"), 1, "%s: plain_q counted" % mode)
    if not rust:    # a Rust name is a &str: UTF-8
        eq(by.get("bad\ufffd\ufffd(name", {}).get("count"), 1,
           "%s: a name that is not UTF-8, its bytes replaced" % mode)
    big = [n for n in by if n.startswith("big")]
    eq(len(big), 1, "%s: one row for the 1 MiB name" % mode)
    # C: the first 127 bytes; Rust (Name::intern): 110, "~", a hash.
    want = "big" + "x" * (NAME_MAX - 3 - (17 if rust else 0))
    if big:
        check(big[0].startswith(want) and len(big[0]) == NAME_MAX,
              "%s: the 1 MiB name cut to %d bytes (%d)" % (mode, NAME_MAX,
                                                         len(big[0])))
    for k, v in s["errors"].items():
        eq(v, 0, "%s: errors.%s" % (mode, k))


def keyed(host, mode):
    p, s = traced(host, mode, ["--query-keys", "--max-queries", "1000"],
                  ["10000", "--fork"])
    t = truth(p)
    mode = "%s %s" % (os.path.basename(host), mode)
    eq(t["child_status"], 0, "%s: the forked child lived" % mode)
    q = s["queries"]
    keys = {r["name"]: r for r in q if r["name"].startswith("keyed_q(")}
    other = [r for r in q if r["name"] == "<other>"]
    eq(len(keys), 1000, "%s: 1000 key rows" % mode)
    eq(len(other), 1, "%s: one <other> row" % mode)
    eq("keyed_q" in {r["name"] for r in q}, False,
       "%s: no row of the bare name" % mode)
    bad = [n for n, r in keys.items()
           if r["count"] != int(n[8:-1]) % 3 + 1 or
           r["cache_hits"] != r["count"]]
    eq(bad[:5], [], "%s: each key row's count and hits are the host's" % mode)
    tot = sum(r["count"] for r in keys.values()) + \
        sum(r["count"] for r in other)
    hits = sum(r["cache_hits"] for r in keys.values()) + \
        sum(r["cache_hits"] for r in other)
    eq(tot, t["pairs"], "%s: key rows + <other> = the host's pairs" % mode)
    eq(hits, t["hits"], "%s: and its cache hits" % mode)
    names_checks(mode, s)


def by_name(host, mode):
    p, s = traced(host, mode, [], ["3000"])
    t = truth(p)
    mode = "%s %s" % (os.path.basename(host), mode)
    by = {r["name"]: r for r in s["queries"]}
    eq(by.get("keyed_q", {}).get("count"), t["pairs"],
       "%s: without --query-keys, one row of the name" % mode)
    eq(by.get("keyed_q", {}).get("cache_hits"), t["hits"],
       "%s: its cache hits" % mode)
    eq([n for n in by if n.startswith("keyed_q(") or n == "<other>"], [],
       "%s: no key rows" % mode)
    names_checks(mode, s)


def fnv1a(b):
    h = 0xcbf29ce484222325
    for c in b:
        h = ((h ^ c) * 0x100000001b3) & (2 ** 64 - 1)
    return h


BIG_RT = b"rtbig" + b"x" * ((1 << 20) - 5)
BIG_RT_NAME = BIG_RT[:110].decode() + "~%016x" % fnv1a(BIG_RT)
BAD_RT_NAME = "rtbad\ufffd\ufffd(x"


def str_names_checks(mode, s, t, times=1):
    """The run-time names of `--str`: each row the host's count."""
    by = {q["name"]: q for q in s["queries"]}
    rt = {n: r for n, r in by.items() if n.startswith("rt_")}
    eq(len(rt), t["names"], "%s: a row per run-time name" % mode)
    bad = [n for n, r in rt.items()
           if r["count"] != (int(n[3:]) % 3 + 1) * times or
           r["cache_hits"] != r["count"]]
    eq(bad[:5], [], "%s: each run-time name's count and hits" % mode)
    eq(sum(r["count"] for r in rt.values()), t["name_pairs"] * times,
       "%s: the run-time names' pairs" % mode)
    eq(by.get(BAD_RT_NAME, {}).get("count"), times,
       "%s: a run-time name that is not UTF-8, its bytes replaced" % mode)
    eq(by.get("both_rt", {}).get("count"), times,
       "%s: both_rt, not read past its length" % mode)
    eq(by.get(BIG_RT_NAME, {}).get("count"), times,
       "%s: the 1 MiB run-time name, cut and hashed (%r)" %
       (mode, [n[:20] + "..." + n[-20:] for n in by if n.startswith("rtbig")]))
    for k, v in s["errors"].items():
        eq(v, 0, "%s: errors.%s" % (mode, k))


def str_keyed(host, mode):
    p, s = traced(host, mode, ["--query-keys", "--max-queries", "1000"],
                  ["--str", "10000"])
    t = truth(p)
    mode = "%s %s --str" % (os.path.basename(host), mode)
    q = s["queries"]
    keys = {r["name"]: r for r in q if r["name"].startswith("skey_q(")}
    other = [r for r in q if r["name"] == "<other>"]
    # Keys come in order on one thread: k0..k999 take the rows.
    eq(sorted(keys), sorted("skey_q(k%d)" % i for i in range(1000)),
       "%s: 1000 text-key rows, k0..k999" % mode)
    eq(len(other), 1, "%s: one <other> row" % mode)
    bad = [n for n, r in keys.items()
           if r["count"] != int(n[8:-1]) % 3 + 1 or
           r["cache_hits"] != r["count"]]
    eq(bad[:5], [], "%s: each text key's count and hits" % mode)
    tot = sum(r["count"] for r in keys.values()) + \
        sum(r["count"] for r in other)
    hits = sum(r["cache_hits"] for r in keys.values()) + \
        sum(r["cache_hits"] for r in other)
    # + 1: the pair of the key "kbad\xff", past the bound.
    eq(tot, t["pairs"] + 1, "%s: key rows + <other> = the host's pairs" % mode)
    eq(hits, t["hits"], "%s: and its cache hits" % mode)
    str_names_checks(mode, s, t)
    return keys


def str_by_name(host, mode):
    p, s = traced(host, mode, [], ["--str", "3000"])
    t = truth(p)
    mode = "%s %s --str" % (os.path.basename(host), mode)
    by = {r["name"]: r for r in s["queries"]}
    eq(by.get("skey_q", {}).get("count"), t["pairs"] + 1,
       "%s: without --query-keys, text keys in one row of the name" % mode)
    eq(by.get("skey_q", {}).get("cache_hits"), t["hits"],
       "%s: its cache hits" % mode)
    eq([n for n in by if n.startswith("skey_q(") or n == "<other>"], [],
       "%s: no key rows" % mode)
    str_names_checks(mode, s, t)


def many_names(mode):
    """10,000 run-time names through --max-queries 1000: names have no
    "<other>" row (only keys do), so 1000 rows are kept, each exact, and
    every interval and cache hit of the others is counted as lost."""
    p, s = traced(C_HOST, mode, ["--max-queries", "1000"],
                  ["--str", "0", "10000"])
    t = truth(p)
    mode = "key_host %s --str, 10,000 names" % mode
    q = s["queries"]
    rt = {r["name"]: r for r in q if r["name"].startswith("rt_")}
    eq(len(q), 1000, "%s: 1000 rows" % mode)
    bad = [n for n, r in rt.items()
           if r["count"] != int(n[3:]) % 3 + 1 or
           r["cache_hits"] != r["count"]]
    eq(bad[:5], [], "%s: the rows kept are exact" % mode)
    kept = sum(r["count"] for r in rt.values())
    # Lost: the other names' pairs and their hits, and the 3 single pairs
    # named after them (not UTF-8, both_rt, 1 MiB).
    eq(s["errors"].get("queries_map_full"),
       2 * (t["name_pairs"] - kept) + 3,
       "%s: every lost interval and hit counted" % mode)


def intern_full():
    """key_host built with a table of 64 texts: k0..k63 fill it, then every
    new text is "<intern-full>", a key row and a name row, with exact
    totals, and sptrace says so in one warning line."""
    p, s = trace_json(["--query-keys", "--", C_HOST_SMALL, "--str", "100"],
                      timeout=120)
    eq(p.returncode, 0, "table full: exit 0 (%s)" % p.stderr.strip()[-300:])
    if not check(s is not None, "table full: a summary"):
        return
    t = truth(p)
    by = {r["name"]: r for r in s["queries"]}
    keyed = sum(k % 3 + 1 for k in range(64, 100))
    eq(sorted(n for n in by if n.startswith("skey_q(k")),
       sorted("skey_q(k%d)" % k for k in range(64)),
       "table full: the 64 texts interned have their rows")
    eq(by.get("skey_q(<intern-full>)", {}).get("count"), keyed + 1,
       "table full: later keys (and kbad) in skey_q(<intern-full>)")
    eq(by.get("<intern-full>", {}).get("count"), t["name_pairs"] + 3,
       "table full: every run-time name in <intern-full>")
    events = keyed + 1 + keyed + t["name_pairs"] + 3 + t["name_pairs"]
    check("sptrace: warning: %d events named <intern-full> (" % events
          in p.stderr, "table full: one warning line with its %d events "
          "(%r)" % (events, p.stderr.strip()[-300:]))


def str_mixed():
    """C and Rust in one session (sh runs both): one row per text, each
    with both processes' events, bad key text included."""
    p, s = trace_json(["--follow", "--query-keys", "--", "sh", "-c",
                       "%s --str 30 && %s --str 30" % (C_HOST, RUST_HOST)])
    eq(p.returncode, 0, "C and Rust in one session: exit 0 (%s)" %
       p.stderr.strip()[-300:])
    if s is None:
        check(False, "C and Rust in one session: a summary")
        return
    truths = [json.loads(l) for l in p.stdout.splitlines()
              if l.startswith("{")]
    eq(len(truths), 2, "C and Rust in one session: both ran")
    by = {r["name"]: r for r in s["queries"]}
    eq(by.get("skey_q(k29)", {}).get("count"), 6,
       "C + Rust: one row of text key k29, 3 pairs each")
    eq(by.get("skey_q(kbad\ufffd)", {}).get("count"), 2,
       "C + Rust: one row of the text key that is not UTF-8")
    eq(sum(r["count"] for n, r in by.items() if n.startswith("skey_q(k")
           and n[8:-1].isdigit()), 2 * truths[0]["pairs"],
       "C + Rust: the text keys' pairs")
    mode = "C + Rust"
    str_names_checks(mode, s, truths[0], times=2)


def evicted():
    """A session that outlives its processes (-b, --interval): the key
    rows of an exited process are deleted with its other rows, so the next
    process gets --max-queries rows of its own."""
    out = tmpfile(".json")
    sp = subprocess.Popen([SPTRACE, "-b", C_HOST, "-d", "12", "--interval",
                           "1", "--per-pid", "--query-keys", "--max-queries",
                           "1000", "-v", "-f", "json", "-o", out],
                          stderr=subprocess.PIPE, text=True)
    try:
        wait_tracing(sp)
        truths = []
        for i in range(2):
            truths.append(truth(run([C_HOST, "1500"], timeout=60)))
            if i == 0:
                time.sleep(3)   # two reads: the first process is evicted
        sp.communicate(timeout=60)
        per = {}
        with open(out) as f:
            for line in f:
                if line.strip():
                    for r in json.loads(line)["queries"]:
                        k = "<other>" if r["name"] == "<other>" else \
                            "key" if r["name"].endswith(")") else None
                        if k:
                            d = per.setdefault(r["pid"], {})
                            d[k] = d.get(k, 0) + r["count"]
        eq(len(per), 2, "-b: key rows of two processes")
        for pid, d in sorted(per.items()):
            # keys 0..999: 1999 pairs in their rows; the rest: <other>
            eq(d.get("key"), 1999, "-b: pid %d: 1000 keys in rows" % pid)
            eq(d.get("key", 0) + d.get("<other>", 0), truths[0]["pairs"],
               "-b: pid %d: key rows + <other> = the host's pairs" % pid)
    finally:
        cleanup(sp, out)


def main():
    require_bpf()
    hosts = [C_HOST]
    if RUST_HOST:
        hosts.append(RUST_HOST)
    else:
        check(not in_ci(), "the Rust hosts were built (cargo)")
    rows = {}
    for host in hosts:
        for mode in ("batched", "per-event"):
            keyed(host, mode)
            by_name(host, mode)
            rows[(host, mode)] = str_keyed(host, mode)
            str_by_name(host, mode)
    for mode in ("batched", "per-event"):
        many_names(mode)
    intern_full()
    if RUST_HOST:
        for mode in ("batched", "per-event"):
            c, r = rows[(C_HOST, mode)], rows[(RUST_HOST, mode)]
            eq(sorted((n, v["count"]) for n, v in c.items()),
               sorted((n, v["count"]) for n, v in r.items()),
               "%s: C and Rust, the same text-key rows and counts" % mode)
        str_mixed()
    evicted()
    # The table escapes what is not UTF-8.
    p = run([SPTRACE, "--", C_HOST, "10"], timeout=120)
    check("bad\\xff\\xc3(name" in p.stdout,
          "table: invalid UTF-8 escaped as \\xNN (%r)" % p.stdout[-400:])
    p = run([SPTRACE, "--query-keys", "--", C_HOST, "--str", "10"],
            timeout=120)
    check("rtbad\\xff\\xc3(x" in p.stdout and
          "skey_q(kbad\\xff)" in p.stdout,
          "table: a run-time name and a text key that are not UTF-8 "
          "escaped (%r)" % p.stdout[-600:])
    p = run([SPTRACE, "record", "--query-keys", "-o", "/dev/null", "--",
             C_HOST, "10"], timeout=60)
    eq(p.returncode, 1, "record --query-keys refused")
    check(p.stderr.startswith("sptrace: --query-keys:"),
          "one line says why (%r)" % p.stderr.strip())
    finish()


main()
